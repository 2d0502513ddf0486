"""Stage IV `qa`: trajectory segments per life arc, then a plan step and a write step per (segment, question type)."""

from __future__ import annotations

import datetime as dt
import importlib
import pkgutil
from collections.abc import Sequence
from functools import lru_cache, partial
from typing import Literal

from pydantic import BaseModel, Field, create_model

from synth.config import question_types
from synth.config.settings import PromptsSettings, QASettings
from synth.engine.stage import Records, Stage, StageContext
from synth.life import relations
from synth.life.windows import (
    Segment,
    SegmentEvidence,
    arc_states,
    candidates,
    observable_evidence,
    trajectory_segments,
)
from synth.llm.base import GenerationFailed
from synth.quality.rules import strip_timestamps
from synth.records import QA, EvidenceRef, LifeArc, Trace, mint_id
from synth.stages.common import statements_of, trace_excerpts
from synth.stages.qa.plan_checks import (  # noqa: F401  (DECIDED_LINES, gate, relied_on re-exported)
    DECIDED_LINES,
    FEWER_EVIDENCE,
    TWIN_PLAN,
    UNSTATED_DATE,
    evidence_entries,
    gate,
    least_evidence,
    plan_checks,
    relied_on,
    settled_facts,
    shared_plans,
    undated_outline,
    visible,
)
from synth.stages.qa.standalone import standing, with_guesses, write

HOURS = (7, 22)  # a friend asks between breakfast and bedtime

# Every module of this package is imported: each question type made by its own code (duration, profile, mixed, and
# any type added as a module here) attaches or registers its spec as it is imported (synth.config.question_types).
for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")


@lru_cache(maxsize=None)
def plan_model(count: int, max_delay_days: int, fewest: int = 1) -> type[BaseModel]:
    """The plan answer for a segment of `count` evidence: indices are an enum of 1..count, so nothing dangles, at
    least `fewest` of them (the type's least evidence, as `gate` counts it: a comparison of one evidence can never
    be written, and the schema says so to the model — and binds a local model's grammar). The plan also decides
    when the question is asked, once: a bounded day offset after the newest needed trace and an hour (`ask_time`
    turns them into the question time)."""
    index = Literal[tuple(range(1, count + 1))]  # type: ignore[valid-type]
    return create_model(
        "QAPlan", feasible=(bool, ...),
        evidence=(list[index], Field(min_length=max(1, min(fewest, count)), max_length=count)),
        temporal_scope=(str, ...), outline=(str, ...), absent_topic=(str, ...),
        ask_after_days=(int, Field(ge=0, le=max_delay_days)), ask_hour=(int, Field(ge=HOURS[0], le=HOURS[1])))


@lru_cache(maxsize=None)
def write_model(max_answer_chars: int) -> type[BaseModel]:
    """The written item (its time is the plan's, fixed before writing). The reference answer is as long as its
    content needs: a cap squeezed a causal chain into a list-like summary that gave the MCQ key away; the cap
    (`max_answer_chars`) bounds the options only, which are rendered separately."""
    return create_model(
        "QAWrite",
        question=(str, Field(min_length=1)),
        answer=(str, Field(min_length=1)),
    )


def visible_traces(item: SegmentEvidence, segment: Segment) -> list[str]:
    """The traces carrying `item` that exist by the segment's window end (at least the first one)."""
    return [t for t, _ in visible(item, segment)]


def _hour_of(when: dt.datetime) -> dt.datetime:
    return when.replace(minute=0, second=0, microsecond=0)


def _waking_hour_by(latest: dt.datetime, base: dt.datetime) -> dt.datetime:
    """The last whole hour within HOURS at or before `latest`; `latest`'s own hour when that one precedes `base`
    (the gap before the arc moves on is a night: the question is asked in it all the same)."""
    hour = _hour_of(latest)
    if hour.hour > HOURS[1]:
        waking = hour.replace(hour=HOURS[1])
    elif hour.hour < HOURS[0]:
        waking = (hour - dt.timedelta(days=1)).replace(hour=HOURS[1])
    else:
        waking = hour
    return waking if waking >= base else hour


def question_time(base: dt.datetime, ask_after_days: int, hour: int, last_day: dt.date,
                  next_evidence: dt.datetime | None = None) -> dt.datetime:
    """The asked time: `ask_after_days` after `base` (the newest trace the question needs) at `hour`, then bounded.
    It is strictly before `next_evidence` (the arc's next evidence after `base`: an answer written from the chosen
    evidence is still true when asked) and on or before `last_day` (the timeline's end + grace). It never precedes
    `base`, and that bound wins a conflict (a needed trace written after `last_day`): no question before its
    evidence."""
    day = min(base.date() + dt.timedelta(days=max(0, ask_after_days)), max(last_day, base.date()))
    asked = dt.datetime.combine(day, dt.time(hour), tzinfo=base.tzinfo)
    if asked < base:
        asked = _hour_of(base) + dt.timedelta(hours=1)
    latest = dt.datetime.combine(last_day, dt.time(23, 59), tzinfo=base.tzinfo)
    if next_evidence is not None:
        latest = min(latest, next_evidence - dt.timedelta(minutes=1))
    if asked > latest:
        asked = _waking_hour_by(latest, base)
    return max(asked, base)


def next_evidence_time(arc_items: Sequence[SegmentEvidence], after: dt.datetime) -> dt.datetime | None:
    """When the arc's next evidence after `after` becomes observable (its first trace); None when none follows."""
    return next((item.time for item in arc_items if item.time > after), None)


class Plan(BaseModel):
    """A plan unit's record (journaled, not written out): what the write step of (type, segment) follows.
    `gate` says why it is not feasible ('' when it is)."""

    question_type: str
    segment: str
    feasible: bool
    gate: str
    evidence: list[int] = []
    temporal_scope: str = ""
    outline: str = ""
    absent_topic: str = ""
    ask_after_days: int = 0  # the question time, decided once: days after the newest needed trace ...
    ask_hour: int = 12  # ... at this hour (then bounded by `question_time`)


# ------------------------------------------------------------------- per task: prompt variables in, record out

def segment_variables(common: dict, arc: LifeArc, segment: Segment, question_type: str) -> dict:
    """What both prompts of (type, segment) show; `common` holds the persona and its arcs."""
    return {**common, "arc": arc, "question_type": question_type,
            "window_start": segment.window.start.isoformat(), "window_end": segment.window.end.isoformat(),
            # its points must come from more than one record (a record answering it alone is rejected)
            "multi_point": getattr(question_types.get(question_type), "multi_point", False)}


def plan_variables(common: dict, arc: LifeArc, segment: Segment, question_type: str,
                   traces: dict[str, Trace], max_delay_days: int, planned: Sequence[dict] = (),
                   settled: Sequence[str] = (), planned_tokens: int | None = None, min_span_days: int = 0) -> dict:
    """`planned`: the feasible plans of earlier types on this arc (`planned_outline`); the planner sees those that
    share evidence with this segment, so it picks other evidence or another angle instead of a twin item."""
    return {**segment_variables(common, arc, segment, question_type), "evidence": evidence_entries(segment, None, traces),
            "max_delay_days": max_delay_days, "hours": HOURS,
            "planned": shared_plans(planned, segment, planned_tokens),
            "settled": list(settled) if question_type == "unanswerable" else [],
            "span_days": min_span_days if question_types.spanning(question_type) else 0,  # the filter's span (0: none)
            "least_evidence": least_evidence(question_type)}  # the schema's least selection


def planned_outline(plan: Plan, segment: Segment) -> dict:
    """A feasible plan as later planners of the same arc see it: its type, outline and evidence ids."""
    chosen = [segment.evidence[i - 1] for i in plan.evidence]
    return {"question_type": plan.question_type, "outline": plan.outline,
            "evidence_ids": [e.evidence_id for e in chosen]}


def plan_reason(answer: BaseModel, question_type: str, segment: Segment, chosen: list[int],
                min_span_days: int = 0) -> str:
    """Why a plan answer cannot be written ('' when it can): the model's verdict first, then the gates."""
    if not answer.feasible:
        return "the model judged it infeasible"
    if not question_types.answerable(question_type) and not answer.absent_topic.strip():
        return "no absent topic"
    return gate(question_type, segment, chosen, min_span_days)


def build_plan(answer: BaseModel, question_type: str, segment: Segment, min_span_days: int = 0) -> Plan:
    # the evidence the outline relies on is selected even when the answer left it out (`relied_on`)
    chosen = relied_on(answer.outline, segment, sorted(set(answer.evidence)))
    reason = plan_reason(answer, question_type, segment, chosen, min_span_days)
    return Plan(question_type=question_type, segment=segment.key, feasible=not reason, gate=reason,
                evidence=chosen, temporal_scope=answer.temporal_scope, outline=answer.outline,
                absent_topic=answer.absent_topic, ask_after_days=answer.ask_after_days, ask_hour=answer.ask_hour)


def choose_plans(picks: list[tuple[str, Segment]], plans: dict[str, Plan], target: int) -> list[tuple[Plan, Segment]]:
    """The first `target` feasible plans of each type, in candidate order (deterministic); `plans` maps a
    plan_key to its plan (a pick whose plan unit did not finish is missing)."""
    chosen: list[tuple[Plan, Segment]] = []
    taken: dict[str, int] = {}
    for question_type, segment in picks:
        plan = plans.get(plan_key(question_type, segment))
        if plan is None or not plan.feasible or taken.get(question_type, 0) >= target:
            continue
        taken[question_type] = taken.get(question_type, 0) + 1
        chosen.append((plan, segment))
    return chosen


def needed_traces(segment: Segment, chosen: list[int]) -> dict[str, list[str]]:
    """Evidence id → the traces of it a question may need: those visible by the window end."""
    return {e.evidence_id: visible_traces(e, segment) for e in (segment.evidence[i - 1] for i in chosen)}


def trace_ids_of(needed: dict[str, list[str]]) -> list[str]:
    return [t for ids in needed.values() for t in ids]


def question_base(question_type: str, segment: Segment, needed: dict[str, list[str]],
                  traces: dict[str, Trace]) -> dt.datetime:
    """The time a question is asked after: the newest trace it needs; an unanswerable one is asked after the
    related background it lacks (the segment's newest evidence), and after the background traces it keeps."""
    times = [traces[t].time for t in trace_ids_of(needed)]
    if not question_types.answerable(question_type):
        times += [e.time for e in segment.evidence]
    return max(times)


def ask_time(plan: Plan, segment: Segment, needed: dict[str, list[str]], traces: dict[str, Trace],
             arc_items: Sequence[SegmentEvidence], last_day: dt.date) -> dt.datetime:
    """The question time, computed once from the plan: after the newest needed trace, before the arc's next
    evidence (`arc_items`: the arc's observable evidence, oldest first), by `last_day` (end + grace)."""
    base = question_base(plan.question_type, segment, needed, traces)
    return question_time(base, plan.ask_after_days, plan.ask_hour, last_day, next_evidence_time(arc_items, base))


def write_variables(common: dict, arc: LifeArc, segment: Segment, plan: Plan, needed: dict[str, list[str]],
                    asked: dt.datetime, traces: dict[str, Trace], prompts: PromptsSettings, max_answer_chars: int) -> dict:
    evidence = evidence_entries(segment, plan.evidence, traces)
    return {
        **segment_variables(common, arc, segment, plan.question_type),
        "evidence": evidence,
        # each trace cut around the passage that carries the chosen evidence, not from its start
        "traces": trace_excerpts(trace_ids_of(needed), traces, prompts,
                                 statements_of(e for e in segment.evidence if e.evidence_id in needed)),
        "temporal_scope": plan.temporal_scope, "outline": plan.outline, "absent_topic": plan.absent_topic,
        "question_time": asked.isoformat(timespec="minutes"), "max_answer_chars": max_answer_chars, "guessed": [],
    }


def build_qa(answer: BaseModel, plan: Plan, segment: Segment, arc: LifeArc, persona_id: str, asked: dt.datetime,
             needed: dict[str, list[str]], settled: Sequence[str] = ()) -> QA:
    """The item written from a write answer, asked at `asked`. An unanswerable item keeps the plan's evidence as
    its related background (`background=True`; it does not answer the question), so its traces are gold too, and
    what its window settled (`settled`), so the options and the judges keep clear of it."""
    background = not question_types.answerable(plan.question_type)
    refs = [
        EvidenceRef(statement=e.statement, evidence_id=e.evidence_id, digital_trace_ids=needed[e.evidence_id],
                    background=background)
        for e in (segment.evidence[i - 1] for i in plan.evidence)
    ]
    return QA(
        id=mint_id(persona_id, "qa", plan.question_type, segment.key), persona_id=persona_id,
        question_type=plan.question_type, dimension=arc.dimension, arc_id=arc.id, question_time=asked,
        question=answer.question.strip(), answer=answer.answer.strip(), evidence=refs,
        digital_trace_ids=list(dict.fromkeys(trace_ids_of(needed))),
        window_end=segment.window.end, temporal_scope=plan.temporal_scope, outline=plan.outline,
        settled=list(settled) if background else [],
    )


# ------------------------------------------------------------------------------------------------ stage

class Planner:
    """Everything the plan and write units of one persona share; its `plan` and `write` are the units. A type's
    own `make` reads its context from here (ctx, section, persona, arc_by_id, traces, arc_items, last_day, common,
    hours, answer_model)."""

    hours = HOURS
    answer_model = staticmethod(write_model)  # (max answer chars) -> the answer model of a question and answer

    def __init__(self, ctx: StageContext) -> None:
        self.ctx = ctx
        self.section: QASettings = ctx.section
        self.persona = ctx.persona
        self.arc_by_id = {a.id: a for a in ctx.arcs}
        self.traces = ctx.traces_by_id
        # a variant session carries its seed evidence only for its own relation item: the windows never see it
        items = observable_evidence(ctx.evidence, [t for t in self.traces.values() if not t.variant_set_id], arc_states(
            ctx.events, ctx.phases, ctx.major_events), {e.id: e.phase_id for e in ctx.events})
        self.arc_items = {a.id: [e for e in items if a.id in e.arc_ids] for a in ctx.arcs}
        self.last_day = self.persona.end + dt.timedelta(days=self.section.question_grace_days)
        self.segments = trajectory_segments(
            items, [a.id for a in ctx.arcs], self.persona.start, self.persona.end,
            self.section.window_days, self.section.stride_days,
            self.section.max_segment_evidence,
        )
        self.common = {"persona": self.persona, "arcs": ctx.arcs}

    @property
    def min_span_days(self) -> int:
        """The span the filter holds a comparison or trajectory to: its planner is told and held to it."""
        return self.ctx.settings.filter.min_span_days

    async def plan(self, question_type: str, segment: Segment, planned: Sequence[dict] = ()) -> Records:
        delay = self.section.max_question_delay_days
        settled = settled_facts(segment, self.ctx.phases, self.ctx.events) if question_type == "unanswerable" else ()
        variables = plan_variables(self.common, self.arc_by_id[segment.arc_id], segment, question_type, self.traces,
                                   delay, planned, settled, self.section.planned_tokens, self.min_span_days)
        try:
            answer = await self.ctx.ask("qa_plan", "qa_plan.j2", variables,
                                        plan_model(len(segment.evidence), delay, least_evidence(question_type)),
                                        check=partial(plan_checks, segment=segment, traces=self.traces,
                                                      shown=variables.get("planned", ())))
        except GenerationFailed as exc:
            # still naming a date no evidence states, twinning an earlier plan, or selecting fewer evidence than the
            # type needs (the schema's least, `least_evidence`): no plan for this type, not a failed unit
            if UNSTATED_DATE not in str(exc) and TWIN_PLAN not in str(exc) and not FEWER_EVIDENCE.search(str(exc)):
                raise
            return {"plans": [Plan(question_type=question_type, segment=segment.key, feasible=False, gate=str(exc))]}
        return {"plans": [build_plan(answer, question_type, segment, self.min_span_days)]}

    async def write(self, plan: Plan, segment: Segment) -> Records:
        arc = self.arc_by_id[segment.arc_id]
        needed = needed_traces(segment, plan.evidence)
        asked = ask_time(plan, segment, needed, self.traces, self.arc_items[arc.id], self.last_day)
        cap = self.section.max_answer_chars[self.ctx.language]
        variables = write_variables(self.common, arc, segment, plan, needed, asked, self.traces, self.ctx.settings.prompts,
                                    cap)
        answer = await write(self.ctx, variables, write_model(cap))
        answer, guesses = await standing(self.ctx, self.section.standalone_rewrites, answer, plan.question_type,
                                         variables, write_model(cap))
        topic = f"{answer.question} {plan.absent_topic}"
        settled = (settled_facts(segment, self.ctx.phases, self.ctx.events, topic)
                   if plan.question_type == "unanswerable" else ())
        qa = build_qa(answer, plan, segment, arc, self.persona.id, asked, needed, settled)
        return {"qa.jsonl": [with_guesses(qa, guesses)]}


def plan_key(question_type: str, segment: Segment) -> str:
    return f"plan/{question_type}/{segment.key}"


def write_key(plan: Plan, segment: Segment) -> str:
    return f"write/{plan.question_type}/{segment.key}"


async def run(ctx: StageContext) -> dict[str, list]:
    planner = Planner(ctx)
    planned_types = set(question_types.names(made_by="qa")) - {s.name for s in question_types.specs() if s.make}
    types = [t for t in ctx.section.types if t in planned_types]
    dimensions = {a.id: a.dimension for a in ctx.arcs}
    picks = candidates(planner.segments, types, ctx.section.plans_per_type, dimensions)
    # One type at a time (its segments concurrently): a type's planner sees what the earlier types planned on the
    # same arc, so two types do not build the same item from the same evidence. Deterministic and resumable: the
    # earlier plans come from the journal.
    plans: dict[str, Plan] = {}
    planned: dict[str, list[dict]] = {}
    for question_type in types:
        round_picks = [(t, s) for t, s in picks if t == question_type]
        await ctx.units([(plan_key(t, s), partial(planner.plan, t, s, tuple(planned.get(s.arc_id, ()))))
                         for t, s in round_picks])
        for t, s in round_picks:
            if found := ctx.done_records(plan_key(t, s), "plans", Plan):
                plans[plan_key(t, s)] = found[0]
                if found[0].feasible:
                    planned.setdefault(s.arc_id, []).append(planned_outline(found[0], s))
    chosen = choose_plans(picks, plans, ctx.section.target_per_type)
    await ctx.units([(write_key(p, s), partial(planner.write, p, s)) for p, s in chosen])
    items = [qa for p, s in chosen for qa in ctx.done_records(write_key(p, s), "qa.jsonl", QA) or []]
    # the types made by their own code, in the registry's order, each when `[qa] types` lists it
    for spec in question_types.specs(made_by="qa"):
        if spec.make is not None and spec.name in ctx.section.types and ctx.section.target_per_type > 0:
            items += await spec.make(ctx, planner)
    if relations.wanted(ctx.settings.variants) and (ctx.dir / "variants.jsonl").is_file():
        items += relations.relation_items(ctx.read("variants.jsonl"))  # written by `synth variants` (no call here)
    return {"qa.jsonl": [without_timestamps(qa) for qa in items]}


def without_timestamps(qa: QA) -> QA:
    """LifeDialBench's rewrite, model-free: explicit timestamps out of the question (counted on the item)."""
    question, count = strip_timestamps(qa.question)
    return qa.model_copy(update={"question": question, "timestamps_stripped": count}) if count else qa


STAGE = Stage(
    name="qa",
    # major events, phases and events only date each evidence's arc states (which items the planner sees)
    reads=("persona.jsonl", "arcs.jsonl", "major_events.jsonl", "phases.jsonl", "events.jsonl", "evidence.jsonl",
           "traces.jsonl"),
    writes=("qa.jsonl",),
    templates=("qa_plan.j2", "qa_write.j2", "filter_open_blind.j2", "filter_open_judge.j2",
               *dict.fromkeys(t for spec in question_types.specs(made_by="qa") for t in spec.templates)),
    tasks=("qa_plan", "qa_write", "qa_open_blind", "qa_open_judge"),
    judges=("qa_open_blind", "qa_open_judge"),
    body=run,
    # profile_style items, when the persona has group chats; the relation items of the kept variant sets
    optional_reads=("groups.jsonl", "chats.jsonl", "variants.jsonl"),
    help="qa.jsonl: sliding-window trajectory segments per life arc → plan → question and first-person answer, "
         "in each type `[qa] types` lists",
    # the kept variant sets' relation items; the shared trace excerpts; the span a comparison or trajectory needs
    config_keys=("variants", "prompts", "filter.min_span_days"),
)
