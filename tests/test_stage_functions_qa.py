"""The per-task pure functions of stages traces, qa, distractors and filter, called directly on hand-built inputs:
prompt variables in, record out — no model, no files, no runner."""

from __future__ import annotations

import datetime as dt

import pytest
from pydantic import ValidationError

from synth.config import conf, settings
from synth.life.windows import Segment, SegmentEvidence, Window
from synth.records import (
    CANNOT_DETERMINE,
    MCQ,
    QA,
    Choice,
    Event,
    Evidence,
    EvidenceRef,
    Persona,
    Phase,
    RefinementRound,
    Snapshot,
    Trace,
    mint_id,
)
from synth.stages import distractors, filter, qa, traces

PID = "p_fn"
T0 = dt.datetime(2022, 3, 1, 9)
SECTIONS = settings.parse(conf.preset_config("small"))


def snapshot(focus: str) -> Snapshot:
    return Snapshot(energy=5, stress=5, dominant_emotion="calm", focus=focus, arc_status={})


def phase(index: int) -> Phase:
    return Phase(id=f"ph{index}", persona_id=PID, major_event_id="m", index=index, title=f"phase {index}",
                 description="d", start=dt.date(2022, 1 + index, 1), end=dt.date(2022, 1 + index, 28),
                 snapshot_before=snapshot(f"before {index}"), snapshot_after=snapshot(f"after {index}"))


def event(time: dt.datetime = T0) -> Event:
    return Event(id="ev1", persona_id=PID, phase_id="ph1", time=time, title="the talk", description="d",
                 location="home", participant_ids=[])


def evidence(n: int, arc: str = "arc1") -> Evidence:
    return Evidence(id=f"e{n}", persona_id=PID, event_id="ev1", kind="fact", statement=f"statement {n}",
                    arc_ids=[arc])


def trace(trace_id: str, time: dt.datetime, evidence_ids: list[str], medium: str = "diary") -> Trace:
    return Trace(id=trace_id, persona_id=PID, event_id="ev1", evidence_ids=evidence_ids, medium=medium, time=time,
                 intent="i", audience="self", content=f"content of {trace_id}", tokens=3)


# ---------------------------------------------------------------------------------------------- traces

def test_snapshot_history_shows_the_one_before_and_this_phase_up_to_its_start():
    phases = [phase(0), phase(1)]
    assert traces.snapshot_history(phases, 0)["previous_phase"] is None
    later = traces.snapshot_history(phases, 1)
    assert later["phase"]["id"] == "ph1" and later["previous_phase"]["id"] == "ph0"
    assert later["phase"]["snapshot_before"]["focus"] == "before 1"
    assert "snapshot_after" not in later["phase"], "the state at the phase's end is the future of its traces"
    assert later["previous_phase"]["snapshot_after"]["focus"] == "after 0"


def test_trace_plan_variables_offer_sorted_media_and_the_seeded_suggestion():
    context = traces.event_context({"id": PID}, [], {"phase": None}, event())
    assert context["event"]["id"] == "ev1" and "evidence" not in context
    weights = {"email": 1.0, "diary": 3.0}
    variables = traces.plan_variables(context, event(), [evidence(1)], 2, weights, 12)
    assert [e["id"] for e in variables["evidence"]] == ["e1"], "the planner sees all the event's evidence"
    assert variables["media"] == ["diary", "email"] and variables["count"] == 2 and variables["max_delay"] == 12
    assert variables["suggested"] == traces.suggest_media("ev1", 2, weights)
    assert sorted(variables["suggested"]) == ["diary", "email"]  # distinct while they last
    assert variables["persona"] == {"id": PID}


def plan_of(delay_hours: float = 30):
    model = traces.plan_answer(("diary", "email"), 2, 1, 48)
    return model.model_validate({"traces": [{
        "reasons": " private: only for her sister ", "medium": "email", "intent": " ask for help ", "audience": " Xiaomei ", "key_information": "k",
        "evidence": [2], "delay_hours": delay_hours}]}).traces[0]


def test_trace_time_never_leaves_the_allowed_delay():
    assert traces.trace_time(event(), 5, 10) == T0 + dt.timedelta(hours=5)
    assert traces.trace_time(event(), 30, 10) == T0 + dt.timedelta(hours=10)


def test_a_trace_may_come_a_fraction_of_an_hour_after_its_event():
    """An event at 23:30 whose evidence happened at 02:40: in whole hours the note was written at 02:30 (before what
    it tells) or 03:30; the plan may say 3.25 hours (test_prompt_lint: the prompt says so)."""
    assert plan_of(3.25).delay_hours == 3.25
    assert traces.trace_time(event(), 3.25, 10) == T0 + dt.timedelta(hours=3, minutes=15)
    assert traces.trace_time(event(), 1 / 3, 10) == T0 + dt.timedelta(minutes=20)
    # the bound is shown in the schema, not enforced: a grammar-bound local model overshot it on every attempt
    model = traces.plan_answer(("diary", "email"), 2, 1, 48)
    assert model.model_json_schema()["$defs"]["TracePlan"]["properties"]["delay_hours"]["maximum"] == 48
    far = plan_of(1000.0)
    assert traces.trace_time(event(), far.delay_hours, 48) == T0 + dt.timedelta(hours=48)


def test_write_variables_and_build_trace_carry_the_plan_into_the_record():
    plan = plan_of()
    when = traces.trace_time(event(), plan.delay_hours, 48)
    variables = traces.write_variables({"persona": {}}, plan, [evidence(2)], when, (120, 400))
    assert variables["time"] == "2022-03-02T15:00" and variables["medium"] == "email"
    assert [e["statement"] for e in variables["carried"]] == ["statement 2"]
    assert (variables["min_words"], variables["max_words"]) == (120, 400)
    record = traces.build_trace(traces.TraceText(content="  Dear Xiaomei, help.  "), plan, event(), [evidence(2)],
                                3, when, PID)
    assert record.id == mint_id("ev1", "trace", 3) and record.persona_id == PID and record.event_id == "ev1"
    assert record.evidence_ids == ["e2"] and record.time == when
    assert (record.intent, record.audience, record.content) == ("ask for help", "Xiaomei", "Dear Xiaomei, help.")
    assert record.reasons == "private: only for her sister" and "reasons" not in variables
    assert record.tokens > 0


# -------------------------------------------------------------------------------------------------- qa

def seg_item(n: int, day: int, trace_days: tuple[int, ...]) -> SegmentEvidence:
    times = tuple(dt.datetime(2022, 3, d, 21) for d in trace_days)
    return SegmentEvidence(evidence_id=f"e{n}", arc_ids=("arc1",), kind="fact", statement=f"statement {n}",
                           time=dt.datetime(2022, 3, day, 21), trace_ids=tuple(f"t{n}_{d}" for d in trace_days),
                           trace_times=times)


# e1 on day 1 (a second trace after the window, day 20), e2 on day 3, e3 also on day 3
SEGMENT = Segment(arc_id="arc1", window=Window(index=0, start=dt.date(2022, 3, 1), end=dt.date(2022, 3, 10)),
                  evidence=(seg_item(1, 1, (1, 20)), seg_item(2, 3, (3,)), seg_item(3, 3, (3,))),
                  new_ids=frozenset({"e3"}))
SEG_TRACES = {t: trace(t, when, [e.evidence_id]) for e in SEGMENT.evidence for t, when in zip(e.trace_ids, e.trace_times, strict=True)}


def plan_answer(**update):
    answer = {"feasible": True, "evidence": [2, 1, 2], "temporal_scope": "early March", "outline": "o",
              "absent_topic": "", "ask_after_days": 0, "ask_hour": 8}
    return qa.plan_model(3, 30).model_validate({**answer, **update})


def test_the_plan_decides_the_question_time_once_within_bounds():
    plan = qa.build_plan(plan_answer(ask_after_days=30, ask_hour=22), "causal", SEGMENT)
    assert (plan.ask_after_days, plan.ask_hour) == (30, 22)
    for bad in ({"ask_after_days": 31}, {"ask_after_days": -1}, {"ask_hour": 6}, {"ask_hour": 23}):
        with pytest.raises(ValidationError):
            plan_answer(**bad)
    schema = qa.plan_model(3, 14).model_json_schema()["properties"]
    assert (schema["ask_after_days"]["minimum"], schema["ask_after_days"]["maximum"]) == (0, 14)
    assert set(qa.write_model(280).model_json_schema()["properties"]) == {"question", "answer"}


@pytest.mark.parametrize("question_type, update, reason", [
    ("causal", {}, ""),
    ("causal", {"feasible": False}, "the model judged it infeasible"),
    ("unanswerable", {"absent_topic": " "}, "no absent topic"),
    ("unanswerable", {"absent_topic": "his new car", "evidence": [1]}, ""),
    ("causal", {"evidence": [2]}, "causal needs at least 2 evidence"),
    ("comparison", {"evidence": [2, 3]}, "comparison needs evidence from 2 different days"),
])
def test_build_plan_gates_what_the_evidence_cannot_carry(question_type, update, reason):
    plan = qa.build_plan(plan_answer(**update), question_type, SEGMENT)
    assert plan.gate == reason and plan.feasible == (reason == "")
    assert plan.segment == SEGMENT.key and plan.question_type == question_type


def test_build_plan_keeps_each_chosen_index_once_in_order():
    assert qa.build_plan(plan_answer(), "causal", SEGMENT).evidence == [1, 2]


def test_choose_plans_keeps_the_first_feasible_ones_per_type_in_candidate_order():
    other = Segment(arc_id="arc2", window=SEGMENT.window, evidence=SEGMENT.evidence, new_ids=frozenset())
    third = Segment(arc_id="arc3", window=SEGMENT.window, evidence=SEGMENT.evidence, new_ids=frozenset())
    picks = [("causal", SEGMENT), ("causal", other), ("causal", third), ("factual", SEGMENT), ("factual", other)]
    feasible = qa.build_plan(plan_answer(), "causal", SEGMENT)
    plans = {
        qa.plan_key("causal", SEGMENT): feasible.model_copy(update={"feasible": False}),
        qa.plan_key("causal", other): feasible.model_copy(update={"segment": other.key}),
        qa.plan_key("causal", third): feasible.model_copy(update={"segment": third.key}),
        qa.plan_key("factual", other): feasible.model_copy(update={"question_type": "factual"}),
        # ("factual", SEGMENT) has no plan: its unit did not finish
    }
    chosen = qa.choose_plans(picks, plans, target=1)
    assert [(p.question_type, s.arc_id) for p, s in chosen] == [("causal", "arc2"), ("factual", "arc2")]
    assert len(qa.choose_plans(picks, plans, target=2)) == 3


def test_needed_traces_are_those_visible_by_the_window_end_and_set_the_base_time():
    needed = qa.needed_traces(SEGMENT, [1, 2])
    assert needed == {"e1": ["t1_1"], "e2": ["t2_3"]}  # t1_20 is after the window
    assert qa.question_base("causal", SEGMENT, needed, SEG_TRACES) == dt.datetime(2022, 3, 3, 21)
    # unanswerable: after the newest evidence of the segment, needed or not
    assert qa.question_base("unanswerable", SEGMENT, qa.needed_traces(SEGMENT, [1]), SEG_TRACES) == \
        dt.datetime(2022, 3, 3, 21)
    # ... and after every background trace it keeps
    late = {**SEG_TRACES, "t1_1": trace("t1_1", dt.datetime(2022, 3, 9, 10), ["e1"])}
    assert qa.question_base("unanswerable", SEGMENT, qa.needed_traces(SEGMENT, [1]), late) == \
        dt.datetime(2022, 3, 9, 10)


LAST_DAY = dt.date(2022, 3, 20)  # the timeline's end + grace in the cases below


@pytest.mark.parametrize("base", [dt.datetime(2022, 3, 3, 6, 15), dt.datetime(2022, 3, 3, 21, 30),
                                  dt.datetime(2022, 3, 3, 23, 45), dt.datetime(2022, 3, 19, 22, 10),
                                  dt.datetime(2022, 3, 20, 23, 50), dt.datetime(2022, 3, 22, 9)])
@pytest.mark.parametrize("after", [None, dt.timedelta(minutes=1), dt.timedelta(minutes=50), dt.timedelta(hours=5),
                                   dt.timedelta(days=2, hours=3), dt.timedelta(days=40)])
def test_question_time_never_precedes_its_traces_nor_passes_the_end_nor_reaches_the_next_evidence(base, after):
    """Every plan the schema allows, at every edge: base late at night, on the last day, past it (a needed trace
    written after end + grace: causality wins), next evidence a minute or weeks later."""
    next_evidence = None if after is None else base + after
    for days in (0, 1, 7, 30):
        for hour in (qa.HOURS[0], 12, qa.HOURS[1]):
            asked = qa.question_time(base, days, hour, LAST_DAY, next_evidence)
            assert asked >= base
            if base.date() <= LAST_DAY:
                assert asked.date() <= LAST_DAY
            else:
                assert asked == base  # cannot be both: never before its evidence wins
            if next_evidence is not None:
                assert asked < next_evidence
            wanted = dt.datetime.combine(base.date() + dt.timedelta(days=days), dt.time(hour))
            if base <= wanted <= dt.datetime.combine(LAST_DAY, dt.time(23)) and (
                    next_evidence is None or wanted < next_evidence):
                assert asked == wanted  # within every bound the plan's choice stands


def test_the_question_is_asked_before_the_arc_moves_on():
    # the arc's evidence: e1 and e2 in the segment, then the arc changes on March 9 (e4) and again later (e5)
    arc_items = [*SEGMENT.evidence, seg_item(4, 9, (9,)), seg_item(5, 15, (15,))]
    plan = qa.build_plan(plan_answer(ask_after_days=30, ask_hour=20), "causal", SEGMENT)
    needed = qa.needed_traces(SEGMENT, plan.evidence)
    assert qa.next_evidence_time(arc_items, dt.datetime(2022, 3, 3, 21)) == dt.datetime(2022, 3, 9, 21)
    # e3 shares e2's time, so it is no later evidence; e4 is
    asked = qa.ask_time(plan, SEGMENT, needed, SEG_TRACES, arc_items, dt.date(2022, 6, 30))
    assert dt.datetime(2022, 3, 3, 21) <= asked < dt.datetime(2022, 3, 9, 21)
    assert asked == dt.datetime(2022, 3, 9, 20)  # the latest whole hour before the change
    soon = qa.build_plan(plan_answer(ask_after_days=2, ask_hour=9), "causal", SEGMENT)
    assert qa.ask_time(soon, SEGMENT, needed, SEG_TRACES, arc_items, dt.date(2022, 6, 30)) == \
        dt.datetime(2022, 3, 5, 9)  # inside every bound: the plan's time
    assert qa.ask_time(plan, SEGMENT, needed, SEG_TRACES, list(SEGMENT.evidence), dt.date(2022, 3, 12)) == \
        dt.datetime(2022, 3, 12, 20)  # nothing follows: only end + grace bounds it


def test_a_question_moved_before_the_next_evidence_stays_in_waking_hours_when_it_can():
    base = dt.datetime(2022, 3, 3, 21, 30)
    # the arc moves on at 6:30 the next morning: asked at 22:00 the evening before, not at 6:00
    assert qa.question_time(base, 30, 12, LAST_DAY, dt.datetime(2022, 3, 4, 6, 30)) == dt.datetime(2022, 3, 3, 22)
    # ... or past bedtime: the last waking hour, 22:00
    assert qa.question_time(base, 30, 12, LAST_DAY, dt.datetime(2022, 3, 5, 23, 40)) == dt.datetime(2022, 3, 5, 22)
    # a night-time gap with no waking hour in it: asked in the gap all the same
    night = dt.datetime(2022, 3, 3, 4, 10)
    assert qa.question_time(night, 30, 12, LAST_DAY, dt.datetime(2022, 3, 3, 5, 30)) == dt.datetime(2022, 3, 3, 5)


def test_qa_write_variables_show_only_the_chosen_evidence_and_needed_traces():
    plan = qa.build_plan(plan_answer(), "causal", SEGMENT)
    needed = qa.needed_traces(SEGMENT, plan.evidence)
    asked = dt.datetime(2022, 3, 4, 8)
    variables = qa.write_variables({"persona": "P", "arcs": []}, "ARC", SEGMENT, plan, needed, asked, SEG_TRACES,
                                   SECTIONS.prompts, 280)
    assert variables["max_answer_chars"] == 280
    assert [e["index"] for e in variables["evidence"]] == [1, 2]
    assert [t["content"] for t in variables["traces"]] == ["content of t1_1", "content of t2_3"]
    assert variables["question_time"] == "2022-03-04T08:00"  # fixed before writing: the writer does not choose it
    assert (variables["arc"], variables["question_type"], variables["window_end"]) == ("ARC", "causal", "2022-03-10")
    assert variables["temporal_scope"] == "early March"
    planned = qa.plan_variables({"persona": "P", "arcs": []}, "ARC", SEGMENT, "causal", SEG_TRACES, 30)
    assert [e["index"] for e in planned["evidence"]] == [1, 2, 3]
    assert [e["recent"] for e in planned["evidence"]] == [False, False, True]
    assert planned["max_delay_days"] == 30 and planned["hours"] == qa.HOURS


def test_the_qa_writer_sees_every_needed_trace_when_they_outnumber_the_cap():
    # Six evidence items on six days, each with its own 400-character trace; the cap is 3 traces of 300 characters.
    items = tuple(seg_item(n, n, (n,)) for n in range(1, 7))
    segment = Segment(arc_id="arc1", window=SEGMENT.window, evidence=items, new_ids=frozenset({"e6"}))
    pool = {t: trace(t, when, [e.evidence_id]).model_copy(update={"content": f"[{t}]" + "x" * 400})
            for e in items for t, when in zip(e.trace_ids, e.trace_times, strict=True)}
    section = SECTIONS.prompts.model_copy(update={"max_prompt_traces": 3, "trace_chars": 300})
    answer = qa.plan_model(6, 30).model_validate({**plan_answer().model_dump(), "evidence": [1, 2, 3, 4, 5, 6]})
    plan = qa.build_plan(answer, "trajectory", segment)
    needed = qa.needed_traces(segment, plan.evidence)
    variables = qa.write_variables({"persona": "P", "arcs": []}, "ARC", segment, plan, needed,
                                   dt.datetime(2022, 3, 8, 8), pool, section, 280)
    shown = variables["traces"]
    assert [t["time"][:10] for t in shown] == [f"2022-03-0{n}" for n in range(1, 7)], "no needed trace is dropped"
    assert shown[-1]["content"].startswith("[t6_6]"), "the trace with the newest evidence is shown"
    assert all(len(t["content"]) == 150 for t in shown), "each is shortened to share the 3 × 300 budget"
    within = qa.write_variables({"persona": "P", "arcs": []}, "ARC", segment, plan,
                                {k: needed[k] for k in ("e1", "e2")}, dt.datetime(2022, 3, 8, 8), pool, section, 280)
    assert [len(t["content"]) for t in within["traces"]] == [300, 300], "under the cap: full excerpts"


def test_build_qa_grounds_the_item_and_asks_it_at_the_planned_time():
    plan = qa.build_plan(plan_answer(), "causal", SEGMENT)
    needed = qa.needed_traces(SEGMENT, plan.evidence)
    asked = qa.ask_time(plan, SEGMENT, needed, SEG_TRACES, list(SEGMENT.evidence), dt.date(2022, 6, 30))
    assert asked == dt.datetime(2022, 3, 3, 22)  # 8:00 that day precedes the newest trace: an hour after it
    arc = type("Arc", (), {"id": "arc1", "dimension": "emotion"})()
    answer = qa.write_model(280).model_validate({"question": " Why? ", "answer": " Because. "})
    # the reference answer is as long as its content needs (the cap bounds the options only)
    assert qa.write_model(280).model_validate({"question": "Why?", "answer": "x" * 600}).answer == "x" * 600
    item = qa.build_qa(answer, plan, SEGMENT, arc, PID, asked, needed)
    assert item.id == mint_id(PID, "qa", "causal", SEGMENT.key)
    assert (item.question, item.answer, item.dimension, item.arc_id) == ("Why?", "Because.", "emotion", "arc1")
    assert item.question_time == asked
    assert [(r.evidence_id, r.digital_trace_ids, r.background) for r in item.evidence] == [
        ("e1", ["t1_1"], False), ("e2", ["t2_3"], False)]
    assert item.digital_trace_ids == ["t1_1", "t2_3"] and item.window_end == dt.date(2022, 3, 10)


def test_an_unanswerable_item_keeps_its_related_background():
    absent = qa.build_plan(plan_answer(absent_topic="a car", evidence=[1, 3]), "unanswerable", SEGMENT)
    needed = qa.needed_traces(SEGMENT, absent.evidence)
    asked = qa.ask_time(absent, SEGMENT, needed, SEG_TRACES, list(SEGMENT.evidence), dt.date(2022, 6, 30))
    arc = type("Arc", (), {"id": "arc1", "dimension": "emotion"})()
    answer = qa.write_model(280).model_validate({"question": "Which car?", "answer": "I never said."})
    item = qa.build_qa(answer, absent, SEGMENT, arc, PID, asked, needed)
    assert [(r.evidence_id, r.statement, r.digital_trace_ids, r.background) for r in item.evidence] == [
        ("e1", "statement 1", ["t1_1"], True), ("e3", "statement 3", ["t3_3"], True)]
    assert item.digital_trace_ids == ["t1_1", "t3_3"]  # the union of the background's traces: gold for recall
    assert all(SEG_TRACES[t].time <= item.question_time for t in item.digital_trace_ids)


# ----------------------------------------------------------------------------------------- distractors

def hand_qa(question_type: str = "causal") -> QA:
    return QA(id="q1", persona_id=PID, question_type=question_type, dimension="emotion", arc_id="arc1",
              question_time=dt.datetime(2022, 3, 5, 20), question="What changed?", answer="He finally talked.",
              evidence=[EvidenceRef(statement="statement 1", evidence_id="e1", digital_trace_ids=["t_late", "t_early",
                                                                                                  "ghost"])],
              digital_trace_ids=["t_late", "t_early", "ghost"], window_end=dt.date(2022, 3, 10))


DISTRACTOR_TRACES = {"t_early": trace("t_early", dt.datetime(2022, 3, 1, 9), ["e1"]),
                     "t_late": trace("t_late", dt.datetime(2022, 3, 4, 9), ["e1"], medium="email")}


def persona() -> Persona:
    return Persona.model_validate({
        "id": PID, "persona_id": PID, "language": "en", "scale": "100k", "start": "2022-01-01", "end": "2022-06-30",
        "big_five": {"openness": .5, "conscientiousness": .5, "extraversion": .5, "agreeableness": .5,
                     "neuroticism": .5},
        "name": "Lin", "age": 40, "gender": "male", "personality": "p", "family_history": "f", "education": "e",
        "occupation": "o", "concerns": [], "interests": [], "backstory": "b", "relations": []})


def test_distractor_write_variables_date_evidence_by_its_first_trace_and_carry_feedback():
    feedback = [{"round": 1, "reason": "only one is specific"}]
    variables = distractors.write_variables(hand_qa(), persona(), [], DISTRACTOR_TRACES, SECTIONS.prompts, "en",
                                            feedback)
    assert variables["evidence"] == [{"date": "2022-03-01", "statement": "statement 1"}]
    assert [t["medium"] for t in variables["traces"]] == ["email", "diary"]  # item order; the unknown one dropped
    assert variables["target_chars"] == len("He finally talked.") and variables["feedback"] == feedback
    assert variables["cannot_determine"] == CANNOT_DETERMINE["en"] and variables["unanswerable"] is False
    assert distractors.first_date(["ghost"], DISTRACTOR_TRACES) == ""


def test_validate_variables_hide_evidence_and_traces():
    choices, _ = distractors.arrange(hand_qa(), ["w one", "w two", "w three", "w four"], "en", 1)
    variables = distractors.validate_variables(hand_qa(), choices)
    assert set(variables) == {"question", "question_time", "choices"}
    assert variables["question_time"] == "2022-03-05T20:00"
    assert [c["id"] for c in variables["choices"]] == list("ABCDE") and variables["choices"][1]["text"] == \
        "He finally talked."


def test_rounds_and_the_mcq_record():
    judged = distractors.judged_round(2, distractors.Verdict(choice="C", needs_memory=True, reason="needs context"), "A")
    assert judged == RefinementRound(round=2, too_easy=False, reason="needs context", validator_choice="C")
    # a blind pick of the key is too easy by fact, whatever the validator says
    picked = distractors.judged_round(2, distractors.Verdict(choice="A", needs_memory=True, reason="hard"), "A")
    assert picked.too_easy and picked.blind_correct
    guarded = distractors.guarded_round(1, [("key_longest", "the correct option (18 characters) is the longest")])
    assert guarded.too_easy and guarded.validator_choice == "" and guarded.guard == "key_longest"
    assert distractors.feedback_entry(guarded) == {"round": 1, "kinds": ["key_longest"], "reason": "",
                                                   "blind_correct": False, "unsupported": ""}
    support = distractors.Support(key_supported=True, others_ruled_out=False, question_favours_option=False,
                                  notes=[distractors.OptionNote(option="C", problem="also true in March")],
                                  reason="C holds too")
    verified = distractors.verified_round(judged, support, "A")
    assert verified.too_easy and verified.supported is False and "C: also true in March" in verified.support_reason
    assert verified.also_true == ["C"]
    # the question's wording favouring one option fails a round the rest passed
    leading = distractors.verified_round(judged, support.model_copy(update={
        "others_ruled_out": True, "question_favours_option": True, "notes": []}), "A")
    assert leading.too_easy and leading.supported is True and leading.question_favours is True
    assert distractors.feedback_entry(verified)["unsupported"] == verified.support_reason
    choices, correct = distractors.arrange(hand_qa(), ["w one", "w two", "w three", "w four"], "en", 0)
    mcq = distractors.build_mcq(hand_qa(), choices, correct, [guarded, judged])
    assert mcq.correct_choice_id == "A" and mcq.choices[0].text == "He finally talked."
    assert [r.round for r in mcq.refinement] == [1, 2] and mcq.id == "q1"


# ---------------------------------------------------------------------------------------------- filter

def mcq(number: int = 0, question_type: str = "causal", question: str = "What changed after the talk?",
        asked: dt.datetime = dt.datetime(2022, 3, 5, 20)) -> MCQ:
    unanswerable = question_type == "unanswerable"
    texts = ["A wrong but detailed option", "He finally talked to her", "Another detailed wrong one",
             "A third detailed wrong one"]
    return MCQ(id=f"i{number}", persona_id=PID, question_type=question_type, dimension="emotion", arc_id="arc1",
               question_time=asked, question=question,
               answer=CANNOT_DETERMINE["en"] if unanswerable else "He finally talked to her",
               evidence=[] if unanswerable else [EvidenceRef(statement="statement 1", evidence_id="e1",
                                                             digital_trace_ids=["t_early"])],
               digital_trace_ids=[] if unanswerable else ["t_early"], window_end=dt.date(2022, 3, 10),
               choices=[Choice(id=c, text=t) for c, t in zip("ABCDE", [*texts, CANNOT_DETERMINE["en"]], strict=True)],
               correct_choice_id="E" if unanswerable else "B")


def test_first_seen_is_the_earliest_carrying_trace():
    seen = filter.first_seen(DISTRACTOR_TRACES.values())
    assert seen == {"e1": dt.datetime(2022, 3, 1, 9)}


def test_shown_evidence_for_answerable_and_unanswerable_items():
    seen = {"e1": dt.datetime(2022, 3, 1, 9), "e2": dt.datetime(2022, 3, 2, 9), "e3": dt.datetime(2022, 3, 3, 9),
            "e4": dt.datetime(2022, 3, 9, 9)}
    pool = [evidence(4), evidence(3), evidence(2), evidence(1), evidence(5, arc="arc2")]
    assert filter.shown_evidence(mcq(), seen, pool, 40) == [{"date": "2022-03-01", "statement": "statement 1"}]
    # unanswerable: the arc's evidence seen by the question time (not e4: later; not e5: other arc), newest `limit`
    shown = filter.shown_evidence(mcq(question_type="unanswerable"), seen, pool, 2)
    assert shown == [{"date": "2022-03-02", "statement": "statement 2"}, {"date": "2022-03-03", "statement": "statement 3"}]
    variables = filter.sufficiency_variables(mcq(question_type="unanswerable"), shown, DISTRACTOR_TRACES,
                                             SECTIONS.prompts)
    assert variables["unanswerable"] is True and variables["traces"] == [] and variables["evidence"] == shown
    answered = filter.sufficiency_variables(mcq(), [], DISTRACTOR_TRACES, SECTIONS.prompts)
    assert [t["content"] for t in answered["traces"]] == ["content of t_early"]
    assert set(filter.blind_variables(mcq())) == {"question", "question_time", "choices"}


def checked(item: MCQ, supported: bool = True, choice: str = "A", confidence: float = 0.9) -> filter.Checked:
    """Two blind samples: the first shows the options as they are, the second rotated by one (A shows B, …)."""
    support = filter.Sufficiency(supported=supported, reason="thin")
    rotated = {v: k for k, v in filter.blind_choices(item, 1)[1].items()}[choice]  # where sample 1 shows `choice`
    blinds = [filter.Blind(choice=choice, confidence=confidence, reason="cue"),
              filter.Blind(choice=rotated, confidence=confidence, reason="cue")]
    return filter.build_checked(item, support, blinds)


def test_item_problems_name_every_filter_in_order_and_format_alone_for_a_malformed_item():
    item = mcq()
    names = [name for name, _ in filter.item_problems(item, checked(item), "", "", DISTRACTOR_TRACES,
                                                         SECTIONS.filter, SECTIONS.mcq)]
    assert names == [n for n in filter.FILTERS if n not in ("duplicate", "cross_type_duplicate")]
    assert filter.item_problems(item, None, "an empty option", "", {}, SECTIONS.filter, SECTIONS.mcq) == [
        ("format", "an empty option")]
    found = dict(filter.item_problems(item, checked(item, supported=False, choice="B"), "", "a reviewer said no",
                                      DISTRACTOR_TRACES, SECTIONS.filter, SECTIONS.mcq))
    assert found["sufficiency"] == "the evidence does not support the answer: thin"
    assert found["blind"].startswith("answered correctly without any context by 2 of 2 picks (B, B)")
    assert found["human_review"] == "a reviewer said no" and found["temporal"] == "" and found["length"] == ""


def test_decide_names_the_first_failure_and_judges_duplicates_against_kept_items():
    first, again, bad = mcq(0), mcq(1, question="What changed after the talk??"), mcq(2, question="Other thing?")
    checks = {i.id: checked(i) for i in (first, again)}
    ok = filter.item_problems(first, checks[first.id], "", "", DISTRACTOR_TRACES, SECTIONS.filter, SECTIONS.mcq)
    problems = {first.id: ok, again.id: ok, bad.id: [("format", "an empty option")]}
    final, rejected = filter.decide([first, again, bad], checks, problems, SECTIONS.filter)
    assert [i.id for i in final] == [first.id]
    assert [(r.id, r.filter) for r in rejected] == [(again.id, "duplicate"), (bad.id, "format")]
    assert [v.filter for v in final[0].verdicts] == list(filter.FILTERS)
    assert (final[0].blind_choice, final[0].blind_confidence) == ("A", 0.9)
    assert (rejected[1].blind_choice, rejected[1].blind_confidence) == ("", 0.0)  # never checked
    assert final[0].blind_votes == ["A", "A"]
    assert problems[first.id] == ok and len(ok) == len(filter.FILTERS) - 2  # decide does not change its lists


def with_evidence(item: MCQ, evidence_ids: list[str], answer: str) -> MCQ:
    refs = [EvidenceRef(statement=f"statement {e}", evidence_id=e, digital_trace_ids=["t_early"]) for e in evidence_ids]
    return item.model_copy(update={"evidence": refs, "answer": answer})


def test_cross_type_duplicates_keep_the_rarer_type_and_are_reported():
    answer = "I stopped drinking at client dinners and sales went up anyway"
    comparison = with_evidence(mcq(0, "comparison", "How did dinners with clients differ?"), ["e1", "e2", "e3"],
                               answer)
    trajectory = with_evidence(mcq(1, "trajectory", "How did your view of drinking evolve?"), ["e1", "e2", "e3"],
                               answer + " later")
    other_trajectory = with_evidence(mcq(2, "trajectory", "How did the team change over the year?"),
                                     ["e7", "e8"], "The team grew from three people to nine")
    # the same evidence, a different answer: another angle on one memory, kept
    counterfactual = with_evidence(mcq(3, "counterfactual", "What if you had kept drinking?"), ["e1", "e2", "e3"],
                                   "My health would be worse and my wife would still be worried")
    items = [trajectory, comparison, other_trajectory, counterfactual]
    checks = {i.id: checked(i) for i in items}
    passing = filter.item_problems(mcq(), checked(mcq()), "", "", DISTRACTOR_TRACES, SECTIONS.filter, SECTIONS.mcq)
    assert not any(reason for _, reason in passing)
    final, rejected = filter.decide(items, checks, {i.id: passing for i in items}, SECTIONS.filter)
    assert sorted(i.id for i in final) == ["i0", "i2", "i3"], "the comparison (1 item) wins over a trajectory (2)"
    assert [(r.id, r.filter) for r in rejected] == [("i1", "cross_type_duplicate")]
    assert "i0 (comparison, the rarer type)" in rejected[0].reason and "evidence Jaccard 1.00" in rejected[0].reason
    assert filter.report(items, final, rejected)["cross_type_duplicates"] == 1
    # thresholds are the config's: evidence sets sharing 2 of 4 ids (Jaccard 0.5) stay below 0.7
    half = with_evidence(trajectory, ["e1", "e2", "e9"], answer)
    assert filter.cross_type_duplicates([comparison, half], 0.7, 0.5) == {}
    assert set(filter.cross_type_duplicates([comparison, half], 0.5, 0.5)) == {"i1"}  # a tie: the earlier stays
    # Chinese answers compare by character bigrams
    zh_a = with_evidence(mcq(4, "causal"), ["e1", "e2"], "因为陪客户喝酒伤了身体，我开始少喝，生意也没受影响")
    zh_b = with_evidence(mcq(5, "counterfactual"), ["e1", "e2"], "因为陪客户喝酒伤了身体，我开始少喝，生意也没受影响。")
    zh_c = with_evidence(mcq(6, "inference"), ["e1", "e2"], "她和父亲的关系缓和了")
    assert set(filter.cross_type_duplicates([zh_a, zh_b, zh_c], 0.7, 0.5)) == {"i5"}


def test_human_verdicts_a_later_verdict_wins(tmp_path):
    path = tmp_path / filter.REVIEW_FILE
    assert filter.human_verdicts(path) == {}
    path.write_text('{"id": "a", "verdict": "reject", "reason": "wrong"}\n{"id": "b", "verdict": "reject"}\n\n'
                    '{"id": "a", "verdict": "accept"}\n', encoding="utf-8")
    assert filter.human_verdicts(path) == {"b": "rejected by a reviewer"}


def _carried(n: int, day: int, traces: tuple[str, ...]) -> SegmentEvidence:
    when = dt.datetime(2022, 3, day, 10)
    return SegmentEvidence(evidence_id=f"e{n}", arc_ids=("arc1",), kind="fact", statement=f"statement {n}",
                           time=when, trace_ids=traces, trace_times=tuple(when for _ in traces))


def test_a_multi_point_plan_whose_evidence_one_record_carries_is_gated_and_the_planner_sees_the_records(tmp_path):
    """An inference item built from two evidence of one memo: the memo alone answers it (a writer's note)."""
    from qa_world import build_persona_dir

    from synth.config.prompts import render
    from synth.core.jsonl import read_records
    from synth.records import LifeArc
    directory = build_persona_dir(tmp_path)
    person = read_records(directory / "persona.jsonl", Persona)[0]
    arc = read_records(directory / "arcs.jsonl", LifeArc)[0]
    window = Window(index=0, start=dt.date(2022, 3, 1), end=dt.date(2022, 3, 10))
    segment = Segment(arc_id="arc1", window=window, new_ids=frozenset(),
                      evidence=(_carried(1, 2, ("t1",)), _carried(2, 2, ("t1", "t2")), _carried(3, 4, ("t3",))))
    assert qa.gate("inference", segment, [1, 2]) == "inference needs evidence from more than one record"
    assert qa.gate("inference", segment, [1, 3]) == ""
    assert qa.gate("inference", segment, [2, 3]) == ""  # t2 and t3: no record holds both
    assert qa.gate("factual", segment, [1, 2]) == ""  # one point: one record may carry it
    entries = qa.evidence_entries(segment, None, {})
    assert [e["records"] for e in entries] == [[1], [1, 2], [3]]
    for language, word in (("en", "record 1, 2"), ("zh", "记录 1、2")):
        variables = qa.plan_variables({"persona": person, "arcs": [arc]}, arc, segment, "inference", {}, 5)
        prompt = "\n".join(m["content"] for m in render("qa_plan.j2", language=language, **variables))
        assert word in prompt
        assert ("more than one record" in prompt) if language == "en" else ("不止一条记录" in prompt)
    factual = qa.plan_variables({"persona": person, "arcs": [arc]}, arc, segment, "factual", {}, 5)
    assert "more than one record" not in "\n".join(m["content"] for m in render("qa_plan.j2", language="en",
                                                                                **factual))


def _march_planner(tmp_path):
    """A persona, its first arc and a March segment of three evidence on days 2, 4 and 20, one record each."""
    from qa_world import build_persona_dir

    from synth.core.jsonl import read_records
    from synth.records import LifeArc
    directory = build_persona_dir(tmp_path)
    person = read_records(directory / "persona.jsonl", Persona)[0]
    arc = read_records(directory / "arcs.jsonl", LifeArc)[0]
    window = Window(index=0, start=dt.date(2022, 3, 1), end=dt.date(2022, 3, 31))
    segment = Segment(arc_id="arc1", window=window, new_ids=frozenset(),
                      evidence=(_carried(1, 2, ("t1",)), _carried(2, 4, ("t2",)), _carried(3, 20, ("t3",))))
    return person, arc, segment


def test_a_comparison_plan_over_too_short_a_span_is_gated_and_its_planner_told_the_span(tmp_path):
    """A Chinese comparison over two days went through its options and judges (some 30 calls) only for the filter
    to reject it (multi_point_span): the planner is told the span and a shorter plan is infeasible at once."""
    from synth.config.prompts import render
    person, arc, segment = _march_planner(tmp_path)
    assert qa.gate("comparison", segment, [1, 2], 14) == "comparison needs evidence spanning at least 14 days"
    assert qa.gate("comparison", segment, [1, 3], 14) == ""
    assert qa.gate("comparison", segment, [1, 2], 0) == ""  # no span asked
    assert qa.gate("pattern", segment, [1, 2], 14) == ""  # a pattern does not compare points in time
    for language, rule in (("en", "at least 14 days from the first to the last"), ("zh", "至少要相隔 14 天")):
        variables = qa.plan_variables({"persona": person, "arcs": [arc]}, arc, segment, "comparison", {}, 5,
                                      min_span_days=14)
        assert rule in "\n".join(m["content"] for m in render("qa_plan.j2", language=language, **variables))
        factual = qa.plan_variables({"persona": person, "arcs": [arc]}, arc, segment, "factual", {}, 5,
                                    min_span_days=14)
        assert rule not in "\n".join(m["content"] for m in render("qa_plan.j2", language=language, **factual))


def test_the_planner_prompt_asks_for_as_many_evidence_as_its_schema(tmp_path):
    """A capable planner judged a comparison infeasible and chose one evidence, as the prompt's "at least one" and
    "give any valid value" allowed; the schema refused fewer than two."""
    from synth.config.prompts import render
    person, arc, segment = _march_planner(tmp_path)
    for question_type in ("comparison", "factual"):
        least = qa.plan_model(3, 5, qa.least_evidence(question_type)).model_json_schema()["properties"]["evidence"]
        variables = qa.plan_variables({"persona": person, "arcs": [arc]}, arc, segment, question_type, {}, 5)
        for language, said in (("en", "(at least {}; only"), ("zh", "（至少 {} 个，")):
            prompt = "\n".join(m["content"] for m in render("qa_plan.j2", language=language, **variables))
            assert said.format(least["minItems"]) in prompt, (question_type, language)
    assert qa.least_evidence("comparison") == 2


def test_a_private_evidence_is_marked_and_the_friend_may_not_presuppose_it(tmp_path):
    """A capable writer had to anchor a friend's question on a diary-private line the arc said she told no one."""
    import dataclasses

    from qa_world import build_persona_dir

    from synth.config.prompts import render
    from synth.core.jsonl import read_records
    from synth.records import LifeArc
    directory = build_persona_dir(tmp_path)
    person = read_records(directory / "persona.jsonl", Persona)[0]
    arc = read_records(directory / "arcs.jsonl", LifeArc)[0]
    window = Window(index=0, start=dt.date(2022, 3, 1), end=dt.date(2022, 3, 10))
    secret = dataclasses.replace(_carried(2, 4, ("t2",)), statement="SECRET-LINE", private=True)
    segment = Segment(arc_id="arc1", window=window, new_ids=frozenset(), evidence=(_carried(1, 2, ("t1",)), secret))
    assert [e["private"] for e in qa.evidence_entries(segment, None, {})] == [False, True]
    plan = qa.Plan(question_type="factual", segment=segment.key, feasible=True, gate="", evidence=[1, 2], outline="o")
    for language, mark, rule in (("en", "· private: SECRET-LINE", "never presupposes it"),
                                 ("zh", "· 私密：SECRET-LINE", "不能以它为前提")):
        variables = qa.write_variables({"persona": person, "arcs": [arc]}, arc, segment, plan,
                                       qa.needed_traces(segment, [1, 2]), dt.datetime(2022, 3, 9, 20),
                                       {t: trace(t, dt.datetime(2022, 3, 4, 10), [f"e{t[1]}"]) for t in ("t1", "t2")},
                                       SECTIONS.prompts, 280)
        prompt = "\n".join(m["content"] for m in render("qa_write.j2", language=language, **variables))
        assert mark in prompt and rule in prompt
        assert prompt.count("private" if language == "en" else "私密") >= 2
        # a capable writer met a private line the record shows told to a friend — the friend who would ask: the
        # asker is another friend
        assert ("another friend asks" if language == "en" else "提问的也是另一位朋友") in prompt
    # the planner is told too: a capable planner's outline asked a friend "how did you come to book counselling",
    # every evidence of which was private
    for language, rule, other in (("en", "never takes it as its premise", "not the one a record shows being told"),
                                  ("zh", "不能以它为前提", "不是记录里听此人说过私密之事的那个人")):
        plan_vars = qa.plan_variables({"persona": person, "arcs": [arc]}, arc, segment, "causal", {}, 5)
        shown = "\n".join(m["content"] for m in render("qa_plan.j2", language=language, **plan_vars))
        assert rule in shown and other in shown
        public = Segment(arc_id="arc1", window=window, new_ids=frozenset(), evidence=(_carried(1, 2, ("t1",)),))
        plan_vars = qa.plan_variables({"persona": person, "arcs": [arc]}, arc, public, "causal", {}, 5)
        assert rule not in "\n".join(m["content"] for m in render("qa_plan.j2", language=language, **plan_vars))


def test_a_plan_of_a_multi_evidence_type_is_asked_for_as_many_evidence_as_its_gate_needs():
    """A comparison plan selecting one evidence can never be written (`gate`); the schema asks for the type's least
    evidence so the model is told, and a plan of one is refused by the schema, not dropped after the call."""
    from synth.stages.qa.plan_checks import least_evidence

    assert least_evidence("comparison") == 2 and least_evidence("factual") == 1
    assert least_evidence("unanswerable") == 1
    schema = qa.plan_model(5, 14, least_evidence("comparison")).model_json_schema()["properties"]["evidence"]
    assert schema["minItems"] == 2
    with pytest.raises(ValidationError):
        qa.plan_model(5, 14, 2).model_validate({**plan_answer().model_dump(), "evidence": [3]})
    assert qa.plan_model(1, 14, 2).model_json_schema()["properties"]["evidence"]["minItems"] == 1, "never above the segment"


def test_a_trace_that_tells_of_the_next_day_is_written_then():
    """A capable planner timed a thread 00:42 after an evening event while its key information held the replies
    "the next morning": the delay moves on to that morning; not for what the person only means to do then."""
    late = event(dt.datetime(2022, 3, 1, 23, 30))
    assert traces.told_delay(late, "Replies from the team came the next morning.", 1.2, 48) == 8.5
    assert traces.told_delay(late, "Replies came the following afternoon.", 1.2, 48) == 13.5
    assert traces.told_delay(late, "队友们第二天下午才回消息。", 1.2, 48) == 13.5
    assert traces.told_delay(late, "次日一早收到回复", 0.5, 48) == 8.5
    assert traces.told_delay(late, "She plans to call her sister the next day.", 1.2, 48) == 1.2
    assert traces.told_delay(late, "打算第二天一早去医院。", 1.2, 48) == 1.2
    assert traces.told_delay(late, "He decided to file the claim the next day.", 1.2, 48) == 1.2
    assert traces.told_delay(late, "Replies came the next morning.", 1.2, 4) == 4, "never past the allowed delay"
    assert traces.told_delay(late, "Replies came the next morning.", 20, 48) == 20, "already after it"
    assert traces.told_delay(late, "Nothing about later.", 1.2, 48) == 1.2
    # day two of a holiday, and the day after another day retold, are not the day after this event (a capable
    # writer got an evening post and a bedtime message, planned for that night, timed for the next morning)
    assert traces.told_delay(late, "1月2日元旦第二天跑单跑到天黑，赶去奶茶店晚班迟到了二十分钟", 4.5, 48) == 4.5
    assert traces.told_delay(late, "说过年那天爸当着亲戚说他，他摔筷子第二天一早就走的事憋了很久", 7.5, 48) == 7.5
    assert traces.told_delay(late, "He told her how last year he quit, and the next morning he left.", 1.2, 48) == 1.2
    assert traces.told_delay(late, "当晚没睡着，第二天一早就给她打了电话", 1.2, 48) == 8.5, "this event's next day"
    assert traces.told_delay(late, "She lay awake that night and texted him the next morning.", 1.2, 48) == 8.5
    # what something is for is not told of the next day (an evening diary was dated the next morning for it)
    assert traces.told_delay(late, "Hannah helped her prepare reagents for the next day.", 1.2, 48) == 1.2
    assert traces.told_delay(late, "他把为第二天准备的材料放进包里", 1.2, 48) == 1.2


def test_an_earlier_plan_says_how_much_of_its_evidence_is_not_in_the_list():
    """A writer read an earlier comparison's outline relying on a breakdown its listed numbers ([2], [3]) did not
    cover: the plan's other evidence was in another stretch. The view says how many are not in this list."""
    from synth.stages.qa.plan_checks import shared_plans

    ids = [e.evidence_id for e in SEGMENT.evidence]
    planned = [{"question_type": "comparison", "outline": "before and after the breakdown",
                "evidence_ids": [ids[0], "elsewhere-1", "elsewhere-2"]},
               {"question_type": "pattern", "outline": "all here", "evidence_ids": ids[:1]}]
    shown = {p["question_type"]: p for p in shared_plans(planned, SEGMENT, None)}
    assert shown["comparison"]["evidence"] == [1] and shown["comparison"]["elsewhere"] == 2
    assert shown["pattern"]["elsewhere"] == 0
