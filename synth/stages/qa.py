"""Stage IV `qa`: trajectory segments per life arc, then a plan step and a write step per (segment, question type)."""

from __future__ import annotations

import datetime as dt
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, Field, create_model

from synth.models import QA, EvidenceRef, LifeArc, Persona, Trace, mint_id
from synth.stage import Stage, StageContext
from synth.stages.common import trace_excerpts
from synth.settings import QASettings
from synth.windows import MIN_DAYS, MIN_EVIDENCE, Segment, SegmentEvidence, candidates, observable_evidence, \
    trajectory_segments

HOURS = (7, 22)  # a friend asks between breakfast and bedtime


@lru_cache(maxsize=None)
def plan_model(count: int) -> type[BaseModel]:
    """The plan answer for a segment of `count` evidence: indices are an enum of 1..count, so nothing dangles."""
    index = Literal[tuple(range(1, count + 1))]  # type: ignore[valid-type]
    return create_model(
        "QAPlan",
        feasible=(bool, ...),
        evidence=(list[index], Field(min_length=1, max_length=count)),
        temporal_scope=(str, ...),
        outline=(str, ...),
        absent_topic=(str, ...),
    )


@lru_cache(maxsize=None)
def write_model(max_day: int) -> type[BaseModel]:
    """The written item; the question time is a bounded day offset and hour, so it stays inside the timeline."""
    return create_model(
        "QAWrite",
        question=(str, Field(min_length=1)),
        answer=(str, Field(min_length=1)),
        day_offset=(int, Field(ge=0, le=max_day)),
        hour=(int, Field(ge=HOURS[0], le=HOURS[1])),
    )


def _entries(segment: Segment, chosen: list[int] | None, traces: dict[str, Trace]) -> list[dict]:
    """Evidence as the templates show it; indices stay those of the whole segment."""
    out = []
    for number, item in enumerate(segment.evidence, 1):
        if chosen is not None and number not in chosen:
            continue
        out.append({
            "index": number, "date": item.time.date().isoformat(), "kind": item.kind, "statement": item.statement,
            "recent": item.evidence_id in segment.new_ids,
            "media": sorted({traces[t].medium for t in item.trace_ids if t in traces}),
        })
    return out


def visible_traces(item: SegmentEvidence, segment: Segment) -> list[str]:
    """The traces carrying `item` that exist by the segment's window end (at least the first one)."""
    kept = [t for t, when in zip(item.trace_ids, item.trace_times) if when.date() <= segment.window.end]
    return kept or list(item.trace_ids[:1])


def gate(question_type: str, segment: Segment, chosen: list[int]) -> str:
    """Why a feasible-looking plan still cannot carry its type ('' when it can): evidence-gated generation."""
    picked = [segment.evidence[i - 1] for i in chosen]
    if question_type == "unanswerable":
        return ""
    if len(picked) < min(MIN_EVIDENCE.get(question_type, 1), 2):
        return f"{question_type} needs at least {min(MIN_EVIDENCE.get(question_type, 1), 2)} evidence"
    if len({e.time.date() for e in picked}) < MIN_DAYS.get(question_type, 1):
        return f"{question_type} needs evidence from {MIN_DAYS[question_type]} different days"
    return ""


def question_time(base: dt.datetime, day_offset: int, hour: int) -> dt.datetime:
    """The asked time, never before `base` (the newest trace the question needs)."""
    asked = dt.datetime.combine(base.date() + dt.timedelta(days=day_offset), dt.time(hour), tzinfo=base.tzinfo)
    if asked < base:
        asked = base.replace(minute=0, second=0, microsecond=0) + dt.timedelta(hours=1)
    return asked


def max_day_offset(base: dt.datetime, persona: Persona, section: QASettings) -> int:
    last = persona.end + dt.timedelta(days=section.question_grace_days)
    return max(0, min(section.max_question_delay_days, (last - base.date()).days))


class Planner:
    """Everything the plan and write units of one persona share."""

    def __init__(self, ctx: StageContext) -> None:
        self.ctx = ctx
        self.persona: Persona = ctx.read("persona.jsonl")[0]
        self.arcs: list[LifeArc] = ctx.read("arcs.jsonl")
        self.arc_by_id = {a.id: a for a in self.arcs}
        self.traces: dict[str, Trace] = {t.id: t for t in ctx.read("traces.jsonl")}
        section = ctx.section
        items = observable_evidence(ctx.read("evidence.jsonl"), self.traces.values())
        self.segments = trajectory_segments(
            items, [a.id for a in self.arcs], self.persona.start, self.persona.end,
            section.window_days, section.stride_days,
            section.max_segment_evidence,
        )
        self.common = {"persona": self.persona, "arcs": self.arcs}

    def variables(self, segment: Segment, question_type: str) -> dict:
        return {**self.common, "arc": self.arc_by_id[segment.arc_id], "question_type": question_type,
                "window_start": segment.window.start.isoformat(), "window_end": segment.window.end.isoformat()}

    async def plan(self, question_type: str, segment: Segment) -> dict:
        variables = {**self.variables(segment, question_type), "evidence": _entries(segment, None, self.traces)}
        answer = await self.ctx.ask("qa_plan", "qa_plan.j2", variables, plan_model(len(segment.evidence)))
        chosen = sorted(set(answer.evidence))
        reason = "" if answer.feasible else "the model judged it infeasible"
        if not reason and question_type == "unanswerable" and not answer.absent_topic.strip():
            reason = "no absent topic"
        reason = reason or gate(question_type, segment, chosen)
        return {"question_type": question_type, "segment": segment.key, "feasible": not reason, "gate": reason,
                "evidence": chosen, "temporal_scope": answer.temporal_scope, "outline": answer.outline,
                "absent_topic": answer.absent_topic}

    async def write(self, plan: dict, segment: Segment) -> QA:
        question_type = plan["question_type"]
        unanswerable = question_type == "unanswerable"
        chosen = plan["evidence"]
        picked = [segment.evidence[i - 1] for i in chosen]
        needed = {e.evidence_id: visible_traces(e, segment) for e in picked}
        trace_ids = [t for ids in needed.values() for t in ids]
        if unanswerable:
            base = max(e.time for e in segment.evidence)  # asked after the related background, which it lacks
        else:
            base = max(self.traces[t].time for t in trace_ids)
        max_day = max_day_offset(base, self.persona, self.ctx.section)
        variables = {
            **self.variables(segment, question_type), "evidence": _entries(segment, chosen, self.traces),
            "traces": trace_excerpts(trace_ids, self.traces, self.ctx.section),
            "temporal_scope": plan["temporal_scope"], "outline": plan["outline"], "absent_topic": plan["absent_topic"],
            "base_date": base.date().isoformat(), "base_time": base.isoformat(timespec="minutes"),
        }
        answer = await self.ctx.ask("qa_write", "qa_write.j2", variables, write_model(max_day))
        arc = self.arc_by_id[segment.arc_id]
        refs = [] if unanswerable else [
            EvidenceRef(statement=e.statement, evidence_id=e.evidence_id, digital_trace_ids=needed[e.evidence_id])
            for e in picked
        ]
        return QA(
            id=mint_id(self.persona.id, "qa", question_type, segment.key), persona_id=self.persona.id,
            question_type=question_type, dimension=arc.dimension, arc_id=arc.id,
            question_time=question_time(base, answer.day_offset, answer.hour),
            question=answer.question.strip(), answer=answer.answer.strip(), evidence=refs,
            digital_trace_ids=[] if unanswerable else list(dict.fromkeys(trace_ids)),
            window_end=segment.window.end, temporal_scope=plan["temporal_scope"], outline=plan["outline"],
        )


def plan_key(question_type: str, segment: Segment) -> str:
    return f"plan/{question_type}/{segment.key}"


async def run(ctx: StageContext) -> dict[str, list]:
    planner = Planner(ctx)
    types = [t for t in ctx.section.types if t in MIN_EVIDENCE]
    picks = candidates(planner.segments, types, ctx.section.plans_per_type)

    def plan_unit(question_type: str, segment: Segment):
        async def work():
            return {"plans": [await planner.plan(question_type, segment)]}
        return work

    await ctx.units([(plan_key(t, s), plan_unit(t, s)) for t, s in picks])
    # Keep the first `target_per_type` feasible plans of each type, in candidate order (deterministic).
    target = ctx.section.target_per_type
    chosen: list[tuple[dict, Segment]] = []
    taken: dict[str, int] = {}
    for question_type, segment in picks:
        done = ctx.done(plan_key(question_type, segment))
        if not done or not done["plans"][0]["feasible"] or taken.get(question_type, 0) >= target:
            continue
        taken[question_type] = taken.get(question_type, 0) + 1
        chosen.append((done["plans"][0], segment))

    def write_unit(plan: dict, segment: Segment):
        async def work():
            return {"qa.jsonl": [await planner.write(plan, segment)]}
        return work

    keys = [f"write/{p['question_type']}/{s.key}" for p, s in chosen]
    await ctx.units([(k, write_unit(p, s)) for k, (p, s) in zip(keys, chosen)])
    return {"qa.jsonl": [r for k in keys if (d := ctx.done(k)) for r in d["qa.jsonl"]]}


STAGE = Stage(
    name="qa",
    reads=("persona.jsonl", "arcs.jsonl", "evidence.jsonl", "traces.jsonl"),
    writes=("qa.jsonl",),
    templates=("qa_plan.j2", "qa_write.j2"),
    tasks=("qa_plan", "qa_write"),
    body=run,
    help="Sliding-window trajectory segments per life arc → plan → question and first-person answer.",
)
