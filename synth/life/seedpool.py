"""The predefined event-seed pool (synth/config/event_seeds.toml): life-event concepts the arcs stage filters."""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from synth.config import conf
from synth.core.errors import InputError

SEED_FILE = "event_seeds.toml"


class SeedConcept(BaseModel):
    """One curated life-event concept; the age bounds say for whom it is plausible."""

    model_config = ConfigDict(extra="forbid")

    name: str
    title: str
    title_zh: str
    category: str
    description: str
    description_zh: str
    age_min: int | None = None
    age_max: int | None = None

    def fits_age(self, age: int) -> bool:
        return (self.age_min is None or age >= self.age_min) and (self.age_max is None or age <= self.age_max)

    def title_in(self, language: str) -> str:
        return self.title_zh if language == "zh" else self.title

    def description_in(self, language: str) -> str:
        return self.description_zh if language == "zh" else self.description


def seed_path() -> Path:
    return conf.CONFIG_DIR / SEED_FILE


def load_seed_pool(path: Path | None = None) -> list[SeedConcept]:
    """Every [[seed]] of the pool file, in file order; a broken entry or a duplicate name is one InputError."""
    path = path or seed_path()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"{path}: cannot read the event-seed pool ({exc})") from None
    seeds: list[SeedConcept] = []
    seen: set[str] = set()
    for number, entry in enumerate(data.get("seed", []), 1):
        try:
            seed = SeedConcept.model_validate(entry)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise InputError(f"{path}: seed {number}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
        if seed.name in seen:
            raise InputError(f"{path}: seed {number}: duplicate name {seed.name!r}")
        seen.add(seed.name)
        seeds.append(seed)
    if not seeds:
        raise InputError(f"{path}: the event-seed pool is empty")
    return seeds


def seeds_for_age(seeds: list[SeedConcept], age: int) -> list[SeedConcept]:
    """The concepts plausible at `age`; the whole pool when none is (a guard against odd ages)."""
    return [s for s in seeds if s.fits_age(age)] or list(seeds)
