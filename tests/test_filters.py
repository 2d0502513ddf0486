"""Each quality filter on hand-made items that must pass and must fail, then the filter stage end to end."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from test_qa_stages import PID, World

from synth.llm.base import LLMRequest, ProviderResponse, Usage
from synth.models import (
    CANNOT_DETERMINE,
    MCQ,
    Choice,
    Evidence,
    EvidenceRef,
    FinalItem,
    Rejected,
    Trace,
    mint_id,
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

ANSWER = "I stopped hiding in the car and told Xiaomei everything about work and Mom."
WRONG = [
    "Xinyu's drawing of our family made me cry, so I apologised to everyone that night.",
    "My boss sent me to a counsellor, and the sessions taught me how to talk at home.",
    "I took the branch job out of town, and the distance let us calm down and talk again.",
]


def make_item(traces: list[Trace], evidence: Evidence, *, number: int = 0, question_type: str = "causal",
              question: str = "Lin, what made you open up to Xiaomei back then?", answer: str = ANSWER,
              asked: dt.datetime | None = None, wrong: list[str] | None = None, correct: str = "B") -> MCQ:
    carrying = [t.id for t in traces if evidence.id in t.evidence_ids]
    unanswerable = question_type == "unanswerable"
    texts = list(wrong or WRONG)
    if unanswerable:
        texts = [*texts, "I chose the Shanghai consulting firm my classmate runs and start next month."]
        correct = "E"
    else:
        texts.insert("ABCD".index(correct), answer)
    choices = [Choice(id=c, text=t) for c, t in zip("ABCDE", [*texts, CANNOT_DETERMINE["en"]], strict=True)]
    return MCQ(
        id=mint_id(PID, "item", number), persona_id=PID, question_type=question_type, dimension="emotion",
        arc_id=evidence.arc_ids[0], question_time=asked or dt.datetime(2022, 6, 1, 20), question=question,
        answer=CANNOT_DETERMINE["en"] if unanswerable else answer,
        evidence=[] if unanswerable else [EvidenceRef(statement=evidence.statement, evidence_id=evidence.id,
                                                      digital_trace_ids=carrying)],
        digital_trace_ids=[] if unanswerable else carrying, window_end=dt.date(2022, 6, 1), choices=choices,
        correct_choice_id=correct,
    )


@pytest.fixture
def world(tmp_path):
    return World(tmp_path / "out")


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


def test_blind_filter(parts):
    traces, evidence, _ = parts
    item = make_item(list(traces.values()), evidence[0], correct="B")
    confident = Checked(id=item.id, supported=True, support_reason="", blind_choice="B", blind_confidence=0.9,
                        blind_reason="longest")
    assert blind_problem(item, confident, 0.8, False) == (
        "answered correctly without any context (B, confidence 0.90): longest")
    assert blind_problem(item, confident.model_copy(update={"blind_confidence": 0.5}), 0.8, False) == ""
    assert blind_problem(item, confident.model_copy(update={"blind_choice": "A"}), 0.8, False) == ""
    unanswerable = make_item(list(traces.values()), evidence[0], question_type="unanswerable")
    e_pick = confident.model_copy(update={"blind_choice": "E"})
    assert blind_problem(unanswerable, e_pick, 0.8, False) == ""
    assert blind_problem(unanswerable, e_pick, 0.8, True) != ""


# --------------------------------------------------------------------------------------- the stage

class Judges:
    """A provider that answers the judge tasks by rule: unsupported when the question says UNSUPPORTED, a confident
    correct blind answer when it says GUESSABLE, a confident wrong one otherwise."""

    name = "fake"
    key_env = None

    def __init__(self, correct: dict[str, str]) -> None:
        self.correct = correct  # question text → correct choice
        self.seen: list[LLMRequest] = []

    async def complete(self, request: LLMRequest, model: str) -> ProviderResponse:
        self.seen.append(request)
        prompt = request.messages[-1]["content"]
        question = next(q for q in self.correct if q in prompt)
        if request.task == "filter_sufficiency":
            reply = {"supported": "UNSUPPORTED" not in question, "reason": "checked"}
        else:
            right = self.correct[question]
            pick = right if "GUESSABLE" in question else ("A" if right != "A" else "C")
            reply = {"choice": pick, "confidence": 0.95, "reason": "cue"}
        return ProviderResponse(text=json.dumps(reply), usage=Usage(input_tokens=10, output_tokens=5))


def test_filter_stage_names_the_first_failing_filter_and_records_blind_answers(tmp_path):
    probe = World(tmp_path / "probe")
    traces = list(probe.traces().values())
    ev = probe.read("evidence.jsonl", Evidence)
    late = dt.datetime(2022, 1, 2)  # before the first trace of ev[30]
    items = [
        make_item(traces, ev[0], number=0, question="Lin, what made you open up to Xiaomei back then?"),
        make_item(traces, ev[1], number=1, question="Why did the spring feel different for you, Lin?",
                  wrong=["No way.", "Maybe.", "Never."]),  # correct option far longer: length
        make_item(traces, ev[2], number=2, question="UNSUPPORTED: how did the move change your weekends?"),
        make_item(traces, ev[3], number=3, question="GUESSABLE: what did you finally admit to Xiaomei?"),
        make_item(traces, ev[30], number=4, question="Lin, how did you feel after the March talk?", asked=late),
        make_item(traces, ev[0], number=5, question="Lin, what made you open up to Xiaomei back then??"),
        make_item(traces, ev[4], number=6, question_type="unanswerable",
                  question="Which company did you finally pick after all that browsing?"),
        make_item(traces, ev[5], number=7, question="Tell me how fishing with your sisters shaped that year?",
                  correct="D").model_copy(update={"answer": "mismatch"}),  # format
    ]
    judges = Judges({i.question: i.correct_choice_id for i in items})
    world = World(tmp_path / "out", provider=judges)
    from synth.jsonl import write_atomic

    write_atomic(world.dir / "mcq.jsonl", items)
    world.run(filter_stage)
    final = world.read("final.jsonl", FinalItem)
    rejected = {r.id: r for r in world.read("rejected.jsonl", Rejected)}
    expected = {1: "length", 2: "sufficiency", 3: "blind", 4: "temporal", 5: "duplicate", 7: "format"}
    assert {r.id: r.filter for r in rejected.values()} == {items[n].id: f for n, f in expected.items()}
    assert all(r.reason for r in rejected.values())
    assert [i.id for i in final] == [items[0].id, items[6].id]
    for record in [*final, *(r for r in rejected.values() if r.filter != "format")]:
        assert record.blind_choice in "ABCDE" and record.blind_choice and record.blind_confidence == 0.95
    assert all(v.passed for v in final[0].verdicts) and {v.filter for v in final[0].verdicts} >= {
        "format", "sufficiency", "blind", "length", "temporal", "duplicate"}
    # a malformed item costs no model call; the others cost two each
    assert len(judges.seen) == 2 * 7
    # unanswerable: the sufficiency judge sees the arc's evidence up to the question time, not the item's (empty)
    prompt = next(r.messages[-1]["content"] for r in judges.seen
                  if r.task == "filter_sufficiency" and "Which company" in r.messages[-1]["content"])
    assert "Statement" in prompt
    report = json.loads((world.dir / "filter_report.json").read_text())
    assert report["kept"] == 2 and report["rejected_by_filter"]["length"] == 1
    assert set(report["final"]["positions"]) == {"A", "B", "C", "D"}
    assert 0 <= report["final"]["correct_is_longest_rate"] <= 1
