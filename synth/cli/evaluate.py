"""`synth eval` and `synth eval compare`: option help from the registries and settings the code uses."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from synth.cli.options import (
    BaseUrl,
    Concurrency,
    app,
    guarded,
    out_console,
)
from synth.config import conf


def _eval_default(key: str) -> str:
    """A `synth eval` knob's shipped default (presets.toml [defaults.eval]), for the options' help."""
    return str(conf.recorded_section({}, "eval")[key])


def _eval_help() -> dict[str, str]:
    from synth.eval.choices import BUILT_IN, EMBEDDERS, RETRIEVERS

    return {
        "system": f"Comma-separated: {', '.join(BUILT_IN)} (flat and memory take -{'|-'.join(RETRIEVERS)}), or "
                  "module:Class / path.py:Class.",
        "retriever": f"flat's and memory's retriever: {' | '.join(RETRIEVERS)} (default: "
                     f"{_eval_default('retriever')}, from presets.toml \\[eval]).",
        "embedder": f"The offline embedder: {' | '.join(EMBEDDERS)} (default: {_eval_default('embedder')}, from "
                    "presets.toml \\[eval]; docs/evaluation.md says which, and why).",
    }


_EVAL_HELP = _eval_help()
eval_app = typer.Typer(help="Score memory systems (--system a,b,c); `synth eval compare RUN...` puts runs side by side.")
app.add_typer(eval_app, name="eval")


@eval_app.callback(invoke_without_command=True)
@guarded
def eval_command(
    ctx: typer.Context,
    data: Annotated[Optional[Path], typer.Option("--data", help="A synth dataset dir, CloneMem release files, or a LongMemEval or LoCoMo file.")] = None,
    data_format: Annotated[Optional[str], typer.Option("--data-format", help="synth | clonemem | lifedial | evermem | longmemeval | locomo (default: detected).")] = None,
    system: Annotated[str, typer.Option("--system", help=_EVAL_HELP["system"])] = "flat",
    retriever: Annotated[Optional[str], typer.Option("--retriever", help=_EVAL_HELP["retriever"])] = None,
    k: Annotated[int, typer.Option("--k")] = 10,
    answerer_provider: Annotated[Optional[str], typer.Option("--answerer-provider")] = None,
    answerer_model: Annotated[Optional[str], typer.Option("--answerer-model")] = None,
    judge_provider: Annotated[Optional[str], typer.Option("--judge-provider")] = None,
    judge_model: Annotated[Optional[str], typer.Option("--judge-model")] = None,
    base_url: BaseUrl = None,
    embed_model: Annotated[Optional[str], typer.Option("--embed-model", help="An OpenAI-compatible embeddings model (with --base-url or OPENAI_API_KEY); default: the bundled offline embedder.")] = None,
    embedder: Annotated[Optional[str], typer.Option("--embedder", help=_EVAL_HELP["embedder"])] = None,
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
             retriever=retriever, embedder=embedder, data_format=data_format)


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
