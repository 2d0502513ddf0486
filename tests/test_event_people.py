"""Events can introduce people and places (as phases can): an event's answer names them, code mints ids, they take
part in the event, a name two concurrent phases introduce is one person, people.jsonl keeps them and the later
trace prompts list them."""

from __future__ import annotations

import datetime as dt
import json

from handmade import phase_inputs
from kit import run_stage

from synth.core.jsonl import read_records, write_atomic
from synth.quality.validate import PersonaCheck
from synth.records import Event, Evidence, Person, Phase, Snapshot, mint_id
from synth.stages.events import merge_newcomers

SNAP = Snapshot(energy=5, stress=5, dominant_emotion="calm", focus="work", arc_status={})
SAM = Person(id="r1", persona_id="p01_maya", kind="person", name="Sam", relation="partner", description="d",
             origin="relation")
KNOWN = Person(id="x1", persona_id="p01_maya", kind="person", name="Dr Okafor", relation="consultant",
               description="d", origin="introduced", first_phase_id="ph0", first_date=dt.date(2022, 1, 1))


def _answer(newcomer: str, place: str) -> str:
    evidence = [{"kind": "fact", "statement": "s", "arcs": ["Arc 0"], "private": False}] * 2
    return json.dumps({"events": [
        {"title": "ward round", "description": "d", "location": "ward", "day": 1, "hour": 9, "minute": 0,
         "participants": ["Sam"], "evidence": evidence,
         "new_people": [{"name": newcomer, "relation": "the new charge nurse", "description": "calm, exact"}],
         "new_places": [{"name": place, "relation": "a café", "description": "near the hospital"}]},
        {"title": "quiet evening", "description": "d", "location": "home", "day": 2, "hour": 20, "minute": 0,
         "participants": [], "evidence": evidence,
         "new_people": [{"name": "Dr Okafor", "relation": "again", "description": "already known"}],
         "new_places": []}]})


def test_an_event_introduces_people_who_take_part_and_join_the_registry(tmp_path):
    d = tmp_path / "p01_maya"
    _, majors = phase_inputs(d)
    phases = [Phase(id=f"ph{m.index}", persona_id="p01_maya", major_event_id=m.id, index=0, title="t",
                    description="d", start=m.start, end=m.end, snapshot_before=SNAP, snapshot_after=SNAP,
                    arc_states=m.arc_states) for m in majors]
    write_atomic(d / "phases.jsonl", phases)
    write_atomic(d / "phase_people.jsonl", [SAM, KNOWN])
    config = tmp_path / "c.toml"
    config.write_text("[events]\nmin_events = 2\nmax_events = 2\nnew_people = 1\n")
    # both phases' answers introduce "Rosa Lin" (units run concurrently): one person, the earlier phase's
    fake = run_stage(tmp_path, "events", config=config,
                     replies={"events": [_answer("Rosa Lin", "Bean There"), _answer("Rosa Lin", "Bean There")]})
    assert not fake.unused() and len(fake.seen) == 2
    schema = json.dumps(fake.seen[0].json_schema)
    assert "new_people" in schema and "new_places" in schema
    assert "at most 1" in fake.seen[0].messages[-1]["content"] and "never a name listed above" in \
        fake.seen[0].messages[-1]["content"]
    events = read_records(d / "events.jsonl", Event)
    people = read_records(d / "people.jsonl", Person)
    added = [p for p in people if p.first_event_id]
    assert [(p.kind, p.name) for p in added] == [("person", "Rosa Lin"), ("place", "Bean There")], \
        "the known name is no newcomer; the repeated one is minted once"
    rosa = added[0]
    first = min((e for e in events if e.title == "ward round"), key=lambda e: e.time)
    assert rosa.id == mint_id(first.id, "person", 0) and rosa.first_event_id == first.id
    assert rosa.first_date == first.time.date() and rosa.first_phase_id == first.phase_id
    rounds = [e for e in events if e.title == "ward round"]
    assert all(rosa.id in e.participant_ids and "r1" in e.participant_ids for e in rounds), \
        "both phases' ward rounds name the one Rosa Lin"
    assert people[:2] == [SAM, KNOWN], "the phases' registry comes first, unchanged"
    check = PersonaCheck(d)
    problems = check.run()
    assert not [p for p, k in zip(problems, check.kinds, strict=True) if k in ("references", "duplicates")], problems

    # later prompts list them: the trace prompt of an event on or after her first day shows the registry entry
    late = max(events, key=lambda e: e.time)
    write_atomic(d / "evidence.jsonl", [Evidence(id="v", persona_id="p01_maya", event_id=late.id, kind="fact",
                                                 statement="s", arc_ids=["arc0"])])
    write_atomic(d / "major_events.jsonl", majors)
    fake = run_stage(tmp_path, "traces", config=tmp_path / "c.toml")
    plan = next(r for r in fake.seen if "traces" in r.json_schema["properties"])
    assert "Rosa Lin" in plan.messages[-1]["content"] and "Bean There" in plan.messages[-1]["content"]


def test_merge_keeps_the_earliest_and_maps_the_others():
    day = dt.date(2022, 1, 3)
    person = lambda pid, when: Person(id=pid, persona_id="p", kind="person", name=" rosa lin ", relation="r",  # noqa: E731
                                      description="d", origin="introduced", first_phase_id="ph",
                                      first_date=when, first_event_id="e")
    event = lambda eid, who: Event(id=eid, persona_id="p", phase_id="ph", time=dt.datetime(2022, 1, 9, 9),  # noqa: E731
                                   title="t", description="d", location="l", participant_ids=who)
    events, kept = merge_newcomers([event("a", ["late", "r1"]), event("b", ["r1"])],
                                   [person("late", day + dt.timedelta(days=4)), person("early", day)])
    assert [p.id for p in kept] == ["early"]
    assert events[0].participant_ids == ["early", "r1"] and events[1].participant_ids == ["r1"]
