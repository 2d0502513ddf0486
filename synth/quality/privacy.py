"""Public media never reveal what the person hides: model-free checks that a trace of a public medium (a social
post, Moments, Weibo …) neither carries evidence marked private nor repeats a private statement's distinctive
words (the units `synth validate`'s label check recognises a statement by: `label_check.key_units`). The traces
stage repairs with them, `synth validate` reports what is left, `synth stats` gives the rates."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from synth.quality.label_check import key_units
from synth.records import Event, Evidence, Trace


@dataclass(frozen=True)
class LeakRule:
    """The thresholds of `[traces]`: which media are public, when a private statement counts as revealed (at least
    `min_matches` of its distinctive terms and at least `overlap` of them in the trace), which terms are too
    common to be distinctive (in more than `common_share` of the persona's evidence statements, at least one), and
    how far back a secret still counts: the private evidence of the trace's own phase up to its time, and of any
    event in the `lookback_days` before it (a doubt hidden in March is still hidden in a May post)."""

    public_media: frozenset[str]
    overlap: float
    min_matches: int
    common_share: float
    lookback_days: int = 0

    @classmethod
    def of(cls, traces: Mapping[str, Any]) -> LeakRule:
        """From a `[traces]` section (settings or a dataset.json's recorded config); keys a dataset made before
        the check lacks come from the shipped defaults."""
        from synth.config.conf import recorded_section

        section = recorded_section({"traces": dict(traces)}, "traces")
        return cls(frozenset(section["public_media"]), float(section["leak_overlap"]),
                   int(section["leak_min_matches"]), float(section["leak_common_share"]),
                   int(section["privacy_lookback_days"]))


class CommonTerms:
    """Document frequency of terms over the persona's evidence statements: the name, the job, the usual places are
    in many statements and reveal nothing; what only a private statement says does."""

    def __init__(self, statements: Iterable[str], share: float) -> None:
        counts: Counter = Counter()
        total = 0
        for statement in statements:
            counts.update(key_units(statement))
            total += 1
        self.limit = max(1.0, share * total)
        self.common = {t for t, n in counts.items() if n > self.limit}

    def distinctive(self, statement: str, allowed: Iterable[str] = ()) -> set[str]:
        """The statement's terms that are neither common nor in `allowed` (what the trace may say: the statements of
        the evidence it carries)."""
        said = set().union(*(key_units(a) for a in allowed)) if allowed else set()
        return key_units(statement) - self.common - said


@dataclass(frozen=True)
class Leak:
    evidence_id: str
    how: str  # "carried": a public trace lists the private evidence; "words": it repeats its distinctive terms
    score: float  # the share of distinctive terms found (1.0 for "carried")

    def describe(self) -> str:
        if self.how == "carried":
            return f"carries private evidence {self.evidence_id}"
        return f"repeats {self.score:.0%} of private evidence {self.evidence_id}'s distinctive words"


def word_leak(text: str, statement: str, common: CommonTerms, rule: LeakRule, allowed: Sequence[str] = ()) -> float:
    """The share of the private statement's distinctive terms found in `text`, or 0.0 when below the rule's
    thresholds (too few matches, or too small a share)."""
    distinctive = common.distinctive(statement, allowed)
    if not distinctive:
        return 0.0
    found = distinctive & key_units(text)
    share = len(found) / len(distinctive)
    return share if len(found) >= rule.min_matches and share >= rule.overlap else 0.0


def trace_leaks(medium: str, text: str, carried: Sequence[tuple[str, str, bool]],
                exposed: Sequence[tuple[str, str]], common: CommonTerms, rule: LeakRule) -> list[Leak]:
    """What a trace reveals that its person hides, when its medium is public. `carried`: (id, statement, private)
    of the evidence it carries; `exposed`: (id, statement) of the private evidence it could have learnt of (its
    phase's up to its time, and the rule's lookback: `PrivacyIndex.exposed`)."""
    if medium not in rule.public_media:
        return []
    leaks = [Leak(eid, "carried", 1.0) for eid, _, private in carried if private]
    allowed = [statement for _, statement, private in carried if not private]
    listed = {leak.evidence_id for leak in leaks}
    for eid, statement in exposed:
        if eid in listed:
            continue
        score = word_leak(text, statement, common, rule, allowed)
        if score:
            leaks.append(Leak(eid, "words", round(score, 4)))
    return leaks


class PrivacyIndex:
    """One persona's evidence and events, indexed for `leaks(trace)`: what a trace could reveal is the private
    evidence of its own phase up to its time (the event and phase it is written from) and of every event in the
    rule's `lookback_days` before the trace, whatever its phase."""

    def __init__(self, events: Iterable[Event], evidence: Iterable[Evidence], rule: LeakRule) -> None:
        self.rule = rule
        self.evidence = {e.id: e for e in evidence}
        self.common = CommonTerms((e.statement for e in self.evidence.values()), rule.common_share)
        self.events = {e.id: e for e in events}
        self.private = sorted(((self.events[item.event_id], item) for item in self.evidence.values()
                               if item.private and item.event_id in self.events), key=lambda p: (p[0].time, p[1].id))

    def exposed(self, trace: Trace) -> list[tuple[str, str]]:
        """(id, statement) of the private evidence `trace` could give away: its phase's first, then the lookback's,
        newest first (the judge reads the head of this list)."""
        event = self.events.get(trace.event_id)
        if event is None:
            return []
        since = trace.time - dt.timedelta(days=self.rule.lookback_days)
        earlier = [(other, item) for other, item in self.private if other.time <= trace.time]
        own = [(o, i) for o, i in earlier if o.phase_id == event.phase_id]
        recent = [(o, i) for o, i in reversed(earlier) if o.phase_id != event.phase_id and o.time >= since]
        return [(item.id, item.statement) for _, item in own + recent]

    def leaks(self, trace: Trace) -> list[Leak]:
        carried = [(i, self.evidence[i].statement, self.evidence[i].private) for i in trace.evidence_ids
                   if i in self.evidence]
        return trace_leaks(trace.medium, trace.content, carried, self.exposed(trace), self.common, self.rule)


def privacy_figures(traces: Sequence[Trace], events: Sequence[Event], evidence: Sequence[Evidence],
                    rule: LeakRule) -> dict:
    """One persona's privacy rates for `synth stats`: how much evidence is private, how many traces are public, the
    share of public traces that still reveal a private evidence (by listing it, by its words), and how often the
    traces stage had to repair (a re-plan, a code re-route of the medium or evidence, a rewrite of the text)."""
    index = PrivacyIndex(events, evidence, rule)
    public = [t for t in traces if t.medium in rule.public_media]
    found = [index.leaks(t) for t in public]
    written = [t for t in traces if t.event_id in index.events]  # spoken traces (chats, lifelog) have no plan
    share = lambda n, d: round(n / d, 4) if d else 0.0  # noqa: E731
    return {
        "private_evidence_share": share(sum(e.private for e in index.evidence.values()), len(index.evidence)),
        "public_traces": len(public),
        "public_share": share(len(public), len(traces)),
        "leak_rate": share(sum(bool(f) for f in found), len(public)),
        "carried_rate": share(sum(any(x.how == "carried" for x in f) for f in found), len(public)),
        "words_rate": share(sum(any(x.how == "words" for x in f) for f in found), len(public)),
        "replanned_rate": share(sum(t.privacy_plan == "replanned" for t in written), len(written)),
        "rerouted_rate": share(sum(t.privacy_plan == "rerouted" for t in written), len(written)),
        "rewritten_rate": share(sum(t.privacy_rewrites > 0 for t in public), len(public)),
        # the judge (traces_privacy.j2) on the text kept: what the word check cannot see, a paraphrase
        "judged": sum(t.privacy_judged for t in public),
        "judge_flagged_rate": share(sum(bool(t.privacy_flagged) for t in public), sum(t.privacy_judged for t in public)),
    }
