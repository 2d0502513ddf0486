"""Stage `arcs`: the event-seed pool, life arcs with anchor states, and major events aligned with the arcs."""

from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache
from typing import Annotated, Literal

from pydantic import BaseModel, Field, create_model

from synth.config.settings import ArcsSettings
from synth.core.calendar import country_of, holidays_between
from synth.engine.stage import Records, Stage, StageContext
from synth.life.seedpool import SeedConcept, load_seed_pool, seeds_for_age
from synth.quality.label_check import key_units, naming_units
from synth.records import (
    DIMENSIONS,
    AnchorState,
    ArcState,
    EventSeed,
    LifeArc,
    MajorEvent,
    Persona,
    mint_id,
)
from synth.stages.common import answer_tokens, arc_views, unique_labels

# ------------------------------------------------------------------------------------------ (a) seed pool

class AddedSeed(BaseModel):
    name: str
    title: str
    description: str


@lru_cache(maxsize=None)
def seed_answer(names: tuple[str, ...], keep_min: int, keep_max: int, added: int) -> type[BaseModel]:
    return create_model(
        "SeedPool",
        keep=(list[Literal[names]], Field(min_length=keep_min, max_length=keep_max)),
        added=(list[AddedSeed], Field(min_length=added, max_length=added)),
    )


def seed_labels(seeds: list, language: str) -> dict[str, str]:
    """Label → seed name: what the model picks seeds by. The names are data ids (English snake_case); a Chinese
    prompt offers the seeds' native titles instead (made unique) and code maps them back."""
    names = [s.name for s in seeds]
    if language == "en":
        return dict(zip(names, names, strict=True))
    titles = unique_labels([s.title_in(language) if hasattr(s, "title_in") else s.title for s in seeds])
    return dict(zip(titles, names, strict=True))


def slug(text: str) -> str:
    return re.sub(r"\W+", "_", text.strip().lower()).strip("_")[:48]


def build_seeds(persona: Persona, pool: list[SeedConcept], answer: BaseModel,
                names: dict[str, str] | None = None) -> list[EventSeed]:
    """Kept predefined seeds in pool order, then the added ones under unique snake_case names; `names`: the
    label → name map the answer picked by (`seed_labels`)."""
    kept = {(names or {}).get(label, label) for label in answer.keep}
    seeds = [
        EventSeed(id=mint_id(persona.id, "seed", s.name), persona_id=persona.id, name=s.name,
                  title=s.title_in(persona.language), description=s.description_in(persona.language),
                  origin="predefined")
        for s in pool if s.name in kept
    ]
    taken = {s.name for s in pool}
    for i, draft in enumerate(answer.added):
        base = slug(draft.name) or slug(draft.title) or f"added_{i + 1}"
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}_{n}"
        taken.add(name)
        seeds.append(EventSeed(id=mint_id(persona.id, "seed", name), persona_id=persona.id, name=name,
                               title=draft.title.strip(), description=draft.description.strip(), origin="added"))
    return seeds


# ------------------------------------------------------------------------------------------ (b) life arcs

@lru_cache(maxsize=None)
def arc_answer(seed_names: tuple[str, ...], per_dimension: int, states: int) -> type[BaseModel]:
    draft = create_model(
        "ArcDraft",
        title=(str, ...),
        description=(str, ...),
        seeds=(list[Literal[seed_names]], Field(min_length=1, max_length=3)),
        anchor_states=(list[AnchorState], Field(min_length=states, max_length=states)),
    )
    count = Field(min_length=per_dimension, max_length=per_dimension)
    return create_model("ArcPlan", **{dim: (list[draft], count) for dim in DIMENSIONS})


def build_arcs(persona: Persona, seeds: list[EventSeed], answer: BaseModel) -> list[LifeArc]:
    seed_ids = {s.name: s.id for s in seeds}
    seed_ids.update({label: seed_ids[name] for label, name in seed_labels(seeds, persona.language).items()})
    arcs = []
    for dimension in DIMENSIONS:
        for i, draft in enumerate(getattr(answer, dimension)):
            linked = list(dict.fromkeys(seed_ids[name] for name in draft.seeds))
            arcs.append(LifeArc(
                id=mint_id(persona.id, "arc", dimension, i), persona_id=persona.id, dimension=dimension,
                title=draft.title.strip(), description=draft.description.strip(),
                anchor_states=list(draft.anchor_states), seed_ids=linked,
            ))
    return arcs


# ------------------------------------------------------------------------------------------ (c) major events

def major_event_count(section: ArcsSettings, days: int, moving_arcs: int = 0, changes: int = 0) -> int:
    """Major events: the yearly rate over the timeline, at least `min_major_events`, and at least one per arc that
    has a state to move to (`moving_arcs`) and one per state change the arcs plan (`changes`): a state is reached
    through a major event that triggers it, and one event asked to trigger three unrelated arcs moved only one (a
    capable writer left the others flat); with three events for six changes, writers in both languages gave each
    event one arc's first change and left every second state beyond the timeline, unreached. Never more than the
    timeline has days. More major events cost phases, not events: a phase's events follow its days."""
    per_year = section.major_events_per_year
    wanted = max(section.min_major_events, round(per_year * days / 365.25), moving_arcs, changes)
    return max(1, min(wanted, days))


@lru_cache(maxsize=None)
def major_answer(seed_names: tuple[str, ...], days: int, arcs: int, states: int, count: int) -> type[BaseModel]:
    day = Field(ge=0, le=days - 1)
    draft = create_model(
        "MajorEventDraft",
        title=(str, ...),
        description=(str, ...),
        seed=(Literal[seed_names], ...),
        start_day=(int, day),
        end_day=(int, day),
        arc_states=(list[Annotated[int, Field(ge=0, le=states - 1)]], Field(min_length=arcs, max_length=arcs)),
    )
    return create_model("MajorEventPlan", events=(list[draft], Field(min_length=count, max_length=count)))


def place(spans: list[tuple[int, int]], days: int) -> list[tuple[int, int]]:
    """Chronological spans made non-overlapping inside [0, days-1]: starts strictly increase (each leaving room
    for the rest), and an end is clamped between its start and the day before the next start."""
    n = len(spans)
    starts: list[int] = []
    for i, (start, _) in enumerate(spans):
        low = starts[-1] + 1 if starts else 0
        starts.append(min(max(start, low), days - (n - i)))
    placed = []
    for i, (_, end) in enumerate(spans):
        limit = starts[i + 1] - 1 if i + 1 < n else days - 1
        placed.append((starts[i], min(max(end, starts[i]), limit)))
    return placed


def aligned(rows: list[list[int]], arcs: list[LifeArc]) -> list[list[int]]:
    """Anchor indices clamped to each arc's states and made non-decreasing over time (a running max)."""
    best = [0] * len(arcs)
    out = []
    for row in rows:
        current = []
        for j, arc in enumerate(arcs):
            value = min(max(row[j] if j < len(row) else 0, 0), len(arc.anchor_states) - 1)
            best[j] = max(best[j], value)
            current.append(best[j])
        out.append(current)
    return out


def _cues(text: str) -> set[str]:
    return naming_units(key_units(text))


def where_told(descriptions: list[str], rows: list[list[int]], arcs: list[LifeArc]) -> list[list[int]]:
    """The aligned rows with a state moved to the major event that tells its trigger: a state the plan reaches in
    an event whose description holds none of its trigger's content units, while a later event's holds at least two
    and the arc reaches no further state before it, is reached in that later event (the events between keep the
    state before). A capable writer put a state whose trigger was the exam results in the festival event before
    the results came out."""
    rows = [list(row) for row in rows]
    for j, arc in enumerate(arcs):
        for i in range(len(rows)):
            before = rows[i - 1][j] if i else 0
            k = rows[i][j]
            if k != before + 1:  # no change here, or several states at once (left as planned)
                continue
            cues = _cues(arc.anchor_states[k].trigger)
            if not cues or cues & _cues(descriptions[i]):
                continue
            for later in range(i + 1, len(rows)):
                if rows[later][j] > k:
                    break
                if len(cues & _cues(descriptions[later])) >= 2:
                    for m in range(i, later):
                        rows[m][j] = before
                    break
    return rows


def everyday_spans(spans: list[tuple[int, int]], days: int, min_days: int) -> list[tuple[int, int, int]]:
    """The gaps of the timeline between (before, after) the placed major-event spans that last at least
    `min_days`, as (start, end, index of the major event before it or -1): the everyday life lived there."""
    out, cursor, before = [], 0, -1
    for i, (start, end) in enumerate([*spans, (days, days)]):
        if start - cursor >= min_days:
            out.append((cursor, start - 1, before))
        cursor, before = max(cursor, end + 1), i
    return out


def build_everyday(persona: Persona, arcs: list[LifeArc], majors: list[MajorEvent],
                   spans: list[tuple[int, int, int]]) -> list[MajorEvent]:
    """Everyday stretches as records of major_events.jsonl (kind "everyday"): their arc states are those reached
    before them (the first state before the first major event), so no arc moves in a gap."""
    out = []
    for n, (start, end, before) in enumerate(spans):
        states = (list(majors[before].arc_states) if before >= 0
                  else [ArcState(arc_id=arc.id, anchor_index=0) for arc in arcs])
        out.append(MajorEvent(
            id=mint_id(persona.id, "everyday", n), persona_id=persona.id, index=len(majors) + n, title="",
            description="", start=persona.start + dt.timedelta(days=start),
            end=persona.start + dt.timedelta(days=end), arc_states=states, kind="everyday",
        ))
    return out


def build_major_events(persona: Persona, seeds: list[EventSeed], arcs: list[LifeArc],
                       answer: BaseModel, everyday_min_days: int | None = None) -> list[MajorEvent]:
    """The drafted major events placed on the timeline, then (when `everyday_min_days` is set) the everyday
    stretches filling the gaps between them, in time order."""
    days = (persona.end - persona.start).days + 1
    drafts = sorted(answer.events, key=lambda d: (min(d.start_day, d.end_day), max(d.start_day, d.end_day)))
    spans = place([(min(d.start_day, d.end_day), max(d.start_day, d.end_day)) for d in drafts], days)
    states = where_told([d.description for d in drafts], aligned([list(d.arc_states) for d in drafts], arcs), arcs)
    seed_ids = {s.name: s.id for s in seeds}
    seed_ids.update({label: seed_ids[name] for label, name in seed_labels(seeds, persona.language).items()})
    events = []
    for i, (draft, (start, end), row) in enumerate(zip(drafts, spans, states, strict=True)):
        events.append(MajorEvent(
            id=mint_id(persona.id, "major_event", i), persona_id=persona.id, index=i, title=draft.title.strip(),
            description=draft.description.strip(), start=persona.start + dt.timedelta(days=start),
            end=persona.start + dt.timedelta(days=end), seed_id=seed_ids.get(draft.seed),
            arc_states=[ArcState(arc_id=arc.id, anchor_index=k) for arc, k in zip(arcs, row, strict=True)],
        ))
    if everyday_min_days is None:
        return events
    everyday = build_everyday(persona, arcs, events, everyday_spans(spans, days, everyday_min_days))
    # indices follow time over both kinds (ids stay those minted above)
    return [e.model_copy(update={"index": n}) for n, e in enumerate(sorted(events + everyday, key=lambda e: e.start))]


# ------------------------------------------------------------------------------------------ the stage

SEEDS_KEY, PLAN_KEY, MAJOR_KEY = "arcs/seeds", "arcs/plan", "arcs/major_events"


def timeline_days(persona: Persona) -> int:
    return (persona.end - persona.start).days + 1


def kept_seed_limit(pool: list[SeedConcept], section: ArcsSettings) -> int:
    """How many pool seeds the model may keep: the configured cap, at most the pool, at least one."""
    return max(1, min(len(pool), section.max_kept_seeds))


def seed_pool_variables(persona: Persona, pool: list[SeedConcept], language: str, keep_max: int,
                        added: int) -> dict:
    """What arcs_seeds.j2 is rendered with: the age-filtered pool in the persona's language."""
    return {"persona": persona.model_dump(mode="json"),
            "pool": [{"name": s.name, "label": label, "title": s.title_in(language),
                      "description": s.description_in(language)}
                     for s, label in zip(pool, seed_labels(pool, language), strict=True)],
            "keep_max": keep_max, "added": added, "days": (persona.end - persona.start).days + 1}


def arc_plan_variables(persona: Persona, seeds: list[EventSeed], per_dimension: int, states: int) -> dict:
    """What arcs_plan.j2 is rendered with."""
    return {"persona": persona.model_dump(mode="json"), "seeds": seed_views(seeds, persona.language),
            "per_dimension": per_dimension, "states": states}


def seed_views(seeds: list[EventSeed], language: str) -> list[dict]:
    """The seeds as the prompts show them, each with the `label` the model picks it by."""
    return [{**s.model_dump(mode="json"), "label": label}
            for s, label in zip(seeds, seed_labels(seeds, language), strict=True)]


HOLIDAY_DAYS = 366  # a timeline up to a year long is planned with its public holidays in view (a longer one's list
# would crowd the plan): a capable planner put an event "the day before New Year's Eve" with no calendar shown


def timeline_holidays(persona: Persona, countries: dict, language: str) -> list[dict]:
    """The public holidays of the persona's timeline (none past HOLIDAY_DAYS), as the dated prompts show them."""
    if timeline_days(persona) > HOLIDAY_DAYS:
        return []
    return holidays_between(country_of(persona, countries, language), language, persona.start, persona.end)


def change_gap(arcs: list[LifeArc], days: int, span_days: int) -> int:
    """The fewest days between two changes of one arc that the plan is asked for (0: no arc changes twice):
    `span_days` (what a comparison or trajectory item spans, `[filter] min_span_days`), or less when the timeline
    has no room for it. A capable planner put an arc's two changes in major events 13 days apart, so its evidence
    spanned 13 days and its comparison and trajectory plans (at least 14) were infeasible."""
    most = max((len(a.anchor_states) for a in arcs), default=0)
    return min(span_days, days // most) if most > 2 else 0


def major_event_variables(persona: Persona, seeds: list[EventSeed], arcs: list[LifeArc], count: int,
                          holidays: list[dict] | None = None, gap: int = 0) -> dict:
    """What arcs_major_events.j2 is rendered with: `holidays`, the timeline's public holidays (`holidays_between`);
    `gap`, the fewest days between two changes of one arc (`change_gap`)."""
    return {"persona": persona.model_dump(mode="json"), "seeds": seed_views(seeds, persona.language),
            "arcs": arc_views(arcs), "count": count, "days": timeline_days(persona), "holidays": holidays or [],
            "gap": gap}


class ArcsRun:
    """One run of the stage: the persona, its seed pool and the arcs settings, shared by a chain of three units
    (seeds, then arcs over the seeds, then major events over both)."""

    def __init__(self, ctx: StageContext):
        self.ctx = ctx
        self.persona = ctx.persona
        self.section: ArcsSettings = ctx.section
        self.pool = seeds_for_age(load_seed_pool(), self.persona.age)
        self.per_dimension = self.section.arcs_per_dimension
        self.states = max(2, self.section.anchor_states)

    def seeds(self) -> list[EventSeed]:
        return self.ctx.done_records(SEEDS_KEY, "seeds.jsonl", EventSeed) or []

    def arcs(self) -> list[LifeArc]:
        return self.ctx.done_records(PLAN_KEY, "arcs.jsonl", LifeArc) or []

    async def seed_pool(self) -> Records:
        keep_max = kept_seed_limit(self.pool, self.section)
        added = self.section.added_seeds
        names = seed_labels(self.pool, self.ctx.language)
        model = seed_answer(tuple(names), min(3, keep_max), keep_max, added)
        variables = seed_pool_variables(self.persona, self.pool, self.ctx.language, keep_max, added)
        answer = await self.ctx.ask("arcs", "arcs_seeds.j2", variables, model)
        return {"seeds.jsonl": build_seeds(self.persona, self.pool, answer, names)}

    async def plan_arcs(self) -> Records:
        seeds = self.seeds()
        model = arc_answer(tuple(seed_labels(seeds, self.ctx.language)), self.per_dimension, self.states)
        variables = arc_plan_variables(self.persona, seeds, self.per_dimension, self.states)
        # a state is a label, a description, a trigger and two or three cues: ~180 tokens (a 270M model echoing the
        # trigger rule overflowed 120 a state and its plan was cut mid-list)
        estimate = 3 * self.per_dimension * (200 + 180 * self.states)
        answer = await self.ctx.ask("arcs", "arcs_plan.j2", variables, model,
                                    max_tokens=answer_tokens(self.ctx, estimate))
        return {"arcs.jsonl": build_arcs(self.persona, seeds, answer)}

    async def place_major_events(self) -> Records:
        seeds, arcs = self.seeds(), self.arcs()
        days = timeline_days(self.persona)
        count = major_event_count(self.section, days, sum(len(a.anchor_states) > 1 for a in arcs),
                                  sum(len(a.anchor_states) - 1 for a in arcs))
        fewest = min(len(a.anchor_states) for a in arcs)
        model = major_answer(tuple(seed_labels(seeds, self.ctx.language)), days, len(arcs), fewest, count)
        holidays = timeline_holidays(self.persona, self.ctx.settings.holiday_countries, self.ctx.language)
        variables = major_event_variables(self.persona, seeds, arcs, count, holidays,
                                          change_gap(arcs, days, self.ctx.settings.filter.min_span_days))
        answer = await self.ctx.ask("arcs", "arcs_major_events.j2", variables, model,
                                    max_tokens=answer_tokens(self.ctx, count * (160 + 8 * len(arcs))))
        return {"major_events.jsonl": build_major_events(self.persona, seeds, arcs, answer,
                                                         self.section.everyday_min_days)}

    async def run(self) -> None:
        await self.ctx.units([(SEEDS_KEY, self.seed_pool), (PLAN_KEY, self.plan_arcs),
                              (MAJOR_KEY, self.place_major_events)], sequential=True)


async def run(ctx: StageContext) -> None:
    await ArcsRun(ctx).run()


STAGE = Stage(
    name="arcs",
    reads=("persona.jsonl",),
    writes=("seeds.jsonl", "arcs.jsonl", "major_events.jsonl"),
    templates=("arcs_seeds.j2", "arcs_plan.j2", "arcs_major_events.j2"),
    tasks=("arcs",),
    body=run,
    help="seeds.jsonl, arcs.jsonl, major_events.jsonl: event seeds, life arcs, major events on the timeline",
    config_files=("event_seeds.toml",),  # the shipped seed pool: editing it makes arcs stale
    config_keys=("filter.min_span_days",),  # the fewest days between two changes of one arc (`change_gap`)
)
