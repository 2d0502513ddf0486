"""Dataset statistics: counts, rejections, blind accuracy, option-position and option-length bias, optional charts."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from synth import rules
from synth.jsonl import read_records
from synth.models import MCQ, FinalItem, Persona, Rejected, Trace

POSITIONS = rules.POSITIONS


def answerable(item: MCQ) -> bool:
    return rules.answerable(item.question_type)


def option_text(item: MCQ, choice_id: str) -> str:
    return rules.choice_text(((c.id, c.text) for c in item.choices), choice_id)


def distractor_texts(item: MCQ) -> list[str]:
    return rules.distractors_of(((c.id, c.text) for c in item.choices), item.correct_choice_id)


def correct_is_longest(item: MCQ) -> bool:
    """The correct option is strictly longer than every other A–D option (answerable items only)."""
    return rules.correct_is_longest(option_text(item, item.correct_choice_id), distractor_texts(item))


def position_shares(items: Iterable[MCQ]) -> dict[str, float]:
    """Share of answerable items whose correct option is A, B, C, D."""
    counts = Counter(i.correct_choice_id for i in items if answerable(i))
    total = sum(counts.values())
    return {p: round(counts[p] / total, 4) if total else 0.0 for p in POSITIONS}


def bias_report(items: Sequence[MCQ], tolerance: float = 0.05) -> dict:
    """Position balance (each of A–D within ±tolerance of 25%) and the correct-is-longest rate (goal ≤ 25%)."""
    graded = [i for i in items if answerable(i)]
    shares = position_shares(graded)
    longest = sum(correct_is_longest(i) for i in graded) / len(graded) if graded else 0.0
    return {
        "answerable": len(graded),
        "positions": shares,
        "position_balance_ok": bool(graded) and all(abs(s - 0.25) <= tolerance for s in shares.values()),
        "correct_is_longest_rate": round(longest, 4),
        "correct_is_longest_ok": longest <= 0.25,
    }


def blind_accuracy(items: Iterable[FinalItem]) -> dict:
    """How often the no-context validator picked the right option, over every item it answered."""
    answered = [i for i in items if i.blind_choice]
    right = [i for i in answered if i.blind_choice == i.correct_choice_id]
    graded = [i for i in answered if answerable(i)]
    graded_right = [i for i in graded if i.blind_choice == i.correct_choice_id]
    return {
        "blind_answered": len(answered),
        "blind_accuracy": round(len(right) / len(answered), 4) if answered else 0.0,
        "blind_accuracy_answerable": round(len(graded_right) / len(graded), 4) if graded else 0.0,
    }


# ------------------------------------------------------------------------------------------- dataset view

def _read(path: Path, model):
    return read_records(path, model) if path.is_file() else []


def persona_dirs(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if p.is_dir() and (p / "persona.jsonl").is_file()) if out.is_dir() else []


def trace_tokens(traces: Sequence[Trace]) -> int:
    from synth.llm.fake import estimate_tokens

    return sum(t.tokens or estimate_tokens(t.content) for t in traces)


def collect(out: Path) -> dict:
    """Every number `synth stats` prints, as a dict (tests and charts read it)."""
    final: list[FinalItem] = []
    rejected: list[Rejected] = []
    media: Counter = Counter()
    personas = {}
    for directory in persona_dirs(out):
        persona = _read(directory / "persona.jsonl", Persona)
        traces = _read(directory / "traces.jsonl", Trace)
        kept = _read(directory / "final.jsonl", FinalItem)
        dropped = _read(directory / "rejected.jsonl", Rejected)
        final += kept
        rejected += dropped
        media.update(t.medium for t in traces)
        personas[directory.name] = {
            "name": persona[0].name if persona else "", "traces": len(traces), "trace_tokens": trace_tokens(traces),
            "final": len(kept), "rejected": len(dropped),
        }
    return {
        "personas": personas,
        "final": len(final),
        "by_type": dict(Counter(i.question_type for i in final).most_common()),
        "by_dimension": dict(Counter(i.dimension for i in final).most_common()),
        "by_medium": dict(media.most_common()),
        "rejected_by_filter": dict(Counter(r.filter for r in rejected).most_common()),
        **blind_accuracy([*final, *rejected]),
        **bias_report(final),
    }


def _table(title: str, counts: dict, total: int | None = None) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("")
    table.add_column("count", justify="right")
    if total:
        table.add_column("share", justify="right")
    for key, value in counts.items():
        row = [str(key), str(value)]
        if total:
            row.append(f"{value / total:.1%}")
        table.add_row(*row)
    return table


def print_stats(out: Path, console: Console, plot: bool = False) -> dict:
    data = collect(out)
    people = Table(title="personas", title_justify="left")
    for col in ("persona", "name", "traces", "trace tokens", "final", "rejected"):
        people.add_column(col, justify="left" if col in ("persona", "name") else "right")
    for pid, row in data["personas"].items():
        people.add_row(pid, row["name"], str(row["traces"]), f"{row['trace_tokens']:,}", str(row["final"]),
                       str(row["rejected"]))
    console.print(people)
    console.print(_table("final items by question type", data["by_type"], data["final"]))
    console.print(_table("final items by dimension", data["by_dimension"], data["final"]))
    console.print(_table("traces by medium", data["by_medium"], sum(data["by_medium"].values())))
    console.print(_table("rejections by filter", data["rejected_by_filter"]))
    console.print(_table("correct position (answerable final items)",
                         {p: f"{s:.1%}" for p, s in data["positions"].items()}))
    console.print(
        f"blind-test accuracy {data['blind_accuracy']:.1%} over {data['blind_answered']} items "
        f"({data['blind_accuracy_answerable']:.1%} on answerable; chance is 20%) · "
        f"correct option is the longest in {data['correct_is_longest_rate']:.1%} of answerable final items "
        f"(goal ≤ 25%: {'ok' if data['correct_is_longest_ok'] else 'MISSED'}) · "
        f"position balance {'ok' if data['position_balance_ok'] else 'MISSED'} (each of A–D within 25% ± 5)"
    )
    if plot:
        for path in plot_stats(out, data):
            console.print(str(path))
    return data


def plot_stats(out: Path, data: dict) -> list[Path]:
    """Bar charts of the distributions as PNGs under out/stats/ (matplotlib only when asked for)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    target = out / "stats"
    target.mkdir(parents=True, exist_ok=True)
    paths = []
    charts = {"question_types": data["by_type"], "dimensions": data["by_dimension"], "media": data["by_medium"],
              "rejections": data["rejected_by_filter"], "positions": data["positions"]}
    for name, counts in charts.items():
        fig, ax = plt.subplots(figsize=(7, 3.5))
        ax.bar([str(k) for k in counts], list(counts.values()))
        ax.set_title(name.replace("_", " "))
        ax.tick_params(axis="x", labelrotation=30)
        fig.tight_layout()
        path = target / f"{name}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    (target / "stats.json").write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    return paths
