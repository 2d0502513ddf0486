"""`synth eval compare RUN_DIR...`: several runs' summaries side by side — one table of systems × metrics (overall and
per question type, each cell a mean over its 95% interval), the ingest cost per system, and a grouped bar chart."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from synth.core.errors import InputError
from synth.eval.metrics import METRICS


def _summary(run: Path) -> dict:
    path = Path(run) / "summary.json"
    if not path.is_file():
        raise InputError(f"{run}: no summary.json (not a `synth eval` output folder)")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc.msg})") from None


def compare_runs(runs: list[Path]) -> dict:
    """The runs' numbers in one structure (compare.json): per system its settings, overall and per-type metrics,
    counts and ingest cost. Runs of different data or protocol are refused: their numbers do not compare."""
    if not runs:
        raise InputError("synth eval compare: name at least one RUN_DIR")
    systems = []
    for run in runs:
        summary = _summary(run)
        settings = summary.get("settings", {})
        systems.append({"name": settings.get("system") or Path(run).name, "run": str(run), "settings": settings,
                        "overall": summary.get("overall", {}), "by_question_type": summary.get("by_question_type", {}),
                        "counts": summary.get("counts", {}), "ingest": summary.get("ingest")})
    first = systems[0]["settings"]
    for system in systems[1:]:
        for key in ("data", "protocol", "k"):
            if system["settings"].get(key) != first.get(key):
                raise InputError(f"{system['run']}: {key} is {system['settings'].get(key)!r}, but {systems[0]['run']} "
                                 f"has {first.get(key)!r}; runs compared side by side must share it")
    names = [s["name"] for s in systems]
    for i, system in enumerate(systems):  # two runs of one system name (e.g. two --out folders): tell them apart
        if names.count(system["name"]) > 1:
            system["name"] = f"{system['name']} ({Path(system['run']).name or i})"
    types = sorted({t for s in systems for t in s["by_question_type"]})
    return {"data": first.get("data"), "protocol": first.get("protocol"), "k": first.get("k"),
            "question_types": types, "systems": systems}


def _cell(cell: dict | None) -> str:
    if not cell or cell.get("mean") is None:
        return "—"
    return f"{cell['mean']:.3f}\n[{cell['ci_low']:.2f}, {cell['ci_high']:.2f}]"


def metric_tables(table: dict, title: str, pick, width: int) -> list[Table]:
    """Rows: metrics; columns: systems; each cell the mean over its 95% interval (`pick(system)` → metric cells).
    Systems are split over as many tables as the terminal's width needs."""
    label = max(len(m) for m in (*METRICS, "n (questions)")) + 3
    per_table = max(1, (width - label - 1) // 15)  # a cell: "[0.00, 0.00]" plus padding and a border
    systems = table["systems"]
    chunks = [systems[i:i + per_table] for i in range(0, len(systems), per_table)]
    tables = []
    for number, chunk in enumerate(chunks, 1):
        part = f" ({number}/{len(chunks)})" if len(chunks) > 1 else ""
        out = Table(title=title + part, show_lines=True)
        out.add_column("metric", no_wrap=True)
        for system in chunk:
            out.add_column(system["name"], justify="right", overflow="fold", min_width=12)
        out.add_row("n (questions)", *(str(max((c.get("n", 0) for c in pick(s).values()), default=0))
                                       for s in chunk))
        for metric in METRICS:
            out.add_row(metric, *(_cell(pick(s).get(metric)) for s in chunk))
        tables.append(out)
    return tables


def cost_table(table: dict) -> Table:
    out = Table(title="ingest cost and query latency")
    for column in ("system", "traces", "ingest s", "LLM calls", "tokens in/out", "query ms (mean/p95)"):
        out.add_column(column, justify="left" if column == "system" else "right", overflow="fold")
    for system in table["systems"]:
        ingest = system.get("ingest") or {}
        llm = ingest.get("llm") or {}
        out.add_row(system["name"], str(ingest.get("traces", "—")), str(ingest.get("seconds", "—")),
                    str(llm.get("provider_calls", 0)) if llm else "0",
                    f"{llm.get('input_tokens', 0)}/{llm.get('output_tokens', 0)}" if llm else "0/0",
                    f"{ingest.get('query_ms_mean', '—')}/{ingest.get('query_ms_p95', '—')}")
    return out


def print_compare(table: dict, console: Console) -> None:
    console.print(f"synth eval compare — k={table['k']} ({table['protocol']}) on {table['data']}", highlight=False)
    for part in metric_tables(table, "overall", lambda s: s["overall"], console.width):
        console.print(part)
    for qtype in table["question_types"]:
        for part in metric_tables(table, f"question_type = {qtype}",
                                  lambda s, t=qtype: s["by_question_type"].get(t, {}), console.width):
            console.print(part)
    console.print(cost_table(table))


def write_compare_plot(table: dict, path: Path) -> Path:
    """A grouped bar chart: one panel per metric, a group of bars per question type (and overall), one bar per
    system, with the 95% interval as the error bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    groups = ["overall", *table["question_types"]]
    systems = table["systems"]
    fig, axes = plt.subplots(4, 3, figsize=(18, 16), sharey=True)
    width = 0.8 / max(len(systems), 1)
    x = np.arange(len(groups))
    for ax, metric in zip(axes.flat, METRICS, strict=False):  # 12 panels, 11 metrics
        for i, system in enumerate(systems):
            cells = [system["overall"].get(metric, {}) if g == "overall"
                     else system["by_question_type"].get(g, {}).get(metric, {}) for g in groups]
            means = np.array([c.get("mean") if c.get("mean") is not None else np.nan for c in cells], dtype=float)
            low = np.array([c.get("ci_low") if c.get("ci_low") is not None else np.nan for c in cells], dtype=float)
            high = np.array([c.get("ci_high") if c.get("ci_high") is not None else np.nan for c in cells], dtype=float)
            errors = np.nan_to_num(np.vstack([means - low, high - means]), nan=0.0).clip(min=0)
            ax.bar(x + (i - (len(systems) - 1) / 2) * width, np.nan_to_num(means), width, yerr=errors, capsize=2,
                   label=system["name"])
        ax.set_xticks(x, groups, rotation=45, ha="right", fontsize=8)
        ax.set_title(metric, fontsize=10)
        ax.set_ylim(0, 1)
    for ax in list(axes.flat)[len(METRICS):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower right", fontsize=10)
    fig.suptitle(f"synth eval compare — k={table['k']} ({table['protocol']}); bars: mean, whiskers: 95% interval")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
