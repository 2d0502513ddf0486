"""`synth export --format hf` on a `tiny` fake run: `datasets.load_dataset(<folder>)` loads every config, the rows
and links match the records, and the dataset card's figures are the run's own (manifests, verdicts, dataset.json)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from kit import run_synth

from synth.core.jsonl import read_dicts as read_jsonl

datasets = pytest.importorskip("datasets", reason="the HF export test needs `datasets` (pip install -e '.[dev]')")
pytest.importorskip("pyarrow", reason="the HF export needs pyarrow (pip install -e '.[hf]')")
yaml = pytest.importorskip("yaml", reason="datasets brings PyYAML; the card's metadata is read with it")


@pytest.fixture(scope="module")
def exported(tiny_dataset, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hf") / "data"
    shutil.copytree(tiny_dataset, out)
    result = run_synth("export", "--out", str(out), "--format", "hf")
    assert result.returncode == 0, result.stderr
    return out


def _persona_dir(out: Path) -> Path:
    return next(p.parent for p in sorted(out.glob("*/persona.jsonl")))


def _card(out: Path) -> tuple[dict, str]:
    text = (out / "export" / "hf" / "README.md").read_text(encoding="utf-8")
    _, meta, body = text.split("---\n", 2)
    return yaml.safe_load(meta), body


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))  # no cache shared with other runs


def test_load_dataset_reads_every_config_with_the_records_rows(exported):
    folder = str(exported / "export" / "hf")
    directory = _persona_dir(exported)
    final = read_jsonl(directory / "final.jsonl")
    traces = read_jsonl(directory / "traces.jsonl")
    questions = datasets.load_dataset(folder, "questions", cache_dir=str(exported / "hf_cache"))
    assert list(questions) == ["100k"]  # a tiny persona is in the CloneMem export's 100k bucket too
    rows = questions["100k"]
    assert rows["id"] == [i["id"] for i in final]
    for row, item in zip(rows, final, strict=True):
        assert row["question"] == item["question"] and row["answer"] == item["answer"]
        assert row["formats"] == item["formats"]
        if "mcq" in item["formats"]:
            assert row["correct_choice_id"] == item["correct_choice_id"]
            assert [c["id"] for c in row["choices"]] == list("ABCDE")
        else:  # an open-only item carries no choices and no key
            assert row["correct_choice_id"] == "" and row["choices"] == []
        assert [e["statement"] for e in row["evidence"]] == [e["statement"] for e in item["evidence"]]
        assert row["digital_trace_ids"] == item["digital_trace_ids"]
    trace_rows = datasets.load_dataset(folder, "traces", cache_dir=str(exported / "hf_cache"))["100k"]
    assert sorted(trace_rows["id"]) == sorted(t["id"] for t in traces)
    # every trace a question names is in the traces config
    named = {t for row in rows for t in row["digital_trace_ids"]} | {
        t for row in rows for e in row["evidence"] for t in e["digital_trace_ids"]}
    assert named <= set(trace_rows["id"])
    evidence = {e["id"]: e["arc_ids"] for e in read_jsonl(directory / "evidence.jsonl")}
    for row in trace_rows:
        assert row["arc_ids"] == sorted({a for e in row["evidence_ids"] for a in evidence[e]})
    personas = datasets.load_dataset(folder, "personas", cache_dir=str(exported / "hf_cache"))["100k"]
    assert personas["id"] == [directory.name] and personas["traces"] == [len(traces)]
    # the default config is the questions
    assert datasets.load_dataset(folder, cache_dir=str(exported / "hf_cache"))["100k"]["id"] == rows["id"]


def test_card_metadata_is_the_hub_format_with_the_configured_license(exported):
    meta, _ = _card(exported)
    recorded = json.loads((exported / "dataset.json").read_text(encoding="utf-8"))
    assert meta["license"] == recorded["config"]["export"]["license"]
    assert meta["language"] == ["en"]
    assert {c["config_name"]: c["data_files"][0]["path"] for c in meta["configs"]} == {
        "questions": "data/questions/100k.parquet", "traces": "data/traces/100k.parquet",
        "personas": "data/personas/100k.parquet"}
    for config in meta["configs"]:
        assert (exported / "export" / "hf" / config["data_files"][0]["path"]).is_file()


def test_license_comes_from_config(exported, tmp_path):
    out = tmp_path / "data"
    shutil.copytree(exported, out)
    path = out / "dataset.json"
    recorded = json.loads(path.read_text(encoding="utf-8"))
    recorded["config"]["export"]["license"] = "mit"
    path.write_text(json.dumps(recorded), encoding="utf-8")
    assert run_synth("export", "--out", str(out), "--format", "hf").returncode == 0
    meta, body = _card(out)
    assert meta["license"] == "mit" and body.rstrip().endswith("mit")


def _row(body: str, first: str, columns: int | None = None) -> list[str]:
    """The cells of the card's table row that starts with `first` (and has `columns` cells, when given)."""
    rows = [[c.strip() for c in x.strip().strip("|").split("|")] for x in body.splitlines() if x.startswith(f"| {first} |")]
    return next(r for r in rows if columns is None or len(r) == columns)


def test_card_figures_come_from_the_records(exported):
    _, body = _card(exported)
    directory = _persona_dir(exported)
    items = read_jsonl(directory / "final.jsonl") + read_jsonl(directory / "rejected.jsonl")
    # pass rate per check, from every item's verdicts
    for name in ("format", "blind", "length"):
        verdicts = [v for i in items for v in i["verdicts"] if v["filter"] == name]
        passed = sum(v["passed"] for v in verdicts)
        assert _row(body, name)[1:4] == [str(len(verdicts)), str(passed), f"{passed / len(verdicts):.1%}"]
    # the validity figures are dataset.json's
    validity = json.loads((exported / "dataset.json").read_text(encoding="utf-8"))["validity"]
    assert f"is the longest in {validity['correct_is_longest_rate']:.1%}" in body
    for qtype, row in validity["blind_by_type"].items():
        assert _row(body, qtype, columns=5)[1:3] == [str(row["picks"]), f"{row['accuracy']:.1%}"]
    # prompt hashes and calls from the manifests
    manifest = json.loads((directory / "manifests" / "qa.json").read_text(encoding="utf-8"))
    for template, digest in manifest["template_hashes"].items():
        assert f"| `{template}` | `{digest}` |" in body
    assert _row(body, "qa")[2] == str(manifest["provider_calls"])
    # counts per medium
    for medium, n in _count(read_jsonl(directory / "traces.jsonl"), "medium").items():
        assert _row(body, medium)[1] == str(n)
    assert "Generated with the `fake` provider" in body
    assert re.search(r"!\[figures/validity\.png\]\(figures/validity\.png\)", body)
    for figure in ("validity.png", f"timeline_density_{directory.name}.png", f"arc_states_{directory.name}.png"):
        assert (exported / "export" / "hf" / "figures" / figure).stat().st_size > 1000


def _count(records: list[dict], key: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in records:
        counts[r[key]] = counts.get(r[key], 0) + 1
    return counts


@pytest.mark.parametrize("change", ["final_changed", "older_record"])
def test_stale_recorded_validity_is_recomputed(exported, tmp_path, change):
    """dataset.json's validity describes final.jsonl as the filter left it; once final.jsonl changes (a review
    import), or when it was recorded before a figure existed, the card's figures are recomputed from the records
    and say so."""
    out = tmp_path / "data"
    shutil.copytree(exported, out)
    path = out / "dataset.json"
    recorded = json.loads(path.read_text(encoding="utf-8"))
    if change == "final_changed":
        recorded["validity"]["final"] += 1  # no longer the number of final items
    else:
        del recorded["validity"]["key_central_rate"]
    path.write_text(json.dumps(recorded), encoding="utf-8")
    assert run_synth("export", "--out", str(out), "--format", "hf").returncode == 0
    _, body = _card(out)
    assert "(recomputed from final.jsonl / rejected.jsonl)" in body


def test_an_old_dataset_without_the_export_section_still_resolves(exported, tmp_path):
    out = tmp_path / "data"
    shutil.copytree(exported, out)
    path = out / "dataset.json"
    recorded = json.loads(path.read_text(encoding="utf-8"))
    del recorded["config"]["export"]
    path.write_text(json.dumps(recorded), encoding="utf-8")
    result = run_synth("status", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert run_synth("export", "--out", str(out), "--format", "hf").returncode == 0
    assert _card(out)[0]["license"] == "cc-by-4.0"  # presets.toml's default


def test_no_dataset_is_one_line_exit_2(tmp_path):
    result = run_synth("export", "--out", str(tmp_path / "nothing"), "--format", "hf")
    assert result.returncode == 2 and "no such dataset directory" in result.stderr
    assert not (tmp_path / "nothing").exists()
