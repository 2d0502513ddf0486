"""What a trace's plan and write prompts show around one event: the snapshot history so far, the arcs' states
reached so far, and a bounded registry (the event's people and place, whom its evidence names, those seen lately)."""

from __future__ import annotations

import datetime as dt

from synth.core.calendar import country_of, holidays_between
from synth.engine.stage import StageContext
from synth.life.registry_view import Sightings, bounded_registry
from synth.records import Event, Evidence, LifeArc, Phase
from synth.stages.common import arc_views


def snapshot_history(phases: list[Phase], at: int) -> dict:
    """The snapshot history a trace in `phases[at]` may see (principle 10): the previous phase (its start and end
    are past) and this phase without its snapshot_after — the state at the phase's end is still to come."""
    return {"phase": phases[at].model_dump(mode="json", exclude={"snapshot_after"}),
            "previous_phase": phases[at - 1].model_dump(mode="json") if at > 0 else None}


def reached_states(phases: list[Phase], at: int) -> dict[str, int]:
    """Each arc's anchor state when phase `at` begins: the end state of the phase before (the first state before
    the first phase). A change the phase brings about is carried by its evidence, not announced to its traces."""
    return {s.arc_id: s.anchor_index for s in phases[at - 1].arc_states} if at > 0 else {}


def arcs_so_far(arcs: list[LifeArc], reached: dict[str, int], ending: dict[str, int] | None = None) -> list[dict]:
    """The arcs as a trace sees them: each one's anchor states cut after the one reached (`reached`: arc id →
    index), so a later state's label or description is never even a prompt variable. With the phase's end states
    (`ending`), an arc the phase moves on is marked `moving` — never with the state it moves to: a capable writer
    met a knee "now: ignoring the pain" for an event six days after the knee gave way, inside the phase that
    changed it."""
    ending = ending or {}
    out = []
    for arc, view in zip(arcs, arc_views(arcs), strict=True):
        top = len(arc.anchor_states) - 1
        now = min(reached.get(arc.id, 0), top)
        out.append({**view, "anchor_states": view["anchor_states"][:now + 1],
                    "moving": min(ending.get(arc.id, now), top) > now})
    return out


def moment_arcs(arcs: list[dict], arc_ids: list[str] | None) -> list[dict]:
    """The arcs the moment shows with where each stands: only those the event's evidence touches (`arc_ids`; None:
    all), each with the one state reached when the phase began (`index`, `state`) and whether the phase moves it
    on (`moving`) — the states before it are history the writer does not need, the titles of all arcs are in the
    prompt's prefix."""
    touched = None if arc_ids is None else set(arc_ids)
    return [{"id": a["id"], "label": a["label"], "index": len(a["anchor_states"]) - 1, "state": a["anchor_states"][-1],
             "moving": a.get("moving", False)}
            for a in arcs if a["anchor_states"] and (touched is None or a["id"] in touched)]


def event_context(persona: dict, arcs: list[dict], history: dict, event: Event, extra: dict | None = None) -> dict:
    """What both the plan and the write prompt of one event show: persona, the arcs so far (all of them as titles
    in the prefix; in the moment, those the evidence touches at the state reached), the snapshot history and the
    event — not its evidence: the planner sees all of it, a writer only what its trace carries. `extra`: the
    registry so far (`people`), the holidays around the event, whether the stretch is everyday life and the arcs
    the event's evidence touches (`arc_ids`)."""
    extra = dict(extra or {})
    shown = moment_arcs(arcs, extra.pop("arc_ids", None))
    return {"persona": persona, "arcs": arcs, "moment_arcs": shown, **history, "event": event.model_dump(mode="json"),
            "people": [], "holidays": [], "everyday": False, **extra}


class MomentContext:
    """The registry, holidays and kind of stretch one event's trace prompts show; the registry is bounded
    (`[traces] registry_days`, `registry_tokens`: synth.life.registry_view), whatever the length of the life."""

    def __init__(self, ctx: StageContext) -> None:
        self.ctx = ctx
        self.country = country_of(ctx.persona, ctx.settings.holiday_countries, ctx.language)
        self.people = list(ctx.people)
        self.kinds = {m.id: m.kind for m in ctx.major_events}
        self.sightings = Sightings(self.people, ctx.events)
        self.days, self.budget = ctx.section.registry_days, ctx.section.registry_tokens

    def registry(self, event: Event, evidence: list[Evidence], budget: int | None = None) -> list[dict]:
        """The entries met by the event's day that its prompts show: its participants and place, whom the event
        or its evidence names, then those seen in the last days within the budget (`budget` 0: only the former)."""
        day = event.time.date()
        place = [p.id for p in self.people if p.kind == "place" and p.name.strip()
                 and p.name.strip().lower() in event.location.lower()]
        texts = [event.title, event.description, event.location, *(e.statement for e in evidence)]
        limit = self.budget if budget is None else budget
        shown = bounded_registry(self.people, day, self.days, limit, needed=[*event.participant_ids, *place],
                                 texts=texts, sightings=self.sightings)
        return [p.model_dump(mode="json") for p in shown]

    def extra(self, event: Event, phase: Phase, evidence: list[Evidence], max_delay: int) -> dict:
        """The registry by the event's day, the holidays from the event to the latest trace time, whether the
        event is everyday life and the arcs its evidence touches."""
        last = event.time + dt.timedelta(hours=max_delay)
        return {"people": self.registry(event, evidence), "arc_ids": sorted({a for e in evidence for a in e.arc_ids}),
                # the writer's plan already chose what its trace says: it needs the people and places of the
                # event and its evidence (the consistency rule), not those seen lately
                "writer_people": self.registry(event, evidence, budget=0),
                "everyday": self.kinds.get(phase.major_event_id) == "everyday",
                "holidays": holidays_between(self.country, self.ctx.language, event.time, last)}
