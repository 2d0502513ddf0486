"""Stage `events`: each phase expands into dated detailed events, each co-generated with its evidence."""

from __future__ import annotations

import datetime as dt
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, Field, create_model

from synth.models import EvidenceKind, Event, Evidence, LifeArc, MajorEvent, Persona, Phase, mint_id
from synth.stage import Stage, StageContext
from synth.stages.common import answer_tokens, arc_label_ids, arc_views, event_view, relation_labels


@lru_cache(maxsize=None)
def events_answer(days: int, people: tuple[str, ...], arcs: tuple[str, ...], count: int,
                  min_evidence: int, max_evidence: int) -> type[BaseModel]:
    """Detailed events with their evidence; days, people and arcs are bounded or enumerated by the schema."""
    evidence = create_model(
        "EvidenceDraft",
        kind=(EvidenceKind, ...),
        statement=(str, ...),
        arcs=(list[Literal[arcs]], Field(min_length=1, max_length=3)),
    )
    event = create_model(
        "EventDraft",
        title=(str, ...),
        description=(str, ...),
        location=(str, ...),
        day=(int, Field(ge=0, le=days - 1)),
        hour=(int, Field(ge=0, le=23)),
        minute=(int, Field(ge=0, le=59)),
        participants=(list[Literal[people]], Field(min_length=0, max_length=4)),
        evidence=(list[evidence], Field(min_length=min_evidence, max_length=max_evidence)),
    )
    return create_model("PhaseEvents", events=(list[event], Field(min_length=count, max_length=count)))


def build_events(persona: Persona, phase: Phase, people: dict[str, str], arcs: dict[str, str],
                 answer: BaseModel) -> dict[str, list]:
    """Events in time order with minted ids; participant and arc labels mapped back to ids (deduplicated)."""
    drafts = sorted(answer.events, key=lambda d: (d.day, d.hour, d.minute))
    events, evidence = [], []
    for i, draft in enumerate(drafts):
        day = phase.start + dt.timedelta(days=min(draft.day, (phase.end - phase.start).days))
        event_id = mint_id(phase.id, "event", i)
        events.append(Event(
            id=event_id, persona_id=persona.id, phase_id=phase.id,
            time=dt.datetime.combine(day, dt.time(draft.hour, draft.minute)), title=draft.title.strip(),
            description=draft.description.strip(), location=draft.location.strip(),
            participant_ids=list(dict.fromkeys(people[name] for name in draft.participants)),
        ))
        for j, item in enumerate(draft.evidence):
            evidence.append(Evidence(
                id=mint_id(event_id, "evidence", j), persona_id=persona.id, event_id=event_id, kind=item.kind,
                statement=item.statement.strip(), arc_ids=list(dict.fromkeys(arcs[label] for label in item.arcs)),
            ))
    return {"events.jsonl": events, "evidence.jsonl": evidence}


async def run(ctx: StageContext) -> None:
    persona: Persona = ctx.read("persona.jsonl")[0]
    arcs: list[LifeArc] = ctx.read("arcs.jsonl")
    majors: dict[str, MajorEvent] = {e.id: e for e in ctx.read("major_events.jsonl")}
    phases: list[Phase] = ctx.read("phases.jsonl")
    section = ctx.section
    count = section.events_per_phase
    low = max(1, section.min_evidence)
    high = max(low, section.max_evidence)
    people = relation_labels(persona)
    arc_ids = arc_label_ids(arcs)
    base = {"persona": persona.model_dump(mode="json"), "arcs": arc_views(arcs)}

    def unit(phase: Phase):
        async def generate() -> dict[str, list]:
            days = (phase.end - phase.start).days + 1
            model = events_answer(days, tuple(people), tuple(arc_ids), count, low, high)
            answer = await ctx.ask("events", "events_generate.j2", {
                **base, "event": event_view(majors[phase.major_event_id], arcs),
                "phase": phase.model_dump(mode="json"), "days": days, "count": count,
                "min_evidence": low, "max_evidence": high, "people": list(people),
            }, model, max_tokens=answer_tokens(ctx, count * (220 + high * 90)))
            return build_events(persona, phase, people, arc_ids, answer)

        return generate

    await ctx.units([(phase.id, unit(phase)) for phase in phases])


STAGE = Stage(
    name="events",
    reads=("persona.jsonl", "arcs.jsonl", "major_events.jsonl", "phases.jsonl"),
    writes=("events.jsonl", "evidence.jsonl"),
    templates=("events_generate.j2",),
    tasks=("events",),
    body=run,
    help="events.jsonl, evidence.jsonl: dated detailed events per phase, with co-generated evidence",
)
