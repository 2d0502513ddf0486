"""A lexical check of the gold trace labels: evidence whose statement a trace of its event visibly carries (most of
the statement's key words are in the text) although the trace does not list it in `evidence_ids` — a gap that makes
a memory system's measured evidence recall too low.

Key units are content words of four letters or more (lower-cased, a plural or -ed/-ing ending cut, common function
words left out) and, for Chinese, the character bigrams of each run of Han characters. Records may be the pydantic
models or the plain dicts `synth validate` reads; a malformed field is read as empty, never raised on."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

THRESHOLD = 0.6  # the share of a statement's key units a trace must contain to count as carrying it
MIN_UNITS = 2  # fewer key units say too little to recognise a statement by its words alone

_WORD = re.compile(r"[a-zà-öø-ÿ]{4,}")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")
_SUFFIXES = ("ing", "ed", "es", "s")
_FUNCTION_WORDS = frozenset({
    "about", "above", "after", "again", "against", "also", "among", "around", "because", "been", "before", "being",
    "below", "between", "both", "could", "does", "doing", "down", "during", "each", "even", "ever", "every", "from",
    "further", "have", "having", "here", "into", "just", "like", "made", "make", "many", "more", "most", "much",
    "must", "never", "only", "other", "ought", "over", "same", "should", "some", "such", "than", "that", "their",
    "theirs", "them", "then", "there", "these", "they", "this", "those", "through", "under", "until", "upon",
    "very", "want", "were", "what", "when", "where", "which", "while", "whom", "with", "within", "without", "would",
    "your", "yours",
})


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def naming_units(units: set[str]) -> set[str]:
    """The units of `key_units` that name something: stemmed words of five letters or more, Chinese character
    pairs (short English stems match inside too many words)."""
    return {unit for unit in units if len(unit) >= 5 or not unit.isascii()}


def key_units(text: str) -> set[str]:
    """The units a statement is recognised by: stemmed content words and Han-character bigrams."""
    text = text.lower()
    words = {_stem(w) for w in _WORD.findall(text) if w not in _FUNCTION_WORDS}
    bigrams = {run[i:i + 2] for run in _HAN.findall(text) for i in range(len(run) - 1)}
    return words | bigrams


def _field(record: Any, name: str) -> Any:
    return record.get(name) if isinstance(record, Mapping) else getattr(record, name, None)


def _text(record: Any, name: str) -> str:
    value = _field(record, name)
    return value if isinstance(value, str) else ""


def _labels(trace: Any) -> set[str]:
    value = _field(trace, "evidence_ids")
    return {v for v in value if isinstance(v, str)} if isinstance(value, list) else set()


def unlabelled_evidence(evidence: Iterable[Any], traces: Iterable[Any],
                        threshold: float = THRESHOLD) -> list[tuple[str, str]]:
    """(evidence_id, trace_id) for every trace of an evidence's own event that holds at least `threshold` of the
    statement's key units without listing the evidence in `evidence_ids`; in evidence order, then trace order."""
    by_event: dict[str, list[tuple[str, set[str], set[str]]]] = {}
    for trace in traces:
        by_event.setdefault(_text(trace, "event_id"), []).append(
            (_text(trace, "id"), _labels(trace), key_units(_text(trace, "content"))))
    found: list[tuple[str, str]] = []
    for item in evidence:
        evidence_id, units = _text(item, "id"), key_units(_text(item, "statement"))
        if len(units) < MIN_UNITS:
            continue
        for trace_id, labels, text in by_event.get(_text(item, "event_id"), []):
            if evidence_id not in labels and len(units & text) >= threshold * len(units):
                found.append((evidence_id, trace_id))
    return found


def label_warnings(out: Path) -> list[str]:
    """`synth validate`'s warnings (a heuristic, not a violation): in each persona directory under `out`, evidence a
    trace of its event visibly carries without listing it."""
    lines = []
    for directory in sorted(p.parent for p in Path(out).glob("*/persona.jsonl") if p.is_file()):
        evidence, traces = _records(directory / "evidence.jsonl"), _records(directory / "traces.jsonl")
        for evidence_id, trace_id in unlabelled_evidence(evidence, traces):
            lines.append(f"{directory.name}/traces.jsonl: {trace_id}: seems to carry evidence {evidence_id} "
                         "without listing it in evidence_ids")
    return lines


def _records(path: Path) -> list[dict]:
    """The JSON objects of a JSONL file; unreadable lines are validate's to report, skipped here."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out
