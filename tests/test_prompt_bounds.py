"""Bounded prompts: a trace prompt late in a long life is no longer than an early one by more than the registry
budget allows, and whoever the event names (participants, place, evidence) is always in it."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

from handmade import PID
from handmade import maya as persona

from synth.config.prompts import render
from synth.core.tokens import estimate_tokens
from synth.life.registry_view import Sightings, bounded_registry, names_in
from synth.records import Event, Evidence, Person, Phase, Snapshot
from synth.stages import traces

START = dt.date(2022, 1, 1)
DAYS = 900  # a long life: one newcomer every other day, each taking part in an event that day


MEDIA_VIEW = {"media": ["diary"], "targets": {"diary": 100}, "public": []}  # the persona's media (prefix)


def person(k: int, kind: str = "person") -> Person:
    return Person(id=f"n{k}", persona_id=PID, kind=kind, name=f"Newcomer{k} Surname{k}", relation="a friend met at the club",
                  description=f"someone met on day {2 * k}, who talks about gardening and old films", origin="introduced",
                  first_phase_id="ph", first_date=START + dt.timedelta(days=2 * k))


def life() -> tuple[list[Person], list[Event]]:
    people = [person(k) for k in range(DAYS // 2)]
    events = [Event(id=f"e{k}", persona_id=PID, phase_id="ph", time=dt.datetime.combine(p.first_date, dt.time(10)),
                    title=f"event {k}", description="a walk", location="the park", participant_ids=[p.id])
              for k, p in enumerate(people)]
    return people, events


def context(people: list[Person], events: list[Event], days: int = 60, budget: int = 1000) -> traces.MomentContext:
    section = SimpleNamespace(registry_days=days, registry_tokens=budget)
    ctx = SimpleNamespace(settings=SimpleNamespace(holiday_countries={}), language="en", people=people, persona=None,
                          major_events=[], events=events, section=section)
    return traces.MomentContext(ctx)


def phase_at(day: dt.date) -> Phase:
    snap = Snapshot(energy=5, stress=5, dominant_emotion="calm", focus="work", arc_status={})
    return Phase(id="ph", persona_id=PID, major_event_id="m", index=0, title="a phase", description="d",
                 start=day, end=day + dt.timedelta(days=20), snapshot_before=snap, snapshot_after=snap)


def plan_prompt(moment: traces.MomentContext, event: Event, evidence: list[Evidence]) -> str:
    phase = phase_at(event.time.date())
    variables = traces.event_context(persona().model_dump(mode="json"), [], traces.snapshot_history([phase], 0),
                                     event, moment.extra(event, phase, evidence, 12))
    plan = traces.plan_variables(variables, event, evidence, 2, {"diary": 1.0}, 12)
    return "\n".join(m["content"] for m in render("traces_plan.j2", language="en", **plan))


def evidence_of(event: Event, statement: str) -> list[Evidence]:
    return [Evidence(id=f"{event.id}-v", persona_id=PID, event_id=event.id, kind="fact", statement=statement,
                     arc_ids=[])]


def test_a_late_trace_prompt_grows_no_more_than_the_registry_budget():
    people, events = life()
    budget = 1000
    moment = context(people, events, budget=budget)
    early, late = events[5], events[-1]
    short = estimate_tokens(plan_prompt(moment, early, evidence_of(early, "They walked.")))
    long = estimate_tokens(plan_prompt(moment, late, evidence_of(late, "They walked.")))
    assert long - short <= budget, (short, long)
    # without the bound the same late prompt carries the whole life's registry
    unbounded = estimate_tokens(plan_prompt(context(people, events, days=DAYS, budget=10**9), late,
                                            evidence_of(late, "They walked.")))
    assert unbounded - short > 5 * budget, (short, unbounded)


def test_whoever_the_event_names_is_always_in_the_prompt():
    people, events = life()
    late = events[-1]
    old = people[3]  # met on day 6, not seen for almost 900 days: outside any recent window
    place = Person(id="pl", persona_id=PID, kind="place", name="Riverside Allotments", relation="a garden",
                   description="a plot by the river", origin="introduced", first_date=START)
    at_place = late.model_copy(update={"location": "Riverside Allotments, plot 9"})
    moment = context([*people, place], events, days=30, budget=0)  # no room at all beyond what must be shown
    named = evidence_of(at_place, f"{old.name.split()[0]} lent them a spade.")
    text = plan_prompt(moment, at_place, named)
    assert old.name in text, "the evidence names them (by given name)"
    assert people[-1].name in text, "the event's participant"
    assert "Riverside Allotments (a garden)" in text, "the event's place"
    assert people[-2].name not in text, "seen lately, but the budget is 0"
    assert people[10].name not in text


def test_the_registry_shows_recent_sightings_first_and_never_the_future():
    people, events = life()
    day = START + dt.timedelta(days=400)
    sightings = Sightings(people, events)
    shown = bounded_registry(people, day, 30, 10**6, sightings=sightings)
    assert [p.id for p in shown] == [f"n{k}" for k in range(185, 201)], "met in the last 30 days, up to the day"
    # someone met long ago but seen again lately (taking part in a recent event) is back in view
    again = Event(id="x", persona_id=PID, phase_id="ph", time=dt.datetime.combine(day, dt.time(8)), title="t",
                  description="d", location="home", participant_ids=["n7"])
    shown = bounded_registry(people, day, 30, 10**6, sightings=Sightings(people, [*events, again]))
    assert "n7" in {p.id for p in shown}
    # within a budget, the most recently seen win
    tight = bounded_registry(people, day, 30, 3 * 30, sightings=sightings)
    assert tight and {p.id for p in tight} <= {f"n{k}" for k in range(190, 201)}


def test_names_in_matches_whole_names_not_fragments():
    people = [Person(id="a", persona_id=PID, kind="person", name="Dr. Anika Patel", relation="r", description="d",
                     origin="introduced"),
              Person(id="b", persona_id=PID, kind="person", name="Tom", relation="r", description="d",
                     origin="introduced"),
              Person(id="c", persona_id=PID, kind="person", name="王小明", relation="r", description="d",
                     origin="introduced")]
    assert names_in(people, ["Patel said so."]) == {"a"}
    assert names_in(people, ["Tomorrow, maybe."]) == set(), "not a fragment of another word"
    assert names_in(people, ["Tom came."]) == {"b"}
    assert names_in(people, ["小明打来电话"]) == {"c"}


def test_the_trace_writer_sees_this_phase_and_each_arcs_state_now_not_the_history_the_plan_already_used():
    """The writer's plan fixed what the trace says; its prompt keeps the current phase and the state now of each arc
    the evidence touches, not the previous phase (the planner's prompt keeps it, by what it was about); neither
    shows a state the arc has left behind."""
    from synth.config.prompts import render

    phase = {"title": "Spring crunch", "start": "2022-03-01", "end": "2022-04-30", "description": "long hours",
             "snapshot_before": {"energy": 4, "stress": 7, "dominant_emotion": "tired", "focus": "work",
                                 "arc_status": {}}}
    previous = {**phase, "title": "Quiet winter", "start": "2022-01-01", "end": "2022-02-28"}
    arcs = [{"id": "a1", "label": "Career", "dimension": "experience", "description": "d",
             "anchor_states": [{"label": "EARLY-STATE", "description": "junior"},
                               {"label": "NOW-STATE", "description": "lead", "trigger": "t", "cues": []}]}]
    event = {"time": "2022-03-09T13:55:00", "location": "office", "title": "Review", "description": "the review"}
    common = dict(language="en", event=event, phase=phase, previous_phase=previous, arcs=arcs,
                  moment_arcs=traces.moment_arcs(arcs, ["a1"]), people=[], holidays=[], everyday=False,
                  persona=persona().model_dump(mode="json"))
    write = " ".join(m["content"] for m in render("traces_write.j2", **common, medium="diary", intent="i",
                                                  audience="a", key_information="k", carried=[], time="2022-03-09T15:00",
                                                  min_words=10, max_words=50, voice=[], hidden=[], **MEDIA_VIEW))
    assert "NOW-STATE" in write and "Spring crunch" in write
    assert "EARLY-STATE" not in write and "Quiet winter" not in write
    plan = " ".join(m["content"] for m in render("traces_plan.j2", **common, evidence=[], count=1, max_delay=24,
                                                 suggested=["diary"], problems=[], short=[], **MEDIA_VIEW))
    assert "NOW-STATE" in plan and "Quiet winter" in plan
    assert "EARLY-STATE" not in plan


def test_the_trace_writer_sees_the_people_of_its_event_and_evidence_not_those_seen_lately():
    """The plan chose what the trace says; the writer's prompt shows the event's participants and place and whom
    the evidence names (the consistency rule), not the recent cast the planner sees."""
    people, events = life()
    late = events[-1]
    old = people[3]
    moment = context(people, events, days=60, budget=10**6)
    evidence = evidence_of(late, f"{old.name.split()[0]} came along.")
    phase = phase_at(late.time.date())
    variables = traces.event_context(persona().model_dump(mode="json"), [], traces.snapshot_history([phase], 0),
                                     late, {**moment.extra(late, phase, evidence, 12), **MEDIA_VIEW})
    plan = traces.plan_variables(variables, late, evidence, 1, {"diary": 1.0}, 12)
    planned = SimpleNamespace(medium="diary", intent="i", audience="a", key_information="k")
    write = traces.write_variables(variables, planned, evidence, late.time, (10, 50), [], "diary")
    plan_names = {p["name"] for p in plan["people"]}
    write_names = {p["name"] for p in write["people"]}
    assert {old.name, people[-1].name} <= write_names, "the evidence names one, the other takes part"
    assert people[-2].name in plan_names and people[-2].name not in write_names, "seen lately: the planner's only"
    assert len(write_names) == 2
