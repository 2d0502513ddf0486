"""EverMemBench's temporal-duration questions for the `qa` stage: how many days passed from one moment of an arc to
a later one. Code picks the two moments and computes the answer under an explicit counting convention (stored on
the item); the model only phrases the question, without naming a date."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from synth.config import question_types
from synth.engine.stage import Records, StageContext
from synth.life.windows import SegmentEvidence
from synth.records import QA, Event, Evidence, EvidenceRef, LifeArc, Trace, mint_id
from synth.stages.common import trace_excerpts

if TYPE_CHECKING:
    from synth.stages.qa import Planner

DURATION = "temporal_duration"
# The later moment's date minus the earlier one's, in calendar days: the first day is not counted (5th → 8th is 3).
CONVENTION = "calendar_days_between"


class DurationQuestion(BaseModel):
    question: str = Field(min_length=1)


@dataclass(frozen=True)
class DurationPair:
    arc_id: str
    first: SegmentEvidence
    second: SegmentEvidence

    @property
    def days(self) -> int:
        return (self.second.time.date() - self.first.time.date()).days


def _rank(*parts: str) -> bytes:
    return hashlib.sha256("/".join(parts).encode()).digest()


def dated_on_the_day(items: Sequence[SegmentEvidence], evidence: Sequence[Evidence], events: Sequence[Event]) -> list[SegmentEvidence]:
    """Evidence whose first trace is dated on its event's own day (a chat line, a dialogue, a same-day diary): the
    day a memory system sees on the trace is the day it happened, so a count of days between two is well defined."""
    event_of = {e.id: e.event_id for e in evidence}
    day_of = {e.id: e.time.date() for e in events}
    return [i for i in items if day_of.get(event_of.get(i.evidence_id, "")) == i.time.date()]


def duration_pairs(arc_items: dict[str, list[SegmentEvidence]], count: int, min_days: int) -> list[DurationPair]:
    """Up to `count` pairs of moments on one arc at least `min_days` apart, each evidence used once; a fixed
    pseudo-random order (by the ids' hash) spreads them over arcs and time, deterministically."""
    pairs = [DurationPair(arc_id, a, b) for arc_id, items in sorted(arc_items.items())
             for i, a in enumerate(items) for b in items[i + 1:]
             if (b.time.date() - a.time.date()).days >= min_days]
    pairs.sort(key=lambda p: _rank(p.arc_id, p.first.evidence_id, p.second.evidence_id))
    chosen: list[DurationPair] = []
    used: set[str] = set()
    for pair in pairs:
        if len(chosen) >= count:
            break
        if {pair.first.evidence_id, pair.second.evidence_id} & used:
            continue
        used |= {pair.first.evidence_id, pair.second.evidence_id}
        chosen.append(pair)
    return chosen


def seeded_time(base: dt.datetime, key: Sequence[str], max_delay_days: int, hours: tuple[int, int],
                last_day: dt.date) -> dt.datetime:
    """A question time after `base` (the newest trace a code-picked item needs): a delay of 0..max_delay_days days
    at a waking hour, both drawn from `key`'s hash, by `last_day`, never before `base`."""
    seed = int.from_bytes(_rank(*key)[:8], "big")
    day = min(base.date() + dt.timedelta(days=seed % (max_delay_days + 1)), max(last_day, base.date()))
    asked = dt.datetime.combine(day, dt.time(hours[0] + seed // 7 % (hours[1] - hours[0] + 1)), tzinfo=base.tzinfo)
    return max(asked, base + dt.timedelta(minutes=1))


def arc_for(arc_ids: Sequence[str], arcs: dict[str, LifeArc]) -> LifeArc:
    """The arc a code-picked item is filed under: the first of its evidence's arcs that exists (else the first)."""
    found = [a for a in arc_ids if a in arcs]
    return arcs[found[0]] if found else next(iter(arcs.values()))


def asked_at(pair: DurationPair, max_delay_days: int, hours: tuple[int, int], last_day: dt.date) -> dt.datetime:
    """After the second moment's first trace."""
    return seeded_time(pair.second.time, (pair.first.evidence_id, pair.second.evidence_id), max_delay_days, hours,
                       last_day)


def build_item(pair: DurationPair, arc: LifeArc, question: str, asked: dt.datetime, unit: str, persona_id: str) -> QA:
    refs = [EvidenceRef(statement=m.statement, evidence_id=m.evidence_id, digital_trace_ids=[m.trace_ids[0]])
            for m in (pair.first, pair.second)]
    return QA(
        id=mint_id(persona_id, "qa", DURATION, pair.first.evidence_id, pair.second.evidence_id), persona_id=persona_id,
        question_type=DURATION, dimension=arc.dimension, arc_id=arc.id, question_time=asked,
        question=question.strip(), answer=f"{pair.days} {unit}", evidence=refs,
        digital_trace_ids=[pair.first.trace_ids[0], pair.second.trace_ids[0]], window_end=asked.date(),
        temporal_scope=f"{pair.first.time.date().isoformat()} – {pair.second.time.date().isoformat()}",
        counting_convention=CONVENTION,
    )


async def write_one(ctx: StageContext, pair: DurationPair, arc: LifeArc, common: dict, traces: dict[str, Trace],
                    asked: dt.datetime) -> Records:
    section = ctx.section
    variables = {**common, "arc": arc, "question_time": asked.isoformat(timespec="minutes"), "days": pair.days,
                 "convention": CONVENTION,
                 "moments": [{"statement": m.statement,
                              "traces": trace_excerpts([m.trace_ids[0]], traces, ctx.settings.prompts, [m.statement])}
                             for m in (pair.first, pair.second)]}
    answer = await ctx.ask("qa_write", "qa_duration.j2", variables, DurationQuestion)
    unit = section.duration_unit[ctx.language]
    return {"qa.jsonl": [build_item(pair, arc, answer.question, asked, unit, ctx.persona.id)]}


async def duration_items(ctx: StageContext, planner: Planner) -> list[QA]:
    """The stage's temporal-duration items (when `temporal_duration` is among `[qa] types`)."""
    section = ctx.section
    arc_items, arcs, common, traces = planner.arc_items, planner.arc_by_id, planner.common, planner.traces
    last_day, hours = planner.last_day, planner.hours
    if DURATION not in section.types or section.target_per_type <= 0:
        return []
    dated = {arc_id: dated_on_the_day(items, ctx.evidence, ctx.events) for arc_id, items in arc_items.items()}
    pairs = duration_pairs(dated, section.target_per_type, section.duration_min_days)
    keys = [f"duration/{p.first.evidence_id}/{p.second.evidence_id}" for p in pairs]
    await ctx.units([(key, partial(write_one, ctx, p, arcs[p.arc_id], common, traces,
                                   asked_at(p, section.max_question_delay_days, hours, last_day)))
                     for key, p in zip(keys, pairs, strict=True)])
    return [qa for key in keys for qa in ctx.done_records(key, "qa.jsonl", QA) or []]


question_types.attach(DURATION, make=duration_items)
