"""The charts people look at before trusting a dataset: traces per week per medium, each persona's arc states over
time, and the validity panel (blind accuracy per type against chance, key positions, option-length ratio).
`synth stats --plot` writes them under <out>/stats/ and the HF export copies them into its dataset card."""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from pathlib import Path

from synth.core.fields import as_date, day_of
from synth.quality import rules
from synth.release.view import PersonaView, dict_list, text

CHANCE = 0.2  # a blind pick among five options
WEEK = dt.timedelta(days=7)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _cjk_font() -> str | None:
    from matplotlib import font_manager

    names = ("Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "WenQuanYi Zen Hei", "SimHei",
             "Microsoft YaHei", "PingFang SC")
    present = {f.name for f in font_manager.fontManager.ttflist}
    return next((n for n in names if n in present), None)


def label(value: str, fallback: str) -> str:
    """A label matplotlib can draw: text outside Latin-1 needs a CJK font, which many hosts lack (then the fallback,
    so a chart never shows empty boxes)."""
    if all(ord(ch) < 0x250 for ch in value):
        return value
    return value if _cjk_font() else fallback


def week_of(day: dt.date) -> dt.date:
    return day - dt.timedelta(days=day.weekday())


def weekly_counts(traces: list[dict], start: dt.date | None = None,
                  end: dt.date | None = None) -> tuple[list[dt.date], dict[str, list[int]]]:
    """Traces per ISO week (Monday) per medium, every week from the first to the last (the timeline's `start` and
    `end` when given, so silent stretches at either end show), empty weeks as 0."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for trace in traces:
        day = day_of(trace.get("time"))
        if day is not None:
            counts[text(trace.get("medium")) or "?"][week_of(day)] += 1
    weeks_seen = sorted({w for c in counts.values() for w in c})
    if not weeks_seen:
        return [], {}
    first = min(weeks_seen[0], week_of(start)) if start else weeks_seen[0]
    last = max(weeks_seen[-1], week_of(end)) if end else weeks_seen[-1]
    weeks = [first + WEEK * i for i in range((last - first).days // 7 + 1)]
    return weeks, {medium: [c[w] for w in weeks] for medium, c in sorted(counts.items())}


def arc_steps(view: PersonaView) -> dict[str, list[tuple[dt.date, int]]]:
    """Per arc id: (date, anchor index reached) in time order, from the major events' alignment, and from phases
    when they carry their own `arc_states` (a finer record some datasets have)."""
    steps: dict[str, list[tuple[dt.date, int]]] = defaultdict(list)
    for record in [*view.majors, *view.phases]:
        start = as_date(record.get("start"))
        for state in dict_list(record.get("arc_states")):
            if start is not None and isinstance(state.get("anchor_index"), int):
                steps[text(state.get("arc_id"))].append((start, state["anchor_index"]))
    return {arc: sorted(set(points)) for arc, points in steps.items()}


def option_length_ratios(items: list[dict]) -> list[float]:
    """For each answerable item: the key's length over the mean length of the other A–D options (1.0 = no cue)."""
    ratios = []
    for item in items:
        if not rules.answerable(text(item.get("question_type"))):
            continue
        choices = {text(c.get("id")): text(c.get("text")) for c in dict_list(item.get("choices"))}
        key = text(item.get("correct_choice_id"))
        others = [len(choices[c]) for c in rules.POSITIONS if c in choices and c != key]
        if key in choices and others and sum(others):
            ratios.append(len(choices[key]) / (sum(others) / len(others)))
    return ratios


def plot_timeline_density(view: PersonaView, path: Path) -> Path | None:
    weeks, by_medium = weekly_counts(view.traces, as_date(view.persona.get("start")), as_date(view.persona.get("end")))
    if not weeks:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 3.5))
    bottom = [0] * len(weeks)
    for medium, counts in by_medium.items():
        ax.bar(weeks, counts, width=6, bottom=bottom, label=medium, align="edge")
        bottom = [b + c for b, c in zip(bottom, counts, strict=True)]
    ax.set_title(f"{view.id}: traces per week per medium")
    ax.set_ylabel("traces")
    ax.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.autofmt_xdate()
    return _save(fig, path, plt)


def _short(value: str, limit: int = 28) -> str:
    return value if len(value) <= limit else value[: limit - 1] + "…"


def plot_arc_states(view: PersonaView, path: Path) -> Path | None:
    """One lane per arc; the line climbs within its lane as the arc reaches later anchor states, and each change is
    labelled with the state reached."""
    steps = arc_steps(view)
    arcs = [a for a in view.arcs if steps.get(text(a.get("id")))]
    if not arcs:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 1.4 + 1.0 * len(arcs)))
    end = as_date(view.persona.get("end"))
    for lane, arc in enumerate(arcs):
        points = steps[text(arc["id"])]
        states = dict_list(arc.get("anchor_states"))
        top = max(1, len(states) - 1)
        xs = [d for d, _ in points] + ([end] if end and end > points[-1][0] else [])
        ys = [lane + i / top * 0.7 for _, i in points]
        ax.step(xs, ys + ys[-1:] * (len(xs) - len(ys)), where="post", linewidth=2)
        previous = None
        for (day, index), y in zip(points, ys, strict=True):
            if index != previous:
                name = text(states[index].get("label")) if index < len(states) else ""
                ax.annotate(f"{index}: {_short(label(name, f'state {index}'))}", (day, y), fontsize=7,
                            xytext=(2, 3), textcoords="offset points")
            previous = index
    names = [_short(label(text(a.get("title")), f"{text(a.get('dimension'))} arc {i + 1}"), 36)
             for i, a in enumerate(arcs)]
    ax.set_yticks([lane + 0.35 for lane in range(len(arcs))], names, fontsize=8)
    ax.set_ylim(-0.3, len(arcs))
    ax.set_title(f"{view.id}: arc states (anchor index reached, per major event)", fontsize=10)
    fig.autofmt_xdate()
    return _save(fig, path, plt)


def plot_validity(validity: dict, items: list[dict], path: Path) -> Path:
    plt = _pyplot()
    fig, (blind, positions, lengths) = plt.subplots(1, 3, figsize=(12, 3.6))
    by_type = validity.get("blind_by_type") or {}
    blind.bar(list(by_type), [row.get("accuracy", 0) for row in by_type.values()])
    blind.axhline(CHANCE, color="red", linestyle="--", label="chance (1 in 5)")
    blind.set_ylim(0, 1)
    blind.set_title("blind accuracy per type")
    blind.tick_params(axis="x", labelrotation=45, labelsize=7)
    blind.legend(fontsize=7)
    shares = validity.get("positions") or {}
    positions.bar(list(shares), list(shares.values()))
    positions.axhline(0.25, color="red", linestyle="--", label="balanced (25%)")
    positions.set_ylim(0, 1)
    positions.set_title("correct option position (answerable)")
    positions.legend(fontsize=7)
    ratios = option_length_ratios(items)
    lengths.hist(ratios or [1.0], bins=12, color="tab:gray" if not ratios else None)
    lengths.axvline(1.0, color="red", linestyle="--", label="key as long as the others")
    lengths.set_title(f"key length / other options' mean (n={len(ratios)})")
    lengths.legend(fontsize=7)
    return _save(fig, path, plt)


def _save(fig, path: Path, plt) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_dataset(views: list[PersonaView], validity: dict, target: Path) -> list[Path]:
    """Every chart of this module under `target`: one density and one arc chart per persona, one validity panel."""
    paths = []
    for view in views:
        paths.append(plot_timeline_density(view, target / f"timeline_density_{view.id}.png"))
        paths.append(plot_arc_states(view, target / f"arc_states_{view.id}.png"))
    paths.append(plot_validity(validity, [i for v in views for i in v.final], target / "validity.png"))
    return [p for p in paths if p is not None]
