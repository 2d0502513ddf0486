"""What a QA plan is held to beyond its schema: the facts its window settled (an unanswerable question must not
ask about them), the evidence its outline relies on (selected), an outline that keeps to the evidence (no dates of
its own), and the earlier plans it must not twin."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence

from synth.config import question_types
from synth.core.calendar import EN_DATE, EN_WEEKDAYS, MONTHS, ZH_DATE, ZH_DAYS, ZH_WEEKDAY, zh_int
from synth.core.text import clipped
from synth.core.tokens import estimate_tokens
from synth.life.windows import Segment
from synth.llm.base import Reask
from synth.quality.label_check import key_units
from synth.quality.rules import explicit_dates
from synth.records import Trace

DECIDED_LINES = 12  # an unanswerable planner sees at most this many settled facts of its window (bounded prompt)
DECIDED_CHARS = 240
TOPIC_UNITS = 2  # a settled fact sharing this many content units with the question is about its matter
TOPIC_CHARS = 720  # ... and is shown up to this many characters
# An outline "relies on" an evidence it did not select when it repeats this share of the statement's units (content
# words, Chinese character bigrams): the planner built the item on it, so the writer and the judges must see it.
RELIES = 0.6


def settled_facts(segment: Segment, phases: Sequence, events: Sequence, topic: str = "") -> list[str]:
    """What the simulated life settled during the segment's window — its phases' and events' own text — whether
    or not a trace carries it: an unanswerable question must not ask about it (its options would be true of the
    life and scored wrong). Newest first, at most DECIDED_LINES; an event cut at DECIDED_CHARS, a phase's summary
    (a window has a few) only at TOPIC_CHARS: a planner found one cut before the talk of a promotion it had to keep
    clear of. With a `topic` (the written question and its absent topic), the facts sharing TOPIC_UNITS content
    units with it come first and are cut only at TOPIC_CHARS: the option writer of an unanswerable question about
    a counsellor's fee found the one event that might settle it cut off ("…"). Before the window too: what the
    life settled earlier is as true when the question is asked (a capable planner's list began at the window's
    first day, leaving a January blood-pressure check unprotected); the window's own facts come first. The phases'
    summaries come before the events: a 75-day window's newest dozen events left its first month's phases out, and a
    capable planner had to guess what July had settled."""
    hi = segment.window.end  # newest first puts the window's own facts before earlier ones (all end before it)
    events_of = [(e.time.date(), f"{e.time.date().isoformat()} {e.title}: {e.description}") for e in events
                 if e.time.date() <= hi]
    spans = [(p.end, f"{p.start.isoformat()}–{p.end.isoformat()} {p.title}: {p.description}") for p in phases
             if p.start <= hi]
    summaries = [text for _, text in sorted(spans, key=lambda x: x[0], reverse=True)]
    lines = summaries + [text for _, text in sorted(events_of, key=lambda x: x[0], reverse=True)]
    about = key_units(topic)
    near = {text for text in lines if about and len(key_units(text) & about) >= TOPIC_UNITS}
    whole = near | set(summaries)
    ordered = [text for text in lines if text in near] + [text for text in lines if text not in near]
    return [clipped(text, TOPIC_CHARS if text in whole else DECIDED_CHARS) for text in ordered[:DECIDED_LINES]]


def relied_on(outline: str, segment: Segment, chosen: Sequence[int]) -> list[int]:
    """`chosen` (1-based indices, in range) plus every evidence of the segment whose statement the outline repeats:
    a plan naming a statement it did not select (the key line of a causal chain) would leave the writer without it.
    Only what a statement adds to the chosen ones counts: a later statement recapping them ("admitted to Anna she
    had not told Nora about the bathroom near-fall or the waiting list") shares their words, not the outline's, and
    pulling it in moved a capable planner's question three weeks past the time it had chosen."""
    words = key_units(outline)
    picked = {n for n in chosen if 0 < n <= len(segment.evidence)}
    known = set().union(*(key_units(segment.evidence[n - 1].statement) for n in picked))
    extra = {n for n, item in enumerate(segment.evidence, 1) if n not in picked
             and (wanted := key_units(item.statement) - known) and len(wanted & words) / len(wanted) >= RELIES}
    return sorted(picked | extra)


_CONTEXT = re.compile(r"^(?:in|of|early|late|mid|since|until|by|during|last|next|this)\s+|^-", re.IGNORECASE)
def _canonical(text: str) -> str:
    """`text` lower-cased with every English day of a month written "march 5", every Chinese date in digits "3月4日"
    (a capable writer's outline "3 月 4 日" was refused against evidence saying "2022年3月4日晚上") and every Chinese
    weekday "周日"."""
    def day(m: re.Match) -> str:
        month, number = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        return f"{next(x for x in MONTHS if x.startswith(month[:3].lower()))} {int(number)}"

    def zh_day(m: re.Match) -> str:
        month = zh_int(m.group(1))
        return f"{month}月{zh_int(m.group(2))}日" if m.group(2) else f"{month}月"
    text = ZH_DATE.sub(zh_day, EN_DATE.sub(day, text))
    return ZH_WEEKDAY.sub(lambda m: "周" + ("日" if m.group(1) == "天" else m.group(1)), text.lower())


def outline_dates(outline: str) -> list[tuple[str, str]]:
    """(as written, as compared) for every date word of an outline: an English day of a month whole ("March 5" →
    "march 5"), else each match of the question-date patterns without its context word."""
    out = [(m.group(0), _canonical(m.group(0))) for m in EN_DATE.finditer(outline)]
    rest = EN_DATE.sub(" ", outline)
    return out + [(d, date_core(d)) for d in explicit_dates(rest)]


def date_core(written: str) -> str:
    """The date word a match names, without the context it was found by ("since August" → "august", "Sundays" →
    "sunday", "星期天" → "周日"): the outline and the evidence may word it differently."""
    core = _CONTEXT.sub("", written.strip()).rstrip(".").lower()
    if core.endswith("days") and core[:-1] in EN_WEEKDAYS:
        core = core[:-1]
    return _canonical(core)


def day_words(when: dt.datetime) -> list[str]:
    """How a text may name the day of a trace: its date, weekday and month, in both languages."""
    month = MONTHS[when.month - 1]
    return [when.date().isoformat(), EN_WEEKDAYS[when.weekday()], month, f"{month} {when.day}",
            f"{when.month}月{when.day}日", f"{when.month}月", f"{_ZH_MONTHS[when.month - 1]}月",
            f"周{ZH_DAYS[when.weekday()]}"]


_ZH_MONTHS = ("一", "二", "三", "四", "五", "六", "七", "八", "九", "十", "十一", "十二")  # "七月" as well as "7月"


def held_text(segment: Segment, chosen: Sequence[int], traces: Mapping[str, Trace]) -> str:
    """What the selected evidence states about time, lower-cased: its statements, its traces' text and the days of
    its traces (evidence of a Sunday may be asked about as "on Sunday")."""
    parts: list[str] = []
    for item in (segment.evidence[n - 1] for n in chosen):
        parts.append(item.statement)
        for when in item.trace_times:
            parts += day_words(when)
        parts += [traces[t].content for t in item.trace_ids if t in traces]
    return " | ".join(_canonical(p) for p in parts)


UNSTATED_DATE = "outline: names"  # how undated_outline's re-ask starts (a plan still failing it is dropped, not failed)
# how a plan that still selects fewer evidence than `least_evidence` fails (pydantic's message, via the client)
FEWER_EVIDENCE = re.compile(r"\bevidence: List should have at least \d+ item")


def undated_outline(answer, segment: Segment | None = None, traces: Mapping[str, Trace] | None = None) -> None:
    """The plan's outline keeps to the evidence: a date, month or weekday in the outline that none of its selected
    evidence states ("3月5日" when the records never say it) is a premise no trace holds, and the question may not
    carry it. One the evidence itself states — in its statement, its traces, or as the day it happened ("since
    August", "on Sunday"), however worded — is part of what it says. Raised as a re-ask with the reason."""
    if not getattr(answer, "feasible", True):
        return  # an infeasible plan is dropped whatever its outline says
    outline = getattr(answer, "outline", "") or ""
    chosen = relied_on(outline, segment, getattr(answer, "evidence", []) or []) if segment is not None else []
    held = held_text(segment, chosen, traces or {}) if segment is not None else ""
    unsupported = [written for written, core in outline_dates(outline)
                   if not re.search(rf"(?<!\d){re.escape(core)}(?!\d)", held)]  # "march 1" is not in "march 12"
    if unsupported:
        raise Reask("unstated_date", f"{UNSTATED_DATE} {unsupported[0]!r}, which the selected evidence does not "
                    "state", date=unsupported[0])


TWIN_PLAN = "evidence: nearly that of"  # how twin_plan's re-ask starts (a plan still twinning is dropped, not failed)
TWIN_SHARE = 0.8  # a plan sharing this share of the larger evidence set with an earlier plan is its twin


def twin_plan(answer, shown: Sequence[dict] = ()) -> None:
    """A feasible plan whose evidence is (nearly) an earlier plan's on this arc, as `shared_plans` showed it: the
    two items would ask one thing with one answer. A capable planner, shown the comparison plan, planned a
    trajectory over the same evidence, and its writer found the two answers near-identical. Raised as a re-ask
    naming the earlier plan's type and evidence."""
    if not getattr(answer, "feasible", True):
        return
    chosen = set(getattr(answer, "evidence", []) or [])
    for plan in shown:
        shared = chosen & set(plan["evidence"])
        if chosen and len(shared) >= TWIN_SHARE * max(len(chosen), len(plan["evidence"]) + plan.get("elsewhere", 0)):
            numbers = ", ".join(f"[{n}]" for n in sorted(shared))
            raise Reask("twin_plan", f"{TWIN_PLAN} the {plan['question_type']} question planned before it "
                        f"({numbers})", question_type=plan["question_type"], numbers=numbers)


def plan_checks(answer, segment: Segment | None = None, traces: Mapping[str, Trace] | None = None,
                shown: Sequence[dict] = ()) -> None:
    """A plan's checks, in order: its outline's dates (`undated_outline`), then its twin (`twin_plan`)."""
    undated_outline(answer, segment=segment, traces=traces)
    twin_plan(answer, shown)


def shared_plans(planned: Sequence[dict], segment: Segment, budget: int | None) -> list[dict]:
    """The earlier plans a planner of `segment` sees: those sharing its evidence, each with the numbers of the
    shared evidence in the segment's list (not the statements again) and how many of its evidence are not in that
    list (`elsewhere`: a writer read an outline relying on a breakdown its listed numbers did not cover, the plan's
    other evidence being in another stretch), the most shared first, then the latest,
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
        shown.append({"question_type": plan["question_type"], "outline": plan["outline"], "evidence": numbers,
                      "elsewhere": len(set(plan["evidence_ids"])) - len(numbers)})
    return shown


def evidence_entries(segment: Segment, chosen: list[int] | None, traces: dict[str, Trace]) -> list[dict]:
    """Evidence as the templates show it; indices stay those of the whole segment. `records`: the numbers of the
    traces carrying it, counted over the segment, so a planner sees which evidence share one record."""
    numbers: dict[str, int] = {}
    for item in segment.evidence:
        for trace_id in item.trace_ids:
            numbers.setdefault(trace_id, len(numbers) + 1)
    out = []
    for number, item in enumerate(segment.evidence, 1):
        if chosen is not None and number not in chosen:
            continue
        out.append({
            "index": number, "date": item.time.date().isoformat(), "kind": item.kind, "statement": item.statement,
            "recent": item.evidence_id in segment.new_ids,
            "media": sorted({traces[t].medium for t in item.trace_ids if t in traces}),
            "records": sorted(numbers[t] for t in item.trace_ids), "private": item.private,
        })
    return out


def least_evidence(question_type: str) -> int:
    """The fewest evidence a plan of the type may select (`gate` refuses fewer): the spec's minimum, at most 2
    (a type may span more, but two already make it writable); 1 for a type that needs no answer."""
    spec = question_types.get(question_type) or question_types.QuestionTypeSpec(question_type, "extra")
    return min(spec.min_evidence, 2) if spec.answerable else 1


def visible(item, segment: Segment) -> list[tuple[str, dt.datetime]]:
    """The traces carrying `item` (id, time) that exist by the segment's window end (at least the first one)."""
    pairs = list(zip(item.trace_ids, item.trace_times, strict=True))
    return [(t, when) for t, when in pairs if when.date() <= segment.window.end] or pairs[:1]


def gate(question_type: str, segment: Segment, chosen: list[int], min_span_days: int = 0) -> str:
    """Why a feasible-looking plan still cannot carry its type ('' when it can): evidence-gated generation. A type
    whose traces must span `min_span_days` (comparison, trajectory) is held to it here, as the filter holds the item:
    a Chinese comparison over two days went through options and judges (some 30 calls) to be rejected there."""
    picked = [segment.evidence[i - 1] for i in chosen]
    spec = question_types.get(question_type) or question_types.QuestionTypeSpec(question_type, "extra")
    if not spec.answerable:
        return ""
    least = least_evidence(question_type)
    if len(picked) < least:
        return f"{question_type} needs at least {least} evidence"
    if len({e.time.date() for e in picked}) < spec.min_days:
        return f"{question_type} needs evidence from {spec.min_days} different days"
    if spec.spanning and min_span_days:
        times = [when for e in picked for _, when in visible(e, segment)]
        if (max(times) - min(times)).days < min_span_days:
            return f"{question_type} needs evidence spanning at least {min_span_days} days"
    if spec.multi_point and len(picked) >= 2 and set.intersection(*(set(e.trace_ids) for e in picked)):
        # one record carries every point: it answers the item alone, which the filter's single_point rejects
        return f"{question_type} needs evidence from more than one record"
    return ""
