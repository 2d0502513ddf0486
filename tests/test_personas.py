"""Persona seed files: the shipped personas/ load, and every kind of bad file fails with one clear line."""

from __future__ import annotations

import datetime as dt
import re
import tomllib
from pathlib import Path

import pydantic
import pytest
from handmade import GOOD

from synth.config.personas import PersonaSeed, end_from_years, load_personas, seed_hash
from synth.core.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
PERSONAS = ROOT / "personas"
EVENT_SEEDS = ROOT / "synth" / "config" / "event_seeds.toml"

def write(tmp_path: Path, text: str, name: str = "bad.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def load_error(path: Path, *more: Path) -> str:
    with pytest.raises(InputError) as info:
        load_personas([path, *more])
    message = str(info.value)
    assert "\n" not in message and message.strip() == message, repr(message)
    return message


# ------------------------------------------------------------------------------------------ shipped personas


def test_shipped_personas_load():
    seeds = load_personas([PERSONAS])
    assert len(seeds) == 10
    ids = [s.id for s in seeds]
    assert len(set(ids)) == len(ids)
    languages = [s.language for s in seeds]
    assert languages.count("en") == 6 and languages.count("zh") == 4
    scales = [s.scale for s in seeds]
    assert scales.count("100k") == 3 and scales.count("500k") == 7
    for seed in seeds:
        assert Path(seed.source).name == f"{seed.id}.toml"
        years = (seed.end - seed.start).days / 365.25
        assert (years < 1.5) if seed.scale == "100k" else (years >= 1.9)
    # the Big Five profiles are spread out: each trait has a low and a high somewhere
    for trait in ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism"):
        values = [getattr(s.big_five, trait) for s in seeds]
        assert min(values) <= 0.3 and max(values) >= 0.7, trait


def test_shipped_personas_hashes_are_distinct_and_stable():
    seeds = load_personas([PERSONAS])
    hashes = {seed_hash(s) for s in seeds}
    assert len(hashes) == 10
    assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in hashes)
    again = load_personas([PERSONAS])
    assert [seed_hash(s) for s in seeds] == [seed_hash(s) for s in again]


def test_single_file_path(tmp_path):
    path = write(tmp_path, GOOD.format(id="solo"), "solo.toml")
    (seed,) = load_personas([path])
    assert seed.id == "solo" and seed.source == str(path)
    assert seed.language == "en" and seed.scale == "100k" and seed.note == "a test persona"
    assert seed.big_five.openness == 0.5


def test_file_and_its_directory_load_once(tmp_path):
    path = write(tmp_path, GOOD.format(id="solo"), "solo.toml")
    (tmp_path / "readme.md").write_text("not a persona")
    assert [s.id for s in load_personas([tmp_path, path])] == ["solo"]


def test_years_become_end():
    seeds = {s.id: s for s in load_personas([PERSONAS])}
    # years = 1 from 2022-01-01: the last day is 2022-12-31 (same month/day one year on, minus one day)
    assert seeds["p01_maya"].start == dt.date(2022, 1, 1)
    assert seeds["p01_maya"].end == dt.date(2022, 12, 31)
    assert seeds["p01_maya"].days == 365
    assert seeds["p05_priya"].end == dt.date(2024, 2, 29)  # 2022-03-01 + 2 years - 1 day (leap year)
    assert end_from_years(dt.date(2022, 3, 15), 2) == dt.date(2024, 3, 14)
    assert end_from_years(dt.date(2024, 2, 29), 1) == dt.date(2025, 2, 28)


def test_explicit_end(tmp_path):
    text = GOOD.format(id="x").replace("years = 1", "end = 2023-06-30")
    (seed,) = load_personas([write(tmp_path, text, "x.toml")])
    assert seed.end == dt.date(2023, 6, 30)


def test_seed_hash_ignores_source(tmp_path):
    a = write(tmp_path, GOOD.format(id="same"), "a.toml")
    (tmp_path / "other").mkdir()
    b = write(tmp_path / "other", GOOD.format(id="same"), "b.toml")
    (sa,), (sb,) = load_personas([a]), load_personas([b])
    assert sa.source != sb.source and seed_hash(sa) == seed_hash(sb)
    changed = sa.model_copy(update={"note": "different"})
    assert seed_hash(changed) != seed_hash(sa)


# ------------------------------------------------------------------------------------------ bad files


def _good(old: str = "", new: str = "", id: str = "x") -> str:
    return GOOD.format(id=id).replace(old, new) if old else GOOD.format(id=id)


# (case, file text, exact message after "<path>: " — or a prefix when it ends with "…")
BAD_FILES = [
    ("not TOML", 'id = "x"\nlanguage = en\n', "not valid TOML (line 2…"),
    ("empty", "  \n", "empty file"),
    ("comments only", "# nothing here\n", "empty file"),
    ("missing trait", _good("openness = 0.5\n", ""), "big_five.openness: missing"),
    ("trait out of range", _good("neuroticism = 0.5", "neuroticism = 1.4"),
     "big_five.neuroticism: must be between 0 and 1 (got 1.4)"),
    ("trait not a number", _good("openness = 0.5", 'openness = "high"'), "big_five.openness: must be a number (got 'high')"),
    ("unknown trait", _good() + "honesty = 0.4\n", "big_five.honesty: unknown key"),
    ("unknown language", _good('language = "en"', 'language = "fr"'), "language: must be one of en, zh (got 'fr')"),
    ("unknown scale", _good('scale = "100k"', 'scale = "1m"'), "scale: must be one of 100k, 500k (got '1m')"),
    ("end before start", _good("years = 1", "end = 2021-06-30"), "timeline.end: must be after timeline.start…"),
    ("end too far", _good("years = 1", "end = 2026-01-01"), "timeline.end: the timeline may span at most 3 years…"),
    ("years and end", _good("years = 1", "years = 1\nend = 2022-12-31"), "timeline: give either years or end, not both"),
    ("neither years nor end", _good("years = 1\n", ""), "timeline.end: missing…"),
    ("four years", _good("years = 1", "years = 4"), "timeline.years: must be a whole number from 1 to 3 (got 4)"),
    ("missing start", _good("start = 2022-01-01\n", ""), "timeline.start: missing"),
    ("bad start", _good("start = 2022-01-01", 'start = "January"'),
     "timeline.start: must be a date like 2022-01-01 (got 'January')…"),
    ("unsafe id", _good(id="../x"), "id: '../x' is not a safe file name…"),
    ("missing id", _good('id = "x"\n', ""), "id: missing"),
    ("unknown key", 'nickname = "Mo"\n' + _good(), "nickname: unknown key…"),
    ("unknown timeline key", _good("years = 1", "years = 1\nmonths = 3"), "timeline.months: unknown key…"),
]


@pytest.mark.parametrize(("case", "text", "expected"), BAD_FILES, ids=[c[0] for c in BAD_FILES])
def test_a_bad_persona_file_is_one_line_naming_file_and_field(tmp_path, case, text, expected):
    path = write(tmp_path, text)
    message = load_error(path)
    if expected.endswith("…"):
        assert message.startswith(f"{path}: {expected[:-1]}"), message
    else:
        assert message == f"{path}: {expected}"


def test_duplicate_ids_across_files(tmp_path):
    a = write(tmp_path, GOOD.format(id="twin"), "a.toml")
    b = write(tmp_path, GOOD.format(id="twin"), "b.toml")
    message = load_error(tmp_path)
    assert message.startswith(f"{b}: id: duplicate id 'twin'") and str(a) in message


def test_empty_directory(tmp_path):
    message = load_error(tmp_path)
    assert message == f"no persona files in {tmp_path}"


def test_missing_path(tmp_path):
    path = tmp_path / "nope.toml"
    assert load_error(path) == f"{path}: no such file or directory"


def test_model_rejects_extra_fields():
    with pytest.raises(pydantic.ValidationError, match="years"):
        PersonaSeed(
            id="x", language="en", start=dt.date(2022, 1, 1), end=dt.date(2022, 12, 31),
            big_five=dict(openness=0.1, conscientiousness=0.1, extraversion=0.1, agreeableness=0.1, neuroticism=0.1),
            years=1,
        )


# ------------------------------------------------------------------------------------------ event-seed pool

CATEGORIES = {
    "career", "education", "family", "relationship", "health", "home", "finance", "social", "personal_growth",
    "loss", "leisure",
}


def test_event_seed_pool_is_well_formed():
    seeds = tomllib.loads(EVENT_SEEDS.read_text(encoding="utf-8"))["seed"]
    assert len(seeds) >= 45
    names = [s["name"] for s in seeds]
    assert len(set(names)) == len(names)
    for seed in seeds:
        assert set(seed) <= {"name", "title", "title_zh", "category", "description", "description_zh",
                             "age_min", "age_max"}, seed
        assert re.fullmatch(r"[a-z][a-z0-9_]*", seed["name"]), seed["name"]
        assert seed["title"] and seed["title_zh"] and seed["description"], seed["name"]
        assert re.search(r"[\u4e00-\u9fff]", seed["title_zh"]), seed["name"]
        assert isinstance(seed.get("description_zh"), str) and seed["description_zh"].strip(), seed["name"]
        assert re.search(r"[\u4e00-\u9fff]", seed["description_zh"]), seed["name"]
        assert "\n" not in seed["description_zh"], seed["name"]
        assert seed["category"] in CATEGORIES, seed["name"]
        assert "\n" not in seed["description"], seed["name"]
        lo, hi = seed.get("age_min", 0), seed.get("age_max", 120)
        assert isinstance(lo, int) and isinstance(hi, int) and 0 <= lo < hi, seed["name"]
    for concept in ("graduation", "career_change", "marriage", "breakup", "layoff", "retirement", "relocation"):
        assert concept in names
