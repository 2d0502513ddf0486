"""The figures behind `synth stats --plot` and the dataset card: their numbers on hand-made records, and the PNGs on
a `tiny` fake run."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
from kit import run_synth

from synth.release.charts import arc_steps, label, option_length_ratios, weekly_counts
from synth.release.view import PersonaView


def test_weekly_counts_per_medium_include_empty_weeks():
    traces = [{"time": "2022-01-03T09:00:00", "medium": "diary"},  # Monday of week 1
              {"time": "2022-01-09T23:00:00", "medium": "diary"},  # Sunday, still week 1
              {"time": "2022-01-10T08:00:00", "medium": "email"},  # week 2
              {"time": "2022-01-26T08:00:00", "medium": "diary"},  # week 4 (week 3 empty)
              {"time": "not a date", "medium": "diary"}]
    weeks, counts = weekly_counts(traces)
    assert weeks == [dt.date(2022, 1, 3), dt.date(2022, 1, 10), dt.date(2022, 1, 17), dt.date(2022, 1, 24)]
    assert counts == {"diary": [2, 0, 0, 1], "email": [0, 1, 0, 0]}
    assert weekly_counts([]) == ([], {})
    # the persona's timeline widens the span: quiet weeks at either end are shown as zeros
    weeks, counts = weekly_counts(traces, start=dt.date(2021, 12, 29), end=dt.date(2022, 2, 1))
    assert weeks[0] == dt.date(2021, 12, 27) and weeks[-1] == dt.date(2022, 1, 31) and len(weeks) == 6
    assert counts["diary"] == [0, 2, 0, 0, 1, 0]


def test_arc_steps_follow_the_major_events_and_phases_that_carry_states():
    view = PersonaView(directory=Path("p"), persona={"id": "p"}, majors=[
        {"start": "2022-03-01", "arc_states": [{"arc_id": "a", "anchor_index": 1}, {"arc_id": "b", "anchor_index": 0}]},
        {"start": "2022-01-01", "arc_states": [{"arc_id": "a", "anchor_index": 0}]},
    ], phases=[{"start": "2022-02-01", "arc_states": [{"arc_id": "a", "anchor_index": 1}]},
               {"start": "2022-02-10"}])  # a phase without states is skipped
    assert arc_steps(view) == {"a": [(dt.date(2022, 1, 1), 0), (dt.date(2022, 2, 1), 1), (dt.date(2022, 3, 1), 1)],
                               "b": [(dt.date(2022, 3, 1), 0)]}


def test_option_length_ratio_is_key_over_mean_of_the_other_options():
    choices = [{"id": c, "text": t} for c, t in zip("ABCDE", ["xxxx", "xx", "xxxxxx", "xxxx", "unknown"], strict=True)]
    items = [{"question_type": "factual", "choices": choices, "correct_choice_id": "A"},
             {"question_type": "unanswerable", "choices": choices, "correct_choice_id": "E"}]
    assert option_length_ratios(items) == [pytest.approx(4 / 4)]
    items[0]["correct_choice_id"] = "C"
    assert option_length_ratios(items) == [pytest.approx(6 / (10 / 3))]


def test_labels_fall_back_when_no_font_can_draw_them(monkeypatch):
    import synth.release.charts as plots

    monkeypatch.setattr(plots, "_cjk_font", lambda: None)
    assert label("Career doubt", "arc 1") == "Career doubt"
    assert label("事业怀疑", "arc 1") == "arc 1"
    monkeypatch.setattr(plots, "_cjk_font", lambda: "Noto Sans CJK SC")
    assert label("事业怀疑", "arc 1") == "事业怀疑"


def test_stats_plot_writes_the_new_charts(tiny_dataset, tmp_path):
    pytest.importorskip("matplotlib", reason="charts need matplotlib (the dev extra)")
    out = tmp_path / "data"
    shutil.copytree(tiny_dataset, out)
    result = run_synth("stats", "--out", str(out), "--plot")
    assert result.returncode == 0, result.stderr
    persona = next(p.parent.name for p in out.glob("*/persona.jsonl"))
    for name in (f"timeline_density_{persona}.png", f"arc_states_{persona}.png", "validity.png"):
        path = out / "stats" / name
        assert str(path) in result.stdout.replace("\n", "")
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 1000
