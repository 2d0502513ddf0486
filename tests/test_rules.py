"""The multiple-choice rules, once, as a table: each case is checked through the rule function and through the
two places that call it (the filter's format check on a parsed item, `synth validate` on the raw file)."""

from __future__ import annotations

import pytest

from synth.quality import rules
from synth.records import CANNOT_DETERMINE

E_EN = CANNOT_DETERMINE["en"]
GOOD = [("A", "At the lake house"), ("B", "In her old flat"), ("C", "At her sister's place"),
        ("D", "In a rented cabin"), ("E", E_EN)]


def swap(choices, i, text=None, cid=None):
    out = list(choices)
    old_id, old_text = out[i]
    out[i] = (cid or old_id, old_text if text is None else text)
    return out


SHAPE_CASES = [
    ("well formed", GOOD, "A", "factual", []),
    ("E missing", GOOD[:4], "A", "factual", ['no option E ("cannot be determined")']),
    ("out of order", [GOOD[1], GOOD[0], *GOOD[2:]], "A", "factual",
     ["choices are ['B', 'A', 'C', 'D', 'E'], not A–E in order, exactly once each"]),
    ("an id twice", swap(GOOD, 1, cid="A"), "A", "factual",
     ["choices are ['A', 'A', 'C', 'D', 'E'], not A–E in order, exactly once each"]),
    ("E in another language", swap(GOOD, 4, text=CANNOT_DETERMINE["zh"]), "A", "factual",
     [f"option E reads {CANNOT_DETERMINE['zh']!r}, not {E_EN!r}"]),
    ("correct not among ids", GOOD, "F", "factual", ["correct_choice_id 'F' is not among the choices"]),
    ("unanswerable not E", GOOD, "B", "unanswerable", ["an unanswerable question must have answer E (has 'B')"]),
    ("unanswerable E", GOOD, "E", "unanswerable", []),
    ("answerable E is shape-valid", GOOD, "E", "factual", []),
]


@pytest.mark.parametrize(("case", "choices", "correct", "qtype", "expected"), SHAPE_CASES, ids=[c[0] for c in SHAPE_CASES])
def test_shape_rules(case, choices, correct, qtype, expected) -> None:
    assert rules.shape_problems(choices, correct, qtype, "en") == expected


OPTION_CASES = [
    ("well formed", GOOD, "A", "Where?", "At the lake house", "factual", []),
    ("empty answer", GOOD, "A", "Where?", "  ", "factual", ["empty question or answer", "the correct option is not the answer"]),
    ("answer repeats question", GOOD, "A", "at the lake house", "At the lake  house", "factual",
     ["the answer repeats the question"]),
    ("case-insensitive duplicate", swap(GOOD, 2, text="at the LAKE house"), "A", "Where?", "At the lake house",
     "factual", ["two options have the same text"]),
    ("stub option", swap(GOOD, 3, text="1"), "A", "Where?", "At the lake house", "factual",
     ["option D ('1') is too short to be a real answer"]),
    ("answerable with E correct", GOOD, "E", "Where?", "At the lake house", "factual",
     ["E must be correct exactly for unanswerable questions"]),
    ("correct option is not the answer", GOOD, "B", "Where?", "At the lake house", "factual",
     ["the correct option is not the answer"]),
    ("unanswerable needs no answer match", GOOD, "E", "Where?", E_EN, "unanswerable", []),
]


@pytest.mark.parametrize(("case", "choices", "correct", "question", "answer", "qtype", "expected"), OPTION_CASES,
                         ids=[c[0] for c in OPTION_CASES])
def test_option_rules(case, choices, correct, question, answer, qtype, expected) -> None:
    assert rules.option_problems(choices, correct, question, answer, qtype, min_option_chars=4) == expected


@pytest.mark.parametrize(("answer", "distractors", "repeated"), [
    ("At the lake house", ["In her flat", "At a cabin", "On a boat"], False),
    ("At the lake house", ["in her flat", "IN HER  FLAT", "On a boat"], True),
    ("At the lake house", ["at the lake house", "At a cabin", "On a boat"], True),
    ("At the lake house", [E_EN.upper(), "At a cabin", "On a boat"], True),
])
def test_repeated_option(answer, distractors, repeated) -> None:
    assert rules.repeated_option(answer, distractors, E_EN) is repeated


@pytest.mark.parametrize(("correct", "distractors", "problem", "longest"), [
    ("x" * 30, ["y" * 20, "y" * 25], "", True),
    ("x" * 37, ["y" * 20, "y" * 25], "", True),  # 37 ≤ 1.5 × 25
    ("x" * 38, ["y" * 20, "y" * 25, "y" * 38], "", False),
    ("x" * 40, ["y" * 20, "y" * 25], "the correct option has 40 characters, more than 1.5× the longest distractor (25)", True),
])
def test_length_rules(correct, distractors, problem, longest) -> None:
    assert rules.length_problem(correct, distractors, 1.5) == problem
    assert rules.correct_is_longest(correct, distractors) is longest


def test_needed_traces_is_the_ordered_union() -> None:
    assert rules.needed_traces(["t2", "t1"], [["t1", "t3"], ["t4", "t2"]]) == ["t2", "t1", "t3", "t4"]


def test_filter_and_validate_report_the_same_shape_problem(handmade_dataset) -> None:
    """One rule, one wording: a broken option E reads the same in the filter and in `synth validate`."""
    import json

    from handmade import PERSONA_ID
    from kit import read_jsonl, write_jsonl

    from synth.quality.validate import validate_dataset
    from synth.records import MCQ
    from synth.stages.filter import format_problem

    path = handmade_dataset / PERSONA_ID / "mcq.jsonl"
    records = read_jsonl(path)
    records[0]["choices"][4]["text"] = "None of the above"
    write_jsonl(path, records)
    expected = f"option E reads 'None of the above', not {E_EN!r}"
    problems = validate_dataset(handmade_dataset)
    assert [p for p in problems if expected in p] and all(expected in p for p in problems), problems
    item = MCQ.model_validate_json(json.dumps(records[0]))
    assert format_problem(item, "en", {}, set()) == expected


@pytest.mark.parametrize(("question", "found"), [
    ("What did I decide about the job offer?", ""),
    ("What happened on 2023-05-04?", "an ISO date ('2023-05-04')"),
    ("Why was I upset in March?", "a month name ('March')"),
    ("May I ask how you felt about it?", ""),
    ("What did June tell me about the move?", ""),
    ("What did I do in June?", "a month name ('in June')"),
    ("What did I do on Saturday?", "a weekday ('Saturday')"),
    ("Why did the 2022 move matter?", "a year ('2022')"),
    ("Who came to the party on 5/6/2023?", "a numeric date ('5/6/2023')"),
    ("Did I really pay 2,000 dollars for it?", ""),
    ("我在3月5日做了什么？", "a date ('3月5日')"),
    ("我五月的时候在想什么？", "a month ('五月')"),
    ("星期六我去了哪里？", "a weekday ('星期六')"),
    ("周末我做了什么？", ""),
    ("我三个月后怎么想？", ""),
])
def test_explicit_dates_in_questions(question, found) -> None:
    assert rules.explicit_date(question) == found


def test_centrality_finds_the_centroid_key_and_agrees_with_the_outside_tool() -> None:
    """Distractors that each swap one detail of the key make the key the most central option."""
    perturbed = {"A": "I moved to Lisbon in spring because of the new job at the studio",
                 "B": "I moved to Porto in spring because of the new job at the studio",
                 "C": "I moved to Lisbon in autumn because of the new job at the studio",
                 "D": "I moved to Lisbon in spring because of my sister at the studio"}
    assert rules.key_is_most_central(perturbed, "A")
    assert not rules.key_is_most_central(perturbed, "B")
    alternatives = {"A": "The studio offered me a lead role and I took it",
                    "B": "My landlord sold the flat, so I had to leave the city",
                    "C": "I followed my partner after she got into a master's programme",
                    "D": "A long illness made me want to live near my parents"}
    scores = rules.centrality(alternatives)
    assert max(scores.values()) < min(rules.centrality(perturbed).values())
    assert rules.key_is_longest({"A": "x" * 10, "B": "y" * 10, "C": "z"}, "A")  # a tie counts, as in mcq_bias.py
    assert not rules.key_is_longest({"A": "x" * 9, "B": "y" * 10}, "A")
