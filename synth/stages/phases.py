"""Stage `phases`: CloneMem's Algorithm 1 — phases of each major event generated from a rolling snapshot."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from functools import lru_cache, partial

from pydantic import BaseModel, Field, create_model

from synth.core.calendar import country_of, days_named, days_needed, holidays_between, weekdays_between
from synth.engine.stage import Records, Stage, StageContext
from synth.life.registry_view import bounded_registry
from synth.quality.label_check import key_units, naming_units
from synth.records import ArcState, LifeArc, MajorEvent, Person, Persona, Phase, Snapshot, mint_id
from synth.stages.common import Newcomer, arc_moves, event_view, newcomers, persona_and_arcs, state_map


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
def phase_answer(first_end: int, last_end: int, newcomers: int = 0) -> type[BaseModel]:
    return create_model(
        "PhaseDraft",
        title=(str, ...),
        description=(str, ...),
        end_day=(int, Field(ge=first_end, le=last_end)),
        new_people=(list[Newcomer], Field(default_factory=list, max_length=newcomers)),
        new_places=(list[Newcomer], Field(default_factory=list, max_length=newcomers)),
    )


def to_snapshot(answer: BaseModel, arcs: list[LifeArc]) -> Snapshot:
    return Snapshot(energy=answer.energy, stress=answer.stress, dominant_emotion=answer.dominant_emotion.strip(),
                    focus=answer.focus.strip(),
                    arc_status={arc.id: text.strip() for arc, text in zip(arcs, answer.arc_status, strict=True)})


def phase_count(event: MajorEvent, per_event: int, everyday_days: int | None = None, min_days: int = 1) -> int:
    """NUMPHASES(E): the configured count, fewer when the event has fewer than `min_days` days a phase (a phase of
    one or two days is no "gradual stretch of change"); an everyday stretch gets one phase per `everyday_days` days
    (rounded up)."""
    days = (event.end - event.start).days + 1
    if event.kind == "everyday" and everyday_days:
        return max(1, -(-days // everyday_days))
    return max(1, min(per_event, days // max(1, min_days)))


def states_after(before: dict[str, int], target: dict[str, int], k: int, count: int,
                 held: frozenset[str] = frozenset()) -> dict[str, int]:
    """Each arc's anchor state at the end of phase k of `count`, from `before` (the end of the phase before).
    The transitions still missing to `target` (the event's alignment), counted over all arcs, are shared over the
    phases left (rounded half up), so three arcs that each move once in a two-phase event move twice in the first
    phase and once in the second rather than all in the first; inside a phase the steps go one per arc in turn
    (arc order), so one arc does not take two steps while another waits. The last phase reaches the target and a
    change never happens between phases. An everyday stretch's target is the state it starts in: nothing moves.
    `held` (`dated_slot`): arcs whose next change the event dates after this phase; they wait for a later phase,
    and the phase reaches fewer changes rather than another arc's early (the last phase reaches every target)."""
    left = max(1, count - k)
    out = {arc: before.get(arc, 0) for arc in target}
    missing = {arc: max(0, goal - out[arc]) for arc, goal in target.items()}
    total = sum(missing.values())
    take = total if left == 1 else (2 * total + left) // (2 * left)
    waiting = held if left > 1 else frozenset()
    take = min(take, sum(n for arc, n in missing.items() if arc not in waiting))
    while take > 0:
        for arc in target:
            if take > 0 and missing[arc] > 0 and arc not in waiting:
                out[arc] += 1
                missing[arc] -= 1
                take -= 1
    return out


def told_order(description: str, arcs: list[LifeArc], start: dict[str, int], target: dict[str, int]) -> dict[str, int]:
    """`target` with its arcs in the order the major event's description tells their next change: where both the
    next state's trigger and its label have been told (the later of the first places a content unit of each
    appears: a stemmed word of five letters or more, or a Chinese character pair — `key_units`, whose stems are
    prefixes of the words they come from; the label's units less the trigger's; one of them when the other is not
    found). A state is reached with its outcome, not its first cause: a capable writer's event told an invitation
    to demo at a festival at its start and the demo at its end, and the state "demoing on stage" came in the first
    phase, the side projects shelved at the start in the second;
    the arcs it does not tell after them in arc order: `states_after` steps the arcs in this order, so the phase that
    comes first gets the change the description tells first (a writer's event had the reunion before the deadlines
    were checked; the schedule, stepping in arc order, put the deadlines in the first phase, the reunion in the
    second)."""
    text = description.lower()
    by_id = {arc.id: arc for arc in arcs}

    def first(units: set[str]) -> float:
        return min((text.find(cue) for cue in naming_units(units) if cue in text), default=float("inf"))

    def told_at(arc_id: str) -> float:
        arc, k = by_id.get(arc_id), start.get(arc_id, 0) + 1
        if arc is None or k >= len(arc.anchor_states) or target[arc_id] < k:
            return float("inf")
        trigger = key_units(arc.anchor_states[k].trigger)
        told = [at for at in (first(trigger), first(key_units(arc.anchor_states[k].label) - trigger))
                if at != float("inf")]
        return max(told, default=float("inf"))

    order = sorted(enumerate(target), key=lambda pair: (told_at(pair[1]), pair[0]))
    return {arc_id: target[arc_id] for _, arc_id in order}


_SENTENCE = re.compile(r"(?<=[.!?;。！？；])\s*")


def trigger_days(description: str, arcs: list[LifeArc], before: dict[str, int], target: dict[str, int],
                 near: dt.date) -> dict[str, dt.date]:
    """Per arc still to change, the day the major event's description dates its next change to: the earliest
    calendar day named in the first sentence that tells the next state's trigger (a content unit of it, as
    `told_order` finds them). A capable writer's phase was told a freelancer's state "paid in full" while the
    event's own text said "his last invoice is paid on 31 January", a date of the next phase."""
    by_id = {arc.id: arc for arc in arcs}
    sentences = [s for s in _SENTENCE.split(description) if s]
    out = {}
    for arc_id, goal in target.items():
        arc, k = by_id.get(arc_id), before.get(arc_id, 0) + 1
        if arc is None or k >= len(arc.anchor_states) or goal < k:
            continue
        cues = naming_units(key_units(arc.anchor_states[k].trigger))
        told = next((s for s in sentences if any(cue in s.lower() for cue in cues)), "")
        if days := days_named(told, near):
            out[arc_id] = min(days)
    return out


def phase_bounds(length: int, count: int, k: int, start: int, most: int | None = None,
                 moving_later: int = 0) -> tuple[int, int]:
    """The day offsets (inside the event) where phase k may end: room is left for each later phase; the last
    phase ends with the event, so the phases tile the event without gaps or overlaps. A later phase that reaches
    a state (`moving_later` of them) keeps its fair share of the days left, the others a day each (a capable
    writer's first phase took 9 of 10 days and left the state still to come one day: applying, hearing back and
    telling her mother on one date). `most` (an everyday stretch's `everyday_phase_days`): no phase longer than
    that — this one ends within `most` days of its start, and late enough that the phases after it, `most` days
    each at most, still reach the end (`count` must be at least the length over `most`, rounded up, as
    `phase_count` makes it)."""
    if k == count - 1:
        return length - 1, length - 1
    later = count - 1 - k
    share = max(1, (length - start) // (count - k))
    reserved = later + min(moving_later, later) * (share - 1)
    low, high = start, max(start, length - 1 - reserved)
    if most:
        low, high = max(low, length - 1 - later * most), min(high, start + most - 1)
    return low, high


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


def dated_slot(slot: PhaseSlot, days: dict[str, dt.date], before: dict[str, int], after: dict[str, int],
               target: dict[str, int], previous: Phase | None, most: int | None) -> tuple[PhaseSlot, dict[str, int]]:
    """The phase's slot and states kept to the days the event dates its changes to (`trigger_days`): a change
    dated after the phase's fair share of the days left (or its latest end) waits for a later phase
    (`states_after`'s `held`), and a change the phase reaches is not dated after its earliest end: the phase ends
    on that day or later. A capable writer's first phase was stretched to the show its event dated on the
    fourteenth of fifteen days, leaving the second phase one day of aftermath."""
    length = (slot.event.end - slot.event.start).days + 1
    share = slot.start + max(1, (length - slot.start) // (slot.count - slot.k)) - 1
    held = frozenset(a for a, day in days.items() if day > slot.date(min(slot.high, max(slot.low, share))))
    if held and slot.k < slot.count - 1:
        after = states_after(before, target, slot.k, slot.count, held)
        slot = phase_slot(slot.event, slot.k, slot.count, previous, most,
                          phases_reaching(after, target, slot.k, slot.count))
    due = [(day - slot.event.start).days for a, day in days.items()
           if after.get(a, 0) > before.get(a, 0) and slot.date(slot.low) < day <= slot.date(slot.high)]
    return (replace(slot, low=max(due)) if due else slot), after


def phase_slot(event: MajorEvent, k: int, count: int, previous: Phase | None, most: int | None = None,
               moving_later: int = 0) -> PhaseSlot:
    """Phase k starts the day after the previous phase of the same event ends (the first phase, with the event);
    `most`: the longest a phase may be (everyday stretches); `moving_later`: how many later phases of the event
    reach a state (`phases_reaching`)."""
    length = (event.end - event.start).days + 1
    start = (previous.end - event.start).days + 1 if previous and k > 0 else 0
    low, high = phase_bounds(length, count, k, start, most, moving_later)
    return PhaseSlot(event, k, count, start, low, high)


def phases_reaching(after: dict[str, int], target: dict[str, int], k: int, count: int) -> int:
    """How many of the phases after phase k (whose states are `after`) reach a new state, as `states_after`
    will share the event's changes out to them."""
    moving, states = 0, after
    for later in range(k + 1, count):
        nxt = states_after(states, target, later, count)
        moving += nxt != states
        states = nxt
    return moving


def init_variables(persona: Persona, arcs: list[LifeArc], first: MajorEvent) -> dict:
    """What phases_init.j2 is rendered with: the persona before its first major event, every arc in its first
    state (no later state is shown: principle 10). Not the first major event: its description tells how it
    turns out, which is the future of day 0 (`first` only names the persona's timeline it opens)."""
    return {**persona_and_arcs(persona, arcs), "moves": arc_moves(arcs, {}, {})}


def phase_variables(persona: Persona, arcs: list[LifeArc], slot: PhaseSlot, snapshot: Snapshot,
                    previous: Phase | None, moves: list[dict], people: list[dict], holidays: list[dict],
                    newcomers: int) -> dict:
    """What phases_generate.j2 is rendered with; `previous` is the phase before (of any event: continuity)."""
    return {
        **persona_and_arcs(persona, arcs), "event": event_view(slot.event, arcs),
        "snapshot": snapshot.model_dump(mode="json"), "k": slot.k, "count": slot.count, "start_day": slot.start,
        "low": slot.low, "high": slot.high, "start_date": slot.date(slot.start).isoformat(),
        "low_date": slot.date(slot.low).isoformat(), "high_date": slot.date(slot.high).isoformat(),
        "previous": previous.model_dump(mode="json") if previous else None,
        "moves": moves, "people": people, "holidays": holidays, "newcomers": newcomers,
    }


def phase_view(draft: BaseModel, slot: PhaseSlot) -> dict:
    """The drafted phase with its end day clamped into the slot, as phases_update.j2 sees it; an end that leaves
    out a weekday (or the weekend) the description names moves later to take it in, where the slot allows (a
    capable writer's Monday-to-Friday phase said "at the weekend", and its events could not be dated there)."""
    end = min(max(draft.end_day, slot.low), slot.high)
    needs = days_needed(draft.description)
    for later in range(end, slot.high + 1):
        if all(need & weekdays_between(slot.date(slot.start), slot.date(later)) for need in needs):
            end = later
            break
    return {"title": draft.title.strip(), "description": draft.description.strip(),
            "start": slot.date(slot.start).isoformat(), "end": slot.date(end).isoformat()}


def update_variables(persona: Persona, arcs: list[LifeArc], event: MajorEvent, snapshot: Snapshot,
                     phase: dict, moves: list[dict]) -> dict:
    """What phases_update.j2 is rendered with: the snapshot before the phase, the phase, and the arc states it
    brings about (so the snapshot's arc status and the phase's states agree)."""
    return {**persona_and_arcs(persona, arcs), "event": event_view(event, arcs),
            "snapshot": snapshot.model_dump(mode="json"), "phase": phase, "moves": moves}


def build_phase(persona: Persona, slot: PhaseSlot, phase: dict, before: Snapshot, after: Snapshot,
                states: dict[str, int] | None = None) -> Phase:
    return Phase(
        id=mint_id(slot.event.id, "phase", slot.k), persona_id=persona.id, major_event_id=slot.event.id,
        index=slot.k, title=phase["title"], description=phase["description"], start=phase["start"],
        end=phase["end"], snapshot_before=before, snapshot_after=after,
        arc_states=[ArcState(arc_id=arc, anchor_index=i) for arc, i in (states or {}).items()],
    )


def relation_entries(persona: Persona) -> list[Person]:
    """The registry's first entries: the persona's relations, under their own ids."""
    return [Person(id=r.id, persona_id=persona.id, kind="person", name=r.name, relation=r.relation,
                   description=r.description, origin="relation") for r in persona.relations]


class PhasesRun:
    """One run of the stage: the persona, its arcs and major events (in time order), shared by one sequential
    chain of phase units for the whole persona. The chain also grows the registry of people and places."""

    def __init__(self, ctx: StageContext):
        self.ctx = ctx
        self.persona = ctx.persona
        self.arcs = ctx.arcs
        self.events = sorted(ctx.major_events, key=lambda e: (e.start, e.index))
        self.snapshot_model = snapshot_answer(len(self.arcs))
        self.country = country_of(ctx.persona, ctx.settings.holiday_countries, ctx.language)
        self.keys: list[str] = []

    async def initial_snapshot(self) -> Snapshot:
        variables = init_variables(self.persona, self.arcs, self.events[0])
        answer = await self.ctx.ask("phases", "phases_init.j2", variables, self.snapshot_model)
        return to_snapshot(answer, self.arcs)

    def registry(self, upto: int) -> list[Person]:
        """The registry as the chain's first `upto` units left it (the relations come with the first unit)."""
        known = [] if upto else relation_entries(self.persona)
        for key in self.keys[:upto]:
            known += self.ctx.done_records(key, "phase_people.jsonl", Person) or []
        return known

    async def generate_phase(self, event: MajorEvent, k: int, count: int, position: int) -> Records:
        previous_key = self.keys[position - 1] if position else None
        previous = self.ctx.done_records(previous_key, "phases.jsonl", Phase)[0] if previous_key else None
        before = previous.snapshot_after if previous else await self.initial_snapshot()
        most = self.ctx.section.everyday_phase_days if event.kind == "everyday" else None
        start_states = state_map(previous.arc_states) if previous else {}
        target = told_order(event.description, self.arcs, start_states, state_map(event.arc_states))
        same = previous if previous and previous.major_event_id == event.id else None
        after_states = states_after(start_states, target, k, count)
        slot = phase_slot(event, k, count, same, most, phases_reaching(after_states, target, k, count))
        slot, after_states = dated_slot(slot, trigger_days(event.description, self.arcs, start_states, target,
                                                           event.start), start_states, after_states, target, same, most)
        moves = arc_moves(self.arcs, start_states, after_states, (slot.date(slot.start), slot.date(slot.high)),
                          state_map(event.arc_states))
        known = self.registry(position)
        room = self.ctx.section.new_people
        holidays = holidays_between(self.country, self.ctx.language, slot.date(slot.start), slot.date(slot.high),
                                    workdays=True)
        # the registry the prompt shows is bounded (synth.life.registry_view): whom the phase before names, then
        # those met in the last `registry_days` within `registry_tokens`; the newcomers are checked against all
        texts = [previous.title, previous.description] if previous else []
        introduced = [p.model_dump(mode="json") for p in bounded_registry(
            known, slot.date(slot.start), self.ctx.section.registry_days, self.ctx.section.registry_tokens,
            texts=texts)]
        draft = await self.ctx.ask("phases", "phases_generate.j2",
                                   phase_variables(self.persona, self.arcs, slot, before, previous, moves,
                                                   introduced, holidays, room),
                                   phase_answer(slot.low, slot.high, room))
        phase = phase_view(draft, slot)
        updated = await self.ctx.ask("phases", "phases_update.j2",
                                     update_variables(self.persona, self.arcs, event, before, phase, moves),
                                     self.snapshot_model)
        record = build_phase(self.persona, slot, phase, before, to_snapshot(updated, self.arcs), after_states)
        added = newcomers(draft, record.id, record, record.start, known)
        people = (relation_entries(self.persona) if position == 0 else []) + added
        return {"phases.jsonl": [record], "phase_people.jsonl": people}

    def chain(self) -> list[tuple[str, Callable[[], Awaitable[Records]]]]:
        """Every phase of every major event (and everyday stretch), each unit reading the ones before it."""
        work = []
        for event in self.events:
            count = phase_count(event, self.ctx.section.phases_per_event, self.ctx.section.everyday_phase_days,
                                self.ctx.section.min_phase_days)
            for k in range(count):
                key = mint_id(event.id, "phase", k)
                work.append((key, partial(self.generate_phase, event, k, count, len(self.keys))))
                self.keys.append(key)
        return work

    async def run(self) -> None:
        # One chain for the whole persona: the last snapshot of an event is the first of the next.
        await self.ctx.units(self.chain(), sequential=True)


async def run(ctx: StageContext) -> None:
    await PhasesRun(ctx).run()


STAGE = Stage(
    name="phases",
    reads=("persona.jsonl", "arcs.jsonl", "major_events.jsonl"),
    writes=("phases.jsonl", "phase_people.jsonl"),
    templates=("phases_init.j2", "phases_generate.j2", "phases_update.j2"),
    tasks=("phases",),
    body=run,
    help="phases.jsonl, phase_people.jsonl: phases of each major event and everyday stretch, from a rolling "
         "snapshot; the registry of people and places as the phases grow it (events add theirs: people.jsonl)",
)
