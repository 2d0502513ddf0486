"""Scripted-answer tests of the `arcs` and `traces` stages: fixed model replies in, exact records, ids and links out."""

from __future__ import annotations

import datetime as dt
import itertools
from pathlib import Path

from handmade import END, LATE, PID, START, maya, trace_inputs
from kit import run_stage

from synth.core.jsonl import read_records, write_atomic
from synth.life.seedpool import load_seed_pool, seeds_for_age
from synth.records import (
    FILES,
    mint_id,
)


def load(directory: Path, name: str) -> list:
    return read_records(directory / name, FILES[name])


def properties(schema: dict, name: str) -> dict:
    """The properties of the schema's object named `name` (a $defs entry, or the root)."""
    return schema.get("$defs", {}).get(name, schema)["properties"]


# ------------------------------------------------------------------------------------------ arcs

POOL = [s.name for s in seeds_for_age(load_seed_pool(), 34)]
FIRST, THIRD = POOL[0], POOL[2]
ARCS_CONFIG = "[arcs]\nadded_seeds = 3\nmin_major_events = 5\nmajor_events_per_year = 0\n"

SEEDS_ANSWER = {
    "keep": [THIRD, FIRST, THIRD],  # out of pool order and repeated: code keeps pool order, once each
    "added": [
        {"name": FIRST, "title": " Second start ", "description": " clashes with a pool name "},
        {"name": "  Night-Shift Swap! ", "title": "Night shift swap", "description": "swaps shifts"},
        {"name": "!!!", "title": "Choir Audition", "description": "sings"},
    ],
}


def _arc_draft(title: str, seeds: list[str]) -> dict:
    return {"title": f"  {title} ", "description": f"{title} story", "seeds": seeds,
            "anchor_states": [{"label": f"{title} s{k}", "description": "d", "trigger": "t", "cues": ["c"]}
                              for k in range(3)]}


PLAN_ANSWER = {
    "experience": [_arc_draft("Career", ["night_shift_swap", THIRD, "night_shift_swap"])],
    "emotion": [_arc_draft("Calm", [f"{FIRST}_2"])],
    "opinion": [_arc_draft("Faith", ["choir_audition", FIRST])],
}


def _major(title: str, start: int, end: int, states: list[int], seed: str) -> dict:
    return {"title": title, "description": f"{title} text", "seed": seed, "start_day": start, "end_day": end,
            "arc_states": states}


# Out of order, overlapping (Move 20-30 vs Mid 25-35), one reversed span, two crowding the last day, and arc
# indices that go backwards (arc 0: 2 then 1; arc 1: 1 then 0; the last row drops to all zeros).
MAJOR_ANSWER = {"events": [
    _major("Move", 20, 30, [2, 0, 1], FIRST),
    _major("Start", 5, 12, [0, 1, 0], "night_shift_swap"),
    _major("Late1", 41, 41, [1, 2, 1], THIRD),
    _major("Mid", 35, 25, [1, 0, 2], "choir_audition"),
    _major("Late2", 41, 41, [0, 0, 0], f"{FIRST}_2"),
    _major("Early", 0, 1, [0, 0, 0], "night_shift_swap"),  # three arcs of three states: six changes, six events
]}


def _run_arcs(out: Path):
    (out / PID).mkdir(parents=True)
    write_atomic(out / PID / "persona.jsonl", [maya()])
    script = [SEEDS_ANSWER, PLAN_ANSWER, MAJOR_ANSWER]
    return run_stage(out, "arcs", config=ARCS_CONFIG, replies={"arcs": script})


def test_arcs_scripted_seeds_arcs_and_major_events(tmp_path):
    fake = _run_arcs(tmp_path / "a")
    directory = tmp_path / "a" / PID
    assert not fake.unused() and len(fake.seen) == 3, "one answer each: seeds, arcs, major events; no re-asks"
    assert [r.task for r in fake.seen] == ["arcs"] * 3
    first, second, third = (r.json_schema for r in fake.seen)
    assert "keep" in first["properties"] and "experience" in second["properties"] and "events" in third["properties"]
    # the seed pool offered is the age-filtered one: retirement is not plausible at 34
    offered = first["properties"]["keep"]["items"]["enum"]
    assert offered == POOL and "retirement" not in offered

    seeds = load(directory, "seeds.jsonl")
    names = [FIRST, THIRD, f"{FIRST}_2", "night_shift_swap", "choir_audition"]
    assert [s.name for s in seeds] == names
    assert [s.origin for s in seeds] == ["predefined"] * 2 + ["added"] * 3
    assert [s.id for s in seeds] == [mint_id(PID, "seed", n) for n in names]
    assert {s.persona_id for s in seeds} == {PID}
    assert (seeds[2].title, seeds[2].description) == ("Second start", "clashes with a pool name")
    seed_id = {s.name: s.id for s in seeds}

    arcs = load(directory, "arcs.jsonl")
    dims = ["experience", "emotion", "opinion"]
    assert [a.dimension for a in arcs] == dims
    assert [a.id for a in arcs] == [mint_id(PID, "arc", d, 0) for d in dims]
    assert [a.title for a in arcs] == ["Career", "Calm", "Faith"]
    assert arcs[0].seed_ids == [seed_id["night_shift_swap"], seed_id[THIRD]], "deduplicated, in answer order"
    assert arcs[1].seed_ids == [seed_id[f"{FIRST}_2"]]
    assert arcs[2].seed_ids == [seed_id["choir_audition"], seed_id[FIRST]]
    assert [s.label for s in arcs[0].anchor_states] == ["Career s0", "Career s1", "Career s2"]
    # the arcs request may only name seeds that exist, added ones included
    assert properties(second, "ArcDraft")["seeds"]["items"]["enum"] == names

    every = load(directory, "major_events.jsonl")
    assert [m.index for m in every] == list(range(len(every))), "indices follow time, everyday stretches included"
    # the gaps of 3 days or more are everyday life: 2-4, 13-19, 36-39
    assert [((m.start - START).days, (m.end - START).days) for m in every if m.kind == "everyday"] == [
        (2, 4), (13, 19), (36, 39)]
    majors = [m for m in every if m.kind == "major"]
    assert [m.title for m in majors] == ["Early", "Start", "Move", "Mid", "Late1", "Late2"], "sorted by start"
    assert [m.id for m in majors] == [mint_id(PID, "major_event", i) for i in range(6)]
    days = [((m.start - START).days, (m.end - START).days) for m in majors]
    # Move's overlap with Mid is cut, Mid's reversed span flipped, the two on the last day pushed apart
    assert days == [(0, 1), (5, 12), (20, 24), (25, 35), (40, 40), (41, 41)]
    assert all(START <= m.start <= m.end <= END for m in majors)
    assert all(a.end < b.start for a, b in itertools.pairwise(majors)), "no two major events overlap"
    assert [m.seed_id for m in majors] == [seed_id[n] for n in
                                           ["night_shift_swap", "night_shift_swap", FIRST, "choir_audition", THIRD, f"{FIRST}_2"]]
    for m in majors:
        assert [s.arc_id for s in m.arc_states] == [a.id for a in arcs], "every arc, in arc order"
    indices = [[s.anchor_index for s in m.arc_states] for m in majors]
    assert indices == [[0, 0, 0], [0, 1, 0], [2, 1, 1], [2, 1, 2], [2, 2, 2], [2, 2, 2]], "a running max per arc"


def test_arcs_scripted_repair_is_deterministic(tmp_path):
    _run_arcs(tmp_path / "a")
    _run_arcs(tmp_path / "b")
    for name in ("seeds.jsonl", "arcs.jsonl", "major_events.jsonl"):
        a, b = (tmp_path / d / PID / name for d in "ab")
        assert a.read_text() == b.read_text(), name


# ------------------------------------------------------------------------------------------ traces

# one call a trace (write_together off): the joint write has its own tests (tests/test_trace_joint.py)
TRACES_CONFIG = "[traces]\ntraces_per_event = 2\nmax_delay_hours = 48\nwrite_together = false\n"
# 20:59 the day before the timeline ends leaves 27 whole hours (to 23:59 on the last day): the delay bound
PLANS_ANSWER = {"traces": [
    {"reasons": "r", "medium": "email", "intent": "intent-alpha", "audience": "Sam", "key_information": "k1",
     "evidence": [2, 2], "delay_hours": 27},
    {"reasons": "r", "medium": "diary", "intent": "intent-beta", "audience": "self", "key_information": "k2",
     "evidence": [1], "delay_hours": 5},
]}  # evidence 3 is in no plan
WRITES = ["  TEXT ONE from the scripted writer  ", "TEXT TWO from the scripted writer"]


def test_traces_scripted_plan_then_writes(tmp_path):
    events, _ = trace_inputs(tmp_path / PID)
    late = events[1]
    fake = run_stage(tmp_path, "traces", config=TRACES_CONFIG,
                     replies={"traces": [PLANS_ANSWER, *({"content": t} for t in WRITES)]})
    assert not fake.unused() and len(fake.seen) == 3, "one plan and two writes; an event without evidence asks nothing"
    assert [r.task for r in fake.seen] == ["traces"] * 3
    plan_request, writes = fake.seen[0], fake.seen[1:]
    assert "traces" in plan_request.json_schema["properties"]
    assert all(set(r.json_schema["properties"]) == {"content"} for r in writes)
    plan_props = properties(plan_request.json_schema, "TracePlan")
    assert plan_props["delay_hours"]["maximum"] == 27, "the delay bound keeps a trace inside the timeline"
    assert plan_props["evidence"]["items"]["enum"] == [1, 2, 3]

    traces = load(tmp_path / PID, "traces.jsonl")
    assert [t.id for t in traces] == [mint_id(late.id, "trace", k) for k in range(2)]
    assert {t.event_id for t in traces} == {late.id} and {t.persona_id for t in traces} == {PID}
    alpha, beta = traces
    assert (alpha.intent, alpha.medium, alpha.audience) == ("intent-alpha", "email", "Sam")
    assert (beta.intent, beta.medium, beta.audience) == ("intent-beta", "diary", "self")
    # the uncarried evidence 3 joins the first of the equally short plans; the repeated 2 counts once
    assert alpha.evidence_ids == ["ev2", "ev3"] and beta.evidence_ids == ["ev1"]
    assert {e for t in traces for e in t.evidence_ids} == {"ev1", "ev2", "ev3"}
    assert alpha.time == LATE + dt.timedelta(hours=27) == dt.datetime(2022, 2, 11, 23, 59)
    assert beta.time == LATE + dt.timedelta(hours=5)
    # writes run concurrently: match each trace to the write request that carried its plan's intent; the
    # provider pops one scripted reply per request, so writes[i] got WRITES[i]
    for trace in traces:
        asked = [i for i, r in enumerate(writes) if f"Intent: {trace.intent}" in r.messages[-1]["content"]]
        assert len(asked) == 1, trace.intent
        assert trace.content == WRITES[asked[0]].strip()
        assert trace.tokens > 0
        carried = {f"- fact {j}" for j in (1, 2, 3) if f"ev{j}" in trace.evidence_ids}
        listed = {f"- fact {j}" for j in (1, 2, 3) if f"- fact {j}" in writes[asked[0]].messages[-1]["content"]}
        assert listed == carried, "the write is told exactly the evidence its trace carries"
    # code added evidence 3 to alpha's plan, whose intent never mentions it: its writer is told so, and only of it
    prompt = {trace.intent: writes[i].messages[-1]["content"] for trace in traces for i, r in enumerate(writes)
              if f"Intent: {trace.intent}" in r.messages[-1]["content"]}
    added = "(added to this record after it was planned"
    assert f"- fact 3 {added}" in prompt["intent-alpha"] and f"- fact 2 {added}" not in prompt["intent-alpha"]
    assert added not in prompt["intent-beta"]
