"""The commands that read a finished dataset: validate, export, stats, review, browse, and `synth prompts show`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from synth.cli.options import (
    Out,
    PersonaId,
    Preset,
    Seed,
    _out,
    app,
    err_console,
    guarded,
    out_console,
    prompts_app,
)


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
    and --format evermem write the spoken sources in LifeDialBench's and EverMemBench's layouts; --format longmemeval
    and --format locomo write export/longmemeval/ and export/locomo/ in those benchmarks' formats."""
    from synth.release.clonemem import export_dataset

    if format == "hf":
        from synth.release.hf import export_hf

        out_console.print(str(export_hf(_out(out, preset))))
        return
    if format in ("lifedial", "evermem", "longmemeval", "locomo"):
        from synth.release import locomo, longmemeval, seed_layouts

        writers = {"longmemeval": longmemeval.export_longmemeval, "locomo": locomo.export_locomo}
        for path in writers.get(format, lambda o: seed_layouts.export_spoken(o, format))(_out(out, preset)):
            out_console.print(str(path))
        return
    if format != "clonemem":
        from synth.core.errors import InputError

        raise InputError(f"--format: unknown format '{format}' (choose clonemem, hf, lifedial, evermem, longmemeval or locomo)")
    paths = export_dataset(_out(out, preset))
    for path in paths:
        out_console.print(str(path))


@app.command("stats")
@guarded
def stats_command(out: Out = None, preset: Preset = None, plot: Annotated[bool, typer.Option("--plot")] = False) -> None:
    """Counts and distributions: types, dimensions, media, rejections per filter, blind accuracy, positions."""
    from synth.release.stats_report import print_stats

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
