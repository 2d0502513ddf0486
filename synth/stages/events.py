"""Stage `events`: each phase expands into dated detailed events, each co-generated with its evidence."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Literal

from pydantic import BaseModel, Field, create_model

from synth.models import (
    Event,
    Evidence,
    EvidenceKind,
    LifeArc,
    MajorEvent,
    Persona,
    Phase,
    mint_id,
)
from synth.settings import EventsSettings
from synth.stage import Records, Stage, StageContext
from synth.stages.common import (
    answer_tokens,
    arc_label_ids,
    event_view,
    persona_and_arcs,
    relation_labels,
)


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


@dataclass(frozen=True)
class EventQuota:
    """How many detailed events a phase gets, and how many evidence items each event carries."""

    count: int
    min_evidence: int
    max_evidence: int


def event_quota(section: EventsSettings) -> EventQuota:
    """The configured counts, repaired so at least one evidence item is asked for and the range is not empty."""
    low = max(1, section.min_evidence)
    return EventQuota(section.events_per_phase, low, max(low, section.max_evidence))


def phase_days(phase: Phase) -> int:
    return (phase.end - phase.start).days + 1


def events_variables(persona: Persona, arcs: list[LifeArc], major: MajorEvent, phase: Phase, quota: EventQuota,
                     people: list[str]) -> dict:
    """What events_generate.j2 is rendered with: the phase inside its major event, and who may take part."""
    return {**persona_and_arcs(persona, arcs), "event": event_view(major, arcs),
            "phase": phase.model_dump(mode="json"), "days": phase_days(phase), "count": quota.count,
            "min_evidence": quota.min_evidence, "max_evidence": quota.max_evidence, "people": people}


class EventsRun:
    """One run of the stage: the persona, its arcs and major events, the participant and arc labels the answers
    name, shared by one concurrent unit per phase."""

    def __init__(self, ctx: StageContext):
        self.ctx = ctx
        self.persona = ctx.persona
        self.arcs = ctx.arcs
        self.majors = {e.id: e for e in ctx.major_events}
        self.quota = event_quota(ctx.section)
        self.people = relation_labels(self.persona)
        self.arc_ids = arc_label_ids(self.arcs)

    async def generate(self, phase: Phase) -> Records:
        quota = self.quota
        model = events_answer(phase_days(phase), tuple(self.people), tuple(self.arc_ids), quota.count,
                              quota.min_evidence, quota.max_evidence)
        variables = events_variables(self.persona, self.arcs, self.majors[phase.major_event_id], phase, quota,
                                     list(self.people))
        estimate = quota.count * (220 + quota.max_evidence * 90)
        answer = await self.ctx.ask("events", "events_generate.j2", variables, model,
                                    max_tokens=answer_tokens(self.ctx, estimate))
        return build_events(self.persona, phase, self.people, self.arc_ids, answer)

    async def run(self) -> None:
        await self.ctx.units([(phase.id, partial(self.generate, phase)) for phase in self.ctx.phases])


async def run(ctx: StageContext) -> None:
    await EventsRun(ctx).run()


STAGE = Stage(
    name="events",
    reads=("persona.jsonl", "arcs.jsonl", "major_events.jsonl", "phases.jsonl"),
    writes=("events.jsonl", "evidence.jsonl"),
    templates=("events_generate.j2",),
    tasks=("events",),
    body=run,
    help="events.jsonl, evidence.jsonl: dated detailed events per phase, with co-generated evidence",
)
