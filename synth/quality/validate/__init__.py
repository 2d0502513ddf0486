"""`synth validate`: check a dataset directory against DESIGN.md's invariants (principle 8 and the linkage fields).

Files are read line by line with plain `json`, never the strict pydantic readers, so a hand-corrupted file is still
checked as far as it can be and every problem becomes one line naming the persona, the file, the record and what is
wrong — nothing here raises on bad data."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from synth.quality import type_checks  # noqa: F401  (attaches the extra question types' checks)
from synth.quality.validate.checker import (  # noqa: F401  (re-exported: the readers of validate use them)
    ASKED_FILES,
    MCQ_FILES,
    QUESTION_FILES,
    REGISTRY_FILES,
    Checker,
    recorded_config,
)
from synth.quality.validate.checks_items import ItemChecks
from synth.quality.validate.checks_life import LifeChecks
from synth.quality.validate.checks_refs import ReferenceChecks
from synth.quality.validate.checks_sources import SourceChecks
from synth.records import FILES


def validate_dataset(out: Path) -> list[str]:
    """Every violation under `out`, one human-readable line each; an empty list means every invariant holds."""
    return [line for _, line in violations(out)]


def violations(out: Path) -> list[tuple[str, str]]:
    """Every violation as (kind, line); the kind names the invariant: parse, persona, duplicates, references,
    containment, major_event_order, arc_alignment, snapshot_chain, arc_phases, evidence_carried, privacy,
    trace_gaps, causality, mcq_shape, medium_span, lifelog_plan, variants, translations."""
    out = Path(out)
    if not out.is_dir():
        return [("dataset", f"{out}: no such dataset directory")]
    directories = sorted(p.parent for p in out.glob("*/persona.jsonl") if p.is_file())
    if not directories:
        return [("dataset", f"{out}: no persona directory (a folder holding persona.jsonl)")]
    found: list[tuple[str, str]] = []
    for directory in directories:
        check = PersonaCheck(directory)
        check.run()
        found.extend(zip(check.kinds, check.problems, strict=True))
    return found


def privacy_warnings(out: Path) -> list[str]:
    """The public traces that repeat a private statement's distinctive words (synth.quality.privacy's word check): a
    lexical heuristic, so a warning beside the violations (as the label check's), counted by `synth stats`."""
    found: list[str] = []
    for directory in sorted(p.parent for p in Path(out).glob("*/persona.jsonl") if p.is_file()):
        check = PersonaCheck(directory)
        for name in ("events.jsonl", "evidence.jsonl", "traces.jsonl"):
            if (directory / name).is_file():
                check.load(name)
        check.check_privacy()
        found += check.warnings
    return found


def reference_problems(directory: Path, names: Iterable[str]) -> list[str]:
    """Duplicate and dangling ids among the named files of one persona directory (the inputs a stage is about to
    read), so a hand-edited input is refused before any model call; ids into files not named are not checked."""
    check = PersonaCheck(Path(directory), partial=True)
    for name in names:
        if name in FILES and (check.dir / name).is_file():
            check.load(name)
    people = check.records.get("persona.jsonl", [])
    check.persona = people[0] if people else {}
    check.check_duplicates()
    check.check_references()
    return check.problems




class PersonaCheck(Checker, ReferenceChecks, LifeChecks, ItemChecks, SourceChecks):
    """The checks of one persona directory over whatever files it holds (each group of checks in its own module)."""
