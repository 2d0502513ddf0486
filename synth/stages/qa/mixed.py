"""Questions that need a written and a spoken trace together (`written_spoken`) for the `qa` stage: what the persona
said in a group chat or out loud set beside what they wrote about the same event. Code picks the pair — a spoken
and a written trace of one event — and the evidence they carry; the model writes the question and the answer from
both; a model-free check (synth.quality.rules.medium_span_problem) holds the item's evidence to both kinds of trace."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from pydantic import BaseModel

from synth.config import question_types
from synth.engine.stage import Records, StageContext
from synth.quality import rules
from synth.records import QA, Evidence, EvidenceRef, LifeArc, Trace, mint_id
from synth.stages.common import trace_excerpts
from synth.stages.qa.duration import _rank, arc_for, seeded_time

if TYPE_CHECKING:
    from synth.stages.qa import Planner

MIXED = "written_spoken"


@dataclass(frozen=True)
class MixedPair:
    """A spoken and a written trace of one event, and the evidence either carries (oldest first)."""

    event_id: str
    spoken: Trace
    written: Trace
    evidence: tuple[Evidence, ...]

    def refs(self) -> list[EvidenceRef]:
        return [EvidenceRef(statement=e.statement, evidence_id=e.id,
                            digital_trace_ids=[t.id for t in (self.spoken, self.written) if e.id in t.evidence_ids])
                for e in self.evidence]


def mixed_pairs(traces: Sequence[Trace], evidence: Sequence[Evidence], count: int) -> list[MixedPair]:
    """Up to `count` pairs, one per event that has both a spoken and a written trace: its first spoken trace, and
    the written one that shares the fewest evidence with it (so that each adds something the other lacks; the
    earlier on a tie). A fixed pseudo-random order (the event ids' hash) spreads them over the timeline."""
    by_event: dict[str, list[Trace]] = {}
    for trace in sorted(traces, key=lambda t: (t.time, t.id)):
        by_event.setdefault(trace.event_id, []).append(trace)
    evidence_by_id = {e.id: e for e in evidence}
    pairs = []
    for event_id, found in by_event.items():
        spoken = [t for t in found if rules.is_spoken(t.medium)]
        written = [t for t in found if not rules.is_spoken(t.medium)]
        if not spoken or not written:
            continue
        said = spoken[0]
        wrote = min(written, key=lambda t: len(set(t.evidence_ids) & set(said.evidence_ids)))
        ids = list(dict.fromkeys([*said.evidence_ids, *wrote.evidence_ids]))
        carried = tuple(evidence_by_id[i] for i in ids if i in evidence_by_id)
        if carried:
            pairs.append(MixedPair(event_id, said, wrote, carried))
    pairs.sort(key=lambda p: _rank(MIXED, p.event_id))
    return pairs[:count]


def build_item(pair: MixedPair, arc: LifeArc, answer: BaseModel, asked: dt.datetime, persona_id: str) -> QA:
    return QA(
        id=mint_id(persona_id, "qa", MIXED, pair.spoken.id, pair.written.id), persona_id=persona_id,
        question_type=MIXED, dimension=arc.dimension, arc_id=arc.id, question_time=asked,
        question=answer.question.strip(), answer=answer.answer.strip(), evidence=pair.refs(),
        digital_trace_ids=[pair.spoken.id, pair.written.id], window_end=asked.date(),
        temporal_scope=f"{pair.spoken.time.date().isoformat()} – {pair.written.time.date().isoformat()}",
    )


class MixedWriter:
    def __init__(self, ctx: StageContext, common: dict, arcs: dict[str, LifeArc], last_day: dt.date,
                 hours: tuple[int, int], answer_model: type[BaseModel]) -> None:
        self.ctx, self.common, self.arcs, self.last_day, self.hours = ctx, common, arcs, last_day, hours
        self.answer_model = answer_model
        self.section = ctx.section

    async def write(self, pair: MixedPair) -> Records:
        base = max(pair.spoken.time, pair.written.time)
        asked = seeded_time(base, (MIXED, pair.spoken.id, pair.written.id), self.section.max_question_delay_days,
                            self.hours, self.last_day)
        arc = arc_for([a for e in pair.evidence for a in e.arc_ids], self.arcs)
        traces = {t.id: t for t in (pair.spoken, pair.written)}
        said = [e.statement for e in pair.evidence]  # each excerpt cut around the passage carrying them
        variables = {**self.common, "arc": arc, "question_time": asked.isoformat(timespec="minutes"),
                     "said": trace_excerpts([pair.spoken.id], traces, self.ctx.settings.prompts, said)[0],
                     "wrote": trace_excerpts([pair.written.id], traces, self.ctx.settings.prompts, said)[0],
                     "statements": said,
                     "max_answer_chars": self.section.max_answer_chars[self.ctx.language]}
        answer = await self.ctx.ask("qa_write", "qa_mixed.j2", variables, self.answer_model)
        return {"qa.jsonl": [build_item(pair, arc, answer, asked, self.ctx.persona.id)]}


async def mixed_items(ctx: StageContext, planner: Planner) -> list[QA]:
    """The stage's written-and-spoken items (when `written_spoken` is among `[qa] types` and the persona has both
    kinds of trace)."""
    section = ctx.section
    if MIXED not in section.types or section.target_per_type <= 0:
        return []
    pairs = mixed_pairs(ctx.traces, ctx.evidence, section.target_per_type)
    writer = MixedWriter(ctx, planner.common, planner.arc_by_id, planner.last_day, planner.hours,
                         planner.answer_model(section.max_answer_chars[ctx.language]))
    keys = [f"mixed/{p.spoken.id}/{p.written.id}" for p in pairs]
    await ctx.units([(key, partial(writer.write, p)) for key, p in zip(keys, pairs, strict=True)])
    return [qa for key in keys for qa in ctx.done_records(key, "qa.jsonl", QA) or []]


question_types.attach(MIXED, make=mixed_items)
