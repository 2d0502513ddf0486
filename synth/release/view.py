"""A lenient, read-only view of a dataset directory for the exports, the browser and the charts: records as plain
dicts, so fields other stages add later (a people registry, everyday events, traces in a second language) pass
through untouched and a field that is not there yet reads as empty instead of failing."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synth.core.errors import InputError
from synth.core.fields import dict_list, id_list  # noqa: F401  (re-exported: the readers of a view use them)
from synth.core.jsonl import read_dicts

# persona directory file → attribute of PersonaView
FILES = {
    "persona.jsonl": "persona", "arcs.jsonl": "arcs", "major_events.jsonl": "majors", "phases.jsonl": "phases",
    "events.jsonl": "events", "evidence.jsonl": "evidence", "traces.jsonl": "traces", "final.jsonl": "final",
    "rejected.jsonl": "rejected", "qa.jsonl": "qa", "people.jsonl": "people",
}





def persona_dirs(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if p.is_dir() and (p / "persona.jsonl").is_file()) if out.is_dir() else []


def read_json(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc.msg})") from None
    return data if isinstance(data, dict) else {}


@dataclass
class PersonaView:
    directory: Path
    persona: dict
    arcs: list[dict] = field(default_factory=list)
    majors: list[dict] = field(default_factory=list)
    phases: list[dict] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    evidence: list[dict] = field(default_factory=list)
    traces: list[dict] = field(default_factory=list)
    final: list[dict] = field(default_factory=list)
    rejected: list[dict] = field(default_factory=list)
    qa: list[dict] = field(default_factory=list)
    people: list[dict] = field(default_factory=list)
    manifests: dict[str, dict] = field(default_factory=dict)
    filter_report: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return str(self.persona.get("id") or self.directory.name)

    @property
    def language(self) -> str:
        return str(self.persona.get("language") or "en")


def load_persona(directory: Path) -> PersonaView:
    records = {attr: read_dicts(directory / name) for name, attr in FILES.items()}
    persona = records.pop("persona")
    manifests = {p.stem: read_json(p) for p in sorted((directory / "manifests").glob("*.json"))}
    return PersonaView(directory=directory, persona=persona[0] if persona else {"id": directory.name}, **records,
                       manifests=manifests, filter_report=read_json(directory / "filter_report.json"))


def load_dataset(out: Path, only: set[str] | None = None) -> list[PersonaView]:
    """Every persona directory (one holding persona.jsonl) of `out`, in id order."""
    if not out.is_dir():
        raise InputError(f"{out}: no such dataset directory")
    return [load_persona(d) for d in persona_dirs(out) if only is None or d.name in only]


def text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def trace_tokens(traces: list[dict]) -> int:
    from synth.core.tokens import estimate_tokens

    return sum(t.get("tokens") or estimate_tokens(text(t.get("content"))) for t in traces)


def record_language(record: dict, default: str) -> str:
    """A record's own `language` when it has one (a trace or item written in a second language), else its persona's."""
    value = record.get("language")
    return value if isinstance(value, str) and value else default
