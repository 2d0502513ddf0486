"""Stage `events`: each phase expands into dated detailed events, each co-generated with its evidence."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Literal

from pydantic import BaseModel, Field, create_model

from synth.config.settings import EventsSettings
from synth.core.calendar import country_of, holidays_between
from synth.engine.stage import Records, Stage, StageContext
from synth.life.gaps import DayPins, close_gaps, open_gaps, text_pin, travel_spans
from synth.life.registry_view import bounded_registry
from synth.records import (
    Event,
    Evidence,
    EvidenceKind,
    LifeArc,
    MajorEvent,
    Person,
    Persona,
    Phase,
    mint_id,
)
from synth.stages.common import (
    Newcomer,
    answer_tokens,
    arc_label_ids,
    arc_moves,
    event_view,
    newcomers,
    persona_and_arcs,
    relation_labels,
    state_map,
    unique_labels,
)


@lru_cache(maxsize=None)
def events_answer(days: int, people: tuple[str, ...], arcs: tuple[str, ...], count: int,
                  min_evidence: int, max_evidence: int, min_arcs: int = 1, newcomers: int = 0) -> type[BaseModel]:
    """Detailed events with their evidence; days, people and arcs are bounded or enumerated by the schema.
    Everyday evidence may move no arc (`min_arcs` 0): it is life, not a step of an arc. An event may bring at most
    `newcomers` people (they take part in it) and as many places into the registry, as a phase may."""
    evidence = create_model(
        "EvidenceDraft",
        kind=(EvidenceKind, ...),
        statement=(str, ...),
        arcs=(list[Literal[arcs]], Field(min_length=min_arcs, max_length=3)),
        private=(bool, ...),  # kept to themself or someone close: no public medium may carry it (synth.quality.privacy)
    )
    event = create_model(
        "EventDraft",
        title=(str, ...),
        description=(str, ...),
        location=(str, ...),
        day=(int, Field(ge=0, le=days - 1)),
        hour=(int, Field(ge=0, le=23)),
        minute=(int, Field(ge=0, le=59)),
        # everyone the prompt lists may take part: a cap below that would leave a listed person unnamed
        participants=(list[Literal[people]], Field(min_length=0, max_length=max(4, len(people)))),
        evidence=(list[evidence], Field(min_length=min_evidence, max_length=max_evidence)),
        new_people=(list[Newcomer], Field(default_factory=list, max_length=newcomers)),
        new_places=(list[Newcomer], Field(default_factory=list, max_length=newcomers)),
    )
    return create_model("PhaseEvents", events=(list[event], Field(min_length=count, max_length=count)))


def build_events(persona: Persona, phase: Phase, people: dict[str, str], arcs: dict[str, str],
                 answer: BaseModel, known: list[Person] | None = None, key: str = "event") -> dict[str, list]:
    """Events in time order with minted ids; participant and arc labels mapped back to ids (deduplicated). The
    people and places an event introduces (`newcomers`, against the registry `known`) take part in it and go to
    `people.jsonl`. `key` names the events' ids (`mint_id(phase id, key, i)`; a gap's filler has its own) and
    `phase` may be a window of the phase (a filler's days)."""
    drafts = sorted(answer.events, key=lambda d: (d.day, d.hour, d.minute))
    events, evidence, added = [], [], []
    known = list(known or [])
    for i, draft in enumerate(drafts):
        day = phase.start + dt.timedelta(days=min(draft.day, (phase.end - phase.start).days))
        event_id = mint_id(phase.id, key, i)
        new = newcomers(draft, event_id, phase, day, known + added, event_id)
        added += new
        events.append(Event(
            id=event_id, persona_id=persona.id, phase_id=phase.id,
            time=dt.datetime.combine(day, dt.time(draft.hour, draft.minute)), title=draft.title.strip(),
            description=draft.description.strip(), location=draft.location.strip(),
            participant_ids=list(dict.fromkeys([*(people[name] for name in draft.participants),
                                                *(p.id for p in new if p.kind == "person")])),
        ))
        for j, item in enumerate(draft.evidence):
            evidence.append(Evidence(
                id=mint_id(event_id, "evidence", j), persona_id=persona.id, event_id=event_id, kind=item.kind,
                statement=item.statement.strip(), arc_ids=list(dict.fromkeys(arcs[label] for label in item.arcs)),
                private=item.private,
            ))
    return {"events.jsonl": events, "evidence.jsonl": evidence, "people.jsonl": added}


FILL_ROUNDS = 3  # filler rounds at most: the first covers every stretch; later ones only what is still open


def spread_days(answer: BaseModel, days: int) -> BaseModel:
    """The answer's events (in their time order) moved to days spread evenly over `days`: the k-th of n on day
    (2k + 1)·days / 2n, so no stretch between them is longer than days / n. An event whose text or evidence names
    a calendar date keeps its day, and one naming a weekday moves by whole weeks only, to the nearest such day (a
    capable writer's "周二凌晨" landed on a Sunday)."""
    drafts = sorted(answer.events, key=lambda d: (d.day, d.hour, d.minute))
    n = len(drafts)
    moved = []
    for k, d in enumerate(drafts):
        target = (2 * k + 1) * days // (2 * n)
        pin = text_pin(" ".join([d.title, d.description, *(e.statement for e in d.evidence)]))
        if pin == "day":
            target = d.day
        elif pin == "weekday":
            same = range(d.day % 7, days, 7)
            target = min(same, key=lambda x: (abs(x - target), x)) if same else d.day
        moved.append(d.model_copy(update={"day": target}))
    return answer.model_copy(update={"events": moved})


def merge_newcomers(events: list[Event], added: list[Person]) -> tuple[list[Event], list[Person]]:
    """The events' newcomers over all phases (their units ran concurrently, each against the phases' registry): a
    name introduced by two events is one person or place — the earliest (first day, then id) — and the later
    event's participant id is mapped to it."""
    kept: dict[tuple[str, str], Person] = {}
    alias: dict[str, str] = {}
    for person in sorted(added, key=lambda p: (p.first_date or dt.date.min, p.id)):
        key = (person.kind, person.name.strip().casefold())
        if key in kept:
            alias[person.id] = kept[key].id
        else:
            kept[key] = person
    events = [e.model_copy(update={"participant_ids": list(dict.fromkeys(alias.get(p, p) for p in e.participant_ids))})
              if any(p in alias for p in e.participant_ids) else e for e in events]
    return events, list(kept.values())


@dataclass(frozen=True)
class EventQuota:
    """How many detailed events a phase gets, and how many evidence items each event carries."""

    count: int
    min_evidence: int
    max_evidence: int


def event_quota(section: EventsSettings, days: int = 7) -> EventQuota:
    """A major phase's events: its length in weeks times `events_per_week`, within [min_events, max_events]; the
    evidence range repaired so at least one item is asked for and the range is not empty."""
    low = max(1, section.min_evidence)
    count = min(section.max_events, max(section.min_events, round(days * section.events_per_week / 7)))
    return EventQuota(count, low, max(low, section.max_evidence))


def everyday_quotas(section: EventsSettings, major_events: int, days: list[int]) -> list[EventQuota]:
    """The events of each everyday phase (`days` long): `everyday_share` of all events, shared in proportion to
    length (largest remainder), each phase at least one event per `max_gap_days` and at most `max_events` (or
    what the gap needs); one evidence item up to `min_evidence` each — everyday events are low-salience."""
    share = section.everyday_share
    total = round(share / (1 - share) * major_events)
    length = sum(days) or 1
    exact = [total * d / length for d in days]
    counts = [int(x) for x in exact]
    for i in sorted(range(len(days)), key=lambda i: exact[i] - counts[i], reverse=True)[:total - sum(counts)]:
        counts[i] += 1
    out = []
    for d, n in zip(days, counts, strict=True):
        floor = -(-d // section.max_gap_days)
        out.append(EventQuota(max(floor, min(n, section.max_events)), 1, max(1, min(2, section.min_evidence))))
    return out


def phase_days(phase: Phase) -> int:
    return (phase.end - phase.start).days + 1


def events_variables(persona: Persona, arcs: list[LifeArc], major: MajorEvent, phase: Phase, quota: EventQuota,
                     people: list[str], context: dict | None = None, window: Phase | None = None) -> dict:
    """What events_generate.j2 is rendered with: the phase inside its major event (or everyday stretch), who may
    take part, and `context`: the arc states it moves, the registry, the phases before it and the holidays.
    `window`: the days of the phase to fill (a gap's filler; the whole phase by default) — the phase keeps its own
    bounds in the prompt, so a filler does not show the same phase with other dates."""
    context = {"moves": [], "introduced": [], "recent": [], "holidays": [], "filler": False, "written": [],
               **(context or {})}
    window = window or phase
    return {**persona_and_arcs(persona, arcs), "event": event_view(major, arcs),
            "phase": phase.model_dump(mode="json"), "window": window.model_dump(mode="json", include={"start", "end"}),
            "days": phase_days(window), "count": quota.count,
            "min_evidence": quota.min_evidence, "max_evidence": quota.max_evidence, "people": people,
            "newcomers": 0, **context}


def registry_labels(people: list[Person], phase: Phase) -> dict[str, str]:
    """Label → person id of everyone in the registry by the phase's start (the relations, then those introduced
    up to this phase, this one included): the participants an events answer may name."""
    known = [p for p in people if p.kind == "person" and (p.first_date is None or p.first_date <= phase.start)]
    return dict(zip(unique_labels([p.name for p in known]), (p.id for p in known), strict=True))


class EventsRun:
    """One run of the stage: the persona, its arcs, major events and registry, the quota of every phase (major
    phases by length, everyday ones by the configured share), shared by one concurrent unit per phase."""

    def __init__(self, ctx: StageContext):
        self.ctx = ctx
        self.persona = ctx.persona
        self.arcs = ctx.arcs
        self.majors = {e.id: e for e in ctx.major_events}
        self.section: EventsSettings = ctx.section
        self.people = ctx.read("phase_people.jsonl")  # the registry the phases grew; events add theirs
        self.arc_ids = arc_label_ids(self.arcs)
        self.phases = sorted(ctx.phases, key=lambda p: (p.start, p.index))
        self.quotas = self.plan_quotas()
        self.country = country_of(ctx.persona, ctx.settings.holiday_countries, ctx.language)
        seeds = ctx.read("seeds.jsonl") if (ctx.dir / "seeds.jsonl").is_file() else []
        self.travel = travel_spans(self.majors.values(), seeds, self.section.travel_seeds)  # gaps allowed there
        # an event naming a date, an occasion or a public holiday of the timeline keeps its day when re-dated
        self.pins = DayPins.of(self.section.date_words,
                               holidays_between(self.country, ctx.language, self.persona.start, self.persona.end))

    def everyday(self, phase: Phase) -> bool:
        major = self.majors.get(phase.major_event_id)
        return major is not None and major.kind == "everyday"

    def plan_quotas(self) -> dict[str, EventQuota]:
        quotas = {p.id: event_quota(self.section, phase_days(p)) for p in self.phases if not self.everyday(p)}
        everyday = [p for p in self.phases if self.everyday(p)]
        shares = everyday_quotas(self.section, sum(q.count for q in quotas.values()), [phase_days(p) for p in everyday])
        quotas = {**quotas, **{p.id: q for p, q in zip(everyday, shares, strict=True)}}
        # a phase gets at least one event per state it reaches: each transition lives its own trigger
        return {key: EventQuota(max(q.count, self.reached(key)), q.min_evidence, q.max_evidence)
                for key, q in quotas.items()}

    def reached(self, phase_id: str) -> int:
        """How many anchor states the phase brings about (over all arcs)."""
        at = next(i for i, p in enumerate(self.phases) if p.id == phase_id)
        before = state_map(self.phases[at - 1].arc_states) if at else {}
        return sum(len(m["reaches"]) for m in arc_moves(self.arcs, before, state_map(self.phases[at].arc_states)))

    def context(self, phase: Phase) -> dict:
        at = self.phases.index(phase)
        before = state_map(self.phases[at - 1].arc_states) if at else {}
        recent = self.phases[max(0, at - self.section.recent_phases):at]
        introduced = [p.model_dump(mode="json") for p in self.shown(phase, recent)]
        return {"moves": arc_moves(self.arcs, before, state_map(phase.arc_states), (phase.start, phase.end)),
                "introduced": introduced,
                "recent": [p.model_dump(mode="json", include={"title", "description", "start", "end"})
                           for p in recent],
                "holidays": holidays_between(self.country, self.ctx.language, phase.start, phase.end, workdays=True)}

    def shown_people(self, phase: Phase) -> list[Person]:
        """Who an events answer may name as a participant: the relations and the introduced people its prompt
        shows — the registry is bounded, the enum with it."""
        at = self.phases.index(phase)
        shown = {p.id for p in self.shown(phase, self.phases[max(0, at - self.section.recent_phases):at])}
        return [p for p in self.people if p.origin != "introduced" or p.id in shown]

    def shown(self, phase: Phase, recent: list[Phase]) -> list[Person]:
        """The introduced entries the phase's prompt shows (synth.life.registry_view): those the phase and the
        phases before it name, then those met in the last `registry_days` within `registry_tokens`."""
        texts = [t for p in (*recent, phase) for t in (p.title, p.description)]
        return bounded_registry(self.people, phase.start, self.section.registry_days, self.section.registry_tokens,
                                texts=texts)

    async def generate(self, phase: Phase, fill: Phase | None = None, written: Sequence[Event] = (),
                       round_: int = 0) -> Records:
        """A phase's events; with `fill` (a window of days of the phase that no event could be moved into), the
        small everyday events that fill it, one per `max_gap_days - gap_room_days` days, shown inside the phase's
        major event with the phase's events already `written`."""
        quota, major, window, key = self.quotas[phase.id], self.majors[phase.major_event_id], phase, "event"
        small = major.kind == "everyday"
        if fill is not None:
            quota = EventQuota(min(self.section.max_events, -(-phase_days(fill) // (self.limit + 1))), 1,
                               max(1, min(2, self.section.min_evidence)))
            window, key, small = fill, f"gap-{fill.start}" + (f"-{round_}" if round_ else ""), True
        people = registry_labels(self.shown_people(phase), phase) or relation_labels(self.persona)
        model = events_answer(phase_days(window), tuple(people), tuple(self.arc_ids), quota.count,
                              quota.min_evidence, quota.max_evidence, 0 if small else 1, self.section.new_people)
        shown = [{"time": e.time.isoformat(timespec="minutes").replace("T", " "), "title": e.title}
                 for e in sorted(written, key=lambda e: e.time) if e.phase_id == phase.id]
        variables = events_variables(self.persona, self.arcs, major, phase, quota, list(people),
                                     {**self.context(phase), "newcomers": self.section.new_people,
                                      "filler": fill is not None, "written": shown,
                                      # an evidence tells what its traces can hold: they come at most this long after
                                      "within_hours": self.ctx.settings.traces.max_delay_hours}, window)
        estimate = quota.count * (220 + quota.max_evidence * 90)
        answer = await self.ctx.ask("events", "events_generate.j2", variables, model,
                                    max_tokens=answer_tokens(self.ctx, estimate))
        if fill is not None:  # a filler is there to cover its days: its events spread over them, whatever days it chose
            answer = spread_days(answer, phase_days(window))
        return build_events(self.persona, window, people, self.arc_ids, answer, self.people, key)

    @property
    def limit(self) -> int:
        """The longest stretch of days without an event that leaves room for the traces' delay."""
        return max(1, self.section.max_gap_days - self.section.gap_room_days)

    def dated(self, placed: Sequence[Event] = ()) -> tuple[list[Event], list[Person]]:
        """Every unit's events so far, newcomers merged, re-dated to close the gaps (`close_gaps`). The events of
        an earlier re-dating (`placed`) start from the days it gave them, which the fillers were shown: started
        again from the model's days, a ride shown to a filler on Jan 9 came back on Jan 16, among the filler's."""
        done = self.ctx.collected()
        events, added = merge_newcomers([Event.model_validate(r) for r in done["events.jsonl"]],
                                        [Person.model_validate(r) for r in done["people.jsonl"]])
        at = {e.id: e for e in placed}
        events = [e.model_copy(update={"time": at[e.id].time, "redated_from": at[e.id].redated_from})
                  if e.id in at else e for e in events]
        pins = self.pins.with_evidence(Evidence.model_validate(r) for r in done["evidence.jsonl"])
        return close_gaps(events, {p.id: p for p in self.phases}, self.persona.start, self.persona.end, self.limit,
                          self.travel, pins), added

    def fillers(self, events: list[Event]) -> list[tuple[Phase, Phase]]:
        """Per stretch still too long (outside travel): the phase holding its middle day and the window of the
        stretch's days inside that phase."""
        out = []
        for gap in open_gaps([e.time.date() for e in events], self.persona.start, self.persona.end, self.limit,
                             self.travel):
            middle = gap.after + (gap.before - gap.after) / 2
            phase = next((p for p in self.phases if p.start <= middle <= p.end), None)
            if phase is not None:
                lo, hi = max(phase.start, gap.after + dt.timedelta(days=1)), min(phase.end, gap.before - dt.timedelta(days=1))
                step = dt.timedelta(days=self.section.max_events * (self.limit + 1))  # what one filler's events cover
                while lo <= hi:
                    out.append((phase, phase.model_copy(update={"start": lo, "end": min(hi, lo + step - dt.timedelta(days=1))})))
                    lo += step
        return out

    async def run(self) -> dict[str, list]:
        """Every phase's events (one concurrent unit each), re-dated to close the gaps; a stretch no event could be
        moved into gets everyday events of its own (`[events] fill_gaps`), and everything is re-dated once more."""
        await self.ctx.units([(phase.id, partial(self.generate, phase)) for phase in self.ctx.phases])
        events, added = self.dated()
        for round_ in range(FILL_ROUNDS if self.section.fill_gaps else 0):
            # a stretch still open after a round (its filler's events re-dated elsewhere, or none kept) gets another
            work = [(f"gap:{phase.id}:{window.start}" + (f":{round_}" if round_ else ""),
                     partial(self.generate, phase, window, events, round_)) for phase, window in self.fillers(events)]
            if not work:
                break
            await self.ctx.units(work)
            events, added = self.dated(events)
        done = self.ctx.collected()
        return {"events.jsonl": events, "evidence.jsonl": done["evidence.jsonl"], "people.jsonl": [*self.people, *added]}


async def run(ctx: StageContext) -> dict[str, list]:
    return await EventsRun(ctx).run()


STAGE = Stage(
    name="events",
    reads=("persona.jsonl", "arcs.jsonl", "major_events.jsonl", "phases.jsonl", "phase_people.jsonl"),
    optional_reads=("seeds.jsonl",),  # which major events are travel (their gaps are allowed)
    writes=("events.jsonl", "evidence.jsonl", "people.jsonl"),
    templates=("events_generate.j2",),
    tasks=("events",),
    body=run,
    help="events.jsonl, evidence.jsonl, people.jsonl: dated detailed events per phase, with co-generated evidence; "
         "the registry with the people and places the events introduced",
)
