"""What a QA plan is held to beyond its schema: the facts its window settled (an unanswerable question must not
ask about them), an outline that keeps to the evidence (no dates), and the earlier plans it must not twin."""

from __future__ import annotations

from collections.abc import Sequence

from synth.core.tokens import estimate_tokens
from synth.life.windows import Segment
from synth.quality.rules import explicit_dates

DECIDED_LINES = 12  # an unanswerable planner sees at most this many settled facts of its window (bounded prompt)
DECIDED_CHARS = 240


def settled_facts(segment: Segment, phases: Sequence, events: Sequence) -> list[str]:
    """What the simulated life settled during the segment's window — its phases' and events' own text — whether
    or not a trace carries it: an unanswerable question must not ask about it (its options would be true of the
    life and scored wrong). Newest first, bounded."""
    lo, hi = segment.window.start, segment.window.end
    lines = [(e.time.date(), f"{e.time.date().isoformat()} {e.title}: {e.description}") for e in events
             if lo <= e.time.date() <= hi]
    lines += [(p.end, f"{p.start.isoformat()}–{p.end.isoformat()} {p.title}: {p.description}") for p in phases
              if p.start <= hi and p.end >= lo]
    return [text[:DECIDED_CHARS] for _, text in sorted(lines, key=lambda x: x[0], reverse=True)[:DECIDED_LINES]]


def undated_outline(answer, segment: Segment | None = None) -> None:
    """The plan's outline keeps to the evidence: a date, month or weekday in the outline that none of its selected
    evidence states ("3月5日" when the records never say it) is a premise no trace holds, and the question may not
    carry it. One the evidence itself states ("since August", "on Sunday") is part of what it says. Raised as a
    re-ask with the reason."""
    outline = getattr(answer, "outline", "") or ""
    chosen = [segment.evidence[i - 1].statement for i in getattr(answer, "evidence", []) or []
              if segment is not None and 0 < i <= len(segment.evidence)]
    stated = " ".join(chosen).lower()
    unsupported = [d for d in explicit_dates(outline) if d.lower().rstrip(".") not in stated]
    if unsupported:
        raise ValueError(f"outline: names {unsupported[0]!r}, which the selected evidence does not state; keep to "
                         "what the evidence says, without dates of your own")


def shared_plans(planned: Sequence[dict], segment: Segment, budget: int | None) -> list[dict]:
    """The earlier plans a planner of `segment` sees: those sharing its evidence, each with the numbers of the
    shared evidence in the segment's list (not the statements again), the most shared first, then the latest,
    while their outlines fit in `budget` tokens (None: all) — an arc's plans pile up over the types, the prompt
    does not."""
    number = {e.evidence_id: i for i, e in enumerate(segment.evidence, 1)}
    shared = [(k, p, sorted(number[i] for i in set(p["evidence_ids"]) if i in number)) for k, p in enumerate(planned)]
    ranked = sorted((s for s in shared if s[2]), key=lambda s: (-len(s[2]), -s[0]))
    shown, used = [], 0
    for _, plan, numbers in ranked:
        cost = estimate_tokens(plan["outline"]) + 4 * len(numbers) + 8
        if budget is not None and used + cost > budget:
            continue
        used += cost
        shown.append({"question_type": plan["question_type"], "outline": plan["outline"], "evidence": numbers})
    return shown
