"""End to end with the fake provider (plumbing only): every stage, validate, export, reruns and template edits."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from kit import PERSONAS, REPO, run_synth, synth_env

from synth.records import EXTRA_TYPES, QUESTION_TYPES, RELATION_TYPES

pytestmark = pytest.mark.slow  # `synth` subprocesses running whole pipelines


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def manifest(out: Path, persona: str, stage: str) -> dict:
    return json.loads((out / persona / "manifests" / f"{stage}.json").read_text())


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("small") / "data"
    result = run_synth("run", "--preset", "small", "--provider", "fake", "--out", str(out), "--personas", str(PERSONAS))
    assert result.returncode == 0, result.stderr[-3000:]
    return out


def test_tiny_run_writes_every_file_validates_and_exports(tiny_dataset):
    persona = next(p for p in tiny_dataset.iterdir() if (p / "persona.jsonl").is_file())
    for name in ("persona", "seeds", "arcs", "major_events", "phases", "events", "evidence", "traces", "qa", "mcq",
                 "final", "rejected"):
        assert (persona / f"{name}.jsonl").is_file(), name
    for stage in ("persona", "arcs", "phases", "events", "traces", "qa", "distractors", "filter"):
        m = manifest(tiny_dataset, persona.name, stage)
        assert m["status"] == "complete" and m["provider"] == "fake"
    assert run_synth("validate", "--out", str(tiny_dataset)).returncode == 0
    exported = list((tiny_dataset / "export" / "clonemem").glob("*/*_benchmark_en.json"))
    assert len(exported) == 1


def test_small_yields_all_question_types_valid_mcqs_and_a_round_tripping_export(small_run):
    persona = "p01_maya"
    mcq = records(small_run / persona / "mcq.jsonl")
    # CloneMem's eight, EverMemBench's temporal duration (small lists it), and SubtleMemory's relation items
    types = set(Counter(m["question_type"] for m in mcq))
    assert types - set(RELATION_TYPES) == set(QUESTION_TYPES) | set(EXTRA_TYPES)
    sets = records(small_run / persona / "variants.jsonl")
    kept = [s for s in sets if s["kept"]]
    # small asks for 3 variant sets per relation; the fake's random judges keep some or none (how many moves with
    # any prompt's wording): a kept set's way into traces and items is proven with scripted sets in test_variants
    assert len(sets) == 15
    assert types & set(RELATION_TYPES) == {s["relation"] for s in kept}
    sessions = {t["id"] for t in records(small_run / persona / "traces.jsonl") if t.get("variant_set_id")}
    assert sessions == {v["trace_id"] for s in kept for v in s["variants"]}
    for item in (m for m in mcq if m["question_type"] in RELATION_TYPES):
        key = next(c["text"] for c in item["choices"] if c["id"] == item["correct_choice_id"])
        assert key in item["correct_answers"] and len(item["wrong_answers"]) == 3
    for item in mcq:
        assert [c["id"] for c in item["choices"]] == list("ABCDE")
        assert item["choices"][4]["text"] == "Cannot be determined based on available information"
        assert (item["correct_choice_id"] == "E") == (item["question_type"] == "unanswerable")
    final = records(small_run / persona / "final.jsonl")
    assert len({f["question_type"] for f in final}) >= 3  # the fake's judges reject some at random
    [path] = (small_run / "export" / "clonemem").glob(f"*/{persona}_benchmark_en.json")
    data = json.loads(path.read_text())
    assert set(data) >= {"person_name", "person_id", "context", "questions"}
    context = {c["id"] for c in data["context"]}
    assert len(data["questions"]) == len(final)
    for q in data["questions"]:
        assert set(q["digital_trace_ids"]) <= context
        assert all(set(e["digital_trace_ids"]) <= context for e in q["evidence"])
    assert run_synth("validate", "--out", str(small_run)).returncode == 0


def test_an_unchanged_rerun_makes_no_calls_and_a_qa_template_edit_reruns_only_downstream(small_run, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(small_run, out)
    again = run_synth("run", "--preset", "small", "--provider", "fake", "--out", str(out), "--personas", str(PERSONAS))
    assert again.returncode == 0 and "done: 0 stage run(s)" in again.stderr
    prompts = tmp_path / "prompts"
    shutil.copytree(REPO / "prompts", prompts)
    template = prompts / "qa_write.j2"
    template.write_text(template.read_text() + "\n{# edited #}\nKeep it short.\n")
    before = {s: manifest(out, "p01_maya", s)["finished_at"] for s in ("persona", "arcs", "phases", "events", "traces")}
    edited = run_synth("run", "--preset", "small", "--provider", "fake", "--out", str(out), "--personas",
                       str(PERSONAS), env=synth_env(SYNTH_PROMPTS_DIR=str(prompts)))
    assert edited.returncode == 0, edited.stderr[-2000:]
    after = {s: manifest(out, "p01_maya", s)["finished_at"] for s in before}
    assert after == before  # no upstream stage ran, so no upstream model call was made
    qa = manifest(out, "p01_maya", "qa")
    assert qa["provider_calls"] > 0 and qa["cache_hits"] > 0  # plans replayed, writes re-asked
    assert "p01_maya/qa:" in edited.stderr and "p01_maya/traces:" not in edited.stderr


def test_concurrency_does_not_change_the_records(small_run, tmp_path):
    out = tmp_path / "sequential"
    result = run_synth("run", "--preset", "small", "--provider", "fake", "--concurrency", "1", "--out", str(out),
                       "--personas", str(PERSONAS))
    assert result.returncode == 0, result.stderr[-2000:]
    names = sorted(p.name for p in (small_run / "p01_maya").glob("*.jsonl"))
    assert "traces.jsonl" in names and "final.jsonl" in names
    for name in names:
        parallel = sorted(map(json.dumps, records(small_run / "p01_maya" / name)))
        sequential = sorted(map(json.dumps, records(out / "p01_maya" / name)))
        assert parallel == sequential, name
