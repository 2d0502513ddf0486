"""Stage `phases`: CloneMem's Algorithm 1 — phases of each major event generated from a rolling snapshot."""

from __future__ import annotations

import datetime as dt
from functools import lru_cache

from pydantic import BaseModel, Field, create_model

from synth.models import LifeArc, MajorEvent, Persona, Phase, Snapshot, mint_id
from synth.stage import Stage, StageContext
from synth.stages.common import arc_views, event_view


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
                    arc_status={arc.id: text.strip() for arc, text in zip(arcs, answer.arc_status)})


def phase_count(event: MajorEvent, per_event: int) -> int:
    """NUMPHASES(E): the configured count, fewer when the event has fewer days (phases never share a day)."""
    return max(1, min(per_event, (event.end - event.start).days + 1))


def phase_bounds(length: int, count: int, k: int, start: int) -> tuple[int, int]:
    """The day offsets (inside the event) where phase k may end: room is left for each later phase; the last
    phase ends with the event, so the phases tile the event without gaps or overlaps."""
    if k == count - 1:
        return length - 1, length - 1
    return start, length - 1 - (count - 1 - k)


def _phase(done: dict | None) -> Phase:
    return Phase.model_validate(done["phases.jsonl"][0])


async def run(ctx: StageContext) -> None:
    persona: Persona = ctx.read("persona.jsonl")[0]
    arcs: list[LifeArc] = ctx.read("arcs.jsonl")
    events = sorted(ctx.read("major_events.jsonl"), key=lambda e: (e.start, e.index))
    per_event = ctx.section.phases_per_event
    base = {"persona": persona.model_dump(mode="json"), "arcs": arc_views(arcs)}
    snapshot_model = snapshot_answer(len(arcs))

    async def initial_snapshot() -> Snapshot:
        first = event_view(events[0], arcs)
        answer = await ctx.ask("phases", "phases_init.j2", {**base, "event": first}, snapshot_model)
        return to_snapshot(answer, arcs)

    def unit(event: MajorEvent, k: int, count: int, previous_key: str | None):
        async def generate_phase() -> dict[str, list]:
            previous = _phase(ctx.done(previous_key)) if previous_key else None
            before = previous.snapshot_after if previous else await initial_snapshot()
            length = (event.end - event.start).days + 1
            start = (previous.end - event.start).days + 1 if previous and k > 0 else 0
            low, high = phase_bounds(length, count, k, start)
            draft = await ctx.ask("phases", "phases_generate.j2", {
                **base, "event": event_view(event, arcs), "snapshot": before.model_dump(mode="json"),
                "k": k, "count": count, "start_day": start, "low": low, "high": high,
                "start_date": (event.start + dt.timedelta(days=start)).isoformat(),
                "previous": previous.model_dump(mode="json") if previous and k > 0 else None,
            }, phase_answer(low, high))
            end = min(max(draft.end_day, low), high)
            phase = {"title": draft.title.strip(), "description": draft.description.strip(),
                     "start": (event.start + dt.timedelta(days=start)).isoformat(),
                     "end": (event.start + dt.timedelta(days=end)).isoformat()}
            updated = await ctx.ask("phases", "phases_update.j2", {
                **base, "event": event_view(event, arcs), "snapshot": before.model_dump(mode="json"),
                "phase": phase,
            }, snapshot_model)
            record = Phase(
                id=mint_id(event.id, "phase", k), persona_id=persona.id, major_event_id=event.id, index=k,
                title=phase["title"], description=phase["description"], start=phase["start"], end=phase["end"],
                snapshot_before=before, snapshot_after=to_snapshot(updated, arcs),
            )
            return {"phases.jsonl": [record]}

        return generate_phase

    work = []
    previous_key = None
    for event in events:
        count = phase_count(event, per_event)
        for k in range(count):
            key = mint_id(event.id, "phase", k)
            work.append((key, unit(event, k, count, previous_key)))
            previous_key = key
    # One chain for the whole persona: the last snapshot of an event is the first of the next.
    await ctx.units(work, sequential=True)


STAGE = Stage(
    name="phases",
    reads=("persona.jsonl", "arcs.jsonl", "major_events.jsonl"),
    writes=("phases.jsonl",),
    templates=("phases_init.j2", "phases_generate.j2", "phases_update.j2"),
    tasks=("phases",),
    body=run,
    help="phases.jsonl: phases of each major event, generated from a rolling snapshot",
)
