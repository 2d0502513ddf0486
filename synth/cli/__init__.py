"""The `synth` command line: a thin typer layer over the pipeline; the one place exit codes are decided."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from synth.config import conf
from synth.core.errors import SynthError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Generate long-term-memory benchmarks for AI clones (CloneMem-style) and score memory systems.")
prompts_app = typer.Typer(no_args_is_help=True, help="Show the prompt templates.")
app.add_typer(prompts_app, name="prompts")
out_console = Console()
err_console = Console(stderr=True)

Out = Annotated[Optional[Path], typer.Option("--out", help="Dataset directory (default outputs/<preset>).")]
Personas = Annotated[Optional[list[Path]], typer.Option("--personas", help="Seed file or folder (repeatable).")]
PersonaId = Annotated[Optional[list[str]], typer.Option("--persona", help="Restrict to persona ids (repeatable).")]
Provider = Annotated[Optional[str], typer.Option("--provider", help="anthropic | openai | local | fake.")]
Model = Annotated[Optional[str], typer.Option("--model", help="Model name or alias (local: a .gguf path).")]
BaseUrl = Annotated[Optional[str], typer.Option("--base-url", help="OpenAI-compatible server URL (vLLM, Ollama, llama.cpp).")]
Concurrency = Annotated[Optional[int], typer.Option("--concurrency", min=1, help="Concurrent requests.")]
BudgetUsd = Annotated[Optional[float], typer.Option("--budget-usd", min=0, help="Stop before spending more.")]
MaxTokens = Annotated[Optional[int], typer.Option("--max-tokens", min=1, help="Stop before using more tokens.")]
Force = Annotated[bool, typer.Option("--force", help="Re-run even fresh stages.")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Estimate calls, tokens and USD without calling a model.")]
Batch = Annotated[bool, typer.Option("--batch", help="Send independent requests through the provider's batch API.")]
Preset = Annotated[Optional[str], typer.Option("--preset", help="tiny | small | clonemem (default: tiny with the local provider, else small).")]
ConfigFile = Annotated[Optional[Path], typer.Option("--config", help="TOML overrides (stage settings, routes).")]
Seed = Annotated[int, typer.Option("--seed", help="Seed of the fake provider.")]
Languages = Annotated[Optional[str], typer.Option(
    "--languages", help="Release languages, e.g. en,zh: the structure once, traces and items in each.")]


def first_error(group: BaseExceptionGroup) -> BaseException:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            exc = first_error(exc)
        if isinstance(exc, (SynthError, KeyboardInterrupt)):
            return exc
    return group.exceptions[0]


def guarded(fn):
    """The one error boundary: domain errors become one line on stderr and an exit code, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            try:
                return fn(*args, **kwargs)
            except BaseExceptionGroup as group:  # from asyncio task groups: report the first domain error
                raise first_error(group) from None
        except typer.Exit:
            raise
        except SynthError as exc:
            # escaped: a message may name a TOML section ("[qa]") that rich would take for markup
            err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            err_console.print("interrupted: finished units are kept; run again to resume")
            raise typer.Exit(130) from None

    return wrapper


def _preset(preset: str | None, provider: str | None) -> str:
    """Explicit --preset wins; the embedded local model defaults to `tiny`, everything else to `small`."""
    if preset:
        return preset
    return "tiny" if conf.choose_provider(provider)[0] == "local" else "small"


def _out(out: Path | None, preset: str | None) -> Path:
    return out if out is not None else Path("outputs") / (preset or "small")


def _personas(paths: list[Path] | None) -> list[Path]:
    return paths or [Path("personas")]


def _languages(value: str | None) -> list[str] | None:
    """`--languages en,zh` → ["en", "zh"]; an unknown code is one line and exit 2."""
    if value is None:
        return None
    from synth.core.errors import InputError

    found = [part.strip() for part in value.split(",") if part.strip()]
    unknown = [code for code in found if code not in ("en", "zh")]
    if unknown or not found:
        raise InputError(f"--languages: unknown language '{unknown[0] if unknown else value}' (choose from en, zh)")
    return list(dict.fromkeys(found))


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
    if name == "local" and (run.model is None or run.model == conf.model_table()["providers"]["local"]["default_model"]):
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
            if export:
                from synth.release.clonemem import export_dataset

                paths = export_dataset(target, session.seeds)
                err_console.print(f"exported {len(paths)} file(s) under {target / 'export'}")
        finally:
            session.close()


def _resolve(target: Path, personas, persona, preset, provider, model, base_url, config):
    """The run's settings (explicit options, else the dataset's dataset.json, else defaults) and its personas."""
    from synth.pipeline.session import resolve_run, select_personas

    run = resolve_run(target, preset, provider, model, base_url, config, persona or [], _preset)
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


_STAGE_HELP = {
    "persona": "persona.jsonl: enrich each Big Five seed into a profile with relations.",
    "arcs": "seeds.jsonl, arcs.jsonl, major_events.jsonl: event seeds, life arcs, major events.",
    "phases": "phases.jsonl: phases under the rolling snapshot (Algorithm 1).",
    "events": "events.jsonl, evidence.jsonl: detailed events with co-generated evidence.",
    "chats": "groups.jsonl, chats.jsonl: group chats per group and active day (sources with group_chat).",
    "lifelog": "lifelog_plan.jsonl, lifelog.jsonl: the year → month → week → day plan, then one ambient dialogue per "
               "event (sources with lifelog).",
    "variants": "variants.jsonl: relation-controlled variant sets (SubtleMemory): sessions, queries, references.",
    "traces": "traces.jsonl: digital traces (plan, then write), plus the chat days, dialogues and kept variant "
              "sessions as traces.",
    "qa": "qa.jsonl: sliding-window, two-step QA in 8 question types (and the extra types `[qa] types` lists).",
    "distractors": "mcq.jsonl: multiple choice with distractor refinement.",
    "filter": "final.jsonl, rejected.jsonl: the quality filters.",
    "translate": "translations.jsonl: traces and final items in each other release language (--languages en,zh).",
}
for _name, _help in _STAGE_HELP.items():
    app.command(_name, help=_help)(_stage_command(_name, _help))


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


@app.command("validate")
@guarded
def validate_command(out: Out = None, preset: Preset = None) -> None:
    """Check the invariants (containment, snapshot chain, references, causality); non-zero exit on any violation."""
    from synth.quality.label_check import label_warnings
    from synth.quality.validate import privacy_warnings, validate_dataset

    target = _out(out, preset)
    violations = validate_dataset(target)
    for line in [*label_warnings(target), *privacy_warnings(target)]:
        out_console.print(f"[yellow]?[/] {line}", highlight=False, soft_wrap=True)
    for v in violations:
        out_console.print(f"[red]✗[/] {v}", highlight=False, soft_wrap=True)
    if violations:
        err_console.print(f"{len(violations)} violation(s) in {target}")
        raise typer.Exit(1)
    out_console.print(f"[green]✓[/] {target}: every invariant holds")


@app.command("export")
@guarded
def export_command(out: Out = None, preset: Preset = None, format: Annotated[str, typer.Option("--format")] = "clonemem") -> None:
    """Write export/clonemem/<size>/<persona_id>_benchmark_<lang>.json from final.jsonl and the traces; --format hf
    writes export/hf/ (Parquet configs and a dataset card, loadable with datasets.load_dataset); --format lifedial
    and --format evermem write the spoken sources in LifeDialBench's and EverMemBench's layouts."""
    from synth.release.clonemem import export_dataset

    if format == "hf":
        from synth.release.hf import export_hf

        out_console.print(str(export_hf(_out(out, preset))))
        return
    if format in ("lifedial", "evermem"):
        from synth.release.seed_layouts import export_spoken

        for path in export_spoken(_out(out, preset), format):
            out_console.print(str(path))
        return
    if format != "clonemem":
        from synth.core.errors import InputError

        raise InputError(f"--format: unknown format '{format}' (choose clonemem, hf, lifedial or evermem)")
    paths = export_dataset(_out(out, preset))
    for path in paths:
        out_console.print(str(path))


@app.command("stats")
@guarded
def stats_command(out: Out = None, preset: Preset = None, plot: Annotated[bool, typer.Option("--plot")] = False) -> None:
    """Counts and distributions: types, dimensions, media, rejections per filter, blind accuracy, positions."""
    from synth.release.stats import print_stats

    print_stats(_out(out, preset), out_console, plot=plot)


@app.command("review")
@guarded
def review_command(out: Out = None, preset: Preset = None,
                   sample: Annotated[Optional[int], typer.Option("--sample", help="Write a stratified sheet of N items.")] = None,
                   import_file: Annotated[Optional[Path], typer.Option("--import", help="Record a filled-in sheet's verdicts.")] = None,
                   seed: Seed = 0) -> None:
    """Human review: write a stratified sample sheet, or import verdicts so rejected items leave final.jsonl."""
    from synth.release.review import import_review, write_review

    target = _out(out, preset)
    if import_file is not None:
        out_console.print(import_review(target, import_file))
    else:
        from synth.release.browse import write_site

        sheet = write_review(target, sample or 20, seed=seed)
        out_console.print(str(sheet))
        out_console.print(f"browse each row's `link`, or all: {write_site(target).resolve().as_uri()}")


@app.command("browse")
@guarded
def browse_command(out: Out = None, preset: Preset = None, persona: PersonaId = None) -> None:
    """Write site/ (index.html and one page per persona): timeline, traces, questions linked to their traces."""
    from synth.release.browse import write_site

    index = write_site(_out(out, preset), set(persona) if persona else None)
    out_console.print(index.resolve().as_uri())


eval_app = typer.Typer(help="Score memory systems (--system a,b,c); `synth eval compare RUN...` puts runs side by side.")
app.add_typer(eval_app, name="eval")


@eval_app.callback(invoke_without_command=True)
@guarded
def eval_command(
    ctx: typer.Context,
    data: Annotated[Optional[Path], typer.Option("--data", help="A synth dataset dir, or CloneMem release files.")] = None,
    system: Annotated[str, typer.Option("--system", help="Comma-separated: oracle, oracle-traces, flat[-bm25|-dense|-hybrid], full, memory[-…], mem0, module:Class.")] = "flat",
    retriever: Annotated[Optional[str], typer.Option("--retriever", help="flat's and memory's retriever: bm25 | dense | hybrid (default from [eval]).")] = None,
    k: Annotated[int, typer.Option("--k")] = 10,
    answerer_provider: Annotated[Optional[str], typer.Option("--answerer-provider")] = None,
    answerer_model: Annotated[Optional[str], typer.Option("--answerer-model")] = None,
    judge_provider: Annotated[Optional[str], typer.Option("--judge-provider")] = None,
    judge_model: Annotated[Optional[str], typer.Option("--judge-model")] = None,
    base_url: BaseUrl = None,
    embed_model: Annotated[Optional[str], typer.Option("--embed-model", help="An OpenAI-compatible embeddings model (with --base-url or OPENAI_API_KEY); default: the bundled offline embedder.")] = None,
    embedder: Annotated[Optional[str], typer.Option("--embedder", help="The offline embedder: e5 | use (default from [eval]; README: which, and why).")] = None,
    offline: Annotated[bool, typer.Option("--offline", help="CloneMem's all-traces protocol (leaks the future).")] = False,
    out: Annotated[Path, typer.Option("--out")] = Path("outputs/eval"),
    plot: Annotated[bool, typer.Option("--plot")] = False,
    limit: Annotated[Optional[int], typer.Option("--limit", help="Score only the first N questions.")] = None,
    concurrency: Concurrency = None,
) -> None:
    """Score memory systems on a dataset: Recall@k variants, choice accuracy, LLM-judge scores, ingest cost."""
    if ctx.invoked_subcommand is not None:
        return
    from synth.core.errors import InputError
    from synth.eval.run import run_eval

    if data is None:
        raise InputError("--data: missing (a synth dataset dir, or CloneMem release files)")

    run_eval(data=data, system=system, k=k, answerer_provider=answerer_provider, answerer_model=answerer_model,
             judge_provider=judge_provider, judge_model=judge_model, base_url=base_url, embed_model=embed_model,
             offline=offline, out=out, plot=plot, limit=limit, concurrency=concurrency, console=out_console,
             retriever=retriever, embedder=embedder)


@eval_app.command("compare")
@guarded
def eval_compare(runs: Annotated[list[Path], typer.Argument(help="`synth eval` output folders.")],
                 plot: Annotated[bool, typer.Option("--plot", help="Write the grouped bar chart (compare.png).")] = False,
                 out: Annotated[Path, typer.Option("--out", help="Where compare.json (and compare.png) go.")] = Path("outputs/eval-compare")) -> None:
    """Several runs side by side: systems × metrics (overall and per question type, 95% intervals), ingest cost."""
    from synth.core.jsonl import write_json_atomic
    from synth.eval.compare import compare_runs, print_compare, write_compare_plot

    table = compare_runs(runs)
    print_compare(table, out_console)
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "compare.json", table)
    if plot:
        out_console.print(f"plot: {write_compare_plot(table, out / 'compare.png')}", highlight=False)


@prompts_app.command("show")
@guarded
def prompts_show(stage: Annotated[str, typer.Argument(help="A stage name or a template file name.")]) -> None:
    """Print a stage's templates with their placeholders."""
    from synth.config.prompts import prompts_dir
    from synth.stages import STAGES

    names = STAGES[stage].templates if stage in STAGES else (stage,)
    for name in names:
        path = prompts_dir() / name
        if not path.is_file():
            from synth.core.errors import InputError

            raise InputError(f"prompts/{name}: template not found")
        out_console.rule(name)
        out_console.print(path.read_text(encoding="utf-8"), markup=False, highlight=False)


from synth.cli.config_show import config_app  # noqa: E402 - it uses the options and guard defined above

app.add_typer(config_app, name="config")


def main() -> None:
    import warnings

    from synth.llm.local.provider import LocalModelWarning

    warnings.simplefilter("ignore", LocalModelWarning)  # the CLI says it itself, once, before any work
    app()


if __name__ == "__main__":
    main()
