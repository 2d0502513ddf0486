"""Generation stages persona → arcs → phases → events → traces: end to end with the fake provider, and scripted."""

from __future__ import annotations

import datetime as dt
import itertools
import json
from pathlib import Path

import pytest
from handmade import phase_inputs
from kit import run_stage

from synth.core.jsonl import read_records
from synth.records import FILES, AnchorState, LifeArc, Persona, mint_id
from synth.stages.arcs import aligned, place
from synth.stages.traces import carry_all, suggest_media

ROOT = Path(__file__).resolve().parents[1]
PERSONAS = ROOT / "personas"
STAGES = ["persona", "arcs", "phases", "events", "traces"]
OUTPUTS = ["persona.jsonl", "seeds.jsonl", "arcs.jsonl", "major_events.jsonl", "phases.jsonl", "people.jsonl", "events.jsonl",
           "evidence.jsonl", "traces.jsonl"]
# More phases and traces than tiny, so chains inside an event and multi-trace carrying are exercised too.
RICHER = """
[arcs]
min_major_events = 3
[phases]
phases_per_event = 3
[events]
events_per_week = 3
min_events = 3
max_events = 3
[traces]
traces_per_event = 2
"""


def load(directory: Path) -> dict[str, list]:
    return {name: read_records(directory / name, FILES[name]) for name in OUTPUTS}


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("gen")
    richer = base / "richer.toml"
    richer.write_text(RICHER)
    run_stage(base / "a", STAGES)
    run_stage(base / "b", STAGES)
    run_stage(base / "zh", STAGES, persona="p03_xiaoyu", config=richer)
    run_stage(base / "rich", STAGES, persona="p02_daniel", config=richer)
    return {"a": base / "a" / "p01_maya", "b": base / "b" / "p01_maya", "zh": base / "zh" / "p03_xiaoyu",
            "rich": base / "rich" / "p02_daniel"}


@pytest.mark.parametrize("which", ["a", "zh", "rich"])
def test_every_file_exists_with_records(datasets, which):
    for name in OUTPUTS:
        path = datasets[which] / name
        assert path.is_file(), name
        assert read_records(path, FILES[name]), f"{name} is empty"


def test_ids_are_unique_and_deterministic(datasets):
    a, b = load(datasets["a"]), load(datasets["b"])
    seen: set[str] = set()
    for name in OUTPUTS:
        ids = [r.id for r in a[name]]
        if name != "persona.jsonl":
            assert not seen & set(ids), f"{name}: an id repeats across files"
        assert len(ids) == len(set(ids)), f"{name}: duplicate ids"
        seen |= set(ids)
        assert ids == [r.id for r in b[name]], f"{name}: ids differ between two runs"


@pytest.mark.parametrize("which", ["a", "zh", "rich"])
def test_links_resolve(datasets, which):
    d = load(datasets[which])
    persona = d["persona.jsonl"][0]
    arcs = {a.id for a in d["arcs.jsonl"]}
    seeds = {s.id for s in d["seeds.jsonl"]}
    majors = {m.id for m in d["major_events.jsonl"]}
    phases = {p.id for p in d["phases.jsonl"]}
    events = {e.id for e in d["events.jsonl"]}
    evidence = {e.id for e in d["evidence.jsonl"]}
    relations = {r.id for r in persona.relations}
    assert len(persona.relations) >= 5
    assert {s.origin for s in d["seeds.jsonl"]} == {"predefined", "added"}
    assert {a.dimension for a in d["arcs.jsonl"]} == {"experience", "emotion", "opinion"}
    for arc in d["arcs.jsonl"]:
        assert set(arc.seed_ids) <= seeds and arc.seed_ids
    for m in d["major_events.jsonl"]:
        assert m.seed_id in seeds if m.kind == "major" else m.seed_id is None
        assert [s.arc_id for s in m.arc_states] == [a.id for a in d["arcs.jsonl"]]
    assert all(p.major_event_id in majors for p in d["phases.jsonl"])
    cast = relations | {p.id for p in d["people.jsonl"] if p.kind == "person"}
    assert all(e.phase_id in phases and set(e.participant_ids) <= cast for e in d["events.jsonl"])
    kind = {m.id: m.kind for m in d["major_events.jsonl"]}
    everyday = {e.id for e in d["events.jsonl"] if kind[next(p.major_event_id for p in d["phases.jsonl"]
                                                              if p.id == e.phase_id)] == "everyday"}
    assert all(e.event_id in events and set(e.arc_ids) <= arcs for e in d["evidence.jsonl"])
    assert all(e.arc_ids for e in d["evidence.jsonl"] if e.event_id not in everyday), "major evidence moves an arc"
    for t in d["traces.jsonl"]:
        assert t.event_id in events and t.evidence_ids and set(t.evidence_ids) <= evidence
    carried = {i for t in d["traces.jsonl"] for i in t.evidence_ids}
    assert carried == evidence, "some evidence is carried by no trace"


@pytest.mark.parametrize("which", ["a", "zh", "rich"])
def test_dates_are_contained_and_ordered(datasets, which):
    d = load(datasets[which])
    persona = d["persona.jsonl"][0]
    assert persona.end == persona.start + dt.timedelta(days=41)  # tiny: timeline_days = 42
    majors = d["major_events.jsonl"]
    for m, nxt in zip(majors, majors[1:] + [None], strict=True):
        assert persona.start <= m.start <= m.end <= persona.end
        if nxt:
            assert m.end < nxt.start, "major events overlap or are out of order"
    by_major = {m.id: m for m in majors}
    phases = {p.id: p for p in d["phases.jsonl"]}
    for m in majors:
        own = [p for p in d["phases.jsonl"] if p.major_event_id == m.id]
        assert own and own[0].start == m.start and own[-1].end == m.end
        for p, q in itertools.pairwise(own):
            assert q.start == p.end + dt.timedelta(days=1), "phases of an event are not contiguous"
        for p in own:
            assert by_major[p.major_event_id].start <= p.start <= p.end <= by_major[p.major_event_id].end
    events = {e.id: e for e in d["events.jsonl"]}
    for e in events.values():
        assert phases[e.phase_id].start <= e.time.date() <= phases[e.phase_id].end
    for t in d["traces.jsonl"]:
        assert events[t.event_id].time <= t.time <= dt.datetime.combine(persona.end, dt.time(23, 59))


@pytest.mark.parametrize("which", ["a", "zh", "rich"])
def test_snapshot_chain_and_arc_alignment(datasets, which):
    d = load(datasets[which])
    arc_ids = [a.id for a in d["arcs.jsonl"]]
    phases = d["phases.jsonl"]
    for p, q in itertools.pairwise(phases):
        assert p.snapshot_after == q.snapshot_before, "the rolling snapshot was reset between phases"
    for p in phases:
        assert list(p.snapshot_before.arc_status) == arc_ids == list(p.snapshot_after.arc_status)
    best = {a: 0 for a in arc_ids}
    states = {a.id: len(a.anchor_states) for a in d["arcs.jsonl"]}
    for m in d["major_events.jsonl"]:
        for s in m.arc_states:
            assert best[s.arc_id] <= s.anchor_index < states[s.arc_id]
            best[s.arc_id] = s.anchor_index


def test_rich_run_has_several_phases_per_event_and_traces_per_event(datasets):
    d = load(datasets["rich"])
    assert len(d["major_events.jsonl"]) >= 3
    assert len(d["phases.jsonl"]) > len(d["major_events.jsonl"])
    per_event, rerouted = {}, set()
    for t in d["traces.jsonl"]:
        per_event[t.event_id] = per_event.get(t.event_id, 0) + 1
        if t.privacy_plan == "rerouted":
            rerouted.add(t.event_id)
    # two per event; one when code moved a public plan's only (private) evidence to the other plan (synth.quality.privacy)
    assert {n for e, n in per_event.items() if e not in rerouted} == {2}
    assert {n for e, n in per_event.items() if e in rerouted} <= {1, 2}
    assert all(t.tokens > 0 for t in d["traces.jsonl"])


def test_chinese_persona_writes_chinese(datasets):
    d = load(datasets["zh"])
    cjk = lambda s: any("\u4e00" <= ch <= "\u9fff" for ch in s)  # noqa: E731
    assert d["persona.jsonl"][0].language == "zh"
    assert all(cjk(t.content) for t in d["traces.jsonl"])
    assert all(cjk(e.statement) for e in d["evidence.jsonl"])


# ------------------------------------------------------------------------------------------ pure helpers

def test_place_makes_spans_disjoint_inside_the_timeline():
    assert place([(3, 5), (5, 20), (5, 6), (39, 41), (40, 40)], 42) == [(3, 4), (5, 5), (6, 6), (39, 39), (40, 40)]
    assert place([(41, 41)] * 3, 42) == [(39, 39), (40, 40), (41, 41)], "crowded spans are pushed back in"


def test_aligned_is_monotonic_and_bounded():
    arcs = [LifeArc(id="a", persona_id="p", dimension="emotion", title="t", description="d",
                    anchor_states=[AnchorState(label="x", description="d", trigger="t", cues=[])] * 3)]
    assert aligned([[2], [0], [1], [7]], arcs) == [[2], [2], [2], [2]]
    assert aligned([[0], [1], [0]], arcs) == [[0], [1], [1]]


def test_a_state_is_reached_in_the_event_that_tells_its_trigger():
    """A capable writer put a state whose trigger was the exam results in the festival event before the results
    came out: the state moves to the later event that tells them; a trigger no event tells stays where planned."""
    from synth.stages.arcs import where_told

    def arc(trigger: str) -> LifeArc:
        states = [AnchorState(label="before", description="d", trigger="t", cues=[]),
                  AnchorState(label="after", description="d", trigger=trigger, cues=[])]
        return LifeArc(id="a", persona_id="p", dimension="experience", title="t", description="d",
                       anchor_states=states)

    results = arc("the exam results come out ten points short")
    told = ["Spring Festival at her parents': dumplings, relatives asking about her plans.",
            "The exam results are published: she is ten points short of the line."]
    assert where_told(told, [[1], [1]], [results]) == [[0], [1]]
    assert where_told(told[::-1], [[1], [1]], [results]) == [[1], [1]], "told where planned: kept"
    assert where_told([told[0], "A quiet week."], [[1], [1]], [results]) == [[1], [1]], "told nowhere: kept"
    zh = arc("初试出分，总分离复试线差十几分")
    said = ["春节回老家，亲戚们围着问她的打算。", "初试出分了，总分离复试线还差十几分。"]
    assert where_told(said, [[1], [1]], [zh]) == [[0], [1]]
    three = LifeArc(id="a", persona_id="p", dimension="experience", title="t", description="d",
                    anchor_states=[*results.anchor_states, AnchorState(label="x", description="d", trigger="t2",
                                                                         cues=[])])
    assert where_told([told[0], "Something else.", told[1]], [[1], [2], [2]], [three]) == [[1], [2], [2]], \
        "a further state before the telling event: kept"


def test_carry_all_gives_every_evidence_a_trace():
    plans, missing = carry_all([[1], [1, 2]], 4)
    assert missing == 0
    assert {i for p in plans for i in p} == {1, 2, 3, 4}
    assert carry_all([], 2) == ([], 2)


def test_media_suggestion_is_deterministic_and_follows_weights():
    weights = {"diary": 9.0, "email": 1.0}
    assert suggest_media("e1", 2, weights) == suggest_media("e1", 2, weights)
    firsts = [suggest_media(f"e{i}", 1, weights)[0] for i in range(300)]
    assert firsts.count("diary") > 200
    assert sorted(suggest_media("e1", 2, weights)) == ["diary", "email"]


# ------------------------------------------------------------------------------------------ scripted answers

PERSONA_ANSWER = {
    "name": "Maya Holt", "age": 34, "gender": "female", "personality": "warm and scattered",
    "family_history": "raised in Hull", "education": "nursing degree", "occupation": "nurse",
    "concerns": ["money", "mother's health"], "interests": ["watercolour", "hiking"],
    "backstory": "moved to Leeds in 2015",
    "relations": [{"name": n, "relation": r, "description": "d"} for n, r in [
        ("Ruth Holt", "mother"), ("Sam Okafor", "partner"), ("Priya Das", "colleague"),
        ("Ruth Holt", "aunt"), ("Leo Park", "friend")]],
}


def test_persona_maps_a_scripted_answer(tmp_path):
    fake = run_stage(tmp_path, "persona", replies={"persona": [PERSONA_ANSWER]})
    persona = read_records(tmp_path / "p01_maya" / "persona.jsonl", Persona)[0]
    assert (persona.id, persona.persona_id, persona.name, persona.age) == ("p01_maya", "p01_maya", "Maya Holt", 34)
    assert persona.start == dt.date(2022, 1, 1) and persona.end == dt.date(2022, 2, 11)
    assert persona.big_five.openness == 0.82 and persona.big_five.neuroticism == 0.55
    assert [r.id for r in persona.relations] == [mint_id("p01_maya", "relation", i) for i in range(5)]
    assert [r.name for r in persona.relations] == ["Ruth Holt", "Sam Okafor", "Priya Das", "Ruth Holt (2)",
                                                    "Leo Park"]
    assert persona.relations[3].relation == "aunt"
    schema = fake.seen[0].json_schema
    assert schema["properties"]["relations"]["minItems"] == 5


def _snapshot(tag: str) -> str:
    return json.dumps({"energy": 5, "stress": 4, "dominant_emotion": f"emotion {tag}", "focus": f"focus {tag}",
                       "arc_status": [f"{tag} arc0", f"{tag} arc1"]})


def test_phases_follow_algorithm_1_on_scripted_answers(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text("[phases]\nphases_per_event = 2\n")
    arcs, majors = phase_inputs(tmp_path / "p01_maya")
    phase = lambda t, end: json.dumps({"title": t, "description": f"{t} text", "end_day": end})  # noqa: E731
    script = [_snapshot("H0"), phase("P0", 3), _snapshot("H1"), phase("P1", 9), _snapshot("H2"),
              phase("P2", 2), _snapshot("H3"), phase("P3", 5), _snapshot("H4")]
    fake = run_stage(tmp_path, "phases", config=config, replies={"phases": script})
    assert not fake.unused(), "every scripted answer is consumed: init once, then generate + update per phase"
    phases = read_records(tmp_path / "p01_maya" / "phases.jsonl", FILES["phases.jsonl"])
    assert [p.id for p in phases] == [mint_id(m.id, "phase", k) for m in majors for k in range(2)]
    assert [p.title for p in phases] == ["P0", "P1", "P2", "P3"]
    assert [(p.start.isoformat(), p.end.isoformat()) for p in phases] == [
        ("2022-01-01", "2022-01-04"), ("2022-01-05", "2022-01-10"),
        ("2022-01-15", "2022-01-17"), ("2022-01-18", "2022-01-20")]
    assert [p.snapshot_before.focus for p in phases] == ["focus H0", "focus H1", "focus H2", "focus H3"]
    assert phases[-1].snapshot_after.arc_status == {"arc0": "H4 arc0", "arc1": "H4 arc1"}
    assert [p.major_event_id for p in phases] == ["m0", "m0", "m1", "m1"]
    # the first phase may end on days 0..8 of a 10-day event (room for the second); the last ends with it
    first, last = fake.seen[1].json_schema, fake.seen[3].json_schema
    assert (first["properties"]["end_day"]["minimum"], first["properties"]["end_day"]["maximum"]) == (0, 8)
    assert (last["properties"]["end_day"]["minimum"], last["properties"]["end_day"]["maximum"]) == (9, 9)


def test_events_map_people_and_arcs_by_label(tmp_path):
    arcs, majors = phase_inputs(tmp_path / "p01_maya")
    run_stage(tmp_path, "phases")
    phase = read_records(tmp_path / "p01_maya" / "phases.jsonl", FILES["phases.jsonl"])[0]
    answer = {"events": [
        {"title": t, "description": "d", "location": "ward", "day": day, "hour": 9, "minute": 30,
         "participants": ["Sam", "Sam"] if t == "late" else [],
         "evidence": [{"kind": "fact", "statement": f"{t} fact", "arcs": ["Arc 1", "Arc 0", "Arc 1"], "private": False},
                      {"kind": "emotion", "statement": f"{t} feeling", "arcs": ["Arc 0"], "private": True}]}
        for t, day in [("late", 0), ("early", 0)]]}
    answer["events"][1]["hour"] = 7
    config = tmp_path / "two.toml"
    config.write_text("[events]\nmin_events = 2\nmax_events = 2\n")
    run_stage(tmp_path, "events", config=config, replies={"events": [answer] * 2})
    events = read_records(tmp_path / "p01_maya" / "events.jsonl", FILES["events.jsonl"])
    evidence = read_records(tmp_path / "p01_maya" / "evidence.jsonl", FILES["evidence.jsonl"])
    own = [e for e in events if e.phase_id == phase.id]
    assert [e.title for e in own] == ["early", "late"], "events are sorted by time"
    assert own[0].id == mint_id(phase.id, "event", 0)
    assert own[0].time == dt.datetime.combine(phase.start, dt.time(7, 30))
    assert own[1].participant_ids == ["r1"]
    first = [e for e in evidence if e.event_id == own[1].id]
    assert first[0].arc_ids == ["arc1", "arc0"] and first[1].arc_ids == ["arc0"]
    assert [e.private for e in first] == [False, True], "the answer's privacy mark reaches the evidence record"
    assert first[0].id == mint_id(own[1].id, "evidence", 0)
