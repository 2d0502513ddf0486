"""The stage runner: per-persona manifests and staleness, journaled units, atomic outputs.

It is handed the registry of stages (synth.stages.STAGES, or a test's own) and never imports the stage modules."""

from __future__ import annotations

import datetime as dt
import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synth.config import conf
from synth.config.conf import Route
from synth.config.personas import PersonaSeed, seed_hash
from synth.config.prompts import template_source_hash
from synth.core import chain
from synth.core.errors import BudgetExceeded, InputError, SynthError
from synth.core.jsonl import Journal, read_records, write_atomic, write_json_atomic
from synth.engine.stage import Stage, StageContext, StageRegistry
from synth.llm.cache import content_hash
from synth.llm.client import LLM, CallStats
from synth.records import FILES, StageManifest


class StageFailed(SynthError):
    """Some units of a stage found no valid answer; what finished is kept and the next run retries the rest."""


def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


@dataclass
class RunOptions:
    out: Path
    config: dict  # the preset config (before per-persona scale overrides)
    route: Route  # the default provider/model
    registry: StageRegistry  # the stages (synth.stages.STAGES)


# ------------------------------------------------------------------------------------------------ registry

def routes_for(stage: Stage, config: dict, default: Route) -> dict[str, Route]:
    table = config.get("routes", {})
    out = {}
    for task in stage.tasks:
        spec = table.get(task)  # keyed by task only (an older dataset's stage keys: settings.upgrade)
        out[task] = conf.parse_route_spec(spec, default) if spec else default
    return out


def persona_dir(out: Path, seed: PersonaSeed) -> Path:
    return out / seed.id


def signature_parts(stage: Stage, seed: PersonaSeed, directory: Path, config: dict, routes: dict[str, Route]) -> dict | None:
    """Everything the stage's output depends on; None when an input file is missing."""
    inputs: dict[str, str] = {}
    if not stage.reads:
        inputs["persona_seed"] = seed_hash(seed)
    for name in stage.reads:
        path = directory / name
        if not path.is_file():
            return None
        inputs[name] = file_hash(path)
    for name in stage.optional_reads:
        path = directory / name
        if path.is_file():
            inputs[name] = file_hash(path)
    templates = {name: template_source_hash(name) for name in stage.templates}
    floors = config.get("task_max_tokens", {})
    settings = {
        "routes": {task: r.spec for task, r in sorted(routes.items())},
        "section": config.get(stage.name, {}),
        "timeline_days": config.get("timeline_days", 0),
        "temperature": config.get("temperature"),
        "max_tokens": config.get("max_tokens"),
        "task_max_tokens": {task: floors[task] for task in stage.tasks if task in floors},
        "holiday_countries": config.get("holiday_countries"),
    }
    for key in stage.config_keys:  # a whole section ("prompts") or one knob of another stage's ("filter.x")
        section, _, knob = key.partition(".")
        settings[key] = (config.get(section) or {}).get(knob) if knob else config.get(key)
    if stage.judges:
        settings["judge_temperature"] = config.get("judge_temperature")
    for name in stage.config_files:
        settings[Path(name).stem] = file_hash(conf.CONFIG_DIR / name)
    return {"inputs": inputs, "templates": templates, "settings": settings}


def manifest_path(directory: Path, stage: str) -> Path:
    return directory / "manifests" / f"{stage}.json"


def load_manifest(directory: Path, stage: str) -> StageManifest | None:
    path = manifest_path(directory, stage)
    if not path.is_file():
        return None
    try:
        return StageManifest.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError:
        return None


def stage_status(stage: Stage, seed: PersonaSeed, directory: Path, config: dict, default: Route) -> str:
    """fresh / stale / missing / failed for one persona and stage."""
    manifest = load_manifest(directory, stage.name)
    if manifest is None:
        return "missing"
    if manifest.status != "complete":
        return manifest.status if manifest.status == "failed" else "stale"
    if any(not (directory / name).is_file() for name in stage.writes):
        return "missing"
    parts = signature_parts(stage, seed, directory, config, routes_for(stage, config, default))
    if parts is None or content_hash(parts) != manifest.signature:
        return "stale"
    return "fresh"


def persona_statuses(registry: StageRegistry, seed: PersonaSeed, directory: Path, config: dict,
                     default: Route) -> dict[str, str]:
    """Every stage's status, in order; a stage whose own signature still matches but an upstream stage is not
    fresh is stale too: its input is about to change (a QA template edit makes distractors and filter stale)."""
    out: dict[str, str] = {}
    for stage in registry.values():
        status = stage_status(stage, seed, directory, config, default)
        upstream = {out.get(registry.producer_of(name)) for name in stage.reads + stage.optional_reads}
        if status == "fresh" and upstream - {"fresh", None}:
            status = "stale"
        out[stage.name] = status
    return out


def check_inputs(stage: Stage, directory: Path, registry: StageRegistry) -> None:
    for name in stage.reads:
        if not (directory / name).is_file():
            raise InputError(f"{directory / name}: missing — run `synth {registry.producer_of(name)}` first")


def validate_inputs(stage: Stage, directory: Path, names: tuple[str, ...] | None = None) -> dict[str, list]:
    """Read every input once so a hand-edited broken line or a dangling id is one clear error before any call;
    the parsed records are returned for the stage body to use (it does not parse them again)."""
    from synth.quality.validate import reference_problems

    names = stage.reads if names is None else names
    records = {name: read_records(directory / name, FILES[name]) for name in names}
    problems = reference_problems(directory, names)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InputError(f"{directory}: {problems[0]}{more}")
    return records


def preflight(registry: StageRegistry, names: list[str], seeds: list[PersonaSeed], out: Path) -> None:
    """Everything checkable before a file is written: the inputs the first requested stages need (present,
    well-formed, no dangling ids) and every template of the requested stages (parses)."""
    from synth.config.prompts import check_templates

    produced: set[str] = set()
    for name in names:
        stage = registry[name]
        needed = tuple(f for f in stage.reads if f not in produced)
        for seed in seeds:
            directory = persona_dir(out, seed)
            for filename in needed:
                if not (directory / filename).is_file():
                    raise InputError(f"{directory / filename}: missing — run `synth {registry.producer_of(filename)}` first")
            validate_inputs(stage, directory, needed)
        produced.update(stage.writes)
        check_templates(list(stage.templates))


async def run_stage(stage: Stage, seed: PersonaSeed, options: RunOptions, llm: LLM, config: dict,
                    progress: Any = None, warn=print) -> StageManifest:
    directory = persona_dir(options.out, seed)
    check_inputs(stage, directory, options.registry)
    inputs = validate_inputs(stage, directory, stage.reads + tuple(
        name for name in stage.optional_reads if (directory / name).is_file()))
    routes = routes_for(stage, config, options.route)
    parts = signature_parts(stage, seed, directory, config, routes)
    assert parts is not None
    signature = content_hash(parts)
    journal = Journal(directory / ".work" / f"{stage.name}.journal.jsonl", signature, warn=warn)
    stats = CallStats()
    task = progress.add(seed.id, stage.name, stats) if progress else None
    ctx = StageContext(stage, seed, directory, config, llm, routes, stats, journal,
                       on_unit=(lambda: progress.advance(task, ctx.total_units)) if progress else (lambda: None),
                       inputs=inputs)
    started = dt.datetime.now(dt.timezone.utc)
    t0, depth0 = time.perf_counter(), chain.depth()
    try:
        produced = await stage.body(ctx)
    finally:
        journal.close()
        if progress:
            progress.finish(task)
    failures_path = directory / "failures" / f"{stage.name}.jsonl"
    base = dict(
        stage=stage.name, persona_id=seed.id, signature=signature, input_hashes=parts["inputs"],
        template_hashes=parts["templates"], settings=parts["settings"],
        provider=",".join(sorted({r.provider for r in routes.values()})) or options.route.provider,
        model=",".join(sorted({r.model for r in routes.values()})) or options.route.model,
        requests=stats.requests, cache_hits=stats.cache_hits, provider_calls=stats.provider_calls,
        repairs=stats.repairs, retries=stats.retries, failures=len(ctx.failures),
        input_tokens=stats.usage.input_tokens, output_tokens=stats.usage.output_tokens,
        cached_input_tokens=stats.usage.cached_input_tokens, cache_saving_usd=round(stats.cache_saving_usd, 6),
        cost_usd=round(stats.cost_usd, 6), started_at=started.isoformat(),
        finished_at=dt.datetime.now(dt.timezone.utc).isoformat(), wall_s=round(time.perf_counter() - t0, 3),
        chain_calls=chain.depth() - depth0,
        synth_version=conf.synth_version(),
    )
    if ctx.budget_error is not None:
        manifest = StageManifest(status="budget", records={}, **base)
        write_json_atomic(manifest_path(directory, stage.name), manifest.model_dump(mode="json"))
        raise BudgetExceeded(
            f"{seed.id}/{stage.name}: stopped by the budget after {len(journal.done)} of {ctx.total_units} units "
            f"({ctx.budget_error}); everything finished is kept — raise the budget and run again to resume"
        )
    if ctx.failures:
        write_atomic(failures_path, [{"stage": stage.name, "unit": k, "reason": r} for k, r in ctx.failures])
        manifest = StageManifest(status="failed", records={}, **base)
        write_json_atomic(manifest_path(directory, stage.name), manifest.model_dump(mode="json"))
        raise StageFailed(
            f"{seed.id}/{stage.name}: {len(ctx.failures)} failed of {ctx.total_units} units "
            f"(reasons in {failures_path}); run again to retry only those"
        )
    outputs = produced if produced is not None else ctx.collected()
    counts = {}
    trace_tokens = None
    for name in stage.writes:
        records = outputs.get(name, [])
        counts[name] = write_atomic(directory / name, records)
        if name == stage.token_file:
            trace_tokens = sum(int(r["tokens"] if isinstance(r, dict) else r.tokens) for r in records)
    manifest = StageManifest(status="complete", records=counts, trace_tokens=trace_tokens, **base)
    write_json_atomic(manifest_path(directory, stage.name), manifest.model_dump(mode="json"))
    journal.path.unlink(missing_ok=True)
    failures_path.unlink(missing_ok=True)
    return manifest
