"""Stage `phases`: CloneMem's Algorithm 1 — phases of each major event generated from a rolling snapshot."""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import lru_cache, partial

from pydantic import BaseModel, Field, create_model

from synth.models import LifeArc, MajorEvent, Persona, Phase, Snapshot, mint_id
from synth.stage import Records, Stage, StageContext
from synth.stages.common import event_view, persona_and_arcs


@lru_cache(maxsize=None)
def snapshot_answer(arcs: int) -> type[BaseModel]:
    """The snapshot as the model writes it: arc statuses are a fixed list in arc order, mapped to ids by code."""
    return create_model(
        "SnapshotDraft",
        energy=(int, Field(ge=0, le=10)),
        stress=(int, Field(ge=0, le=10)),
        dominant_emotion=(str, ...),
        focus=(str, ...),
        arc_status=(list[str], Field(min_length=arcs, max_length=arcs)),
    )


@lru_cache(maxsize=None)
def phase_answer(first_end: int, last_end: int) -> type[BaseModel]:
    return create_model(
        "PhaseDraft",
        title=(str, ...),
        description=(str, ...),
        end_day=(int, Field(ge=first_end, le=last_end)),
    )


def to_snapshot(answer: BaseModel, arcs: list[LifeArc]) -> Snapshot:
    return Snapshot(energy=answer.energy, stress=answer.stress, dominant_emotion=answer.dominant_emotion.strip(),
                    focus=answer.focus.strip(),
                    arc_status={arc.id: text.strip() for arc, text in zip(arcs, answer.arc_status, strict=True)})


def phase_count(event: MajorEvent, per_event: int) -> int:
    """NUMPHASES(E): the configured count, fewer when the event has fewer days (phases never share a day)."""
    return max(1, min(per_event, (event.end - event.start).days + 1))


def phase_bounds(length: int, count: int, k: int, start: int) -> tuple[int, int]:
    """The day offsets (inside the event) where phase k may end: room is left for each later phase; the last
    phase ends with the event, so the phases tile the event without gaps or overlaps."""
    if k == count - 1:
        return length - 1, length - 1
    return start, length - 1 - (count - 1 - k)


@dataclass(frozen=True)
class PhaseSlot:
    """Where phase k of a major event falls: its first day and the range its last day may take, as day offsets
    inside the event."""

    event: MajorEvent
    k: int
    count: int
    start: int
    low: int
    high: int

    def date(self, offset: int) -> dt.date:
        return self.event.start + dt.timedelta(days=offset)


def phase_slot(event: MajorEvent, k: int, count: int, previous: Phase | None) -> PhaseSlot:
    """Phase k starts the day after the previous phase of the same event ends (the first phase, with the event)."""
    length = (event.end - event.start).days + 1
    start = (previous.end - event.start).days + 1 if previous and k > 0 else 0
    low, high = phase_bounds(length, count, k, start)
    return PhaseSlot(event, k, count, start, low, high)


def init_variables(persona: Persona, arcs: list[LifeArc], first: MajorEvent) -> dict:
    """What phases_init.j2 is rendered with: the persona before its first major event."""
    return {**persona_and_arcs(persona, arcs), "event": event_view(first, arcs)}


def phase_variables(persona: Persona, arcs: list[LifeArc], slot: PhaseSlot, snapshot: Snapshot,
                    previous: Phase | None) -> dict:
    """What phases_generate.j2 is rendered with; `previous` is shown only inside the same event."""
    return {
        **persona_and_arcs(persona, arcs), "event": event_view(slot.event, arcs),
        "snapshot": snapshot.model_dump(mode="json"), "k": slot.k, "count": slot.count, "start_day": slot.start,
        "low": slot.low, "high": slot.high, "start_date": slot.date(slot.start).isoformat(),
        "previous": previous.model_dump(mode="json") if previous and slot.k > 0 else None,
    }


def phase_view(draft: BaseModel, slot: PhaseSlot) -> dict:
    """The drafted phase with its end day clamped into the slot, as phases_update.j2 sees it."""
    end = min(max(draft.end_day, slot.low), slot.high)
    return {"title": draft.title.strip(), "description": draft.description.strip(),
            "start": slot.date(slot.start).isoformat(), "end": slot.date(end).isoformat()}


def update_variables(persona: Persona, arcs: list[LifeArc], event: MajorEvent, snapshot: Snapshot,
                     phase: dict) -> dict:
    """What phases_update.j2 is rendered with: the snapshot before the phase, and the phase."""
    return {**persona_and_arcs(persona, arcs), "event": event_view(event, arcs),
            "snapshot": snapshot.model_dump(mode="json"), "phase": phase}


def build_phase(persona: Persona, slot: PhaseSlot, phase: dict, before: Snapshot, after: Snapshot) -> Phase:
    return Phase(
        id=mint_id(slot.event.id, "phase", slot.k), persona_id=persona.id, major_event_id=slot.event.id,
        index=slot.k, title=phase["title"], description=phase["description"], start=phase["start"],
        end=phase["end"], snapshot_before=before, snapshot_after=after,
    )


class PhasesRun:
    """One run of the stage: the persona, its arcs and major events (in time order), shared by one sequential
    chain of phase units for the whole persona."""

    def __init__(self, ctx: StageContext):
        self.ctx = ctx
        self.persona = ctx.persona
        self.arcs = ctx.arcs
        self.events = sorted(ctx.major_events, key=lambda e: (e.start, e.index))
        self.snapshot_model = snapshot_answer(len(self.arcs))

    async def initial_snapshot(self) -> Snapshot:
        variables = init_variables(self.persona, self.arcs, self.events[0])
        answer = await self.ctx.ask("phases", "phases_init.j2", variables, self.snapshot_model)
        return to_snapshot(answer, self.arcs)

    async def generate_phase(self, event: MajorEvent, k: int, count: int, previous_key: str | None) -> Records:
        previous = self.ctx.done_records(previous_key, "phases.jsonl", Phase)[0] if previous_key else None
        before = previous.snapshot_after if previous else await self.initial_snapshot()
        slot = phase_slot(event, k, count, previous)
        draft = await self.ctx.ask("phases", "phases_generate.j2",
                                   phase_variables(self.persona, self.arcs, slot, before, previous),
                                   phase_answer(slot.low, slot.high))
        phase = phase_view(draft, slot)
        updated = await self.ctx.ask("phases", "phases_update.j2",
                                     update_variables(self.persona, self.arcs, event, before, phase),
                                     self.snapshot_model)
        return {"phases.jsonl": [build_phase(self.persona, slot, phase, before, to_snapshot(updated, self.arcs))]}

    def chain(self) -> list[tuple[str, Callable[[], Awaitable[Records]]]]:
        """Every phase of every major event, each unit reading the one before it."""
        work = []
        previous_key = None
        for event in self.events:
            count = phase_count(event, self.ctx.section.phases_per_event)
            for k in range(count):
                key = mint_id(event.id, "phase", k)
                work.append((key, partial(self.generate_phase, event, k, count, previous_key)))
                previous_key = key
        return work

    async def run(self) -> None:
        # One chain for the whole persona: the last snapshot of an event is the first of the next.
        await self.ctx.units(self.chain(), sequential=True)


async def run(ctx: StageContext) -> None:
    await PhasesRun(ctx).run()


STAGE = Stage(
    name="phases",
    reads=("persona.jsonl", "arcs.jsonl", "major_events.jsonl"),
    writes=("phases.jsonl",),
    templates=("phases_init.j2", "phases_generate.j2", "phases_update.j2"),
    tasks=("phases",),
    body=run,
    help="phases.jsonl: phases of each major event, generated from a rolling snapshot",
)
