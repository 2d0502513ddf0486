"""The reading half of a persona check: its files, parsed leniently, indexed by id, and how a problem is flagged."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from synth.core.fields import dict_list, id_list
from synth.quality import rules
from synth.records import FILES

# Question items flow qa → mcq → final | rejected and may keep their id along the way.
QUESTION_FILES = ("qa.jsonl", "mcq.jsonl", "final.jsonl", "rejected.jsonl")
# The files whose items are asked: causality, references and (for the MCQ-shaped ones) the choice layout.
ASKED_FILES = ("qa.jsonl", "mcq.jsonl", "final.jsonl")
MCQ_FILES = ("mcq.jsonl", "final.jsonl")
# The registry as the phases left it, and as the events completed it: the second repeats the first's entries.
REGISTRY_FILES = ("phase_people.jsonl", "people.jsonl")




class Checker:
    """The reading half of a persona check: its files, parsed leniently, indexed by id, and how a problem is flagged."""

    def __init__(self, directory: Path, partial: bool = False) -> None:
        self.dir = directory
        self.partial = partial  # only some files loaded: references into the others are not checked
        self.name = directory.name
        self.problems: list[str] = []
        self.kinds: list[str] = []  # the invariant each problem breaks (parallel to `problems`)
        self.warnings: list[str] = []  # heuristic findings that do not fail validation (privacy_warnings)
        self.kind = "parse"
        self.records: dict[str, list[dict]] = {}  # file -> records (objects with a string id)
        self.by_id: dict[str, dict[str, dict]] = {}  # file -> id -> first record with that id
        self.persona: dict = {}
        self.missing_targets: set[tuple[str, str]] = set()

    def flag(self, file: str, record: dict | str | None, what: str) -> None:
        if isinstance(record, dict):
            label = record.get("id") if isinstance(record.get("id"), str) else "(no id)"
        else:
            label = record or "-"
        self.problems.append(f"{self.name}/{file}: {label}: {what}")
        self.kinds.append(self.kind)

    def run(self) -> list[str]:
        for name in FILES:
            if (self.dir / name).is_file():
                self.load(name)
        for check in (self.check_persona, self.check_duplicates, self.check_references, self.check_containment,
                      self.check_major_event_order, self.check_arc_alignment, self.check_snapshot_chain,
                      self.check_arc_phases, self.check_evidence_carried, self.check_privacy, self.check_trace_gaps,
                      self.check_causality, self.check_mcq_shape, self.check_question_types, self.check_lifelog_plan,
                      self.check_variants, self.check_translations):
            self.kind = check.__name__.removeprefix("check_")
            check()
        return self.problems

    # ---- reading

    def load(self, name: str) -> None:
        model = FILES[name]
        records: list[dict] = []
        for number, data in self._lines(name):
            if not isinstance(data, dict):
                self.flag(name, f"line {number}", "not a JSON object")
                continue
            if not isinstance(data.get("id"), str):
                self.flag(name, f"line {number}", "record without a string `id`")
                continue
            try:
                model.model_validate(data)
            except ValidationError as exc:
                err = exc.errors()[0]
                loc = ".".join(str(p) for p in err["loc"]) or "record"
                self.flag(name, data, f"line {number}: {loc}: {err['msg']}")
            records.append(data)
        self.records[name] = records
        index: dict[str, dict] = {}
        for record in records:
            index.setdefault(record["id"], record)
        self.by_id[name] = index

    def _lines(self, name: str) -> Iterator[tuple[int, Any]]:
        try:
            text = (self.dir / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.flag(name, None, f"cannot read ({exc})")
            return
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                self.flag(name, f"line {number}", f"not valid JSON ({exc.msg} at column {exc.colno})")

    def has(self, name: str) -> bool:
        return name in self.records

    def each(self, *names: str) -> Iterator[tuple[str, dict]]:
        for name in names:
            for record in self.records.get(name, []):
                yield name, record




def _parsed(rows: Iterable[dict], model: Any) -> list:
    """The rows that parse as `model` (the others are reported by the parse check already)."""
    out = []
    for row in rows:
        try:
            out.append(model.model_validate(row))
        except ValidationError:
            continue
    return out


def recorded_config(out: Path) -> dict:
    """The resolved configuration a dataset recorded (dataset.json's `config`), {} when there is none."""
    path = Path(out) / "dataset.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        return {}
    config = data.get("config", data) if isinstance(data, dict) else {}
    return config if isinstance(config, dict) else {}


def _needed_traces(record: dict) -> list[str]:
    return rules.needed_traces(id_list(record.get("digital_trace_ids")),
                               (id_list(ref.get("digital_trace_ids")) for ref in dict_list(record.get("evidence"))))

