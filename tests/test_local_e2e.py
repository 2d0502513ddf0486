"""The embedded default end to end: `synth run --preset tiny --provider local` on the bundled Gemma 3 270M, with
no API key — a real model on this machine, not a stub (its text is smoke quality; the plumbing is what's proven)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (the optional extra: pip install -e '.[local]')")

from kit import PERSONAS, run_synth, synth_env  # noqa: E402

pytestmark = [pytest.mark.local, pytest.mark.slow]


def test_tiny_run_on_the_local_model_validates_and_exports(tmp_path):
    out = tmp_path / "data"
    result = run_synth("run", "--personas", str(PERSONAS), "--out", str(out), env=synth_env(), timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]
    # no --provider, no key: the local model and the tiny preset are chosen, and the choice is said first
    assert "provider: local" in result.stderr.splitlines()[0]
    assert "smoke-quality" in result.stderr
    dataset = json.loads((out / "dataset.json").read_text())
    assert dataset["provider"] == "local" and dataset["preset"] == "tiny"
    persona = out / "p01_maya"
    for stage in ("persona", "arcs", "phases", "events", "traces", "qa", "distractors", "filter"):
        manifest = json.loads((persona / "manifests" / f"{stage}.json").read_text())
        assert manifest["status"] == "complete" and manifest["provider"] == "local"
    traces = [json.loads(line) for line in (persona / "traces.jsonl").read_text().splitlines()]
    assert traces and all(t["content"].strip() for t in traces)
    assert run_synth("validate", "--out", str(out)).returncode == 0
    assert list((out / "export" / "clonemem").glob("*/p01_maya_benchmark_en.json"))
