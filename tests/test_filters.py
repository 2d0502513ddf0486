"""Each quality filter on hand-made items that must pass and must fail, then the filter stage end to end."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from qa_world import ANSWER, WRONG, QAWorld, judges, make_item

from synth.records import (
    CANNOT_DETERMINE,
    MCQ,
    Choice,
    Evidence,
    EvidenceRef,
    FinalItem,
    RefinementRound,
    Rejected,
    Trace,
)
from synth.stages import filter as filter_stage
from synth.stages.filter import (
    Checked,
    blind_problem,
    duplicate_problem,
    format_problem,
    length_problem,
    similarity,
    temporal_problem,
)


@pytest.fixture
def world(tmp_path):
    return QAWorld(tmp_path / "out")


@pytest.fixture
def parts(world):
    traces = world.traces()
    evidence = world.read("evidence.jsonl", Evidence)
    return traces, evidence, {e.id for e in evidence}


# ------------------------------------------------------------------------------------------- format

def test_format_passes_a_well_formed_item(parts):
    traces, evidence, ids = parts
    assert format_problem(make_item(list(traces.values()), evidence[0]), "en", traces, ids) == ""
    assert format_problem(make_item(list(traces.values()), evidence[0], question_type="unanswerable"), "en",
                          traces, ids) == ""


@pytest.mark.parametrize("breakage, expected", [
    (lambda i: i.model_copy(update={"answer": " "}), "empty question or answer"),
    (lambda i: i.model_copy(update={"choices": i.choices[:4]}), "no option E"),
    (lambda i: i.model_copy(update={"choices": [i.choices[1], i.choices[0], *i.choices[2:]]}), "A–E in order"),
    (lambda i: i.model_copy(update={"choices": [*i.choices[:4], Choice(id="E", text="None of these")]}), "option E"),
    (lambda i: i.model_copy(update={"correct_choice_id": "E"}), "exactly for unanswerable"),
    (lambda i: i.model_copy(update={"answer": "something else entirely"}), "not the answer"),
    (lambda i: i.model_copy(update={"evidence": [], "digital_trace_ids": []}), "without evidence"),
    (lambda i: i.model_copy(update={"digital_trace_ids": ["ghost"]}), "not the union"),
    (lambda i: i.model_copy(update={"evidence": [i.evidence[0].model_copy(update={"digital_trace_ids": ["ghost"]})],
                                    "digital_trace_ids": ["ghost"]}), "no such trace"),
    (lambda i: i.model_copy(update={"evidence": [i.evidence[0].model_copy(update={"evidence_id": "nope"})]}),
     "no such evidence"),
    (lambda i: i.model_copy(update={"choices": [c if c.id in (i.correct_choice_id, "E") else
                                                c.model_copy(update={"text": c.id.lower()}) for c in i.choices]}),
     "too short to be a real answer"),
])
def test_format_rejects_broken_items(parts, breakage, expected):
    traces, evidence, ids = parts
    broken = breakage(make_item(list(traces.values()), evidence[0]))
    assert expected in format_problem(broken, "en", traces, ids)


def test_format_rejects_duplicate_options(parts):
    traces, evidence, ids = parts
    item = make_item(list(traces.values()), evidence[0], wrong=[WRONG[0], WRONG[0], WRONG[1]])
    assert "same text" in format_problem(item, "en", traces, ids)


# --------------------------------------------------------------------------------- length, time, dups

def test_length_filter(parts):
    traces, evidence, _ = parts
    balanced = make_item(list(traces.values()), evidence[0])
    assert length_problem(balanced, 1.5) == ""
    long = make_item(list(traces.values()), evidence[0], answer=ANSWER * 3)
    assert "longer" not in length_problem(balanced, 1.5) and "1.5×" in length_problem(long, 1.5)
    unanswerable = make_item(list(traces.values()), evidence[0], question_type="unanswerable",
                             wrong=["no", "nah", "nope"])
    assert length_problem(unanswerable, 1.5) == ""  # E is correct; A–D are all wrong


def test_temporal_leakage_filter(parts):
    traces, evidence, _ = parts
    item = make_item(list(traces.values()), evidence[0])
    newest = max(traces[t].time for t in item.digital_trace_ids)
    assert temporal_problem(item.model_copy(update={"question_time": newest}), traces) == ""
    leaky = item.model_copy(update={"question_time": newest - dt.timedelta(minutes=1)})
    assert "after the question time" in temporal_problem(leaky, traces)


def test_near_duplicate_filter(parts):
    traces, evidence, _ = parts
    first = make_item(list(traces.values()), evidence[0], question="Lin, what made you open up to Xiaomei?")
    again = make_item(list(traces.values()), evidence[0], number=1,
                      question="lin — what made you open up to xiaomei??")
    other = make_item(list(traces.values()), evidence[0], number=2,
                      question="How did your view of the fishing trips with your sisters change over spring?")
    assert similarity(first.question, again.question) == 1.0
    assert "near-duplicate of" in duplicate_problem(again, [first], 0.85)
    assert duplicate_problem(other, [first], 0.85) == ""
    assert duplicate_problem(again, [], 0.85) == ""


def checked(item: MCQ, votes: list[str]) -> Checked:
    return Checked(id=item.id, supported=True, support_reason="", blind_votes=votes, blind_confidence=0.4,
                   blind_reason="longest")


def with_rounds(item: MCQ, *rounds: RefinementRound) -> MCQ:
    return item.model_copy(update={"refinement": list(rounds)})


def test_blind_filter_rejects_a_majority_of_no_context_picks_of_the_key_whatever_the_confidence(parts):
    traces, evidence, _ = parts
    item = make_item(list(traces.values()), evidence[0], correct="B")
    # low stated confidence, but both samples pick the key: guessable by fact
    assert blind_problem(item, checked(item, ["B", "B"]), False) == (
        "answered correctly without any context by 2 of 2 picks (B, B): longest")
    assert blind_problem(item, checked(item, ["B", "A"]), False) == ""  # a tie is no majority
    # the refinement validator's last pick is a vote too
    validated = with_rounds(item, RefinementRound(round=1, too_easy=False, reason="", validator_choice="B"))
    assert "2 of 3 picks" in blind_problem(validated, checked(item, ["B", "C"]), False)
    assert blind_problem(validated, checked(item, ["A", "C"]), False) == ""
    unanswerable = make_item(list(traces.values()), evidence[0], question_type="unanswerable")
    assert blind_problem(unanswerable, checked(unanswerable, ["E", "E"]), False) == ""
    assert blind_problem(unanswerable, checked(unanswerable, ["E", "E"]), True) != ""


def test_blind_samples_rotate_the_options_and_map_picks_back(parts):
    traces, evidence, _ = parts
    item = make_item(list(traces.values()), evidence[0], correct="B")
    shown, back = filter_stage.blind_choices(item, 1)
    assert [c["id"] for c in shown] == list("ABCDE")
    assert shown[0]["text"] == item.choices[1].text and shown[4]["text"] == CANNOT_DETERMINE["en"]
    assert back["A"] == "B" and back["E"] == "E"  # the judge's A is the item's B
    assert filter_stage.blind_choices(item, 0)[0] == [c.model_dump() for c in item.choices]


def test_single_answer_needs_the_verify_judges_confirmation(parts):
    traces, evidence, _ = parts
    item = make_item(list(traces.values()), evidence[0])
    ok = RefinementRound(round=1, too_easy=False, reason="", validator_choice="A", supported=True)
    assert filter_stage.single_answer_problem(with_rounds(item, ok)) == ""
    two_right = ok.model_copy(update={"supported": False, "too_easy": True, "support_reason": "C holds too"})
    assert filter_stage.single_answer_problem(with_rounds(item, two_right)) == "not exactly one right option: C holds too"
    unverified = RefinementRound(round=2, too_easy=True, reason="easy", validator_choice="B", guard="")
    # rounds that ran out are no single-answer failure: named for what happened
    assert filter_stage.single_answer_problem(with_rounds(item, ok, unverified)) == ""
    assert filter_stage.rounds_problem(with_rounds(item, ok, unverified)) == (
        "out of rounds after 2; the last stopped at the no-context validator (picked B): easy")
    guarded = unverified.model_copy(update={"guard": "key_too_long", "reason": "too long"})
    assert "a give-away rule (key_too_long)" in filter_stage.rounds_problem(with_rounds(item, guarded))
    assert filter_stage.rounds_problem(with_rounds(item, two_right)) == ""  # the verify judge's own verdict
    assert filter_stage.rounds_problem(with_rounds(item, ok)) == ""
    assert filter_stage.single_answer_problem(item) == ""  # options from elsewhere: not this check's to judge
    no_verify = RefinementRound(round=1, too_easy=False, reason="", validator_choice="A")
    assert filter_stage.single_answer_problem(with_rounds(item, no_verify)) == ""  # refinement ran without it


def test_dated_questions_and_centroid_keys_are_rejected(parts):
    traces, evidence, _ = parts
    dated = make_item(list(traces.values()), evidence[0], question="What did you tell Xiaomei in March?")
    assert filter_stage.dated_question_problem(dated) == (
        "the question names a month name ('March'); questions carry no explicit dates")
    assert filter_stage.dated_question_problem(make_item(list(traces.values()), evidence[0])) == ""
    perturbed = [ANSWER.replace("Xiaomei", "my sister"), ANSWER.replace("work", "money"),
                 ANSWER.replace("the car", "the office")]
    centroid = make_item(list(traces.values()), evidence[0], wrong=perturbed)
    assert "most central" in filter_stage.centrality_problem(centroid, 0.05)
    assert filter_stage.centrality_problem(make_item(list(traces.values()), evidence[0]), 0.05) == ""


# --------------------------------------------------------------------------------------- the stage

def test_filter_stage_names_the_first_failing_filter_and_records_blind_answers(tmp_path):
    probe = QAWorld(tmp_path / "probe")
    traces = list(probe.traces().values())
    ev = probe.read("evidence.jsonl", Evidence)
    late = dt.datetime(2022, 1, 2)  # before the first trace of ev[30]
    items = [
        make_item(traces, ev[0], number=0, question="Lin, what made you open up to Xiaomei back then?"),
        make_item(traces, ev[1], number=1, question="Why did the spring feel different for you, Lin?",
                  wrong=["No way.", "Maybe.", "Never."]),  # correct option far longer: length
        make_item(traces, ev[2], number=2, question="UNSUPPORTED: how did the move change your weekends?"),
        make_item(traces, ev[3], number=3, question="GUESSABLE: what did you finally admit to Xiaomei?"),
        make_item(traces, ev[30], number=4, question="Lin, how did you feel after the big talk?", asked=late),
        make_item(traces, ev[0], number=5, question="Lin, what made you open up to Xiaomei back then??"),
        make_item(traces, ev[4], number=6, question_type="unanswerable",
                  question="Which company did you finally pick for the thing in your diary?"),
        make_item(traces, ev[5], number=7, question="Tell me how fishing with your sisters shaped that year?",
                  correct="D").model_copy(update={"answer": "mismatch"}),  # format
        make_item(traces, ev[6], number=8, question="What did you tell your sisters on Saturday?"),  # dated
        with_rounds(make_item(traces, ev[7], number=9, question="Which worry did you finally drop, Lin?"),
                    RefinementRound(round=3, too_easy=True, reason="", validator_choice="A", supported=False,
                                    support_reason="C holds too")),  # single answer
        make_item(traces, ev[8], number=10, question="What changed when you stopped hiding from everyone?",
                  wrong=[ANSWER.replace("Xiaomei", "my sister"), ANSWER.replace("work", "money"),
                         ANSWER.replace("the car", "the office")]),  # centrality
        make_item(traces, ev[9], number=11, question="ONE-TRACE: what did you decide after that long week, Lin?"),
        make_item(traces, ev[10], number=12, question_type="comparison",
                  question="How does the way you talk to Xiaomei compare with how it was before?"),  # span
        make_item(traces, ev[11], number=13, question="ANOTHER: what did you finally tell Xiaomei about work, Lin?"),  # unique
        make_item(traces, ev[12], number=14, question="OPEN: what did you give up that winter, Lin?"),  # open_blind
        make_item(traces, ev[13], number=15, question="GUESSABLE OPEN: what did you keep from your sisters?"),  # both
    ]
    model = judges({i.question: next(c.text for c in i.choices if c.id == i.correct_choice_id) for i in items},
                   {i.question: i.answer for i in items})
    world = QAWorld(tmp_path / "out", model=model)
    from synth.core.jsonl import write_atomic

    write_atomic(world.dir / "mcq.jsonl", items)
    world.run("filter")
    final = world.read("final.jsonl", FinalItem)
    rejected = {r.id: r for r in world.read("rejected.jsonl", Rejected)}
    # rejected: a filter judging both forms failed, or each form's own filter did (item 15: its first failure)
    expected = {2: "sufficiency", 4: "temporal", 5: "duplicate", 7: "format", 8: "dated_question",
                12: "multi_point_span", 13: "unique", 15: "blind"}
    assert {r.id: r.filter for r in rejected.values()} == {items[n].id: f for n, f in expected.items()}
    assert all(r.reason for r in rejected.values())
    assert "free text" in next(v.reason for v in rejected[items[15].id].verdicts if v.filter == "open_blind")
    # an MCQ-only failure leaves the open question; an open failure leaves the multiple choice
    formats = {i.id: i.formats for i in final}
    assert formats == {items[0].id: ["open", "mcq"], items[6].id: ["open", "mcq"], items[1].id: ["open"],
                       items[3].id: ["open"], items[9].id: ["open"], items[10].id: ["open"], items[11].id: ["open"],
                       items[14].id: ["mcq"]}
    mcq_failed = {i.id: next(v.filter for v in i.verdicts if not v.passed) for i in final if i.formats != ["open", "mcq"]}
    assert mcq_failed == {items[1].id: "length", items[3].id: "blind", items[9].id: "single_answer",
                          items[10].id: "centrality", items[11].id: "single_point", items[14].id: "open_blind"}
    kept = {i.id: i for i in final}
    final = [i for i in final if i.formats == ["open", "mcq"]]
    for record in [*final, *(r for r in rejected.values() if r.filter != "format")]:
        assert record.blind_choice in "ABCDE" and record.blind_confidence == 0.95
        assert len(record.blind_votes) == 2 + (record.id == items[9].id)  # two samples (+ the validator's pick)
    assert kept[items[3].id].blind_votes == [items[3].correct_choice_id] * 2  # both rotated samples found the key
    assert all(v.passed for v in final[0].verdicts) and [v.filter for v in final[0].verdicts] == list(
        filter_stage.FILTERS)  # every filter named, in order
    # a malformed item costs no model call; the others cost three each (sufficiency and two blind samples), and
    # a multi-point item one more per needed trace it is tested on alone (at most single_trace_max), and an
    # answerable item one more for the uniqueness judge when other related traces exist by its time
    limit = world.config["filter"]["single_trace_max"]
    singles = sum(len(filter_stage.single_trace_ids(i, limit)) for i in items if i.id != items[7].id)
    uniques = [r for r in model.seen if r.task == "filter_unique"]
    assert any("ANOTHER" in r.messages[-1]["content"] for r in uniques)
    assert not any("Which company" in r.messages[-1]["content"] for r in uniques), "not for unanswerable items"
    readers = {"filter_choices_only", "filter_open_blind", "filter_open_judge"}
    older = [r for r in model.seen if r.task not in readers]
    assert singles >= 10 * limit and len(older) == 3 * 15 + singles + len(uniques)
    # the options-only reader and the open reader (with its judge): once per well-formed answerable item
    for task in ("filter_open_blind", "filter_open_judge"):
        assert sum(r.task == task for r in model.seen) == 14
    asked = [i for n, i in enumerate(items) if n not in (6, 7)]  # not the unanswerable one, not the malformed one
    distinct = {tuple(c.text for c in i.choices) for i in asked}  # equal prompts are answered once (the cache)
    assert sum(r.task == "filter_choices_only" for r in model.seen) == len(distinct)
    for r in model.seen:
        text = r.messages[-1]["content"]
        if r.task == "filter_choices_only":
            assert not any(i.question in text for i in items) and "SECRET TRACE" not in text
        if r.task == "filter_open_blind":
            assert "SECRET TRACE" not in text and not any(c.text in text for i in items for c in i.choices[:4])
    assert sum(r.task == "filter_single_trace" for r in model.seen) == singles
    one = next(r.messages[-1]["content"] for r in model.seen if r.task == "filter_single_trace")
    assert one.count("--- ") == 1  # exactly one record shown
    assert {r.settings.temperature for r in model.seen} == {0.0}  # judges do not sample
    # unanswerable: the sufficiency judge sees the arc's evidence up to the question time, not the item's (empty)
    prompt = next(r.messages[-1]["content"] for r in model.seen
                  if r.task == "filter_sufficiency" and "Which company" in r.messages[-1]["content"])
    assert "Statement" in prompt and "most related to the question, from every life arc" in prompt
    assert "--- " in prompt  # it reads traces, not only the arc's statements
    # every sufficiency judge sees the person's background, which the QA writer saw: a capable judge rejected
    # answers for "回深圳以后" and "in the staff room", the person's own city and workplace
    from synth.records import Persona

    [persona] = world.read("persona.jsonl", Persona)
    judged = [r.messages[-1]["content"] for r in model.seen if r.task == "filter_sufficiency"]
    assert judged and all("The person's background" in t and persona.backstory in t for t in judged)
    assert all(f"{r.name} ({r.relation})" in t for t in judged for r in persona.relations)
    report = json.loads((world.dir / "filter_report.json").read_text())
    assert report["kept"] == 8 and report["open_valid"] == 7 and report["mcq_valid"] == 3
    assert report["by_type"]["causal"] == {"generated": 14, "open_valid": 6, "mcq_valid": 2}
    assert "choices_only_accuracy" in report and "key_entity_central_rate" in report["final"]
    assert set(report["final"]["positions"]) == {"A", "B", "C", "D"}
    assert 0 <= report["final"]["correct_is_longest_rate"] <= 1


def test_comparison_and_trajectory_evidence_must_span_days_and_traces(parts):
    traces, evidence, _ = parts
    ordered = sorted(traces.values(), key=lambda t: t.time)
    early, late = ordered[0], next(t for t in ordered if (t.time - ordered[0].time).days >= 14)
    near = next(t for t in ordered[1:] if 0 < (t.time - early.time).days < 14)

    def item_on(*chosen: Trace, question_type: str = "comparison") -> MCQ:
        base = make_item(list(traces.values()), evidence[0], question_type=question_type)
        refs = [EvidenceRef(statement="s", evidence_id=evidence[0].id, digital_trace_ids=[t.id for t in chosen])]
        return base.model_copy(update={"evidence": refs, "digital_trace_ids": [t.id for t in chosen]})

    assert filter_stage.span_problem(item_on(early, late), traces, 14) == ""
    assert "needs at least 14" in filter_stage.span_problem(item_on(early, near), traces, 14)
    assert "needs two or more" in filter_stage.span_problem(item_on(early), traces, 14)
    assert filter_stage.span_problem(item_on(early, question_type="causal"), traces, 14) == ""  # not a spanning type


def test_one_trace_that_gives_the_key_away_makes_a_single_point_item(parts):
    traces, evidence, _ = parts
    item = make_item(list(traces.values()), evidence[0], correct="B")
    hit = filter_stage.SingleTrace(trace_id="t9", choice="B", confidence=0.9)
    base = checked(item, ["A", "C"])
    assert filter_stage.single_point_problem(item, base.model_copy(update={"single_trace": [hit]}), 0.8) == (
        "trace t9 alone gives the answer (B, confidence 0.90): a single-point item in disguise")
    unsure = hit.model_copy(update={"confidence": 0.5})
    assert filter_stage.single_point_problem(item, base.model_copy(update={"single_trace": [unsure]}), 0.8) == ""
    wrong = hit.model_copy(update={"choice": "A"})
    assert filter_stage.single_point_problem(item, base.model_copy(update={"single_trace": [wrong]}), 0.8) == ""
    assert filter_stage.single_trace_ids(make_item(list(traces.values()), evidence[0], question_type="factual"), 2) == []


def inference_item(traces: list[Trace], evidence: list[Evidence], number: int, question: str) -> MCQ:
    item = make_item(traces, evidence[0], number=number, question_type="inference", question=question)
    refs = [EvidenceRef(statement=e.statement, evidence_id=e.id,
                        digital_trace_ids=[t.id for t in traces if e.id in t.evidence_ids]) for e in evidence]
    return item.model_copy(update={"evidence": refs,
                                   "digital_trace_ids": sorted({t for r in refs for t in r.digital_trace_ids})})


def test_an_inference_item_needs_two_statements_none_stating_its_answer(tmp_path):
    probe = QAWorld(tmp_path / "probe")
    traces = list(probe.traces().values())
    ev = probe.read("evidence.jsonl", Evidence)
    items = [inference_item(traces, ev[0:2], 0, "What does the way you talk now say about you, Lin?"),
             inference_item(traces, ev[2:4], 1, "LOOKUP: what do you believe about work dinners now?"),
             inference_item(traces, ev[4:5], 2, "What does that week tell you about yourself, Lin?")]
    model = judges({i.question: next(c.text for c in i.choices if c.id == i.correct_choice_id) for i in items})
    world = QAWorld(tmp_path / "out", model=model)
    from synth.core.jsonl import write_atomic

    write_atomic(world.dir / "mcq.jsonl", items)
    world.run("filter")
    rejected = {r.id: r for r in world.read("rejected.jsonl", Rejected)}
    assert [i.id for i in world.read("final.jsonl", FinalItem)] == [items[0].id]
    assert {k: r.filter for k, r in rejected.items()} == {items[1].id: "inference_grounding",
                                                         items[2].id: "inference_grounding"}
    assert rejected[items[1].id].reason.startswith(f"evidence {ev[3].id} states the answer outright")
    assert rejected[items[2].id].reason == "an inference item rests on 1 statement(s); it needs two or more"
    asked = [r for r in model.seen if r.task == "filter_inference"]
    assert len(asked) == 2, "the one-statement item is rejected without a model call"
    assert all(r.json_schema["properties"]["states_answer"]["items"]["enum"] == [1, 2] for r in asked)
    assert ev[0].statement in next(r.messages[-1]["content"] for r in asked if items[0].question in
                                   r.messages[-1]["content"])
    report = json.loads((world.dir / "filter_report.json").read_text())
    assert report["rejected_by_filter"]["inference_grounding"] == 2
