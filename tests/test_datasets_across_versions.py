"""Datasets outlive versions: a `tiny` dataset written by an older synth (tests/fixtures/tiny_48608eb, made with
commit 48608eb, before typed settings) still shows its status, re-runs, exports and evaluates; records written by
another version are read; an empty run's exports load or refuse in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from kit import PERSONAS, run_synth

from synth.core.errors import InputError
from synth.core.jsonl import read_records, write_atomic
from synth.records import FILES

FIXTURE = Path(__file__).parent / "fixtures" / "tiny_48608eb"


@pytest.fixture
def old(tmp_path) -> Path:
    """A copy of the old dataset (commands write into it)."""
    target = tmp_path / "old"
    shutil.copytree(FIXTURE, target)
    return target


def _first_line(stderr: str) -> str:
    return " ".join(stderr.split("\n\n")[0].split())  # rich wraps long lines; compare the words


def test_status_names_what_the_old_dataset_json_lacked_and_dropped(old):
    result = run_synth("status", "--out", str(old), "--personas", str(PERSONAS))
    assert result.returncode == 0, result.stderr
    first = _first_line(result.stderr)
    assert first.startswith(f"{old / 'dataset.json'} predates: [arcs] everyday_min_days = 3 (default)"), first
    assert "[chats] (a new section, its defaults)" in first
    words = " ".join(result.stderr.split())
    assert "[traces] media: a single mix, now per language" in words
    assert "ignored: [events] events_per_phase, [filter] blind_confidence" in words
    # the settings filled in change the stages' signatures: stale (or missing), never re-run by status
    assert "stale" in result.stdout and "fresh" not in result.stdout
    assert json.loads((old / "dataset.json").read_text()) == json.loads((FIXTURE / "dataset.json").read_text())


def test_a_recorded_value_now_invalid_is_one_line_naming_file_key_and_value(old):
    recorded = json.loads((old / "dataset.json").read_text())
    recorded["config"]["arcs"]["arcs_per_dimension"] = 0
    (old / "dataset.json").write_text(json.dumps(recorded))
    result = run_synth("status", "--out", str(old), "--personas", str(PERSONAS))
    assert result.returncode == 2
    assert " ".join(result.stderr.split()) == (
        f"error: {old / 'dataset.json'}: [arcs] arcs_per_dimension: Input should be greater than or equal to 1 "
        "(got 0)")


def test_filter_force_then_qa_rerun_the_old_dataset(old):
    result = run_synth("filter", "--force", "--out", str(old), "--personas", str(PERSONAS))
    assert result.returncode == 0, result.stderr
    assert _first_line(result.stderr).startswith(f"{old / 'dataset.json'} predates:")
    manifest = json.loads((old / "p01_maya" / "manifests" / "filter.json").read_text())
    assert manifest["synth_version"] and manifest["status"] == "complete"
    recorded = json.loads((old / "dataset.json").read_text())
    assert recorded["synth_version"] == manifest["synth_version"]
    assert recorded["config"]["arcs"]["everyday_min_days"] == 3  # written back grown: the next command says nothing
    assert "blind_confidence" not in recorded["config"]["filter"]
    result = run_synth("qa", "--out", str(old), "--personas", str(PERSONAS))
    assert result.returncode == 0, result.stderr
    assert "predates" not in result.stderr


def test_run_regenerates_the_old_dataset_and_ends_fresh(old):
    result = run_synth("run", "--out", str(old), "--personas", str(PERSONAS))
    assert result.returncode == 0, result.stderr
    status = run_synth("status", "--out", str(old), "--personas", str(PERSONAS))
    assert status.returncode == 0 and "predates" not in status.stderr
    rows = [line.split("│") for line in status.stdout.splitlines() if "p01_maya" in line]
    assert len(rows) == 12 and {row[3].strip() for row in rows} == {"fresh"}, status.stdout


def test_every_export_of_the_old_dataset(old):
    from synth.release.clonemem import load_clonemem

    result = run_synth("export", "--format", "clonemem", "--out", str(old))
    assert result.returncode == 0, result.stderr
    exported = load_clonemem(old / "export" / "clonemem" / "100k" / "p01_maya_benchmark_en.json")
    assert len(exported.questions) == 1 and exported.context
    for layout, source in (("lifedial", "lifelog.jsonl"), ("evermem", "chats.jsonl")):
        result = run_synth("export", "--format", layout, "--out", str(old))
        assert result.returncode == 2 and source in result.stderr and not (old / "export" / layout).exists()
    pytest.importorskip("pyarrow")
    result = run_synth("export", "--format", "hf", "--out", str(old))
    assert result.returncode == 0, result.stderr
    datasets = pytest.importorskip("datasets")
    loaded = datasets.load_dataset(str(old / "export" / "hf"), "questions", cache_dir=str(old / ".hf-cache"))
    assert loaded["100k"].num_rows == 1


def test_eval_scores_the_old_dataset(old, tmp_path):
    result = run_synth("eval", "--data", str(old), "--system", "oracle", "--answerer-provider", "fake",
                       "--judge-provider", "fake", "--out", str(tmp_path / "eval"))
    assert result.returncode == 0, result.stderr
    assert "1/1 question(s) scored" in " ".join(result.stdout.split() + result.stderr.split())


# ------------------------------------------------------------------------------------------------ records

def test_a_field_from_another_version_is_kept_when_the_record_is_rewritten(tmp_path):
    path = tmp_path / "traces.jsonl"
    rows = [json.loads(line) for line in (FIXTURE / "p01_maya" / "traces.jsonl").read_text().splitlines()]
    rows[0]["mood"] = "calm"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    records = read_records(path, FILES["traces.jsonl"])
    assert type(records[1]) is FILES["traces.jsonl"]  # only the record with the unknown field is read apart
    write_atomic(path, records)
    assert json.loads(path.read_text().splitlines()[0])["mood"] == "calm"


def test_a_record_that_cannot_be_read_says_which_version_wrote_it(old):
    path = old / "p01_maya" / "traces.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["time"] = "sometime in spring"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError) as raised:
        read_records(path, FILES["traces.jsonl"])
    message = str(raised.value)
    assert message.startswith(f"{path}: line 1: time: ")
    assert "written by a synth from before versions were recorded (stage traces)" in message
    assert "--force" in message


# ------------------------------------------------------------------------------------------------ empty runs

@pytest.fixture(scope="module")
def empty_run(tmp_path_factory) -> Path:
    """A tiny fake run with every source on whose filters keep nothing (the fake's judges reject tiny's items)."""
    out = tmp_path_factory.mktemp("empty") / "data"
    config = out.parent / "sources.toml"
    config.write_text('sources = ["written", "group_chat", "lifelog"]\n')
    result = run_synth("run", "--preset", "tiny", "--provider", "fake", "--out", str(out), "--personas",
                       str(PERSONAS), "--config", str(config))
    assert result.returncode == 0, result.stderr
    # Whether the fake's random judges keep one of tiny's items shifts with every prompt edit: empty the filter's
    # output so the run is one whose filters kept nothing, whatever the draw.
    for final in out.glob("*/final.jsonl"):
        final.write_text("", encoding="utf-8")
    return out


def test_an_empty_run_hf_export_refuses_in_one_line_and_writes_nothing(empty_run):
    result = run_synth("export", "--format", "hf", "--out", str(empty_run))
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) <= 3 and "no final item" in result.stderr
    assert not (empty_run / "export" / "hf").exists()


def test_an_empty_run_clonemem_and_spoken_exports_load_empty(empty_run, tmp_path):
    from synth.release.clonemem import load_clonemem

    assert run_synth("export", "--out", str(empty_run)).returncode == 0
    [benchmark] = (empty_run / "export" / "clonemem").glob("*/p01_maya_benchmark_en.json")
    assert load_clonemem(benchmark).questions == [] and load_clonemem(benchmark).context
    for layout, key in (("lifedial", "questions"), ("evermem", "qa")):
        result = run_synth("export", "--format", layout, "--out", str(empty_run))
        assert result.returncode == 0, result.stderr
        [path] = (empty_run / "export" / layout).glob("*.json")
        assert json.loads(path.read_text())[key] == []
    result = run_synth("eval", "--data", str(benchmark.parent),
                       "--system", "flat", "--answerer-provider", "fake", "--judge-provider", "fake",
                       "--out", str(tmp_path / "eval"))
    assert result.returncode == 0, result.stderr
    assert "0/0 question(s) scored" in " ".join(result.stdout.split())


# ------------------------------------------------------------------------------------------------ the fake

def test_the_fake_keeps_the_names_a_request_says_to_keep():
    from synth.llm.fake import respond

    schema = {"type": "object", "properties": {"content": {"type": "string"}, "n": {"type": "integer"}},
              "required": ["content", "n"]}
    messages = [{"role": "user", "content": "translate: Maya met 李雷"}]
    plain = json.loads(respond(schema, messages))
    kept = json.loads(respond(schema, messages, keep=("Maya", "李雷")))
    assert "Maya" not in plain["content"] and "Maya" in kept["content"] and "李雷" in kept["content"]
    assert kept["n"] == plain["n"]  # the names add no draw: every other field is the answer it was


def test_small_with_both_languages_and_every_source_runs_end_to_end_on_the_fake(tmp_path):
    out = tmp_path / "small"
    result = run_synth("run", "--preset", "small", "--provider", "fake", "--persona", "p01_maya", "--languages",
                       "en,zh", "--out", str(out), "--personas", str(PERSONAS), timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    recorded = json.loads((out / "dataset.json").read_text())
    assert set(recorded["config"]["sources"]) == {"written", "group_chat", "lifelog"}
    assert any(recorded["config"]["variants"]["seeds_per_relation"].values())
    translations = (out / "p01_maya" / "translations.jsonl").read_text().splitlines()
    assert len(translations) > 100 and not (out / "p01_maya" / "failures" / "translate.jsonl").exists()
