"""Stages qa and distractors on a hand-made persona: grounding, question times, placement, the refinement loop."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter

import pytest
from qa_world import END, HAND_ANSWER, START, QAWorld, hand_qa, key_letter, not_key

from synth.life.windows import Segment, arc_states, candidates, observable_evidence, trajectory_segments
from synth.records import (
    CANNOT_DETERMINE,
    MCQ,
    QA,
    QUESTION_TYPES,
    Event,
    Evidence,
    LifeArc,
    MajorEvent,
    Phase,
    mint_id,
)
from synth.stages.distractors import arrange, balanced_positions


@pytest.fixture
def world(tmp_path) -> QAWorld:
    return QAWorld(tmp_path / "out")


# ------------------------------------------------------------------------------------------------- qa

def first_seen(world: QAWorld) -> dict[str, dt.datetime]:
    """Evidence id → its first trace's time: when it becomes observable."""
    seen: dict[str, dt.datetime] = {}
    for trace in world.traces().values():
        for evidence_id in trace.evidence_ids:
            seen[evidence_id] = min(seen.get(evidence_id, trace.time), trace.time)
    return seen


def check_question_time(world: QAWorld, item: QA) -> None:
    """The question time's bounds: not before a needed trace, not past the end + grace, and (answerable items)
    before the arc's next evidence after the newest needed trace, so the answer is still true when asked."""
    traces = world.traces()
    newest = max(traces[t].time for t in item.digital_trace_ids)
    assert newest <= item.question_time
    assert item.question_time.date() <= END + dt.timedelta(days=world.config["qa"]["question_grace_days"])
    if item.question_type != "unanswerable":
        arc_times = [when for e, when in first_seen(world).items() if item.arc_id in evidence_arcs(world)[e]]
        later = [when for when in arc_times if when > newest]
        assert not later or item.question_time < min(later)


def evidence_arcs(world: QAWorld) -> dict[str, list[str]]:
    return {e.id: e.arc_ids for e in world.read("evidence.jsonl", Evidence)}


def test_qa_items_are_grounded_and_never_asked_before_their_traces(world):
    # twelve tries a type (as below): the fake's draws, reseeded by any prompt's or schema's wording, decide whether
    # a type's two tries both fail
    world.config["qa"]["plans_per_type"] = 12
    world.run("qa")
    items = world.read("qa.jsonl", QA)
    traces = world.traces()
    evidence = {e.id: e for e in world.read("evidence.jsonl", Evidence)}
    arcs = {a.id: a for a in world.read("arcs.jsonl", LifeArc)}
    assert items and len({i.id for i in items}) == len(items)
    assert max(Counter(i.question_type for i in items).values()) <= 2  # target_per_type
    assert "unanswerable" in {i.question_type for i in items}
    for item in items:
        assert item.dimension == arcs[item.arc_id].dimension
        assert item.question_time.date() >= START
        check_question_time(world, item)
        assert item.evidence  # an unanswerable item's is its related background
        assert all(ref.background == (item.question_type == "unanswerable") for ref in item.evidence)
        union = {t for ref in item.evidence for t in ref.digital_trace_ids}
        assert set(item.digital_trace_ids) == union
        for ref in item.evidence:
            assert item.arc_id in evidence[ref.evidence_id].arc_ids
            assert ref.statement == evidence[ref.evidence_id].statement
            for trace_id in ref.digital_trace_ids:
                assert ref.evidence_id in traces[trace_id].evidence_ids
                assert traces[trace_id].time <= item.question_time


def test_qa_plan_schema_constrains_evidence_to_the_segment(world):
    world.run("qa")
    # the first asks (a re-ask's last message is the repair, e.g. a plan twinning an earlier one's evidence)
    plans = [r for r in world.model.seen if r.task == "qa_plan" and "# Step 1: plan" in r.messages[-1]["content"]]
    assert plans
    for request in plans:
        # evidence lines ("[n] date · kind · media: statement"), not the statements quoted by earlier plans
        shown = sum(1 for line in request.messages[-1]["content"].splitlines() if re.match(r"\[\d+\] ", line))
        enum = request.json_schema["properties"]["evidence"]["items"]["enum"]
        assert enum == list(range(1, shown + 1))
        # at least the type's least evidence (`least_evidence`: 2 for a comparison, 1 for a factual item)
        assert request.json_schema["properties"]["evidence"]["minItems"] in (1, 2)
    assert {r.json_schema["properties"]["evidence"]["minItems"] for r in plans} == {1, 2}


def test_all_eight_types_are_planned_and_written_with_the_fake(world):
    # the fake's plans are random draws (feasible 3 times in 4, evidence picked at random, then the type's gates):
    # twelve tries a type, so that a prompt's wording, which reseeds the draws, does not decide the outcome
    world.config["qa"]["plans_per_type"] = 12
    world.run("qa")
    assert {i.question_type for i in world.read("qa.jsonl", QA)} == set(QUESTION_TYPES)


def one_type(world: QAWorld, question_type: str, window_days: int | None = None) -> None:
    world.config["qa"].update(types=[question_type], plans_per_type=1, target_per_type=1)
    if window_days is not None:
        world.config["qa"].update(window_days=window_days, stride_days=window_days)


def plan_reply(evidence: list[int], days: int = 0, hour: int = 12, feasible: bool = True, absent: str = "") -> str:
    return json.dumps({"feasible": feasible, "evidence": evidence, "temporal_scope": "s", "outline": "o",
                       "absent_topic": absent, "ask_after_days": days, "ask_hour": hour})


WRITE_REPLY = json.dumps({"question": "Hey Lin, what did you do?", "answer": "I did it."})
NO_MATCH = json.dumps({"matches": False, "reason": "the reader guessed something else"})
MATCH = json.dumps({"matches": True, "reason": "both say she took the job"})


def test_a_question_a_no_context_reader_answers_is_written_again_with_what_it_gave_away(world):
    one_type(world, "factual")
    world.config["qa"]["standalone_rewrites"] = 2
    leaky = json.dumps({"question": "Now that you've taken the job, how do you feel?", "answer": "I took the job."})
    world.model.queue("qa_plan", plan_reply([1])).queue("qa_write", leaky, WRITE_REPLY)
    world.model.queue("qa_open_blind", json.dumps({"answer": "She took the job and feels relieved."}),
                      json.dumps({"answer": "Something at work."}))
    world.model.queue("qa_open_judge", MATCH, NO_MATCH)
    world.run("qa")
    [item] = world.read("qa.jsonl", QA)
    assert (item.question, item.answer) == ("Hey Lin, what did you do?", "I did it.")  # the rewrite is kept
    assert item.open_guesses == ["She took the job and feels relieved."]
    first, second = world.model.asked("qa_write")
    assert "Write the question again" not in first.messages[-1]["content"]
    shown = second.messages[-1]["content"]
    assert "Now that you've taken the job" in shown and "She took the job and feels relieved." in shown
    assert "both say she took the job" in shown
    readers = world.model.asked("qa_open_blind")
    assert [r.messages[-1]["content"].count("Now that you've taken the job") for r in readers] == [1, 0]
    assert all("I took the job." not in r.messages[-1]["content"] for r in readers)  # the reader never sees a key
    assert world.model.unused() == {}


def test_when_the_rewrites_run_out_the_last_question_is_kept_with_every_guess(world):
    one_type(world, "factual")
    world.config["qa"]["standalone_rewrites"] = 1
    world.model.queue("qa_plan", plan_reply([1])).queue("qa_write", WRITE_REPLY, WRITE_REPLY)
    world.model.queue("qa_open_blind", json.dumps({"answer": "a"}), json.dumps({"answer": "b"}))
    world.model.queue("qa_open_judge", MATCH, MATCH)
    world.run("qa")
    [item] = world.read("qa.jsonl", QA)
    assert item.open_guesses == ["a", "b"]
    assert len(world.model.asked("qa_write")) == 2 and world.model.unused() == {}


def test_a_dated_question_is_asked_again_and_kept_for_the_filter_when_it_stays_dated(world):
    """A capable writer asked about "一月" in three of sixteen questions, all then rejected by the filter: the
    question is re-asked with the date it named; one still dated when the re-asks run out is kept (the filter
    rejects it with its reason), never a failed unit."""
    one_type(world, "factual")
    world.config["qa"]["standalone_rewrites"] = 0
    dated = json.dumps({"question": "Hey Lin, what did you do in March?", "answer": "I did it."})
    world.model.queue("qa_plan", plan_reply([1])).queue("qa_write", dated, WRITE_REPLY)
    world.run("qa")
    [item] = world.read("qa.jsonl", QA)
    assert item.question == "Hey Lin, what did you do?"
    first, second = world.model.asked("qa_write")
    assert "question names “March”" in second.messages[-1]["content"]
    assert "A question names no year, month, date or weekday" in second.messages[-1]["content"]


def test_a_question_still_dated_after_the_re_asks_is_kept(world):
    one_type(world, "factual")
    world.config["qa"]["standalone_rewrites"] = 0
    dated = json.dumps({"question": "Hey Lin, what did you do in March?", "answer": "I did it."})
    world.model.queue("qa_plan", plan_reply([1])).queue("qa_write", *[dated] * 12)
    world.run("qa")
    [item] = world.read("qa.jsonl", QA)
    assert item.question == "Hey Lin, what did you do in March?"
    assert len(world.model.asked("qa_write")) >= 2


@pytest.mark.parametrize("question_type, rounds", [("factual", 0), ("unanswerable", 2)])
def test_unanswerable_questions_and_zero_rewrites_are_not_read_blind(world, question_type, rounds):
    one_type(world, question_type)
    world.config["qa"]["standalone_rewrites"] = rounds
    world.model.queue("qa_plan", plan_reply([1], absent="a boat" if question_type == "unanswerable" else ""))
    world.run("qa")
    assert len(world.read("qa.jsonl", QA)) == 1
    assert world.model.asked("qa_open_blind") == [] and world.model.asked("qa_open_judge") == []


def first_segment(world: QAWorld) -> Segment:
    """The segment the stage plans first for the world's one type (as the stage computes it)."""
    section = world.config["qa"]
    read = world.read
    states = arc_states(read("events.jsonl", Event), read("phases.jsonl", Phase), read("major_events.jsonl",
                                                                                         MajorEvent))
    items = observable_evidence(read("evidence.jsonl", Evidence), world.traces().values(), states)
    segments = trajectory_segments(items, [a.id for a in read("arcs.jsonl", LifeArc)], START, END,
                                   section["window_days"], section["stride_days"], section["max_segment_evidence"])
    [(_, segment)] = candidates(segments, section["types"], 1)
    return segment


def test_question_time_is_clamped_after_the_newest_needed_trace(world):
    one_type(world, "factual")
    world.model.queue("qa_plan", plan_reply([1], days=0, hour=7)).queue("qa_write", WRITE_REPLY)
    world.model.queue("qa_open_judge", NO_MATCH)
    world.run("qa")
    [item] = world.read("qa.jsonl", QA)
    newest = max(world.traces()[t].time for t in item.digital_trace_ids)
    assert newest.hour >= 7  # the asked hour (7:00 that day) would precede the trace; code moves it later
    assert item.question_time == newest.replace(minute=0) + dt.timedelta(hours=1)
    [write] = [r for r in world.model.seen if r.task == "qa_write"]
    assert set(write.json_schema["properties"]) == {"question", "answer"}  # the writer does not choose the time
    assert f"Asked at: {item.question_time.isoformat(timespec='minutes')} (fixed)" in write.messages[-1]["content"]
    [plan] = [r for r in world.model.seen if r.task == "qa_plan"]
    assert plan.json_schema["properties"]["ask_after_days"]["maximum"] == world.config["qa"]["max_question_delay_days"]


@pytest.mark.parametrize("window_days, pick, days, hour", [
    (60, "first", 0, 7), (60, "last", 30, 22), (60, "first", 30, 7),
    (181, "last", 30, 22),  # the arc's last evidence, a month later: past the end + grace, so clamped to it
    (181, "first", 30, 22), (181, "last", 0, 7), (90, "last", 11, 15),
])
def test_scripted_question_times_stay_between_their_traces_and_the_end(tmp_path, window_days, pick, days, hour):
    world = QAWorld(tmp_path / "out")
    one_type(world, "factual", window_days)
    segment = first_segment(world)
    world.model.queue("qa_plan", plan_reply([1 if pick == "first" else len(segment.evidence)], days, hour)).queue("qa_write", WRITE_REPLY)
    world.run("qa")
    [item] = world.read("qa.jsonl", QA)
    check_question_time(world, item)
    newest = max(world.traces()[t].time for t in item.digital_trace_ids)
    planned = dt.datetime.combine(newest.date() + dt.timedelta(days=days), dt.time(hour))
    if window_days == 181 and pick == "last" and days == 30:
        grace = dt.timedelta(days=world.config["qa"]["question_grace_days"])
        assert planned.date() > END + grace and item.question_time == dt.datetime.combine(END + grace, dt.time(hour))


def test_the_question_is_asked_before_the_arc_changes_in_the_gap(world):
    """Window January–March; the plan picks the arc's newest evidence (March 23) and asks a month later. The arc
    moves to its next state in April (a new major event): the question lands before that evidence appears."""
    one_type(world, "factual", window_days=90)
    segment = first_segment(world)
    last = segment.evidence[-1]
    world.model.queue("qa_plan", plan_reply([len(segment.evidence)], days=30, hour=18)).queue("qa_write", WRITE_REPLY)
    world.run("qa")
    [item] = world.read("qa.jsonl", QA)
    seen, arcs = first_seen(world), evidence_arcs(world)
    after = sorted((when, e) for e, when in seen.items() if segment.arc_id in arcs[e] and when > last.time)
    change_time, change = after[0]
    states = arc_states(world.read("events.jsonl", Event), world.read("phases.jsonl", Phase),
                        world.read("major_events.jsonl", MajorEvent))
    event_of = {e.id: e.event_id for e in world.read("evidence.jsonl", Evidence)}
    assert dict(states[event_of[change]])[segment.arc_id] == 1 == 1 + last.state_of(segment.arc_id)  # it changed
    assert change_time < last.time + dt.timedelta(days=30)  # inside the gap the plan asked for
    assert last.time <= item.question_time < change_time
    assert item.question_time == change_time.replace(minute=0) - dt.timedelta(hours=1)  # the last hour before


def test_an_unanswerable_item_keeps_its_background_evidence(world):
    one_type(world, "unanswerable")
    world.model.queue("qa_plan", plan_reply([1, 2], days=3, absent="the name of his new boss")).queue("qa_write", WRITE_REPLY)
    world.run("qa")
    [item] = world.read("qa.jsonl", QA)
    assert len(item.evidence) == 2 and all(ref.background for ref in item.evidence)
    assert item.digital_trace_ids == list(dict.fromkeys(t for ref in item.evidence for t in ref.digital_trace_ids))
    assert item.digital_trace_ids and all(world.traces()[t].time <= item.question_time for t in item.digital_trace_ids)


def test_an_infeasible_plan_writes_nothing(world):
    one_type(world, "causal")
    world.model.queue("qa_plan", plan_reply([1, 2], feasible=False))
    world.run("qa")
    assert world.read("qa.jsonl", QA) == []
    assert not [r for r in world.model.seen if r.task == "qa_write"]


def test_a_single_point_selection_cannot_carry_a_comparison(world):
    """A comparison plan of one evidence is refused by its schema (at least two) and asked again, never written."""
    one_type(world, "comparison")
    for _ in range(4):
        world.model.queue("qa_plan", plan_reply([2]))
    world.run("qa")  # re-asked until the repairs run out, then no plan for the type: not a failed unit
    plans = [r for r in world.model.seen if r.task == "qa_plan"]
    assert len(plans) >= 2 and "at least 2" in plans[-1].messages[-1]["content"]
    assert world.read("qa.jsonl", QA) == []
    assert not [r for r in world.model.seen if r.task == "qa_write"]


# ---------------------------------------------------------------------------------------- distractors

SAME_LENGTH = [
    "I only opened up because Xinyu drew a picture of our family that made me cry at dinner.",
    "A counsellor my boss recommended convinced me to talk to Xiaomei about the pressure I had.",
    "My mother's phone call about her rehab made me realise I should confide in my sister first.",
    "Old Zhang told me to take the branch job, and leaving town gave us space to finally talk again.",
]


# a type whose distractors are still written around the key (its options are numbers; the seeded types are
# tested in test_options.py)
WRITTEN = "temporal_duration"


def distractor_reply(texts=SAME_LENGTH) -> str:
    return json.dumps({"distractors": [{"text": t, "why_wrong": "another mechanism"} for t in texts]})


def verdict_reply(needs_memory: bool, reason: str, choice: str = "A") -> str:
    return json.dumps({"choice": choice, "needs_memory": needs_memory, "reason": reason})


def support_reply(key: bool = True, others: bool = True, notes=(), reason: str = "only the key holds",
                  favours: bool = False) -> str:
    return json.dumps({"key_supported": key, "others_ruled_out": others, "question_favours_option": favours,
                       "notes": [{"option": o, "problem": p} for o, p in notes], "reason": reason})


def test_refinement_loop_regenerates_until_validator_and_verify_judge_agree(world):
    qa = hand_qa(world, WRITTEN)
    # each round's options differ (identical options would replay the cached verdict, by design)
    world.model.queue("distractors", distractor_reply([t + " (1)" for t in SAME_LENGTH]),
                      distractor_reply([t + " (2)" for t in SAME_LENGTH]), distractor_reply())
    world.model.queue("distractors_validate", verdict_reply(False, "EASY-1: only one mentions Xiaomei"),
                      # the validator calls it hard but picks the key: too easy by fact
                      verdict_reply(True, "looks hard", key_letter(qa)),
                      verdict_reply(True, "needs the trajectory", not_key(qa)))
    world.model.queue("distractors_verify", support_reply())
    world.run("distractors")
    [mcq] = world.read("mcq.jsonl", MCQ)
    assert [(r.round, r.too_easy) for r in mcq.refinement] == [(1, True), (2, True), (3, False)]
    assert [r.blind_correct for r in mcq.refinement] == [False, True, False]
    assert mcq.refinement[-1].validator_choice == not_key(qa) and mcq.refinement[-1].supported is True
    assert [r.task for r in world.model.seen] == ["distractors", "distractors_validate"] * 3 + ["distractors_verify"]
    writes = [r.messages[-1]["content"] for r in world.model.seen if r.task == "distractors"]
    assert "EASY-1" not in writes[0] and "EASY-1" in writes[1] and "picked the correct answer" in writes[2]
    for request in world.model.seen:
        text = " ".join(m["content"] for m in request.messages)
        if request.task == "distractors_validate":
            assert "SECRET TRACE" not in text and "Statement" not in text  # no traces, no evidence
            assert request.settings.temperature == 0.0  # a judge
        if request.task == "distractors_verify":
            assert "SECRET TRACE" in text and f"marked correct: {key_letter(qa)}" in text
    assert mcq.correct_choice_id == key_letter(qa) and mcq.choices["ABCD".index(key_letter(qa))].text == HAND_ANSWER
    assert [c.id for c in mcq.choices] == list("ABCDE") and mcq.choices[4].text == CANNOT_DETERMINE["en"]
    # the three distractors closest in length to the answer are kept; the fourth is the spare
    kept = [c.text for c in mcq.choices[:4] if c.text != HAND_ANSWER]
    spare = max(SAME_LENGTH, key=lambda t: (abs(len(t) - len(HAND_ANSWER)), SAME_LENGTH.index(t)))
    assert kept == [t for t in SAME_LENGTH if t != spare]


def test_the_verify_judge_sends_a_second_right_option_back(world):
    qa = hand_qa(world, WRITTEN)
    world.model.queue("distractors", distractor_reply([t + " (1)" for t in SAME_LENGTH]), distractor_reply())
    world.model.queue("distractors_validate", verdict_reply(True, "hard", not_key(qa)),
                      verdict_reply(True, "hard", not_key(qa)))
    world.model.queue("distractors_verify", support_reply(others=False, notes=[("C", "C-IS-ALSO-TRUE in March")],
                                                          reason="two options hold"), support_reply())
    world.run("distractors")
    [mcq] = world.read("mcq.jsonl", MCQ)
    assert [r.supported for r in mcq.refinement] == [False, True]
    assert "C: C-IS-ALSO-TRUE" in mcq.refinement[0].support_reason
    second_write = [r for r in world.model.seen if r.task == "distractors"][1].messages[-1]["content"]
    assert "C-IS-ALSO-TRUE" in second_write and "only the correct answer holds" in second_write


def test_rounds_are_capped_and_the_last_options_stand(world):
    qa = hand_qa(world, WRITTEN)
    world.config["distractors"]["rounds"] = 2
    world.model.queue("distractors", distractor_reply(), distractor_reply([t + "!" for t in SAME_LENGTH]))
    world.model.queue("distractors_validate", verdict_reply(False, "easy", not_key(qa)),
                      verdict_reply(False, "still easy"))
    world.run("distractors")
    [mcq] = world.read("mcq.jsonl", MCQ)
    assert [r.too_easy for r in mcq.refinement] == [True, True]
    assert len(world.model.seen) == 4 and mcq.refinement[-1].reason == "still easy"
    assert mcq.refinement[-1].supported is None  # never verified: the filter's rounds_exhausted check rejects it


def test_length_guard_asks_again_without_calling_the_validator(world):
    qa = hand_qa(world, WRITTEN)
    short = ["No way.", "Work stuff.", "My mom, mostly.", "Nothing much."]
    world.model.queue("distractors", distractor_reply(short), distractor_reply())
    world.model.queue("distractors_validate", verdict_reply(True, "fine", not_key(qa)))
    world.model.queue("distractors_verify", support_reply())
    world.run("distractors")
    [mcq] = world.read("mcq.jsonl", MCQ)
    assert [r.task for r in world.model.seen] == ["distractors", "distractors", "distractors_validate",
                                                 "distractors_verify"]
    assert mcq.refinement[0].too_easy and mcq.refinement[0].guard == "key_too_long"
    assert mcq.refinement[0].validator_choice == ""
    assert "much longer than the longest distractor" in world.model.seen[1].messages[-1]["content"]


def test_a_centroid_key_is_rewritten_before_any_model_judges_it(world):
    """Distractors that each swap one detail of the key make the key the options' centroid: caught by code."""
    qa = hand_qa(world, WRITTEN)
    perturbed = [HAND_ANSWER.replace("Xiaomei", "my sister"), HAND_ANSWER.replace("weeks", "months"),
                 HAND_ANSWER.replace("in the car downstairs", "at the office late"),
                 HAND_ANSWER.replace("how lost I felt", "how angry I was")]
    world.model.queue("distractors", distractor_reply(perturbed), distractor_reply())
    world.model.queue("distractors_validate", verdict_reply(True, "fine", not_key(qa)))
    world.model.queue("distractors_verify", support_reply())
    world.run("distractors")
    [mcq] = world.read("mcq.jsonl", MCQ)
    assert "key_central" in mcq.refinement[0].guard.split(",") and mcq.refinement[1].guard == ""
    assert "read as variations of it" in world.model.seen[1].messages[-1]["content"]
    assert not mcq.refinement[-1].too_easy


def test_unanswerable_items_make_e_correct_and_use_all_four_distractors(world):
    hand_qa(world, "unanswerable")
    plain = ["I moved to Suzhou for a while to think.", "We adopted a small grey cat that spring.",
             "I took a weekend pottery class with Old Zhang.", "Xiaomei found a new job near the river."]
    world.model.queue("distractors", distractor_reply(plain))
    world.model.queue("distractors_validate", verdict_reply(True, "fine", "B"))
    world.model.queue("distractors_verify", support_reply())
    world.run("distractors")
    [mcq] = world.read("mcq.jsonl", MCQ)
    assert mcq.correct_choice_id == "E"
    assert [c.text for c in mcq.choices] == [*plain, CANNOT_DETERMINE["en"]]
    verify = next(r for r in world.model.seen if r.task == "distractors_verify")
    assert "most related to the question" in verify.messages[-1]["content"]


def test_unanswerable_inventions_far_longer_than_e_are_sent_back(world):
    hand_qa(world, "unanswerable")
    long = [t * 2 for t in SAME_LENGTH]
    world.model.queue("distractors", distractor_reply(long), distractor_reply(SAME_LENGTH))
    world.model.queue("distractors_validate", verdict_reply(True, "ok", "B"))
    world.model.queue("distractors_verify", support_reply())
    world.run("distractors")
    [mcq] = world.read("mcq.jsonl", MCQ)
    assert mcq.refinement[0].guard == "unanswerable_length" and not mcq.refinement[1].too_easy


def test_correct_positions_are_deterministic_balanced_and_not_a_fixed_cycle():
    ids = [mint_id("p", "qa", i) for i in range(30)]
    positions = balanced_positions(ids)
    counts = Counter(positions.values())
    assert set(counts) == {0, 1, 2, 3}
    assert max(counts.values()) - min(counts.values()) <= 1  # balanced even on a small persona
    assert balanced_positions(list(reversed(ids))) == positions  # depends on the ids, not their order
    assert len({tuple(positions[i] for i in ids[k:k + 4]) for k in range(0, 28, 4)}) > 1
    # every single item is uniform over A–D across many personas
    firsts = Counter(balanced_positions([mint_id(f"p{n}", "qa", 0), mint_id(f"p{n}", "qa", 1)])[mint_id(f"p{n}", "qa", 0)]
                     for n in range(4000))
    assert all(abs(c / 4000 - 0.25) < 0.03 for c in firsts.values())


def test_arrange_keeps_the_answer_at_its_seeded_slot_in_chinese_too():
    qa = QA(id="q1", persona_id="p", question_type="factual", dimension="experience", arc_id="a",
            question_time=dt.datetime(2022, 1, 1), question="?", answer="答案", evidence=[], digital_trace_ids=[],
            window_end=dt.date(2022, 1, 1))
    choices, correct = arrange(qa, ["甲乙", "乙", "丙丙丙丙丙丙", "丁"], "zh", 2)
    assert choices[4].text == CANNOT_DETERMINE["zh"]
    assert choices[2].text == "答案" and correct == "C"
    assert [c.text for c in choices[:4] if c.text != "答案"] == ["甲乙", "乙", "丁"]  # the longest one is spare


def test_a_later_type_plans_knowing_what_earlier_types_planned_on_the_same_arc(world):
    world.config["qa"].update(types=["factual", "causal"], plans_per_type=3, target_per_type=3)
    first = json.dumps({"feasible": True, "evidence": [1], "temporal_scope": "s", "outline": "FIRST-OUTLINE",
                        "absent_topic": "", "ask_after_days": 0, "ask_hour": 12})
    world.model.queue("qa_plan", *[first] * 3)  # the three factual plans (the first round); the rest is the schema-driven fake
    world.run("qa")
    plans = [r for r in world.model.seen if r.task == "qa_plan"]
    factual, causal = plans[:3], plans[3:]
    assert all("factual question" in r.messages[-1]["content"] or "Single-point" in r.messages[-1]["content"]
               for r in factual)
    assert not any("already planned" in r.messages[-1]["content"] for r in factual), "the first type plans blind"
    shown = [r for r in causal if "- a factual question: FIRST-OUTLINE (evidence: " in r.messages[-1]["content"]]
    assert shown, "a causal planner on an arc with a factual plan over shared evidence sees its outline"
    # the rule says what `twin_plan` does: a plan on (nearly) the same evidence is asked again whatever its angle
    # (a capable planner read "the same evidence and the same answer" as allowing an unanswerable twin, and was
    # bounced)
    rule = shown[0].messages[-1]["content"]
    assert "on (nearly) the same evidence, not even from another angle" in rule and "another angle:" not in rule
    arcs_planned = {r.messages[-1]["content"].split("Life arc: ")[1].split("\n")[0] for r in factual}
    for request in causal:  # a re-asked plan's last message is the re-ask: its task is the one before it
        task = next(m["content"] for m in reversed(request.messages) if "Life arc: " in m["content"])
        arc = task.split("Life arc: ")[1].split("\n")[0]
        if arc not in arcs_planned:
            assert "already planned" not in task, "another arc's plans stay out"


def test_a_plan_on_an_earlier_plans_evidence_is_asked_again_then_dropped(world):
    """A capable planner, shown the comparison plan on its arc, planned a trajectory over the same evidence; its
    writer found the two items' answers near-identical. A plan sharing most of its evidence with an earlier plan
    it was shown is re-asked, and dropped (not failed) if it still twins."""
    # three arcs, one window each: both types plan on every arc, causal after factual
    world.config["qa"].update(types=["factual", "causal"], plans_per_type=3, target_per_type=1, window_days=400,
                              stride_days=400)
    world.model.queue("qa_plan", *[plan_reply([1, 2])] * 12)  # the preset's two re-asks per causal plan
    world.model.queue("qa_write", WRITE_REPLY).queue("qa_open_judge", NO_MATCH)
    world.run("qa")
    plans = world.model.asked("qa_plan")
    again = [r for r in plans if "selects nearly the same evidence ([1], [2]) as the factual question already "
             "planned" in r.messages[-1]["content"]]
    assert len(plans) == 12 and len(again) == 6, "each causal plan was re-asked twice"
    assert [i.question_type for i in world.read("qa.jsonl", QA)] == ["factual"], "the twins were dropped"
    assert world.model.unused() == {}


def test_a_plan_twins_an_earlier_one_only_on_most_of_the_same_evidence():
    from types import SimpleNamespace

    from synth.llm.base import Reask
    from synth.stages.qa.plan_checks import twin_plan

    shown = [{"question_type": "comparison", "outline": "o", "evidence": [2, 5], "elsewhere": 0}]
    with pytest.raises(Reask, match="comparison"):
        twin_plan(SimpleNamespace(feasible=True, evidence=[5, 2]), shown)
    twin_plan(SimpleNamespace(feasible=True, evidence=[2, 3, 4]), shown)  # one shared of three: another item
    twin_plan(SimpleNamespace(feasible=True, evidence=[2]), [{**shown[0], "elsewhere": 2}])  # theirs held 4
    twin_plan(SimpleNamespace(feasible=False, evidence=[2, 5]), shown)  # an infeasible plan is dropped anyway
    with pytest.raises(Reask):
        twin_plan(SimpleNamespace(feasible=True, evidence=[2, 5, 6, 7, 9]), [{**shown[0], "evidence": [2, 5, 6, 7]}])


def test_the_twin_plan_re_ask_names_the_earlier_type_in_the_request_language():
    from synth.config.prompts import render

    reason = {"kind": "twin_plan", "question_type": "comparison", "numbers": "[2], [5]"}
    zh = "\n".join(m["content"] for m in render("llm_repair.j2", language="zh", reason=reason, error="e"))
    en = "\n".join(m["content"] for m in render("llm_repair.j2", language="en", reason=reason, error="e"))
    assert "（[2], [5]）" in zh and "「比较」题" in zh, zh
    assert "comparison" not in zh, "the type by its native label"
    assert "nearly the same evidence ([2], [5]) as the comparison question already planned" in en


def test_the_dated_question_repair_shows_the_words_as_written_in_either_language():
    """The re-ask quotes the date as the question wrote it: a zh writer reads no English label ("a month name")."""
    from types import SimpleNamespace

    from synth.config.prompts import render
    from synth.llm.base import Reask
    from synth.stages.qa.standalone import undated

    def text(name: str, language: str, **values) -> str:
        return "\n".join(m["content"] for m in render(name, language=language, **values))

    with pytest.raises(Reask) as caught:
        undated(SimpleNamespace(question="浩子，一月你跑外卖碰上差评那回，你是怎么应对的？"))
    reason = {"kind": caught.value.kind, **caught.value.detail}
    zh = text("llm_repair.j2", "zh", reason=reason, error="e")
    assert "问题里写了“一月”" in zh and not re.search(r"[A-Za-z]{3,}", zh.replace("JSON", ""))
    assert "question names “一月”" in text("llm_repair.j2", "en", reason=reason, error="e")
    undated(SimpleNamespace(question="浩子，上礼拜那个下雨夹雪的晚上，你是怎么应对的？"))  # relative words stay
