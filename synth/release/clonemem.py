"""Export final items in the CloneMem release format: one JSON file per persona and language, bucketed by size."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from synth.core.jsonl import read_records, write_atomic, write_json_atomic
from synth.records import EvidenceRef, FinalItem, Person, Persona, Trace, Translation
from synth.release.stats import trace_tokens
from synth.release.view import persona_dirs

SIZE_LIMIT = 300_000  # trace tokens below this go to the 100k folder, the rest to 500k


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ContextEntry(_Strict):
    id: str
    medium: str
    event_date: str
    content: str


class ExportEvidence(_Strict):
    """An evidence statement and its traces. An unanswerable item's evidence is its related background (synth's
    `background: true`): exported as evidence all the same, so recall can be scored on it; the release format has
    no field to flag it, and none is added (third-party readers take exactly these names), so `question_type`
    "unanswerable" is what marks it."""

    statement: str
    digital_trace_ids: list[str]


class ExportChoice(_Strict):
    id: Literal["A", "B", "C", "D", "E"]
    text: str


class ExportQuestion(_Strict):
    id: str
    question: str
    question_type: str
    question_time: str
    answer: str
    dimension: Literal["experience", "emotion", "opinion"]
    digital_trace_ids: list[str]
    evidence: list[ExportEvidence]
    choices: list[ExportChoice]  # [] when the item is valid only as an open question
    correct_choice_id: Literal["A", "B", "C", "D", "E"] | None


class CloneMemFile(_Strict):
    """One `<persona>_benchmark_<lang>.json`: exactly the release's field names, nothing else."""

    person_name: str
    person_id: str
    context: list[ContextEntry]
    questions: list[ExportQuestion]


def size_bucket(tokens: int) -> str:
    return "100k" if tokens < SIZE_LIMIT else "500k"


def _time(value) -> str:
    return value.isoformat(timespec="seconds")


def build(persona: Persona, traces: list[Trace], items: list[FinalItem]) -> CloneMemFile:
    context = [ContextEntry(id=t.id, medium=t.medium, event_date=_time(t.time), content=t.content)
               for t in sorted(traces, key=lambda t: (t.time, t.id))]
    questions = [
        ExportQuestion(
            id=i.id, question=i.question, question_type=i.question_type, question_time=_time(i.question_time),
            answer=i.answer, dimension=i.dimension, digital_trace_ids=list(i.digital_trace_ids),
            evidence=[ExportEvidence(statement=e.statement, digital_trace_ids=list(e.digital_trace_ids))
                      for e in i.evidence],
            # an item whose multiple choice failed its filters is released as an open question only
            choices=[ExportChoice(id=c.id, text=c.text) for c in i.choices] if "mcq" in i.formats else [],
            correct_choice_id=i.correct_choice_id if "mcq" in i.formats else None,
        )
        for i in items
    ]
    return CloneMemFile(person_name=persona.name, person_id=persona.id, context=context, questions=questions)


def export_path(out: Path, persona: Persona, tokens: int, language: str | None = None) -> Path:
    return (out / "export" / "clonemem" / size_bucket(tokens)
            / f"{persona.id}_benchmark_{language or persona.language}.json")


def translated(traces: list[Trace], items: list[FinalItem], translations: list[Translation],
               language: str) -> tuple[list[Trace], list[FinalItem]] | None:
    """The persona's traces and items in `language`, same ids, from translations.jsonl; None when any trace or
    item lacks its translation (an unfinished translate stage exports nothing rather than a mixed file)."""
    by_source = {t.source_id: t for t in translations if t.language == language}
    if any(t.id not in by_source for t in traces) or any(i.id not in by_source for i in items):
        return None
    out_traces = [t.model_copy(update={"content": by_source[t.id].content}) for t in traces]
    out_items = []
    for item in items:
        tr = by_source[item.id]
        statements = {e.evidence_id: e.statement for e in tr.evidence}
        evidence = [EvidenceRef(**{**e.model_dump(), "statement": statements.get(e.evidence_id, e.statement)})
                    for e in item.evidence]
        out_items.append(item.model_copy(update={"question": tr.question, "answer": tr.answer,
                                                 "choices": tr.choices, "evidence": evidence}))
    return out_traces, out_items


def export_dataset(out: Path, seeds: Iterable | None = None) -> list[Path]:
    """Write one file per persona that has final.jsonl (restricted to `seeds` when given); returns the paths."""
    only = {s.id for s in seeds} if seeds is not None else None
    paths = []
    for directory in persona_dirs(out):
        if (only is not None and directory.name not in only) or not (directory / "final.jsonl").is_file():
            continue
        persona = read_records(directory / "persona.jsonl", Persona)[0]
        traces = read_records(directory / "traces.jsonl", Trace) if (directory / "traces.jsonl").is_file() else []
        items = read_records(directory / "final.jsonl", FinalItem)
        tokens = trace_tokens(traces)
        versions = {persona.language: (traces, items)}
        if (directory / "translations.jsonl").is_file():
            translations = read_records(directory / "translations.jsonl", Translation)
            for language in sorted({t.language for t in translations} - {persona.language}):
                found = translated(traces, items, translations, language)
                if found is not None:
                    versions[language] = found
        for language, (lang_traces, lang_items) in versions.items():
            # the size bucket is the source's: the two languages of one persona sit side by side
            path = export_path(out, persona, tokens, language)
            # A persona that changed size bucket must not leave its old file behind.
            for stale in (out / "export" / "clonemem").glob(f"*/{path.name}"):
                if stale != path:
                    stale.unlink()
            write_json_atomic(path, build(persona, lang_traces, lang_items).model_dump(mode="json"))
            paths.append(path)
        # the registry beside them: the people and places the traces name, in the source language
        export_people(directory, path, persona)
    return paths


def export_people(directory: Path, benchmark: Path, persona: Persona) -> list[Path]:
    """The registry of people and places beside the benchmark file (`<persona>_people.jsonl`): the release format
    has no field for it, and the traces name the people it lists."""
    source = directory / "people.jsonl"
    target = benchmark.with_name(f"{persona.id}_people.jsonl")
    for stale in benchmark.parent.parent.glob(f"*/{target.name}"):
        if stale != target:
            stale.unlink()
    if not source.is_file():
        return []
    write_atomic(target, read_records(source, Person))
    return [target]


def load_clonemem(path: Path) -> CloneMemFile:
    """Read an exported (or released) file back, rejecting any field name the release format does not have."""
    return CloneMemFile.model_validate(json.loads(Path(path).read_text(encoding="utf-8")))
