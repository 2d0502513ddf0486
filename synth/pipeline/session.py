"""Running the pipeline over a dataset directory: setup, the one-writer lock, stale-stage selection, progress."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from synth.config import conf, settings
from synth.config.personas import PersonaSeed, load_personas
from synth.core.errors import BudgetExceeded, InputError, SynthError
from synth.core.jsonl import write_json_atomic
from synth.engine.runner import RunOptions, persona_dir, run_stage, stage_status
from synth.engine.stage import StageRegistry
from synth.llm.cache import ResponseCache
from synth.llm.client import LLM, CallStats
from synth.llm.limits import Budget
from synth.llm.providers import provider_factory
from synth.stages import STAGES

console = Console(stderr=True)  # the default for a session's log lines and progress (a session may carry its own)


class RunProgress:
    """Rich progress: one bar per persona and running stage, with calls, tokens and cost as they happen.

    A finished stage's bar is hidden (its summary line is printed instead): rich renders every bar on each refresh,
    ~1 ms a bar, on a thread that holds the GIL the event loop needs — eighty finished bars of a ten-persona run
    would take a tenth of a second per refresh."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.progress = Progress(
            TextColumn("{task.fields[label]}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[calls]}"), TimeElapsedColumn(), console=console, disable=not enabled,
            refresh_per_second=2,
        )
        self.stats: dict[int, CallStats] = {}

    def __enter__(self) -> "RunProgress":
        self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()

    def add(self, persona: str, stage: str, stats: CallStats) -> int:
        task = self.progress.add_task("", total=None, label=f"{persona}/{stage}", calls="")
        self.stats[task] = stats
        if self.enabled:  # a hidden display needs no label formatted on every call
            stats.on_change = lambda: self._refresh(task)
        return task

    def _refresh(self, task: int) -> None:
        s = self.stats[task]
        self.progress.update(task, calls=f"calls {s.provider_calls} cached {s.cache_hits} tok {s.tokens:,} ${s.cost_usd:.4f}")

    def advance(self, task: int, total: int) -> None:
        self.progress.update(task, total=total, advance=1)

    def finish(self, task: int) -> None:
        self._refresh(task)
        t = self.progress.tasks[[x.id for x in self.progress.tasks].index(task)]
        self.progress.update(task, total=t.completed or 1, completed=t.completed or 1, visible=False)


class DatasetLock:
    """One writer per dataset directory: a lock file with the owner's pid; a dead owner's lock is taken over."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / ".lock"

    def __enter__(self) -> "DatasetLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                owner = self._owner()
                if owner is not None and _alive(owner):
                    raise InputError(
                        f"{self.path.parent}: another synth run (pid {owner}) is writing this dataset; "
                        "wait for it or choose another --out"
                    ) from None
                self.path.unlink(missing_ok=True)  # stale: its process is gone
                continue
            with os.fdopen(fd, "w") as handle:
                handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname()}))
            return self
        raise InputError(f"{self.path}: could not take the dataset lock")

    def _owner(self) -> int | None:
        try:
            data = json.loads(self.path.read_text())
            return int(data["pid"]) if data.get("host") == socket.gethostname() else None
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def __exit__(self, *exc) -> None:
        self.path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Session:
    """Everything a command needs for one dataset: options, selected personas, per-persona configs, the client."""

    options: RunOptions
    seeds: list[PersonaSeed]
    configs: dict[str, dict]
    llm: LLM
    cache: ResponseCache
    console: Console = console  # where stage lines go; the dry run hands a quiet one

    def close(self) -> None:
        self.cache.close()


def select_personas(paths: list[Path], only: list[str], config: dict) -> list[PersonaSeed]:
    """Personas named with --persona are all built; the preset's `personas` count applies only when none is named."""
    seeds = load_personas(paths)
    if only:
        known = {s.id for s in seeds}
        missing = [p for p in only if p not in known]
        if missing:
            raise InputError(f"--persona: no persona with id '{missing[0]}' in {', '.join(map(str, paths))}")
        return [s for s in seeds if s.id in only]
    limit = int(config["personas"])
    return seeds[:limit] if limit else seeds


@dataclass
class Resolved:
    """What a command runs with: explicit options, else what the dataset's dataset.json recorded, else defaults."""

    preset: str
    provider: str
    reason: str
    model: str | None
    base_url: str | None
    config: dict
    personas: list[str]  # ids to restrict to ([] = the preset's selection)
    changes: list[str]  # "provider fake → local" … against the recorded dataset.json
    notes: list[str] = field(default_factory=list)  # what an older dataset.json lacked or had that synth dropped


def check_tasks(config: dict, source: Path | str | None, registry: StageRegistry = STAGES) -> None:
    """Per-task tables name tasks of the pipeline (or of a test's or plugin's own registry)."""
    tasks = {task for stage in (*STAGES.values(), *registry.values()) for task in stage.tasks}
    settings.check_tasks(config, tasks, source or conf.CONFIG_DIR / "presets.toml")


def recorded_settings(out: Path) -> dict | None:
    path = out / "dataset.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
            raise ValueError("not a dataset.json object with a config table")
        return data
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: unreadable ({exc}); delete it or choose another --out") from None


def resolve_run(out: Path, preset: str | None, provider: str | None, model: str | None, base_url: str | None,
                config_file: Path | None, personas: list[str], default_preset) -> Resolved:
    """A command pointed at an existing dataset uses the preset, provider, model, base URL, config and personas its
    dataset.json recorded, unless an option overrides one (each override is listed in `changes`)."""
    recorded = recorded_settings(out)
    if recorded is None:
        name, reason = conf.choose_provider(provider)
        preset = preset or default_preset(None, provider)  # cli._preset(preset, provider): tiny on local
        config = conf.preset_config(preset, config_file)
        check_tasks(config, config_file)
        return Resolved(preset, name, reason, model, base_url, config, personas, [])
    where = out / "dataset.json"
    old = {key: recorded.get(key) for key in ("preset", "provider", "model", "base_url")}
    if provider is None or provider == old["provider"]:
        name, reason = old["provider"], f"recorded in {where}" if provider is None else "--provider was given"
        model = model or old["model"]
        base_url = base_url or old["base_url"]
    else:
        name, reason = provider, "--provider was given"
    preset = preset or old["preset"]
    notes: list[str] = []
    if config_file is None and preset == old["preset"]:
        # What was set then, grown to today's settings. Keys an older synth recorded elsewhere (a shared knob in
        # each stage's section, per-task tables by template or stage) are first mapped to today's; then keys added
        # since take today's defaults (named on the first line) and keys removed since are ignored (named too); a
        # recorded value now invalid is still an error.
        tasks_of = {name: stage.tasks for name, stage in STAGES.items()}
        scales = {scale: settings.upgrade(over, tasks_of) for scale, over in recorded.get("scale_overrides", {}).items()}
        grown = conf.grow_recorded(settings.upgrade(recorded["config"], tasks_of), conf.preset_config(preset))
        config = {**grown.config, "preset": preset, "_scale": conf.prune_scale_overrides(scales, grown.removed)}
        settings.parse(config, default_source=str(where))
        check_tasks(config, where)
        if grown.filled:
            notes.append(f"{where} predates: {', '.join(grown.filled)}")
        if grown.reshaped:
            notes.append(f"{where}: read in today's shape: {'; '.join(grown.reshaped)}")
        if grown.removed:
            notes.append(f"{where}: settings synth no longer has, ignored: {', '.join(grown.removed)}")
    else:
        config = conf.preset_config(preset, config_file)
        check_tasks(config, config_file)
    route = conf.resolve_route(name, model, base_url)
    new = {"preset": preset, "provider": name, "model": route.model, "base_url": base_url}
    changes = [f"{key} {old[key]} → {new[key]}" for key in new if old[key] != new[key]]
    if config_file is not None and _public(config) != _public({**recorded["config"], "preset": preset}):
        changes.append(f"config from {config_file}")
    return Resolved(preset, name, reason, route.model, base_url, config, personas or list(recorded.get("personas", [])),
                    changes, notes)


def _public(config: dict) -> dict:
    return {k: v for k, v in config.items() if not k.startswith("_") and k != "concurrency"}


def open_session(out: Path, personas: list[Path], only: list[str], preset: str, provider: str, model: str | None,
                 base_url: str | None, concurrency: int | None, budget_usd: float | None, max_tokens: int | None,
                 config_file: Path | dict | None, seed: int = 0,
                 write_dataset_json: bool = True, batch: bool = False,
                 registry: StageRegistry = STAGES, log: Console | None = None) -> Session:
    """`config_file` is a --config TOML file, or a config already resolved (see `resolve_run`)."""
    config = dict(config_file) if isinstance(config_file, dict) else conf.preset_config(preset, config_file)
    if not isinstance(config_file, dict):
        check_tasks(config, config_file, registry)
    if concurrency:
        config["concurrency"] = concurrency
    route = conf.resolve_route(provider, model, base_url)
    seeds = select_personas(personas, only, config)
    configs = {s.id: conf.persona_config(config, s.scale, s.languages) for s in seeds}
    options = RunOptions(out=out, config=config, route=route, registry=registry)
    # Construct the default provider now: a missing key is one clear line before anything is written.
    factory = provider_factory(timeout_s=float(config["timeout_s"]), seed=seed)
    first_provider = factory(route)
    cache = ResponseCache(out / "cache.sqlite")
    llm = LLM(
        providers=lambda r: first_provider if (r.provider, r.base_url) == (route.provider, route.base_url) else factory(r),
        cache=cache,
        budget=Budget(max_usd=budget_usd, max_tokens=max_tokens),
        concurrency=int(config["concurrency"]),
        max_repairs=int(config["max_repairs"]),
        max_attempts=int(config["max_attempts"]),
        timeout_s=float(config["timeout_s"]),
    )
    if batch:
        from synth.llm.batch import BatchDispatcher

        knobs = config.get("batch", {})
        llm.batch = BatchDispatcher(out, cache, llm.provider, window_s=float(knobs.get("window_s", 0.5)),
                                    max_requests=int(knobs.get("max_requests", 10000)),
                                    poll_s=float(knobs.get("poll_s", 15.0)))
    if write_dataset_json:
        write_json_atomic(out / "dataset.json", {
            "preset": preset, "provider": route.provider, "model": route.model, "base_url": route.base_url,
            "synth_version": conf.synth_version(), "personas": [s.id for s in seeds], "batch": batch, "config": {k: v for k, v in config.items() if not k.startswith("_")},
            "scale_overrides": config.get("_scale", {}),
        })
    return Session(options=options, seeds=seeds, configs=configs, llm=llm, cache=cache, console=log or console)


async def run_persona(session: Session, seed: PersonaSeed, names: list[str], progress: RunProgress | None,
                      force: bool) -> list[str]:
    """Run the named stages in order for one persona; returns what ran. Stops at the first failing stage."""
    ran = []
    config = session.configs[seed.id]
    directory = persona_dir(session.options.out, seed)
    for name in names:
        stage = session.options.registry[name]
        if not force:
            status = stage_status(stage, seed, directory, config, session.options.route)
            if status == "fresh":
                continue
        m = await run_stage(stage, seed, session.options, session.llm, config, progress,
                            warn=lambda msg: session.console.print(f"[yellow]{msg}[/]"))
        session.console.print(
            f"{seed.id}/{name}: {sum(m.records.values())} records · calls {m.provider_calls} (cached {m.cache_hits}, "
            f"repairs {m.repairs}, retries {m.retries}) · tokens {m.input_tokens + m.output_tokens:,} · "
            f"${m.cost_usd:.4f} · {m.wall_s:.1f}s", highlight=False)
        ran.append(name)
    return ran


async def run_stages(session: Session, names: list[str], force: bool = False,
                     show_progress: bool = True) -> dict[str, list[str]]:
    """Personas run concurrently (sharing the client's concurrency limit); stages run in order within each."""
    errors: list[SynthError] = []
    results: dict[str, list[str]] = {}
    with RunProgress(enabled=show_progress and sys.stderr.isatty()) as progress:

        async def one(seed: PersonaSeed) -> None:
            try:
                results[seed.id] = await run_persona(session, seed, names, progress, force)
            except SynthError as exc:  # one persona's failure does not stop the others
                errors.append(exc)

        try:
            async with asyncio.TaskGroup() as group:
                for seed in session.seeds:
                    group.create_task(one(seed))
        finally:
            await session.llm.aclose()
    if errors:
        first = next((e for e in errors if isinstance(e, BudgetExceeded)), errors[0])
        if len(errors) == 1:
            raise first
        combined = type(first)("; ".join(str(e) for e in errors))
        raise combined
    return results
