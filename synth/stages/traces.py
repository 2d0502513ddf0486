"""Stage `traces`: per event, plan each digital trace (medium, intent, audience, evidence), then write it, from
what exists at the event's time: the snapshot history so far and the anchor states reached so far."""

from __future__ import annotations

import datetime as dt
from functools import lru_cache, partial
from typing import Literal

from pydantic import BaseModel, Field, create_model

from synth.config.settings import TracesSettings
from synth.core import chain
from synth.core.errors import InputError
from synth.core.tokens import estimate_tokens
from synth.engine.stage import Records, Stage, StageContext
from synth.life import relations
from synth.life.spoken import SPOKEN_FILES, spoken_traces
from synth.quality.privacy import LeakRule, PrivacyIndex
from synth.records import Event, Evidence, Persona, Trace, mint_id
from synth.stages.common import (  # noqa: F401  (re-exported)
    answer_tokens,
    arc_views,
    hint_weights,
    media_hint,
    media_weights,
    medium_band,
    short_media,
    suggest_media,
    work_moment,
)
from synth.stages.trace_context import (  # noqa: F401  (re-exported)
    MomentContext,
    arcs_so_far,
    event_context,
    moment_arcs,
    reached_states,
    snapshot_history,
)
from synth.stages.trace_voice import Planned, VoiceBoard


@lru_cache(maxsize=None)
def privacy_verdict(statements: int) -> type[BaseModel]:
    """The privacy judge's answer: which of the numbered private statements the public text gives away."""
    return create_model("PrivacyVerdict",
                        revealed=(list[Literal[tuple(range(1, statements + 1))]], Field(max_length=statements)),
                        reason=(str, ...))


class TraceText(BaseModel):
    # minLength reaches a grammar-bound local model (it once wrote "content": ""); the check below refuses blank text
    content: str = Field(min_length=20)


@lru_cache(maxsize=None)
def plan_answer(media: tuple[str, ...], evidence: int, count: int, max_delay: int) -> type[BaseModel]:
    """Trace plans: media and evidence are enums, the delay is bounded so the trace stays inside the timeline."""
    plan = create_model(
        "TracePlan",
        reasons=(str, ...),  # why this medium for this evidence: kept on the trace, never shown to the writer
        medium=(Literal[media], ...),
        intent=(str, ...),
        audience=(str, ...),
        key_information=(str, ...),
        evidence=(list[Literal[tuple(range(1, evidence + 1))]], Field(min_length=1, max_length=evidence)),
        delay_hours=(int, Field(ge=0, le=max_delay)),
    )
    return create_model("TracePlans", traces=(list[plan], Field(min_length=count, max_length=count)))


def media_targets(weights: dict[str, float]) -> dict[str, int]:
    """The mix as whole percentages (what the planner is shown as a target over the persona's traces)."""
    total = sum(weights.values()) or 1.0
    return {name: round(100 * w / total) for name, w in sorted(weights.items())}


def carry_all(plans: list[list[int]], evidence: int, private: frozenset[int] = frozenset(),
              open_plans: frozenset[int] | None = None) -> tuple[list[list[int]], int]:
    """Every evidence index carried by at least one plan: an uncarried one joins the plan carrying the fewest (the
    first on ties) — a `private` one only a plan in `open_plans` (those whose medium is not public; all by default).
    Returns the plans and how many still are uncarried (no plans, or a private one with no plan open to it)."""
    plans = [list(dict.fromkeys(p)) for p in plans]
    carried = {i for p in plans for i in p}
    missing = [i for i in range(1, evidence + 1) if i not in carried]
    left = 0
    for index in missing:
        allowed = [k for k in range(len(plans)) if index not in private or open_plans is None or k in open_plans]
        if not allowed:
            left += 1
            continue
        plans[min(allowed, key=lambda k: len(plans[k]))].append(index)
    return [sorted(p) for p in plans], left


def uncarried_evidence(evidence: list[Evidence], traces: list[Trace]) -> list[str]:
    """Evidence ids no trace carries (flagged and counted by validation)."""
    carried = {i for t in traces for i in t.evidence_ids}
    return [e.id for e in evidence if e.id not in carried]


def private_indices(evidence: list[Evidence]) -> frozenset[int]:
    """The 1-based plan indices of the evidence marked private."""
    return frozenset(i for i, e in enumerate(evidence, 1) if e.private)


def plan_privacy_problems(plans: list, private: frozenset[int], public: frozenset[str]) -> list[dict]:
    """What a plan gets wrong about privacy (model-free): a public trace that carries private evidence, or private
    evidence with no trace in a medium that may hold it. Each problem names the trace (1-based) and evidence."""
    problems = [{"trace": k, "medium": plan.medium, "evidence": i}
                for k, plan in enumerate(plans, 1) if plan.medium in public for i in sorted(set(plan.evidence))
                if i in private]
    if private and all(plan.medium in public for plan in plans):
        problems.append({"trace": 0, "medium": "", "evidence": min(private)})
    return problems


def route_private(plans: list, evidence: int, private: frozenset[int], public: frozenset[str],
                  fallback: str | None) -> tuple[list[tuple[int, str, list[int]]], bool]:
    """The plans' media and evidence with privacy enforced by code (after the planner had its chances): private
    evidence leaves public plans and joins an open one; with no open plan, the public plan that listed the most
    private evidence (the first on ties) takes `fallback`, the persona's most used private medium. Plans left
    with no evidence are dropped. Returns (plan index, medium, evidence) per kept plan and whether anything was
    changed."""
    media = [plan.medium for plan in plans]
    listed = [sorted(set(plan.evidence)) for plan in plans]
    changed = False
    if private and fallback and all(m in public for m in media) and media:
        pick = max(range(len(media)), key=lambda k: (len(private & set(listed[k])), -k))
        media[pick], changed = fallback, True
    kept = [[i for i in p if not (media[k] in public and i in private)] for k, p in enumerate(listed)]
    changed = changed or kept != listed
    open_plans = frozenset(k for k, m in enumerate(media) if m not in public)
    carried, _ = carry_all(kept, evidence, private, open_plans)
    kept_plans = [(k, m, p) for k, (m, p) in enumerate(zip(media, carried, strict=True)) if p]
    return kept_plans, changed or len(kept_plans) < len(media)


def max_delay_hours(event: Event, persona: Persona, limit: int) -> int:
    last = dt.datetime.combine(persona.end, dt.time(23, 59))
    room = int((last - event.time).total_seconds() // 3600)
    return max(0, min(limit, room))


# ------------------------------------------------------------------- per task: prompt variables in, record out

def plan_variables(context: dict, event: Event, evidence: list[Evidence], count: int, weights: dict[str, float],
                   max_delay: int, public: frozenset[str] = frozenset(), work: bool = True,
                   work_media: frozenset[str] = frozenset(), posted: dict[str, list[str]] | None = None,
                   short: dict[str, int] | None = None) -> dict:
    """The planner sees the persona's media with the mix as a target (percent), which of them are public, and a
    seeded hint; it chooses each medium from the evidence's privacy (marked) and the person's habits. `problems`
    (a re-plan): what its last plan got wrong about privacy (`plan_privacy_problems`)."""
    return {**context, "evidence": [e.model_dump(mode="json") for e in evidence], "count": count,
            "media": sorted(weights), "targets": media_targets(weights), "max_delay": max_delay,
            "suggested": media_hint(event.id, count, hint_weights(weights, public, any(e.private for e in evidence),
                                    work, work_media, short if len(evidence) > count else None),
                                    [e.statement for e in evidence], posted or {}),
            "public": sorted(public & set(weights)),
            # media whose length band is short (medium → its top, in words; zh: characters): one evidence each
            "short": [{"medium": m, "high": high} for m, high in sorted((short or {}).items()) if m in weights],
            "problems": []}


def trace_time(event: Event, delay_hours: int, max_delay: int) -> dt.datetime:
    return event.time + dt.timedelta(hours=min(delay_hours, max_delay))


def write_variables(context: dict, plan: BaseModel, carried: list[Evidence], time: dt.datetime,
                    words: tuple[int, int], voice: list[dict] | None = None, medium: str | None = None) -> dict:
    """What the writer sees: the plan without its `reasons` (a planner's meta-comment is not the person's voice),
    `voice`: the person's earlier traces of the same medium, if any, and `medium` when code re-routed the plan's.
    `hidden` (a rewrite): the private statements an earlier draft of this public trace gave away."""
    return {**context, "people": context.get("writer_people", context.get("people", [])),
            "medium": medium or plan.medium, "intent": plan.intent, "audience": plan.audience,
            "key_information": plan.key_information, "carried": [e.model_dump(mode="json") for e in carried],
            "time": time.isoformat(timespec="minutes"), "min_words": words[0], "max_words": words[1],
            "voice": voice or [], "hidden": []}


def build_trace(answer: TraceText, plan: BaseModel, event: Event, carried: list[Evidence], k: int,
                time: dt.datetime, persona_id: str, medium: str | None = None) -> Trace:
    """The `k`-th trace of `event`, written from `plan` (in `medium` when code re-routed it) and carrying
    `carried`."""
    content = answer.content.strip()
    return Trace(
        id=mint_id(event.id, "trace", k), persona_id=persona_id, event_id=event.id,
        evidence_ids=[e.id for e in carried], medium=medium or plan.medium, time=time, intent=plan.intent.strip(),
        audience=plan.audience.strip(), content=content, tokens=estimate_tokens(content),
        reasons=plan.reasons.strip(),
    )


# ------------------------------------------------------------------------------------------------ stage

class TraceWriter:
    """What the units of one persona share; a unit plans one event's traces, then writes them concurrently."""

    def __init__(self, ctx: StageContext) -> None:
        self.ctx = ctx
        self.persona = ctx.persona
        self.phases = ctx.phases
        self.phase_at = {p.id: i for i, p in enumerate(self.phases)}
        self.evidence_by_event: dict[str, list[Evidence]] = {}
        for item in ctx.evidence:
            self.evidence_by_event.setdefault(item.event_id, []).append(item)
        section = ctx.section
        self.count = max(1, section.traces_per_event)
        self.weights = media_weights(section, ctx.language, self.persona.occupation)
        self.media = tuple(sorted(self.weights))
        self.moment = MomentContext(ctx)  # the registry, holidays and stretch each event's prompts show
        self.relations = {p.id: p.relation for p in ctx.people}  # whether a work medium fits a moment's audience
        self.board: VoiceBoard | None = None  # who reads whose voice (set by write_traces)
        self.voice = (section.voice_examples, section.voice_chars)
        self.delay_limit = section.max_delay_hours
        self.persona_view = self.persona.model_dump(mode="json")
        self.arcs, self.majors = ctx.arcs, ctx.major_events
        self.rule = LeakRule.of(section.model_dump())
        self.privacy = PrivacyIndex(ctx.events, ctx.evidence, self.rule)
        self.privacy_repairs = section.privacy_repairs
        self.privacy_judge = section.privacy_judge
        self.judge_statements = section.privacy_judge_statements
        private = {m: w for m, w in self.weights.items() if m not in self.rule.public_media}
        self.private_medium = max(sorted(private), key=private.get) if private else None

    async def event(self, event: Event) -> Records:
        evidence = self.evidence_by_event.get(event.id, [])
        if not evidence:
            return {"traces.jsonl": []}
        at = self.phase_at[event.phase_id]
        arcs = arcs_so_far(self.arcs, reached_states(self.phases, at))
        max_delay = max_delay_hours(event, self.persona, self.delay_limit)
        context = event_context(self.persona_view, arcs, snapshot_history(self.phases, at), event,
                                self.moment.extra(event, self.phases[at], evidence, max_delay))
        plans, routed, how = await self.plan(context, event, evidence, max_delay)
        if self.board is not None:
            self.board.plan(event.id, [Planned(mint_id(event.id, "trace", k), medium,
                                               trace_time(event, plans[k].delay_hours, max_delay))
                                       for k, medium, _ in routed])
        texts = await chain.gather(*(
            self.write(context, event, plans[k], medium, [evidence[i - 1] for i in indices], k, max_delay)
            for k, medium, indices in routed
        ))
        return {"traces.jsonl": [t.model_copy(update={"privacy_plan": how}) for t in texts]}

    async def plan(self, context: dict, event: Event, evidence: list[Evidence],
                   max_delay: int) -> tuple[list, list[tuple[int, str, list[int]]], str]:
        """The event's trace plans with privacy enforced: a plan that puts private evidence in a public medium goes
        back to the planner with the problems (at most `privacy_repairs` times), then code re-routes what is left
        (`route_private`). Returns the plans, (plan index, medium, evidence) per trace to write, and how privacy
        was repaired ("" if never)."""
        section = self.ctx.section
        work = work_moment(event, self.relations, self.ctx.settings.chats.work_words, context.get("holidays", []))
        variables = plan_variables(context, event, evidence, self.count, self.weights, max_delay,
                                   self.rule.public_media, work, frozenset(section.work_media), section.posted,
                                   short_media(section, self.media, self.ctx.language))
        model = plan_answer(self.media, len(evidence), self.count, max_delay)
        tokens = answer_tokens(self.ctx, 200 * self.count)
        private = private_indices(evidence)
        answer = await self.ctx.ask("traces", "traces_plan.j2", variables, model, max_tokens=tokens)
        how = ""
        for round_ in range(1, self.privacy_repairs + 1):
            problems = plan_privacy_problems(answer.traces, private, self.rule.public_media)
            if not problems:
                break
            how = "replanned"
            answer = await self.ctx.ask("traces", "traces_plan.j2", {**variables, "problems": problems}, model,
                                        max_tokens=tokens, sample=round_)
        routed, rerouted = route_private(answer.traces, len(evidence), private, self.rule.public_media,
                                         self.private_medium)
        return answer.traces, routed, "rerouted" if rerouted else how

    async def write(self, context: dict, event: Event, plan: BaseModel, medium: str, carried: list[Evidence],
                    k: int, max_delay: int) -> Trace:
        """One trace; a public one that gives away a private statement (its phase's or a recent one: synth.quality.privacy) is written
        again with those statements named as hidden, at most `privacy_repairs` times — what is left is kept and
        reported by `synth validate` and `synth stats`."""
        time = trace_time(event, plan.delay_hours, max_delay)
        read = await self.board.reference(event.id, medium, time) if self.board is not None else []
        voice = voice_reference(read, medium, time, *self.voice)
        words = medium_band(self.ctx.section, medium, self.ctx.language)
        variables = write_variables(context, plan, carried, time, words, voice, medium)
        tokens = answer_tokens(self.ctx, 3 * words[1] + 200)
        trace, rewrites, flagged = None, 0, []
        for round_ in range(self.privacy_repairs + 1):
            answer = await self.ctx.ask("traces", "traces_write.j2", variables, TraceText, check=has_content,
                                        max_tokens=tokens, sample=round_)
            trace = build_trace(answer, plan, event, carried, k, time, self.persona.id, medium)
            leaks = [leak.evidence_id for leak in self.privacy.leaks(trace)]
            flagged = [] if leaks else await self.judged(trace, round_)
            if not (leaks or flagged) or round_ == self.privacy_repairs:
                break
            rewrites += 1
            variables = {**variables, "hidden": [self.privacy.evidence[i].statement for i in leaks or flagged]}
        done = trace.model_copy(update={"privacy_rewrites": rewrites, "privacy_flagged": flagged,
                                        "privacy_judged": self.judges(trace)})
        if self.board is not None:
            self.board.wrote(done)
        return done

    def judges(self, trace: Trace) -> bool:
        return (self.privacy_judge and trace.medium in self.rule.public_media
                and bool(self.privacy.exposed(trace)))

    async def judged(self, trace: Trace, sample: int) -> list[str]:
        """The private evidence the judge finds given away in a public trace (`PrivacyIndex.exposed`, at most
        `privacy_judge_statements` of it: the trace's phase first, then the newest; none asked when the judge is
        off, the medium is private or nothing before it is hidden)."""
        if not self.judges(trace):
            return []
        exposed = self.privacy.exposed(trace)[:self.judge_statements]
        verdict = await self.ctx.ask("traces_privacy", "traces_privacy.j2",
                                     {"medium": trace.medium, "content": trace.content,
                                      "statements": [statement for _, statement in exposed]},
                                     privacy_verdict(len(exposed)), sample=sample,
                                     max_tokens=answer_tokens(self.ctx, 200))
        return [exposed[i - 1][0] for i in dict.fromkeys(verdict.revealed)]


def has_content(answer: TraceText) -> None:
    """A trace with no text carries no evidence and breaks every downstream check: ask again (a repair), never keep
    it. The schema's minLength binds a grammar; this refuses text that is only whitespace."""
    if not answer.content.strip():
        raise ValueError("content: empty — write the trace itself")


def voice_reference(written: list[Trace], medium: str, before: dt.datetime, count: int, chars: int) -> list[dict]:
    """The person's latest `count` traces of `medium` written before `before`, oldest first, each cut to `chars`:
    the writer's voice reference."""
    same = sorted((t for t in written if t.medium == medium and t.time < before), key=lambda t: (t.time, t.id))
    return [{"time": t.time.isoformat(timespec="minutes"), "content": t.content[:chars]}
            for t in same[len(same) - count:]] if count > 0 else []


async def run(ctx: StageContext) -> None:
    if "written" in ctx.settings.sources:
        await write_traces(ctx)
    needed = {name: stage for source, (stage, names) in SPOKEN_FILES.items() if source in ctx.settings.sources
              for name in names}
    for name, stage in needed.items():
        if not (ctx.dir / name).is_file():
            raise InputError(f"{ctx.dir / name}: missing — run `synth {stage}` first (the sources include it)")
    read = {name: ctx.read(name) if name in needed else [] for name in ("groups.jsonl", "chats.jsonl", "lifelog.jsonl")}
    spoken = spoken_traces(read["groups.jsonl"], read["chats.jsonl"], read["lifelog.jsonl"], ctx.events)
    if spoken:  # chat days and dialogues join as traces of their own media (no model call)
        await ctx.units([("spoken", partial(_as_traces, spoken))])
    if relations.wanted(ctx.settings.variants):
        if not (ctx.dir / "variants.jsonl").is_file():
            raise InputError(f"{ctx.dir / 'variants.jsonl'}: missing — run `synth variants` first "
                             "([variants] seeds_per_relation asks for variant sets)")
        sessions = [t for record in ctx.read("variants.jsonl") for t in relations.set_traces(record)]
        if sessions:  # a kept variant set's sessions join as traces of the usual media (no model call)
            await ctx.units([("variants", partial(_as_traces, sessions))])


async def write_traces(ctx: StageContext) -> None:
    """Every event's traces at once: a trace waits only for the earlier traces its voice reference reads
    (synth.stages.trace_voice), not for a whole earlier wave."""
    writer = TraceWriter(ctx)
    section: TracesSettings = ctx.section
    if section.voice_examples > 0:
        writer.board = VoiceBoard(ctx.events, ctx.persona.start, section.voice_wave_days, section.voice_examples)
        for event in ctx.events:  # finished by an earlier, interrupted run: read from the journal
            done = ctx.done_records(event.id, "traces.jsonl", Trace)
            if done is not None:
                writer.board.finished(event.id, done)
    await ctx.units([(event.id, partial(settled, writer, event)) for event in ctx.events])


async def settled(writer: TraceWriter, event: Event) -> Records:
    """One event's unit; whatever happens to it, the traces waiting on it are released."""
    written: list[Trace] = []
    try:
        records = await writer.event(event)
        written = records["traces.jsonl"]
        return records
    finally:
        if writer.board is not None:
            writer.board.finished(event.id, written)


async def _as_traces(traces: list[Trace]) -> Records:
    return {"traces.jsonl": traces}


STAGE = Stage(
    name="traces",
    reads=("persona.jsonl", "arcs.jsonl", "major_events.jsonl", "phases.jsonl", "people.jsonl", "events.jsonl",
           "evidence.jsonl"),
    # needed only when the sources name them (chats, lifelog) or [variants] asks for variant sets
    optional_reads=("groups.jsonl", "chats.jsonl", "lifelog.jsonl", "variants.jsonl"),
    writes=("traces.jsonl",),
    templates=("traces_plan.j2", "traces_write.j2", "traces_privacy.j2"),
    tasks=("traces", "traces_privacy"),
    judges=("traces_privacy",),
    body=run,
    help="traces.jsonl: digital traces per event, planned (medium, intent, audience, evidence) then written",
    token_file="traces.jsonl",  # the manifest records the persona's trace tokens
    config_keys=("sources", "variants"),
)
