"""A hand-made CloneMem release (six dated traces, four questions) and one way to run `synth eval` on the fake
answerer and judge run through the kit (`kit.eval_fake`): shared by the eval tests."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path


def trace_row(i: int, date: str, content: str) -> dict:
    return {"id": f"t{i}", "medium": "diary", "event_date": date, "content": content}


CONTEXT = [
    trace_row(1, "2022-01-10", "Started the new job at the bakery downtown; nervous but excited."),
    trace_row(2, "2022-02-14", "Dinner with Mia for Valentine's day, we argued about moving to Lisbon."),
    trace_row(3, "2022-03-02", "Booked a pottery class on Thursdays; the clay calms me down."),
    trace_row(4, "2022-05-20", "Mia and I decided to move to Lisbon after all. Packing boxes."),
    trace_row(5, "2022-08-01", "First week in Lisbon: the bakery job feels far away now."),
    trace_row(6, "2022-11-30", "Pottery again, in a Lisbon studio this time; I feel settled."),
]


def question_row(qid: str, qtime: str, qtype: str, dim: str, evidence: list[tuple[str, list[str]]], correct: str = "A") -> dict:
    return {
        "id": qid, "question": f"Question {qid}: how did you feel about moving to Lisbon and pottery?",
        "question_type": qtype, "question_time": qtime, "answer": "I was torn, then settled.", "dimension": dim,
        "digital_trace_ids": sorted({t for _, ids in evidence for t in ids}),
        "evidence": [{"statement": s, "digital_trace_ids": ids} for s, ids in evidence],
        "choices": [{"id": c, "text": f"option {c}"} for c in "ABCDE"], "correct_choice_id": correct,
    }


QUESTIONS = [
    question_row("q1", "2022-03-10", "factual", "experience", [("Took a pottery class", ["t3"])]),
    question_row("q2", "2022-06-01", "trajectory", "opinion", [("Argued about Lisbon", ["t2"]), ("Decided to move", ["t4"])]),
    question_row("q3", "2022-12-05", "pattern", "emotion", [("Pottery calms her", ["t3", "t6"])], correct="C"),
    question_row("q4", "2022-09-01", "unanswerable", "experience", [], correct="E"),
]


def write_release(root: Path) -> Path:
    path = root / "100k" / "ana_benchmark_en.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"person_name": "Ana", "person_id": "ana", "context": CONTEXT,
                                "questions": QUESTIONS}), encoding="utf-8")
    return path


class SpySystem:
    """Records the traces it holds when asked, so the test can check none is from after the question time."""

    def __init__(self) -> None:
        self.fed: list[dict] = []
        self.asked: list[tuple[dt.datetime | None, list[dict]]] = []

    def ingest(self, trace: dict) -> None:
        self.fed.append(trace)

    def retrieve(self, question, k, question_time):
        self.asked.append((question_time, list(self.fed)))
        return [t["id"] for t in self.fed][-k:]
