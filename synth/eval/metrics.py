"""CloneMem's scores: Recall@k variants over evidence sets (appendix D.1.1), answer-letter parsing, bootstrap CIs."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np

RECALL_METRICS = ("recall_flat", "recall_all_all", "recall_all_any", "recall_any_all", "recall_any_any")
JUDGE_METRICS = ("memory_recall", "memory_helpfulness", "hallucination_rate", "qa_consistency", "perfect_rate")
METRICS = RECALL_METRICS + ("choice_accuracy",) + JUDGE_METRICS
LETTERS = "ABCDE"


def _prepare(retrieved: Iterable[str], evidence_sets: Sequence[Iterable[str]]) -> tuple[set[str], list[set[str]]]:
    return set(retrieved), [set(s) for s in evidence_sets if s]


def recall_flat(retrieved: Iterable[str], evidence_sets: Sequence[Iterable[str]]) -> float | None:
    """Share of unique gold trace ids retrieved; None when the question has no gold traces."""
    got, sets = _prepare(retrieved, evidence_sets)
    gold = set().union(*sets) if sets else set()
    return len(gold & got) / len(gold) if gold else None


def recall_all_all(retrieved: Iterable[str], evidence_sets: Sequence[Iterable[str]]) -> float | None:
    """1 when every id of every evidence set is retrieved."""
    got, sets = _prepare(retrieved, evidence_sets)
    return float(all(s <= got for s in sets)) if sets else None


def recall_all_any(retrieved: Iterable[str], evidence_sets: Sequence[Iterable[str]]) -> float | None:
    """1 when at least one id of every evidence set is retrieved."""
    got, sets = _prepare(retrieved, evidence_sets)
    return float(all(s & got for s in sets)) if sets else None


def recall_any_all(retrieved: Iterable[str], evidence_sets: Sequence[Iterable[str]]) -> float | None:
    """1 when every id of at least one evidence set is retrieved."""
    got, sets = _prepare(retrieved, evidence_sets)
    return float(any(s <= got for s in sets)) if sets else None


def recall_any_any(retrieved: Iterable[str], evidence_sets: Sequence[Iterable[str]]) -> float | None:
    """1 when any id of any evidence set is retrieved."""
    got, sets = _prepare(retrieved, evidence_sets)
    return float(any(s & got for s in sets)) if sets else None


_RECALLS = {f.__name__: f for f in (recall_flat, recall_all_all, recall_all_any, recall_any_all, recall_any_any)}


def recall_scores(retrieved: Iterable[str], evidence_sets: Sequence[Iterable[str]]) -> dict[str, float] | None:
    """All five variants, or None for a question with no gold trace ids (excluded from recall averages)."""
    retrieved = list(retrieved)
    if not any(evidence_sets):
        return None
    return {name: fn(retrieved, evidence_sets) for name, fn in _RECALLS.items()}


# Ordered from the most explicit statement of a choice to the loosest; the first pattern that matches wins.
_CHOICE_PATTERNS = [
    re.compile(r"(?:答案|选项|选择|应选|选)\s*(?:是|为)?\s*[:：]?\s*[\(（\[【]?\s*([A-Ea-e])(?![A-Za-z])"),
    re.compile(r"\b(?i:answer)\s*(?:is|would be)?\s*[:\-]?\s*(?:(?i:option)\s*)?[\*\"'`]*"
               r"(?:[\(\[]\s*([A-Ea-e])\s*[\)\]]|([A-E])(?![A-Za-z']))"),
    re.compile(r"\b(?i:option|choice)\s*[\(\[]?([A-E])(?![A-Za-z])"),
    re.compile(r"\*\*\s*[\(\[]?([A-E])[\)\]]?(?:[.:)：]|\s*\*\*)"),
    re.compile(r"^\s*[\(\[（【]\s*([A-Ea-e])\s*[\)\]）】]"),
    re.compile(r"^\s*([A-E])\s*(?:[).:：、\]]|$)"),
]
# A lone capital letter; "A" followed by a lowercase word is the English article, not a choice.
_LONE_LETTER = re.compile(r"(?<![A-Za-z'])(?!A\s+[a-z])([A-E])(?![A-Za-z'])")


def parse_choice(text: str | None) -> str | None:
    """The letter A–E a free-text answer picks ("B) …", "Answer: B", "**B**", "The answer is (b)", "答案：B")."""
    if not text:
        return None
    text = text.strip()
    for pattern in _CHOICE_PATTERNS:
        match = pattern.search(text)
        if match:
            return next(g for g in match.groups() if g).upper()
    lone = set(_LONE_LETTER.findall(text))
    return lone.pop() if len(lone) == 1 else None


def bootstrap_ci(values: Sequence[float], resamples: int = 1000, seed: int = 0,
                 level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean; a seeded RNG makes it reproducible."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return (float("nan"), float("nan"))
    if data.size == 1:
        return (float(data[0]), float(data[0]))
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    return (float(np.percentile(means, tail)), float(np.percentile(means, 100 - tail)))


def summarize(values: Sequence[float | None], resamples: int = 1000, seed: int = 0) -> dict:
    """Mean, bootstrap 95% interval and count over the defined values (None = not applicable)."""
    defined = [float(v) for v in values if v is not None]
    if not defined:
        return {"mean": None, "ci_low": None, "ci_high": None, "n": 0}
    low, high = bootstrap_ci(defined, resamples, seed)
    return {"mean": float(np.mean(defined)), "ci_low": low, "ci_high": high, "n": len(defined)}


def question_metrics(row: dict) -> dict[str, float | None]:
    """One results.jsonl row → every metric in [0, 1] (None where it does not apply to this question)."""
    recall = row.get("recall") or {}
    judge = row.get("judge") or {}
    out: dict[str, float | None] = {name: recall.get(name) for name in RECALL_METRICS}
    out["choice_accuracy"] = None if row.get("correct") is None else float(bool(row["correct"]))
    out["memory_recall"] = judge.get("memory_recall")
    helpful = judge.get("memory_helpfulness")
    out["memory_helpfulness"] = None if helpful is None else helpful / 2
    # free-text scores count only where the open question is a valid item (synth's filter); choice accuracy only
    # where the multiple choice is (its choices were dropped on loading otherwise, so `correct` is None)
    is_open = "open" in (row.get("formats") or ("open", "mcq"))
    truth = judge.get("truthfulness") if is_open else None
    out["hallucination_rate"] = None if truth is None else float(truth == 0)
    consistency = judge.get("consistency") if is_open else None
    out["qa_consistency"] = None if consistency is None else consistency / 3
    out["perfect_rate"] = None if consistency is None else float(consistency == 3)
    return out


def aggregate(rows: Sequence[dict], resamples: int = 1000, seed: int = 0) -> dict[str, dict]:
    """Every metric over the rows, with intervals."""
    per_question = [question_metrics(r) for r in rows]
    return {m: summarize([q[m] for q in per_question], resamples, seed) for m in METRICS}
