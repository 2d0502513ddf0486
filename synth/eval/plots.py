"""`synth eval --plot`: one bar chart per metric and grouping, from summary.json's numbers."""

from __future__ import annotations

from pathlib import Path

from synth.eval.metrics import METRICS


def write_plots(summary: dict, out: Path) -> list[Path]:
    """One PNG per grouping: a bar chart per metric, one bar per question type (or dimension)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for group in ("by_question_type", "by_dimension"):
        names = list(summary[group])
        if not names:
            continue
        fig, axes = plt.subplots(3, 4, figsize=(16, 10), sharey=True)
        for ax, metric in zip(axes.flat, METRICS, strict=False):  # 12 panels, fewer metrics
            means = [summary[group][n][metric]["mean"] or 0.0 for n in names]
            ax.bar(range(len(names)), means, color="#4c72b0")
            ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
            ax.set_title(metric, fontsize=10)
            ax.set_ylim(0, 1)
        for ax in list(axes.flat)[len(METRICS):]:
            ax.axis("off")
        fig.suptitle(f"{summary['settings']['system']} k={summary['settings']['k']} — {group.replace('_', ' ')}")
        fig.tight_layout()
        path = out / f"{group}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths
