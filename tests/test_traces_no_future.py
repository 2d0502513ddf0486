"""No future in a trace prompt (DESIGN principle 10) and complete gold labels (a writer sees only the evidence its
trace carries): the traces stage run on hand-built inputs, its rendered requests read back from the fake provider;
and the lexical label check of synth.quality.label_check."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from handmade import END, PID, START, maya
from kit import run_stage

from synth.config.prompts import render
from synth.core.jsonl import read_records, write_atomic
from synth.llm.base import LLMRequest
from synth.quality.label_check import unlabelled_evidence
from synth.records import AnchorState, ArcState, Event, Evidence, LifeArc, MajorEvent, Phase, Snapshot, Trace
from synth.stages import traces
from synth.stages.common import state_map

STATES = 4
# major event 0 is aligned to these anchor indices (arc by arc), major event 1 to the next row
ALIGNED = [[0, 1, 0], [2, 2, 1]]
# a trace sees the states reached when its phase begins (the end of the phase before): a change its own phase
# brings about is carried by the evidence, not announced
REACHED = [[0, 0, 0], ALIGNED[0]]
# the arcs each major event's evidence touches: a prompt shows where those stand, not the others, nor the past states
TOUCHED = [[0], [0, 1]]


def state_text(arc: int, k: int) -> tuple[str, str]:
    return f"ARC{arc}-STATE{k}-LABEL", f"ARC{arc}-STATE{k}-DESCRIPTION"


def snap(tag: str) -> Snapshot:
    return Snapshot(energy=5, stress=5, dominant_emotion=f"EMOTION-{tag}", focus=f"FOCUS-{tag}",
                    arc_status={f"arc{i}": f"STATUS-{tag}-{i}" for i in range(3)})


def world() -> dict[str, list]:
    """Two major events with a phase each (the chain: phase 1 starts where phase 0 ends), one event per phase."""
    arcs = [LifeArc(id=f"arc{i}", persona_id=PID, dimension=dim, title=f"Arc {i}", description=f"arc {i} story",
                    anchor_states=[AnchorState(label=state_text(i, k)[0], description=state_text(i, k)[1],
                                               trigger="t", cues=["c"]) for k in range(STATES)])
            for i, dim in enumerate(["experience", "emotion", "opinion"])]
    spans = [(START, dt.date(2022, 1, 20)), (dt.date(2022, 1, 21), END)]
    majors = [MajorEvent(id=f"m{n}", persona_id=PID, index=n, title=f"M{n}", description="d", start=a, end=b,
                         arc_states=[ArcState(arc_id=f"arc{i}", anchor_index=k) for i, k in enumerate(ALIGNED[n])])
              for n, (a, b) in enumerate(spans)]
    snaps = [snap("START"), snap("END-OF-PHASE-0"), snap("END-OF-PHASE-1")]
    phases = [Phase(id=f"ph{n}", persona_id=PID, major_event_id=f"m{n}", index=0, title=f"P{n}", description="d",
                    start=a, end=b, snapshot_before=snaps[n], snapshot_after=snaps[n + 1],
                    arc_states=[ArcState(arc_id=f"arc{i}", anchor_index=k) for i, k in enumerate(ALIGNED[n])])
              for n, (a, b) in enumerate(spans)]
    events = [Event(id=f"e{n}", persona_id=PID, phase_id=f"ph{n}", time=dt.datetime.combine(a, dt.time(9)) +
                    dt.timedelta(days=2), title=f"EVENT-{n}", description="d", location="home", participant_ids=[])
              for n, (a, _) in enumerate(spans)]
    evidence = [Evidence(id=f"v{n}{j}", persona_id=PID, event_id=f"e{n}", kind="fact",
                         statement=f"STATEMENT-{n}-{j}", arc_ids=[f"arc{i}" for i in TOUCHED[n]])
                for n in range(2) for j in range(3)]
    return {"persona.jsonl": [maya()], "arcs.jsonl": arcs, "major_events.jsonl": majors, "phases.jsonl": phases,
            "events.jsonl": events, "evidence.jsonl": evidence, "people.jsonl": []}


def run_traces(out: Path, records: dict[str, list], script: tuple[str, ...] = ()) -> list[LLMRequest]:
    """The traces stage of p01_maya on `records` with the fake provider (answering `script` first): its requests."""
    for name, items in records.items():
        write_atomic(out / PID / name, items)
    return run_stage(out, "traces", config="[traces]\ntraces_per_event = 2\nmax_delay_hours = 12\n",
                     replies={"traces": list(script)}).seen


def is_plan(request: LLMRequest) -> bool:
    return "TracePlan" in request.json_schema.get("$defs", {})


def text_of(request: LLMRequest) -> str:
    return "\n".join(m["content"] for m in request.messages)


def later_states(major: int) -> list[str]:
    return [t for i, reached in enumerate(REACHED[major]) for k in range(reached + 1, STATES) for t in state_text(i, k)]


def reached_states(major: int) -> list[str]:
    """The state each arc the event touches stands at: the only anchor states its prompts show."""
    return [t for i in TOUCHED[major] for t in state_text(i, REACHED[major][i])]


def unshown_states(major: int) -> list[str]:
    """States the prompts leave out though they are past: those an arc has left, and any of an arc not touched."""
    return [t for i, reached in enumerate(REACHED[major]) for k in range(reached + 1) for t in state_text(i, k)
            if i not in TOUCHED[major] or k < reached]


def assert_no_future(text: str, major: int, own_end: str, rendered: bool = True) -> None:
    """No later state and not the own phase's end in `text`; a `rendered` prompt shows exactly the reached states
    of the arcs the event touches (the variables also hold the arcs' past states, never shown)."""
    leaked = [t for t in later_states(major) if t in text]
    assert not leaked, f"later anchor states in the prompt: {leaked}"
    assert f"EMOTION-{own_end}" not in text and f"FOCUS-{own_end}" not in text and f"STATUS-{own_end}" not in text, \
        "the own phase's snapshot_after (the state at its end) is in the prompt"
    if not rendered:
        return
    missing = [t for t in reached_states(major) if t not in text]
    assert not missing, f"reached anchor states missing from the prompt: {missing}"
    extra = [t for t in unshown_states(major) if t in text]
    assert not extra, f"states left behind or of arcs the event does not touch, in the prompt: {extra}"


def test_the_first_events_prompts_show_only_what_exists_at_its_time(tmp_path):
    seen = run_traces(tmp_path, world())
    first = [r for r in seen if "EVENT-0" in text_of(r)]
    # the event's two traces are written in one call ([traces] write_together)
    assert sum(map(is_plan, first)) == 1 and len(first) == 2, "one plan and one write for the first event"
    for request in first:
        text = text_of(request)
        assert_no_future(text, 0, "END-OF-PHASE-0")
        assert "EMOTION-START" in text and "STATUS-START-0" in text, "the phase's start state is shown"
        assert "STATUS-START-1" not in text, "... with the status of the arcs the event touches only"
    # the second event sees further (its major event's states, the first phase whole), still not its own end
    second = [r for r in seen if "EVENT-1" in text_of(r)]
    assert len(second) == 2
    for request in second:
        text = text_of(request)
        assert_no_future(text, 1, "END-OF-PHASE-1")
        assert "EMOTION-END-OF-PHASE-0" in text
        assert "EMOTION-START" not in text and "STATUS-START" not in text, \
            "the previous phase is shown by what it was about, not by its (older) start state"
    # the cacheable prefix is timeless: the same for every request, arc titles and descriptions but no state
    prefixes = {r.messages[0]["content"] for r in seen}
    assert len(prefixes) == 1
    prefix = prefixes.pop()
    assert "arc 2 story" in prefix and "STATE" not in prefix and "EMOTION" not in prefix


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_prompt_variables_carry_no_future_in_either_language(language):
    """The stage's own variable builders, rendered in both languages (the stage run above is English)."""
    records = world()
    at = 0
    phases, arcs = records["phases.jsonl"], records["arcs.jsonl"]
    event, evidence = records["events.jsonl"][at], records["evidence.jsonl"][:3]
    who = maya().model_copy(update={"language": language}).model_dump(mode="json")
    context = traces.event_context(who, traces.arcs_so_far(arcs, traces.reached_states(phases, at)),
                                   traces.snapshot_history(phases, at), event,
                                   {"arc_ids": ["arc0"], "media": ["diary"], "targets": {"diary": 100}, "public": []})
    assert_no_future(json.dumps(context), 0, "END-OF-PHASE-0", rendered=False)  # not even a variable
    plan = traces.plan_variables(context, event, evidence, 2, {"diary": 1.0}, 12)
    answer = traces.plan_answer(("diary",), 3, 1, 12).model_validate({"traces": [{
        "reasons": "PLANNER-REASONS", "medium": "diary", "intent": "i", "audience": "self", "key_information": "k", "evidence": [2],
        "delay_hours": 1}]}).traces[0]
    write = traces.write_variables(context, answer, [evidence[1]], event.time, (50, 100))
    for name, variables in (("traces_plan.j2", plan), ("traces_write.j2", write)):
        system, task = (m["content"] for m in render(name, language=language, **variables))
        assert_no_future(f"{system}\n{task}", 0, "END-OF-PHASE-0")
        assert "STATE" not in system and "arc 1 story" in system, "the prefix holds arc titles, not states"
    assert "PLANNER-REASONS" not in json.dumps(write), "the planner's reasons never reach the writer"


def test_arcs_so_far_show_the_states_reached_when_the_phase_begins():
    records = world()
    arcs, phases = records["arcs.jsonl"], records["phases.jsonl"]
    assert traces.reached_states(phases, 0) == {}
    assert [len(a["anchor_states"]) for a in traces.arcs_so_far(arcs, traces.reached_states(phases, 0))] == [1, 1, 1]
    assert [len(a["anchor_states"]) for a in traces.arcs_so_far(arcs, traces.reached_states(phases, 1))] == [1, 2, 1]
    assert [len(a["anchor_states"]) for a in traces.arcs_so_far(arcs, {"arc0": 9})] == [4, 1, 1], "capped"



@pytest.mark.parametrize("language", ["en", "zh"])
def test_an_arc_the_phase_moves_on_is_shown_as_its_start_state_and_marked_changing(language):
    """A capable writer met a knee "now: ignoring the pain" for an event six days after the knee gave way: the
    state shown is the phase's start, and the phase moves it on. The prompt says so, never naming the state ahead."""
    records = world()
    phases, arcs = records["phases.jsonl"], records["arcs.jsonl"]
    moved = traces.arcs_so_far(arcs, traces.reached_states(phases, 0), state_map(phases[0].arc_states))
    assert [a["moving"] for a in traces.moment_arcs(moved, None)] == [False, True, False]
    mark = "this phase changes it" if language == "en" else "这个阶段里它在变"
    for at in (0, 1):
        event, evidence = records["events.jsonl"][at], records["evidence.jsonl"][3 * at:3 * at + 3]
        who = maya().model_copy(update={"language": language}).model_dump(mode="json")
        context = traces.event_context(
            who, traces.arcs_so_far(arcs, traces.reached_states(phases, at), state_map(phases[at].arc_states)),
            traces.snapshot_history(phases, at), event,
            {"arc_ids": [f"arc{i}" for i in TOUCHED[at]], "media": ["diary"], "targets": {"diary": 100}, "public": []})
        _, task = (m["content"] for m in render("traces_plan.j2", language=language,
                                                **traces.plan_variables(context, event, evidence, 2, {"diary": 1.0}, 12)))
        assert_no_future(task, at, f"END-OF-PHASE-{at}")
        # event 0 touches arc 0, which its phase leaves as it is; event 1 touches arcs 0 and 1, both moved on
        assert task.count(mark) == (0 if at == 0 else 2), (at, task)


# ------------------------------------------------------------------------ a writer sees only what it carries

def test_a_writer_sees_its_carried_statements_and_none_of_the_events_others(tmp_path):
    records = world()
    records["events.jsonl"] = records["events.jsonl"][:1]
    records["evidence.jsonl"] = records["evidence.jsonl"][:3]
    plans = {"traces": [
        {"reasons": "REASONS-ONE private", "medium": "diary", "intent": "intent-one", "audience": "self",
         "key_information": "k", "evidence": [1], "delay_hours": 1},
        {"reasons": "REASONS-TWO", "medium": "email", "intent": "intent-two", "audience": "Sam", "key_information": "k", "evidence": [2, 3],
         "delay_hours": 2},
    ]}
    seen = run_traces(tmp_path, records, (json.dumps(plans),))
    plan = [r for r in seen if is_plan(r)]
    assert len(plan) == 1 and all(f"STATEMENT-0-{j}" in text_of(plan[0]) for j in range(3))
    carried = {"intent-one": {0}, "intent-two": {1, 2}}
    writes = [r for r in seen if not is_plan(r)]
    assert len(writes) == 1, "the event's two traces are written in one call ([traces] write_together)"
    head, *parts = text_of(writes[0]).split("### Trace ")
    assert len(parts) == 2 and "STATEMENT-0" not in head
    for text in parts:  # each trace's part of the prompt shows the statements it carries, no other
        (intent,) = [i for i in carried if f"Intent: {i}" in text]
        shown = {j for j in range(3) if f"STATEMENT-0-{j}" in text}
        assert shown == carried[intent], f"{intent} shows statements {shown}"
    assert "REASONS-" not in text_of(writes[0]), "the planner's reasons are not passed to the writer"
    traces_written = read_records(tmp_path / PID / "traces.jsonl", Trace)
    assert sorted(t.reasons for t in traces_written) == ["REASONS-ONE private", "REASONS-TWO"], "kept on the trace"


# ------------------------------------------------------------------------------------- the lexical label check

def evidence_item(eid: str, statement: str, event: str = "e0") -> Evidence:
    return Evidence(id=eid, persona_id=PID, event_id=event, kind="fact", statement=statement, arc_ids=["arc0"])


def trace_item(tid: str, content: str, labels: list[str], event: str = "e0") -> Trace:
    return Trace(id=tid, persona_id=PID, event_id=event, evidence_ids=labels, medium="diary",
                 time=dt.datetime(2022, 1, 3, 9), intent="i", audience="self", content=content)


def test_label_check_finds_a_carried_but_unlabelled_statement_in_english():
    items = [evidence_item("v1", "Maya argued with her manager about the night shifts."),
             evidence_item("v2", "Maya booked a pottery class for Saturday morning.")]
    found = [trace_item("t1", "Dear diary, I argued with my manager again about night shifts. I am done.", ["v2"]),
             trace_item("t2", "Booked the pottery class for Saturday morning!", ["v2"]),
             trace_item("t3", "Argued with the manager over the night shifts.", [], event="e9")]  # another event
    assert unlabelled_evidence(items, found) == [("v1", "t1")]
    # as the plain dicts `synth validate` reads, the same answer
    assert unlabelled_evidence([e.model_dump(mode="json") for e in items],
                               [t.model_dump(mode="json") for t in found]) == [("v1", "t1")]


def test_label_check_passes_labelled_or_unrelated_traces_in_english():
    items = [evidence_item("v1", "Maya argued with her manager about the night shifts.")]
    clean = [trace_item("t1", "I argued with my manager about night shifts.", ["v1"]),
             trace_item("t2", "Long walk by the river with Sam; the weather finally turned.", [])]
    assert unlabelled_evidence(items, clean) == []


def test_label_check_finds_a_carried_but_unlabelled_statement_in_chinese():
    items = [evidence_item("v1", "林晓和主管因为夜班安排吵了一架。"),
             evidence_item("v2", "林晓报名了周六上午的陶艺课。")]
    found = [trace_item("t1", "今天又和主管因为夜班安排吵了一架，真的很累。", ["v2"]),
             trace_item("t2", "报名了周六上午的陶艺课，期待！", ["v2"])]
    assert unlabelled_evidence(items, found) == [("v1", "t1")]


def test_label_check_passes_labelled_or_unrelated_traces_in_chinese():
    items = [evidence_item("v1", "林晓和主管因为夜班安排吵了一架。")]
    clean = [trace_item("t1", "今天和主管因为夜班安排吵了一架。", ["v1"]),
             trace_item("t2", "傍晚和萨姆去河边散步，天气终于转晴了。", [])]
    assert unlabelled_evidence(items, clean) == []


def test_the_trace_prompts_show_the_person_without_what_only_the_lifes_planning_needed(tmp_path):
    """The writer's profile: who the person is and whom they know (names come from it), not their schooling,
    family history or the story before the timeline (they stay in the planning stages' prompts)."""
    records = world()
    records["persona.jsonl"] = [maya(personality="PERSONALITY-X", family_history="FAMILY-X", education="SCHOOL-X",
                                     backstory="BACKSTORY-X", interests=["INTEREST-X"])]
    seen = run_traces(tmp_path, records)
    assert seen
    for request in seen:
        prefix = request.messages[0]["content"]
        assert "PERSONALITY-X" in prefix and "INTEREST-X" in prefix and "Sam (partner)" in prefix
        assert not {"FAMILY-X", "SCHOOL-X", "BACKSTORY-X"} & set(prefix.split()), prefix
