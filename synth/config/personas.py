"""Load and validate persona seed files (personas/*.toml: Big Five, language, timeline, scale) into `PersonaSeed`s."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from synth.core.calendar import known_country
from synth.core.errors import InputError

LANGUAGES = ("en", "zh")
SCALES = ("100k", "500k")
MAX_YEARS = 3
SAFE_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")

TOP_LEVEL_KEYS = ("id", "language", "scale", "note", "country", "timeline", "big_five")
TIMELINE_KEYS = ("start", "years", "end")
BIG_FIVE_TRAITS = ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism")

_Fail = Callable[[str, str], InputError]  # (field, what is wrong) -> the error to raise


def end_from_years(start: dt.date, years: int) -> dt.date:
    """The last day of a timeline of `years` whole years from `start`: the same month/day `years` later, minus one
    day (2022-01-01 + 1 year -> 2022-12-31; 2022-03-15 + 2 -> 2024-03-14). A 29 February start whose anniversary
    does not exist uses 1 March as the anniversary, so it ends on 28 February."""
    try:
        anniversary = start.replace(year=start.year + years)
    except ValueError:  # 29 February in a non-leap target year
        anniversary = dt.date(start.year + years, 3, 1)
    return anniversary - dt.timedelta(days=1)


class BigFive(BaseModel):
    """A Big Five configuration; every trait in [0, 1]."""

    model_config = ConfigDict(extra="forbid")

    openness: float = Field(strict=True)
    conscientiousness: float = Field(strict=True)
    extraversion: float = Field(strict=True)
    agreeableness: float = Field(strict=True)
    neuroticism: float = Field(strict=True)

    @field_validator(*BIG_FIVE_TRAITS)
    @classmethod
    def _unit_interval(cls, value: float) -> float:
        if not 0.0 <= value <= 1.0:  # also rejects nan
            raise ValueError(f"must be between 0 and 1 (got {value!r})")
        return float(value)


class PersonaSeed(BaseModel):
    """One persona seed. `start` and `end` are both inclusive days of the timeline; a file's `years = N` becomes
    `end = end_from_years(start, N)`. `source` is the file the seed came from (not part of `seed_hash`)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(strict=True)
    language: Literal["en", "zh"]
    scale: Literal["100k", "500k"] = "100k"
    note: str = Field(default="", strict=True)
    # whose public holidays its dated prompts show (a `holidays` package code: "US", or with its region: "CA-ON");
    # empty: the language's default
    country: str = Field(default="", strict=True, pattern=r"^([A-Z]{2}(-[A-Z0-9]{1,3})?)?$")
    start: dt.date
    end: dt.date
    big_five: BigFive
    languages: list[Literal["en", "zh"]] = []  # the languages it is released in (see [translate] languages)
    source: str = ""

    @field_validator("id")
    @classmethod
    def _safe_id(cls, value: str) -> str:
        if not SAFE_ID.fullmatch(value):
            raise ValueError(f"{value!r} is not a safe file name (lowercase letters, digits, '_' and '-', at most 64)")
        return value

    @field_validator("country")
    @classmethod
    def _known_country(cls, value: str) -> str:
        """A code the `holidays` package does not know would silently show no holiday at all."""
        if value and not known_country(value):
            raise ValueError(f"{value!r} is not a country (or country-region) the holidays package knows, "
                             "e.g. \"US\" or \"CA-ON\"")
        return value

    @field_validator("end")
    @classmethod
    def _end_after_start(cls, value: dt.date, info: ValidationInfo) -> dt.date:
        start = info.data.get("start")
        if start is None:
            return value  # start itself failed; that error is reported first
        if value <= start:
            raise ValueError(f"must be after timeline.start (got {value.isoformat()} <= {start.isoformat()})")
        if value > end_from_years(start, MAX_YEARS):
            span = f"{start.isoformat()} to {value.isoformat()}"
            raise ValueError(f"the timeline may span at most {MAX_YEARS} years (got {span})")
        return value

    @property
    def days(self) -> int:
        """Length of the timeline in days, both ends included."""
        return (self.end - self.start).days + 1


def seed_hash(seed: PersonaSeed) -> str:
    """`sha256:<hex>` of the canonical JSON (sorted keys, compact, UTF-8) of the seed without `source`."""
    # the release languages shape no record of the structure: the translate stage reads them from its config
    data = seed.model_dump(mode="json", exclude={"source", "languages", *(() if seed.country else ("country",))})
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------------------------------- loading


def load_personas(paths: list[Path]) -> list[PersonaSeed]:
    """Load seeds from .toml files and/or directories (every *.toml directly inside, sorted by name), in the order
    given. The same file named twice is loaded once. Raises `InputError` (one line) on any problem, on duplicate ids
    across files, and when nothing was found."""
    files: list[Path] = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted((p for p in path.glob("*.toml") if p.is_file()), key=lambda p: p.name)
        elif path.is_file():
            found = [path]
        elif path.exists():
            raise InputError(f"{path}: not a file or directory")
        else:
            raise InputError(f"{path}: no such file or directory")
        for file in found:
            key = file.resolve()
            if key not in seen:
                seen.add(key)
                files.append(file)
    if not files:
        where = ", ".join(str(Path(p)) for p in paths) if paths else "(no paths given)"
        raise InputError(f"no persona files in {where}")

    seeds: list[PersonaSeed] = []
    by_id: dict[str, PersonaSeed] = {}
    for file in files:
        seed = load_persona_file(file)
        if seed.id in by_id:
            raise InputError(f"{file}: id: duplicate id {seed.id!r} (also in {by_id[seed.id].source})")
        by_id[seed.id] = seed
        seeds.append(seed)
    return seeds


def load_persona_file(path: Path) -> PersonaSeed:
    """Parse and validate one seed file; any problem is an `InputError` `<path>: <field>: <what is wrong>`."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not valid UTF-8 (byte {exc.start})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc.__class__.__name__})") from None
    if not text.strip():
        raise InputError(f"{path}: empty file")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML ({_toml_reason(str(exc))})") from None
    if not data:
        raise InputError(f"{path}: empty file")
    return persona_from_dict(data, source=str(path))


def persona_from_dict(data: dict[str, Any], source: str) -> PersonaSeed:
    """Validate the parsed TOML of a seed file (nested `timeline` / `big_five` tables) into a `PersonaSeed`."""

    def fail(field: str, what: str) -> InputError:
        return InputError(_one_line(f"{source}: {field}: {what}"))

    for key in data:
        if key not in TOP_LEVEL_KEYS:
            raise fail(key, f"unknown key (expected one of {', '.join(TOP_LEVEL_KEYS)})")

    flat: dict[str, Any] = {k: v for k, v in data.items() if k != "timeline"}
    flat.update(_timeline_fields(data.get("timeline"), fail))
    flat["source"] = source
    try:
        return PersonaSeed.model_validate(flat)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        raise fail(_field_name(error["loc"]), _describe(error)) from None


def _timeline_fields(timeline: Any, fail: _Fail) -> dict[str, Any]:
    """`start` and `end` of the [timeline] table (`years` becomes the end it implies); a problem is raised."""
    if timeline is None:
        raise fail("timeline", "missing (a [timeline] table with start and years or end)")
    if not isinstance(timeline, dict):
        raise fail("timeline", f"must be a table (got {_show(timeline)})")
    for key in timeline:
        if key not in TIMELINE_KEYS:
            raise fail(f"timeline.{key}", f"unknown key (expected one of {', '.join(TIMELINE_KEYS)})")
    if "start" not in timeline:
        raise fail("timeline.start", "missing")
    has_years, has_end = "years" in timeline, "end" in timeline
    if has_years and has_end:
        raise fail("timeline", "give either years or end, not both")
    if not has_years and not has_end:
        raise fail("timeline.end", "missing (give timeline.years or timeline.end)")
    if has_end:
        return {"start": timeline["start"], "end": timeline["end"]}
    return {"start": timeline["start"], **_end_of_years(timeline, fail)}


def _end_of_years(timeline: dict, fail: _Fail) -> dict[str, Any]:
    """The `end` that `years` whole years from `start` imply; none when the start is invalid (reported first)."""
    years = timeline["years"]
    if isinstance(years, bool) or not isinstance(years, int) or not 1 <= years <= MAX_YEARS:
        raise fail("timeline.years", f"must be a whole number from 1 to {MAX_YEARS} (got {_show(years)})")
    start = _as_date(timeline["start"])
    return {} if start is None else {"end": end_from_years(start, years)}


# --------------------------------------------------------------------------------------------------- helpers


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _toml_reason(message: str) -> str:
    """'Invalid value (at line 3, column 9)' -> 'line 3, column 9: Invalid value'."""
    match = re.search(r"\s*\(at line (\d+), column (\d+)\)\s*$", message)
    if match:
        return f"line {match.group(1)}, column {match.group(2)}: {message[: match.start()]}"
    match = re.search(r"\s*\(at end of document\)\s*$", message)
    if match:
        return f"end of document: {message[: match.start()]}"
    return message


def _as_date(value: Any) -> dt.date | None:
    if isinstance(value, dt.datetime):
        return None
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            return None
    return None


def _field_name(loc: tuple[Any, ...]) -> str:
    """The dotted location as the TOML user sees it (start/end live in the [timeline] table)."""
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("start", "end"):
        parts[0] = "timeline." + parts[0]
    return ".".join(parts) or "file"


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_TYPE_WORDS = {
    "string_type": "must be a string",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "date_type": "must be a date like 2022-01-01",
    "date_parsing": "must be a date like 2022-01-01",
    "date_from_datetime_parsing": "must be a date like 2022-01-01",
    "date_from_datetime_inexact": "must be a date like 2022-01-01 (no time of day)",
    "model_type": "must be a table",
    "model_attributes_type": "must be a table",
    "dict_type": "must be a table",
}


def _describe(error: dict[str, Any]) -> str:
    kind, value, loc = error["type"], error.get("input"), error["loc"]
    if kind == "missing":
        return "missing"
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "literal_error":
        allowed = {"language": LANGUAGES, "scale": SCALES}.get(str(loc[0]) if loc else "")
        if allowed:
            return f"must be one of {', '.join(allowed)} (got {_show(value)})"
        return f"must be one of {error.get('ctx', {}).get('expected', '?')} (got {_show(value)})"
    if kind == "value_error":
        return str(error["msg"]).removeprefix("Value error, ")
    if kind in _TYPE_WORDS:
        return f"{_TYPE_WORDS[kind]} (got {_show(value)})"
    msg = str(error["msg"])
    return f"{msg[:1].lower()}{msg[1:]} (got {_show(value)})"
