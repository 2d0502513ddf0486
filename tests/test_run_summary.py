"""The end of a run says what it made: per persona traces and tokens, items generated → final, the top rejection
reasons and the cost; and, when nothing survived, one line in plain words saying why and what to do."""

from __future__ import annotations

import json
import shutil

from kit import run_synth

from synth.release.summary import persona_summary, run_summary, summary_lines


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _persona(root, pid, final, rejected, cost=0.25, calls=40):
    d = root / pid
    (d / "manifests").mkdir(parents=True)
    _write(d / "persona.jsonl", [{"id": pid, "name": "Ana Ruiz"}])
    _write(d / "traces.jsonl", [{"id": "t1", "content": "x" * 40, "tokens": 10}, {"id": "t2", "content": "y" * 80}])
    _write(d / "final.jsonl", [{"id": f"f{i}"} for i in range(final)])
    _write(d / "rejected.jsonl", [{"id": f"r{i}", "filter": f} for i, f in enumerate(rejected)])
    (d / "manifests" / "qa.json").write_text(json.dumps({"provider_calls": calls, "cost_usd": cost}))
    return d


def test_the_summary_counts_traces_items_rejections_and_cost(tmp_path):
    d = _persona(tmp_path, "p1", final=2, rejected=["blind", "blind", "sufficiency", "length", "blind"])
    row = persona_summary(d)
    assert (row["name"], row["traces"], row["trace_tokens"]) == ("Ana Ruiz", 2, 10 + 20)
    assert (row["generated"], row["final"]) == (7, 2)
    assert row["top_rejections"][0] == ("blind", 3) and len(row["top_rejections"]) == 3
    assert (row["calls"], row["cost_usd"], row["calls_per_final"]) == (40, 0.25, 20.0)
    line = summary_lines([row])[0]
    assert "items 7 generated → 2 final" in line and "rejected by blind 3" in line and "$0.2500" in line
    assert len(summary_lines([row])) == 1, "a run that kept items needs no explanation line"


def test_nothing_survived_is_said_in_plain_words_with_the_remedy(tmp_path):
    _persona(tmp_path, "p1", final=0, rejected=["blind", "blind", "sufficiency"])
    rows = run_summary(tmp_path)
    local = summary_lines(rows, "local", default_local=True)[-1]
    assert local.startswith("no final item: all 3 generated items were rejected, most by the 'blind' filter (2)")
    assert "smoke test" in local and "make dataset PROVIDER=anthropic" in local
    assert "random" in summary_lines(rows, "fake")[-1]
    assert "rejected.jsonl" in summary_lines(rows, "openai")[-1]


def test_a_run_that_generated_nothing_says_so(tmp_path):
    _persona(tmp_path, "p1", final=0, rejected=[])
    assert "no question was generated" in summary_lines(run_summary(tmp_path), "openai")[-1]


def test_before_the_filter_the_summary_counts_the_written_items_and_says_not_filtered(tmp_path):
    d = _persona(tmp_path, "p1", final=0, rejected=[])
    (d / "final.jsonl").unlink()
    (d / "rejected.jsonl").unlink()
    _write(d / "qa.jsonl", [{"id": f"q{i}"} for i in range(16)])
    lines = summary_lines(run_summary(tmp_path), "openai")
    assert len(lines) == 1 and "items 16 generated, not filtered yet" in lines[0], lines


def test_a_fake_run_ends_with_the_summary_and_stats_shows_it_first(tiny_dataset, tmp_path):
    out = tmp_path / "data"
    shutil.copytree(tiny_dataset, out)
    rows = run_summary(out)
    assert rows and rows[0]["traces"] > 0
    stats = run_synth("stats", "--out", str(out))
    assert stats.returncode == 0, stats.stderr
    first = stats.stdout.strip().splitlines()[0]
    assert first.startswith(f"{rows[0]['persona']} (") and f"{rows[0]['traces']} traces" in first
    # an empty filter result: the run's last lines say that nothing survived and why
    for path in out.glob("*/final.jsonl"):
        path.write_text("", encoding="utf-8")
    again = run_synth("stats", "--out", str(out))
    assert "no final item:" in again.stdout and "random" in again.stdout
