"""The commands that make a dataset: one per registered stage, `synth run` and `synth status`."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from synth.cli.options import (
    BaseUrl,
    Batch,
    BudgetUsd,
    Concurrency,
    ConfigFile,
    DryRun,
    Force,
    Languages,
    MaxTokens,
    Model,
    Out,
    PersonaId,
    Personas,
    Preset,
    Provider,
    Seed,
    _languages,
    _out,
    _personas,
    _preset,
    app,
    err_console,
    guarded,
    out_console,
)
from synth.config import conf


def _run(names: list[str], *, out, personas, persona, preset, provider, model, base_url, concurrency, budget_usd,
         max_tokens, config, force, seed, export: bool, batch: bool = False, languages: str | None = None) -> None:
    from synth.engine.runner import preflight
    from synth.llm.providers import provider_factory
    from synth.pipeline.session import DatasetLock, open_session, run_stages
    from synth.stages import STAGES

    target = _out(out, _preset(preset, provider))
    # Everything cheap is checked before the lock and before any file is written: config, personas, the
    # provider/model pair and its key, the inputs and the templates.
    run, seeds = _resolve(target, personas, persona, preset, provider, model, base_url, config)
    chosen = _languages(languages)
    if chosen is not None:
        run.config = conf.deep_merge(run.config, {"translate": {"languages": chosen}})
    name = run.provider
    if run.changes:
        _say_changes(target, run, seeds, names)
    err_console.print(f"provider: [bold]{name}[/] ({escape(run.reason)}); preset {run.preset}", highlight=False,
                      soft_wrap=True)
    default_local = name == "local" and (
        run.model is None or run.model == conf.model_table()["providers"]["local"]["default_model"])
    if default_local:
        from synth.llm.local.provider import DEFAULT_MODEL_WARNING

        err_console.print(f"[yellow]warning:[/] {DEFAULT_MODEL_WARNING}", highlight=False)
    provider_factory(float(run.config["timeout_s"]))(conf.resolve_route(name, run.model, run.base_url))
    preflight(STAGES, names, seeds, target)
    with DatasetLock(target):
        session = open_session(target, _personas(personas), run.personas, run.preset, name, run.model, run.base_url,
                               concurrency, budget_usd, max_tokens, run.config, seed=seed, batch=batch)
        try:
            results = asyncio.run(run_stages(session, names, force=force))
            ran = sum(len(v) for v in results.values())
            if "filter" in names:
                from synth.release.stats import record_validity

                flagged = record_validity(target)["blind_flagged_types"]
                if flagged:
                    err_console.print(f"[yellow]warning:[/] blind accuracy above chance + 5 points for: "
                                      f"{', '.join(flagged)} (synth stats shows the table)", highlight=False)
            err_console.print(f"done: {ran} stage run(s) over {len(session.seeds)} persona(s) in {target}")
            _print_summary(target, name, default_local)
            if export:
                from synth.release.clonemem import export_dataset

                paths = export_dataset(target, session.seeds)
                err_console.print(f"exported {len(paths)} file(s) under {target / 'export'}")
        finally:
            session.close()


def _print_summary(target: Path, provider: str = "", default_local: bool = False) -> None:
    """What the run made: per persona, traces, items generated → final, top rejections, cost (synth.release.summary)."""
    from synth.release.summary import run_summary, summary_lines

    for line in summary_lines(run_summary(target), provider, default_local):
        err_console.print(line, highlight=False, soft_wrap=True)


def _resolve(target: Path, personas, persona, preset, provider, model, base_url, config):
    """The run's settings (explicit options, else the dataset's dataset.json, else defaults) and its personas."""
    from synth.pipeline.session import resolve_run, select_personas

    run = resolve_run(target, preset, provider, model, base_url, config, persona or [], _preset)
    for note in run.notes:  # an older dataset.json: said first, before anything runs
        err_console.print(f"[yellow]{escape(note)}[/]", highlight=False, soft_wrap=True)
    return run, select_personas(_personas(personas), run.personas, run.config)


def _say_changes(target: Path, run, seeds, names: list[str]) -> None:
    """The first line when options override what the dataset recorded: what changed and what that makes stale."""
    from synth.engine.runner import persona_dir, persona_statuses
    from synth.stages import STAGES

    route = conf.resolve_route(run.provider, run.model, run.base_url)
    stale: list[str] = []
    for seed in seeds:
        statuses = persona_statuses(STAGES, seed, persona_dir(target, seed), conf.persona_config(run.config, seed.scale, seed.languages), route)
        stale += [name for name, status in statuses.items() if status != "fresh" and name not in stale]
    err_console.print(
        f"[yellow]changed from {target / 'dataset.json'}:[/] {escape(', '.join(run.changes))}; "
        f"stale now: {', '.join(stale) or 'nothing'} (this command runs {', '.join(names)})", highlight=False,
        soft_wrap=True)


def _stage_command(name: str, help_text: str):
    @guarded
    def command(out: Out = None, personas: Personas = None, persona: PersonaId = None, preset: Preset = None,
                provider: Provider = None, model: Model = None, base_url: BaseUrl = None,
                concurrency: Concurrency = None, budget_usd: BudgetUsd = None, max_tokens: MaxTokens = None,
                config: ConfigFile = None, force: Force = False, seed: Seed = 0, languages: Languages = None) -> None:
        _run([name], out=out, personas=personas, persona=persona, preset=preset, provider=provider, model=model,
             base_url=base_url, concurrency=concurrency, budget_usd=budget_usd, max_tokens=max_tokens,
             config=config, force=force, seed=seed, export=False, languages=languages)

    command.__doc__ = help_text
    command.__name__ = f"{name}_command"
    return command


def _stage_commands() -> None:
    """One command per registered stage, in pipeline order, its help the stage's own (synth.stages.STAGES)."""
    from synth.stages import STAGES

    for stage in STAGES.values():
        text = escape(stage.help)  # rich markup would eat a "[qa]" of the stage's own words
        app.command(stage.name, help=text)(_stage_command(stage.name, text))


_stage_commands()


@app.command("run")
@guarded
def run_command(out: Out = None, personas: Personas = None, persona: PersonaId = None, preset: Preset = None,
                provider: Provider = None, model: Model = None, base_url: BaseUrl = None,
                concurrency: Concurrency = None, budget_usd: BudgetUsd = None, max_tokens: MaxTokens = None,
                config: ConfigFile = None, force: Force = False, dry_run: DryRun = False, batch: Batch = False,
                seed: Seed = 0, languages: Languages = None) -> None:
    """Run every stale stage (and what depends on it) in order, then export."""
    from synth.stages import STAGES

    if dry_run:
        from synth.pipeline.dryrun import dry_run as estimate

        estimate(preset=preset, provider=provider, model=model, base_url=base_url, personas=_personas(personas),
                 persona=persona or [], config=config, batch=batch, console=out_console)
        return
    _run(STAGES.order(), out=out, personas=personas, persona=persona, preset=preset, provider=provider, model=model,
         base_url=base_url, concurrency=concurrency, budget_usd=budget_usd, max_tokens=max_tokens, config=config,
         force=force, seed=seed, export=True, batch=batch, languages=languages)


@app.command("status")
@guarded
def status_command(out: Out = None, personas: Personas = None, persona: PersonaId = None, preset: Preset = None,
                   provider: Provider = None, model: Model = None, base_url: BaseUrl = None,
                   config: ConfigFile = None) -> None:
    """Per persona and stage: fresh / stale / missing / failed, record counts, calls and cost."""
    from synth.engine.runner import load_manifest, persona_dir, persona_statuses
    from synth.stages import STAGES

    target = _out(out, preset)
    run, seeds = _resolve(target, personas, persona, preset, provider, model, base_url, config)
    route = conf.resolve_route(run.provider, run.model, run.base_url)
    table = Table(title=f"synth status — {target}")
    for col in ("persona", "stage", "status", "records", "calls", "cached", "tokens", "cost $"):
        table.add_column(col, justify="right" if col in ("records", "calls", "cached", "tokens", "cost $") else "left")
    colours = {"fresh": "green", "stale": "yellow", "missing": "dim", "failed": "red"}
    for seed in seeds:
        cfg = conf.persona_config(run.config, seed.scale, seed.languages)
        directory = persona_dir(target, seed)
        for stage_name, status in persona_statuses(STAGES, seed, directory, cfg, route).items():
            m = load_manifest(directory, stage_name)
            table.add_row(seed.id, stage_name, f"[{colours.get(status, 'white')}]{status}[/]",
                          str(sum(m.records.values())) if m else "", str(m.provider_calls) if m else "",
                          str(m.cache_hits) if m else "", f"{m.input_tokens + m.output_tokens:,}" if m else "",
                          f"{m.cost_usd:.4f}" if m else "")
    out_console.print(table)
