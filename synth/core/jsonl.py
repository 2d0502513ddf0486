"""JSONL on disk: validated reads that name the bad line, atomic final writes, and the append-only unit journal."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO, TypeVar

import jsonlines
from pydantic import BaseModel, ValidationError

from synth.core.errors import InputError

M = TypeVar("M", bound=BaseModel)


def json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) of every non-blank line; a broken line is an InputError naming file and line."""
    with path.open("r", encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}: line {number}: not valid JSON ({exc.msg})") from None


_KEEPING: dict[type, type] = {}


def keeping_extras(model: type[M]) -> type[M]:
    """The record model that also holds fields it does not declare (a record written by another synth version),
    so a rewrite keeps them; used only for such records, so every other record keeps its own class."""
    if model not in _KEEPING:
        _KEEPING[model] = type(model.__name__, (model,), {"model_config": {**model.model_config, "extra": "allow"},
                                                         "__module__": model.__module__})
    return _KEEPING[model]


def written_by(path: Path) -> str:
    """Which synth wrote a dataset's file, for error lines: the version in the manifest of the stage that wrote it,
    else in dataset.json (the persona folder's parent)."""
    for manifest in sorted((path.parent / "manifests").glob("*.json")):
        try:
            recorded = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(recorded, dict) and path.name in (recorded.get("records") or {}):
            version = recorded.get("synth_version")
            return (f"written by synth {version} (stage {recorded.get('stage')})" if version else
                    f"written by a synth from before versions were recorded (stage {recorded.get('stage')})")
    for folder in (path.parent.parent, path.parent):
        try:
            recorded = json.loads((folder / "dataset.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        version = recorded.get("synth_version") if isinstance(recorded, dict) else None
        return f"written by synth {version}" if version else "written by a synth from before versions were recorded"
    return ""


def iter_records(path: Path, model: type[M]) -> Iterator[M]:
    """Yield validated records; a broken line is an InputError naming the file, the line and the field.

    Records written by earlier versions are read too: a field added since takes its default (the model declares
    one for every field added after the first release), a top-level field this version no longer knows is kept."""
    for number, data in json_lines(path):
        try:
            yield model.model_validate(data)
        except ValidationError as exc:
            errors = exc.errors()
            if all(e["type"] == "extra_forbidden" and len(e["loc"]) == 1 for e in errors):
                yield keeping_extras(model).model_validate(data)
                continue
            err = errors[0]
            loc = ".".join(str(p) for p in err["loc"]) or "record"
            origin = written_by(path)
            hint = (f" ({origin}, in a format this synth cannot read: run the stage that writes it with --force, "
                    "or `synth run --force`)") if origin else ""
            raise InputError(f"{path}: line {number}: {loc}: {err['msg']}{hint}") from None


def read_dicts(path: Path) -> list[dict]:
    """Every record of a JSONL file as a dict ([] when the file is absent); a line that is not an object is an error."""
    if not path.is_file():
        return []
    rows = []
    for number, row in json_lines(path):
        if not isinstance(row, dict):
            raise InputError(f"{path}: line {number}: record: not a JSON object")
        rows.append(row)
    return rows


def read_records(path: Path, model: type[M]) -> list[M]:
    return list(iter_records(path, model))


def dump(record: BaseModel | dict) -> dict:
    return record.model_dump(mode="json") if isinstance(record, BaseModel) else record


@contextmanager
def atomic_file(path: Path) -> Iterator[TextIO]:
    """A text file written beside `path`, fsynced, then renamed over it: readers never see half of it, and an
    error leaves the old file as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: Path, records: Iterable[BaseModel | dict]) -> int:
    """Write all records to a temporary file beside `path`, fsync, then rename over it: readers never see half."""
    count = 0
    with atomic_file(path) as handle:
        writer = jsonlines.Writer(handle, compact=True, dumps=lambda o: json.dumps(o, ensure_ascii=False))
        for record in records:
            writer.write(dump(record))
            count += 1
    return count


def write_json_atomic(path: Path, data: Any) -> None:
    with atomic_file(path) as handle:
        json.dump(data, handle, ensure_ascii=False, indent=2, default=str)
        handle.write("\n")


class Journal:
    """A stage's working file: one line per finished (or failed) unit, appended and flushed as it completes.

    The first line holds the stage signature; a journal written under another signature is discarded.
    A half-written last line (a killed process) is dropped with a warning, never a crash."""

    def __init__(self, path: Path, signature: str, warn=print) -> None:
        self.path = path
        self.signature = signature
        self.done: dict[str, dict[str, list[dict]]] = {}
        self.failed: dict[str, str] = {}
        self.dropped_lines = 0
        self._load(warn)
        self._handle = self.path.open("a", encoding="utf-8")
        if self.path.stat().st_size == 0:
            self._append({"signature": signature})

    def _load(self, warn) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():
            return
        raw = self.path.read_bytes()
        lines = raw.split(b"\n")
        good: list[bytes] = []
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                self.dropped_lines += 1
                warn(f"warning: {self.path}: dropped a half-written line {i + 1} (an interrupted run)")
                continue
            if not good:
                if entry.get("signature") != self.signature:
                    self.path.unlink()
                    return
            elif "failed" in entry:
                self.failed[entry["unit"]] = entry["failed"]
            else:
                self.done[entry["unit"]] = entry["records"]
                self.failed.pop(entry["unit"], None)
            good.append(line)
        if self.dropped_lines or (raw and not raw.endswith(b"\n")):
            # rewrite without the broken tail so later appends start on a clean line
            tmp = self.path.with_suffix(".tmp")
            tmp.write_bytes(b"".join(line + b"\n" for line in good))
            os.replace(tmp, self.path)

    def _append(self, entry: dict) -> None:
        self._handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
        self._handle.flush()

    def record(self, unit: str, records: dict[str, list[BaseModel]]) -> dict[str, list[dict]]:
        dumped = {name: [dump(r) for r in recs] for name, recs in records.items()}
        self._append({"unit": unit, "records": dumped})
        self.done[unit] = dumped
        self.failed.pop(unit, None)
        return dumped

    def fail(self, unit: str, reason: str) -> None:
        self._append({"unit": unit, "failed": reason})
        self.failed[unit] = reason

    def close(self) -> None:
        self._handle.close()


@contextmanager
def staged_dir(target: Path, prefix: str) -> Iterator[Path]:
    """Build a folder beside `target`, then swap it in whole: a failure leaves the old folder (or none), never half
    a folder. The staging folder is made private by mkdtemp; the published one is meant to be shared (0755)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=prefix))
    try:
        yield staging
        staging.chmod(0o755)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
