"""The stage contract: what a stage declares (`Stage`) and what its body sees (`StageContext`).

A stage is data: the files it reads and writes, its templates and model tasks, the config files its output
depends on, and an async body. The body reads typed upstream records, asks the model through `ask`, and runs its
work as journaled `units`; the runner (synth.engine.runner) owns signatures, manifests and files.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from synth.config import settings
from synth.config.conf import Route
from synth.config.personas import PersonaSeed
from synth.config.prompts import render
from synth.core import chain
from synth.core.errors import BudgetExceeded, SynthError
from synth.core.jsonl import Journal, read_records
from synth.llm.base import GenerationFailed, GenerationSettings, LLMRequest
from synth.llm.client import LLM, CallStats
from synth.records import FILES, MCQ, QA, Event, Evidence, LifeArc, MajorEvent, Person, Persona, Phase, Trace

M = TypeVar("M", bound=BaseModel)
Records = dict[str, list[BaseModel]]


@dataclass(frozen=True)
class Stage:
    """One step of the pipeline: which files it reads and writes, which templates and model tasks it uses."""

    name: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    templates: tuple[str, ...]
    tasks: tuple[str, ...]
    body: Callable[["StageContext"], Awaitable[dict[str, list] | None]]
    help: str = ""
    config_files: tuple[str, ...] = ()  # files of synth/config/ its output depends on (hashed into its signature)
    token_file: str | None = None  # an output whose records' `tokens` add up to the manifest's trace_tokens
    judges: tuple[str, ...] = ()  # tasks that judge rather than write: they run at judge_temperature
    config_keys: tuple[str, ...] = ()  # config sections ("prompts") or knobs ("filter.min_span_days") its output depends on
    # files it reads when they exist (hashed into its signature when present; a missing one is not an error)
    optional_reads: tuple[str, ...] = ()



@lru_cache(maxsize=None)
def schema_of(model: type[BaseModel]) -> dict:
    return model.model_json_schema()


class StageContext:
    """What a stage body sees: its persona, settings, upstream records, the model client and the unit journal."""

    def __init__(self, stage: Stage, seed: PersonaSeed, directory: Path, config: dict, llm: LLM,
                 routes: dict[str, Route], stats: CallStats, journal: Journal, on_unit: Callable[[], None],
                 inputs: dict[str, list] | None = None):
        self.stage = stage
        self.seed = seed
        self.dir = directory
        self.config = config
        self.language = seed.language
        self.llm = llm
        self.routes = routes
        self.stats = stats
        self.journal = journal
        self.unit_keys: list[str] = []
        self.failures: list[tuple[str, str]] = []
        self.budget_error: BudgetExceeded | None = None
        self.total_units = 0
        self._on_unit = on_unit
        self._cache: dict[str, list] = dict(inputs or {})  # upstream records, parsed once per stage

    @functools.cached_property
    def settings(self) -> settings.Settings:
        # a stage outside the registry (a plugin, a test) may carry a section of its own: not ours to check
        return settings.parse({k: v for k, v in self.config.items() if k in settings.Settings.model_fields})

    @functools.cached_property
    def section(self) -> Any:
        """The stage's typed settings section (synth.config.settings); a stage outside the registry gets its raw table."""
        if self.stage.name in settings.Settings.model_fields:
            return getattr(self.settings, self.stage.name)
        return self.config.get(self.stage.name, {})

    # ---- reading upstream (typed: each file parses into its record model once per stage)
    def read(self, name: str) -> list:
        if name not in self._cache:
            self._cache[name] = read_records(self.dir / name, FILES[name])
        return self._cache[name]

    @property
    def persona(self) -> Persona:
        return self.read("persona.jsonl")[0]

    @property
    def arcs(self) -> list[LifeArc]:
        return self.read("arcs.jsonl")

    @property
    def major_events(self) -> list[MajorEvent]:
        return self.read("major_events.jsonl")

    @property
    def phases(self) -> list[Phase]:
        return self.read("phases.jsonl")

    @property
    def people(self) -> list[Person]:
        return self.read("people.jsonl")

    @property
    def events(self) -> list[Event]:
        return self.read("events.jsonl")

    @property
    def evidence(self) -> list[Evidence]:
        return self.read("evidence.jsonl")

    @property
    def traces(self) -> list[Trace]:
        return self.read("traces.jsonl")

    @property
    def qa(self) -> list[QA]:
        return self.read("qa.jsonl")

    @property
    def mcq(self) -> list[MCQ]:
        return self.read("mcq.jsonl")

    @functools.cached_property
    def traces_by_id(self) -> dict[str, Trace]:
        return {t.id: t for t in self.traces}

    # ---- asking the model
    async def ask(self, task: str, template: str, variables: dict, model: type[M], *,
                  check: Callable[[M], None] | None = None, sample: int = 0, max_tokens: int | None = None,
                  keep: tuple[str, ...] = ()) -> M:
        messages = render(template, **{"language": self.language, **variables})  # a translation names its own
        settings = GenerationSettings(
            # judges decide, they do not write: they answer at judge_temperature (0 by default)
            temperature=self.settings.judge_temperature if task in self.stage.judges else self.settings.temperature,
            # a task's configured floor (task_max_tokens) wins over a smaller run-wide or estimated room
            max_tokens=max(max_tokens or self.settings.max_tokens, self.settings.task_max_tokens.get(task, 0)),
        )
        request = LLMRequest(task=task, messages=messages, json_schema=schema_of(model), settings=settings,
                             sample=sample, schema_name=task, keep=keep)
        if task not in self.routes:
            raise KeyError(f"stage {self.stage.name}: task '{task}' is not declared in STAGE.tasks")
        return await self.llm.generate(self.routes[task], request, model, self.stats, check, self.language)

    # ---- units of work
    def done(self, key: str) -> dict[str, list[dict]] | None:
        return self.journal.done.get(key)

    def done_records(self, key: str, name: str, model: type[M]) -> list[M] | None:
        """A finished unit's records of one file, parsed; None when the unit has not finished."""
        found = self.journal.done.get(key)
        return None if found is None else [model.model_validate(r) for r in found.get(name, [])]

    async def _one(self, key: str, work: Callable[[], Awaitable[Records]]) -> bool:
        try:
            records = await work()
        except BudgetExceeded as exc:
            self.budget_error = self.budget_error or exc
            return False
        except SynthError:
            raise  # run-wide (a refused key, bad input): the CLI says it once, not once per unit
        except Exception as exc:  # noqa: BLE001 - transport faults past max_attempts, and anything unexpected
            reason = str(exc) if isinstance(exc, GenerationFailed) else " ".join(f"{type(exc).__name__}: {exc}".split())
            self.journal.fail(key, reason)
            self.failures.append((key, reason))
            return False
        self.journal.record(key, records)
        self._on_unit()
        return True

    async def units(self, work: list[tuple[str, Callable[[], Awaitable[Records]]]], sequential: bool = False) -> None:
        """Run units not yet in the journal (concurrently unless `sequential`); each is journaled as it finishes.
        A sequential chain stops at its first failure: later links need the earlier ones."""
        self.unit_keys.extend(key for key, _ in work)
        self.total_units += len(work)
        pending = [(key, fn) for key, fn in work if key not in self.journal.done]
        for _ in range(len(work) - len(pending)):
            self._on_unit()
        if sequential:
            for key, fn in pending:
                if not await self._one(key, fn):
                    break
            return
        ends: list[int] = []  # each unit's chain where it ended: what follows waited for the longest

        async def one(key: str, fn: Callable[[], Awaitable[Records]]) -> None:
            await self._one(key, fn)
            ends.append(chain.depth())

        try:
            async with asyncio.TaskGroup() as group:
                for key, fn in pending:
                    group.create_task(one(key, fn))
        except BaseExceptionGroup as group:
            raise group.exceptions[0] from None
        chain.join(*ends)

    def collected(self) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = {name: [] for name in self.stage.writes}
        for key in self.unit_keys:
            for name, records in self.journal.done.get(key, {}).items():
                out.setdefault(name, []).extend(records)
        return out


class StageRegistry(dict[str, Stage]):
    """The pipeline's stages in order, handed to the runner (which never imports the stage modules)."""

    def order(self) -> list[str]:
        return list(self)

    def producer_of(self, filename: str) -> str:
        for stage in self.values():
            if filename in stage.writes:
                return stage.name
        raise KeyError(filename)
