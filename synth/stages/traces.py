"""Stage `traces`: per event, plan each digital trace (medium, intent, audience, evidence), then write it."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import random
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, Field, create_model

from synth.llm.fake import estimate_tokens
from synth.models import Event, Evidence, LifeArc, Persona, Phase, Trace, mint_id
from synth.stage import Stage, StageContext
from synth.stages.common import answer_tokens, arc_views
from synth.settings import TracesSettings


class TraceText(BaseModel):
    content: str


@lru_cache(maxsize=None)
def plan_answer(media: tuple[str, ...], evidence: int, count: int, max_delay: int) -> type[BaseModel]:
    """Trace plans: media and evidence are enums, the delay is bounded so the trace stays inside the timeline."""
    plan = create_model(
        "TracePlan",
        medium=(Literal[media], ...),
        intent=(str, ...),
        audience=(str, ...),
        key_information=(str, ...),
        evidence=(list[Literal[tuple(range(1, evidence + 1))]], Field(min_length=1, max_length=evidence)),
        delay_hours=(int, Field(ge=0, le=max_delay)),
    )
    return create_model("TracePlans", traces=(list[plan], Field(min_length=count, max_length=count)))


def media_weights(section: TracesSettings) -> dict[str, float]:
    return {name: float(w) for name, w in section.media.items() if float(w) > 0}


def suggest_media(key: str, count: int, weights: dict[str, float]) -> list[str]:
    """A deterministic weighted draw per event (distinct media while they last), so that over many events the
    media follow the configured mix rather than a model's favourite."""
    rng = random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))
    picks: list[str] = []
    pool = dict(weights)
    for _ in range(count):
        if not pool:
            pool = dict(weights)
        names = sorted(pool)
        choice = rng.choices(names, weights=[pool[n] for n in names])[0]
        picks.append(choice)
        del pool[choice]
    return picks


def carry_all(plans: list[list[int]], evidence: int) -> tuple[list[list[int]], int]:
    """Every evidence index carried by at least one plan: an uncarried one joins the plan carrying the fewest
    (the first on ties). Returns the plans and how many still are uncarried (only possible with no plans)."""
    plans = [list(dict.fromkeys(p)) for p in plans]
    carried = {i for p in plans for i in p}
    missing = [i for i in range(1, evidence + 1) if i not in carried]
    if not plans:
        return plans, len(missing)
    for index in missing:
        min(plans, key=len).append(index)
    return [sorted(p) for p in plans], 0


def uncarried_evidence(evidence: list[Evidence], traces: list[Trace]) -> list[str]:
    """Evidence ids no trace carries (flagged and counted by validation)."""
    carried = {i for t in traces for i in t.evidence_ids}
    return [e.id for e in evidence if e.id not in carried]


def max_delay_hours(event: Event, persona: Persona, limit: int) -> int:
    last = dt.datetime.combine(persona.end, dt.time(23, 59))
    room = int((last - event.time).total_seconds() // 3600)
    return max(0, min(limit, room))


async def run(ctx: StageContext) -> None:
    persona: Persona = ctx.read("persona.jsonl")[0]
    arcs: list[LifeArc] = ctx.read("arcs.jsonl")
    phases: list[Phase] = ctx.read("phases.jsonl")
    events: list[Event] = ctx.read("events.jsonl")
    evidence_by_event: dict[str, list[Evidence]] = {}
    for item in ctx.read("evidence.jsonl"):
        evidence_by_event.setdefault(item.event_id, []).append(item)
    section = ctx.section
    count = max(1, section.traces_per_event)
    weights = media_weights(section)
    media = tuple(sorted(weights))
    words = (section.min_words, section.max_words)
    delay_limit = section.max_delay_hours
    phase_at = {p.id: i for i, p in enumerate(phases)}
    base = {"persona": persona.model_dump(mode="json"), "arcs": arc_views(arcs)}

    def history(phase_id: str) -> dict:
        """The snapshot history a trace is conditioned on: this phase's and the previous phase's snapshots."""
        i = phase_at[phase_id]
        return {"phase": phases[i].model_dump(mode="json"),
                "previous_phase": phases[i - 1].model_dump(mode="json") if i > 0 else None}

    def unit(event: Event):
        async def plan_and_write() -> dict[str, list]:
            evidence = evidence_by_event.get(event.id, [])
            if not evidence:
                return {"traces.jsonl": []}
            context = {**base, **history(event.phase_id), "event": event.model_dump(mode="json"),
                       "evidence": [e.model_dump(mode="json") for e in evidence]}
            max_delay = max_delay_hours(event, persona, delay_limit)
            answer = await ctx.ask("traces", "traces_plan.j2", {
                **context, "count": count, "media": list(media), "max_delay": max_delay,
                "suggested": suggest_media(event.id, count, weights),
            }, plan_answer(media, len(evidence), count, max_delay),
                max_tokens=answer_tokens(ctx, 200 * count))
            carried, _ = carry_all([list(p.evidence) for p in answer.traces], len(evidence))
            texts = await asyncio.gather(*(
                write(context, plan, [evidence[i - 1] for i in indices], k, max_delay)
                for k, (plan, indices) in enumerate(zip(answer.traces, carried))
            ))
            return {"traces.jsonl": list(texts)}

        async def write(context: dict, plan: BaseModel, carried: list[Evidence], k: int, max_delay: int) -> Trace:
            time = event.time + dt.timedelta(hours=min(plan.delay_hours, max_delay))
            answer = await ctx.ask("traces", "traces_write.j2", {
                **context, "medium": plan.medium, "intent": plan.intent, "audience": plan.audience,
                "key_information": plan.key_information, "carried": [e.model_dump(mode="json") for e in carried],
                "time": time.isoformat(timespec="minutes"), "min_words": words[0], "max_words": words[1],
            }, TraceText, max_tokens=answer_tokens(ctx, 3 * words[1] + 200))
            content = answer.content.strip()
            return Trace(
                id=mint_id(event.id, "trace", k), persona_id=persona.id, event_id=event.id,
                evidence_ids=[e.id for e in carried], medium=plan.medium, time=time, intent=plan.intent.strip(),
                audience=plan.audience.strip(), content=content, tokens=estimate_tokens(content),
            )

        return plan_and_write

    await ctx.units([(event.id, unit(event)) for event in events])


STAGE = Stage(
    name="traces",
    reads=("persona.jsonl", "arcs.jsonl", "phases.jsonl", "events.jsonl", "evidence.jsonl"),
    writes=("traces.jsonl",),
    templates=("traces_plan.j2", "traces_write.j2"),
    tasks=("traces",),
    body=run,
    help="traces.jsonl: digital traces per event, planned (medium, intent, audience, evidence) then written",
    token_file="traces.jsonl",  # the manifest records the persona's trace tokens
)
