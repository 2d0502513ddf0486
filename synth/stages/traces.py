"""Stage `traces`: per event, plan each digital trace (medium, intent, audience, evidence), then write it, from
what exists at the event's time: the snapshot history so far and the anchor states reached so far."""

from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache, partial
from typing import Literal

from pydantic import BaseModel, Field, create_model

from synth.config.settings import TracesSettings
from synth.core.errors import BudgetExceeded, InputError
from synth.engine.stage import Records, Stage, StageContext
from synth.life import relations
from synth.life.spoken import SPOKEN_FILES, spoken_traces
from synth.quality.privacy import LeakRule, PrivacyIndex
from synth.records import Event, Evidence, Persona, Trace, mint_id
from synth.stages.common import (  # noqa: F401  (re-exported)
    answer_tokens,
    arc_views,
    confided,
    hint_weights,
    media_hint,
    media_weights,
    medium_band,
    mentions,
    posted_media,
    short_media,
    state_map,
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
from synth.stages.trace_write import (  # noqa: F401  (re-exported)
    TraceText,
    TraceWriting,
    build_trace,
    has_content,
    privacy_verdict,
    texts_answer,
    told_delay,
    trace_time,
    voice_reference,
    write_variables,
)


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
        # a fraction too: 2.5 h (a writer could not place a note at 02:40 after an event at 23:30 in whole hours);
        # the bound is shown, not enforced: a grammar-bound local model cannot be held to a number's maximum (the
        # bundled Gemma overshot it on all three attempts and the stage failed), and trace_time clamps it
        delay_hours=(float, Field(ge=0, json_schema_extra={"maximum": max_delay})),
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

# a statement that quotes words said or written ("told Evan 'The agreement was the end of last year'", 「别跟爸说」)
QUOTED = re.compile(r"[“”\"「」『』]|(?<!\w)'[^'\n].{5,}?'(?!\w)")


def said_aloud(statement: str, said_words: tuple[str, ...] | list[str], typed_words: tuple[str, ...] | list[str]) -> bool:
    """Whether an evidence holds words said aloud: it names a way of saying (`said_words`: "over dinner", 当面) and
    no way of typing or writing (`typed_words`: "texted", 发消息). English words match whole; Chinese anywhere."""
    return mentions(statement, said_words) and not mentions(statement, typed_words)


def plan_variables(context: dict, event: Event, evidence: list[Evidence], count: int, weights: dict[str, float],
                   max_delay: int, public: frozenset[str] = frozenset(), work: bool = True,
                   work_media: frozenset[str] = frozenset(), posted: dict[str, list[str]] | None = None,
                   short: dict[str, int] | None = None, terse: frozenset[str] = frozenset(),
                   addressed: frozenset[str] = frozenset(), close: bool | None = None,
                   typed: frozenset[str] = frozenset(), said: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())) -> dict:
    """The planner sees the persona's media with the mix as a target (percent), which of them are public, and a
    seeded hint; it chooses each medium from the evidence's privacy (marked) and the person's habits. `problems`
    (a re-plan): what its last plan got wrong about privacy (`plan_privacy_problems`). The hint leaves out the
    short media when a trace must carry more than one evidence, and the `terse` media (a to-do line, a calendar
    slot) when an evidence quotes or reports words said or written (`said`: the said and the typed words): capable
    planners were hinted a to-do list for words said to a partner at dinner, and for a text to him reported
    without quotes. Nor the `addressed` media (an email, a message) for private evidence of a moment with
    no one else in it: there is no one to write it to (a capable planner, hinted email, invented a reply to a
    therapist's pre-appointment email that no event holds), nor with no one close to write it to (`close` false:
    the private evidence names no one close, or says it was kept from others — `confided`; None: anyone in the
    moment counts). Nor the `typed` media (a message thread) for evidence of words said aloud (`said`: the said
    and the typed words, `said_aloud`): a thread holds typed words and may only retell them (a capable planner,
    hinted a thread for words said face to face at dinner, noted the hint against the rule); nor the `addressed`
    media for private words said aloud to someone in the moment: the one to write to was there to hear them (a
    capable planner, hinted email for three private things said to her partner at dinner, found no one to send
    it to). Nor a letter medium (`addressed` but not `typed`: an email) for a moment spent with someone outside
    work (`work` false): a capable planner, hinted email for a phone-free dinner with her partner, wrote to a friend
    in a message thread instead. None of these leaves out the medium an evidence says it was itself written in
    (`posted`: "texted Rhian", 发微信): a capable planner, hinted a diary for a physio's words beside his text to a
    friend about them, wrote the thread instead. Unless more evidence are messages than the traces to write: one
    thread holds one conversation (a planner hinted a thread for texts to two friends in one trace wrote a diary
    retelling both).
    Nor when one trace must also carry private evidence that rules that medium out: a capable planner, hinted an
    email for one trace of an invoice emailed to a client beside the grin he kept to himself, wrote a diary."""
    left_out = set(short or {}) if len(evidence) > count else set()
    aloud = [e for e in evidence if said_aloud(e.statement, *said)]
    if aloud or any(QUOTED.search(e.statement) or mentions(e.statement, said[1]) for e in evidence):
        left_out |= terse
    if aloud:
        left_out |= typed
    someone = bool(event.participant_ids) if close is None else close
    private_out: set[str] = set()  # the media the private evidence rules out
    if not someone and any(e.private for e in evidence):
        private_out |= addressed
    if event.participant_ids and any(e.private for e in aloud):  # the one to write to was there to hear it
        private_out |= addressed
    left_out |= private_out
    if event.participant_ids and not work:  # a letter (addressed, not typed) about an evening out with someone close
        left_out |= addressed - typed
    # where an evidence says it was itself written (a text to someone) stays: words said aloud beside it are retold;
    # but more messages than traces leave no thread to prefer (one thread is one conversation; a diary retells them)
    posted = dict(posted or {})
    own = set(posted_media([e.statement for e in evidence], posted, sorted(weights)))
    talks = own & (typed | addressed)
    if talks and sum(bool(posted_media([e.statement], posted, sorted(talks))) for e in evidence) > count:
        posted = {m: words for m, words in posted.items() if m not in talks}
        own -= talks
        left_out |= talks
    kept = own & (typed | addressed)  # a short medium stays out for a trace of several evidence
    if len(evidence) > count:  # a trace that carries the private evidence too: not one its privacy rules out
        kept -= private_out
    left_out -= kept
    return {**context, "evidence": [e.model_dump(mode="json") for e in evidence], "count": count,
            "media": sorted(weights), "targets": media_targets(weights), "max_delay": max_delay,
            "suggested": media_hint(event.id, count, hint_weights(weights, public, any(e.private for e in evidence),
                                    work, work_media, left_out or None),
                                    [e.statement for e in evidence], posted),
            "public": sorted(public & set(weights)),
            # media whose length band is short (medium → its top, in words; zh: characters): one evidence each
            "short": [{"medium": m, "high": high} for m, high in sorted((short or {}).items()) if m in weights],
            "problems": []}


# ------------------------------------------------------------------------------------------------ stage

class TraceWriter(TraceWriting):
    """What the units of one persona share; a unit plans one event's traces, then writes them (synth.stages.trace_write)."""

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
        self.named = {p.name: p.relation for p in ctx.people}  # whom private evidence is told to (`confided`)
        self.close_words = (*ctx.settings.chats.family_words, *section.close_words)  # someone close to tell
        self.board: VoiceBoard | None = None  # who reads whose voice (set by write_traces)
        self.voice = (section.voice_examples, section.voice_chars)
        self.delay_limit = section.max_delay_hours
        self.persona_view = self.persona.model_dump(mode="json")
        self.arcs, self.majors = ctx.arcs, ctx.major_events
        self.rule = LeakRule.of(section.model_dump())
        # the persona's media, shares and public ones: every traces prompt's fixed prefix shows them (cacheable)
        self.media_view = {"media": list(self.media), "targets": media_targets(self.weights),
                           "public": sorted(self.rule.public_media & set(self.weights))}
        self.privacy = PrivacyIndex(ctx.events, ctx.evidence, self.rule)
        self.privacy_repairs = section.privacy_repairs
        self.privacy_judge = section.privacy_judge
        self.judge_statements = section.privacy_judge_statements
        self.write_together = section.write_together
        private = {m: w for m, w in self.weights.items() if m not in self.rule.public_media}
        self.private_medium = max(sorted(private), key=private.get) if private else None

    async def event(self, event: Event) -> Records:
        evidence = self.evidence_by_event.get(event.id, [])
        if not evidence:
            return {"traces.jsonl": []}
        at = self.phase_at[event.phase_id]
        arcs = arcs_so_far(self.arcs, reached_states(self.phases, at), state_map(self.phases[at].arc_states))
        max_delay = max_delay_hours(event, self.persona, self.delay_limit)
        context = event_context(self.persona_view, arcs, snapshot_history(self.phases, at), event,
                                {**self.moment.extra(event, self.phases[at], evidence, max_delay), **self.media_view})
        plans, routed, how = await self.plan(context, event, evidence, max_delay)
        if self.board is not None:
            self.board.plan(event.id, [Planned(mint_id(event.id, "trace", k), medium,
                                               trace_time(event, plans[k].delay_hours, max_delay))
                                       for k, medium, _ in routed])
        # an evidence code moved or added to a plan that did not list it is marked for the writer: the plan's
        # intent never mentions it (a capable writer read such a statement as a contradiction of its own plan)
        texts = await self.write_all(context, event, [
            (plans[k], medium, [evidence[i - 1] for i in indices], k,
             frozenset(evidence[i - 1].id for i in indices if i not in plans[k].evidence))
            for k, medium, indices in routed], max_delay)
        return {"traces.jsonl": [t.model_copy(update={"privacy_plan": how}) for t in texts]}

    async def plan(self, context: dict, event: Event, evidence: list[Evidence],
                   max_delay: int) -> tuple[list, list[tuple[int, str, list[int]]], str]:
        """The event's trace plans with privacy enforced: a plan that puts private evidence in a public medium goes
        back to the planner with the problems (at most `privacy_repairs` times), then code re-routes what is left
        (`route_private`). Returns the plans (a delay moved on to the next day when the plan tells of it:
        `told_delay`), (plan index, medium, evidence) per trace to write, and how privacy was repaired ("" if
        never)."""
        section = self.ctx.section
        work = work_moment(event, self.relations, self.ctx.settings.chats.work_words, context.get("holidays", []))
        variables = plan_variables(context, event, evidence, self.count, self.weights, max_delay,
                                   self.rule.public_media, work, frozenset(section.work_media), section.posted,
                                   short_media(section, self.media, self.ctx.language), frozenset(section.terse_media),
                                   frozenset(section.addressed_media),
                                   confided([e.statement for e in evidence if e.private], self.named,
                                            self.ctx.settings.chats.work_words, self.close_words,
                                            section.concealed_words),
                                   frozenset(section.typed_media), (tuple(section.said_words), tuple(section.typed_words)))
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
        plans = [plan.model_copy(update={"delay_hours": told_delay(event, plan.key_information, plan.delay_hours,
                                                                    max_delay)}) for plan in answer.traces]
        return plans, routed, "rerouted" if rerouted else how

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
    """One event's unit; whatever happens to it, the traces waiting on it are released: as missing when it failed,
    stopped with it when a budget stopped the run (`VoiceBoard.stopped`)."""
    written: list[Trace] = []
    try:
        records = await writer.event(event)
        written = records["traces.jsonl"]
        return records
    except BudgetExceeded as exc:
        if writer.board is not None:
            writer.board.stopped(event.id, exc)
        raise
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
    templates=("traces_plan.j2", "traces_write.j2", "traces_write_all.j2", "traces_privacy.j2"),
    tasks=("traces", "traces_privacy"),
    judges=("traces_privacy",),
    body=run,
    help="traces.jsonl: digital traces per event, planned (medium, intent, audience, evidence) then written",
    token_file="traces.jsonl",  # the manifest records the persona's trace tokens
    config_keys=("sources", "variants"),
)
