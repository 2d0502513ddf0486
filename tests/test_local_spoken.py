"""The spoken sources on the embedded local model (Gemma 3 270M): `tiny` up to the traces with group chats and
lifelog dialogue as its only sources — a real model answering the group-day, repair and dialogue schemas (its text
is smoke quality; what is proven is that a real model drives the stages to valid, linked records)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (the optional extra: pip install -e '.[local]')")

from conftest import PERSONAS, run_synth, synth_env  # noqa: E402

pytestmark = [pytest.mark.local, pytest.mark.slow]

# Both spoken sources, kept cheap: one day per group, level 1 only (no judge call), one repair round.
CONFIG = """sources = ["group_chat", "lifelog"]
[chats]
max_days_per_group = 1
judge = false
max_repairs = 1
"""


def test_tiny_spoken_sources_on_the_local_model(tmp_path):
    out = tmp_path / "data"
    config = tmp_path / "spoken.toml"
    config.write_text(CONFIG)
    for stage in ("persona", "arcs", "phases", "events", "chats", "lifelog", "traces"):
        result = run_synth(stage, "--personas", str(PERSONAS), "--out", str(out), "--preset", "tiny",
                           "--provider", "local", "--config", str(config), env=synth_env(), timeout=600)
        assert result.returncode == 0, f"{stage}: {result.stderr[-3000:]}"
    persona = out / "p01_maya"
    for stage in ("chats", "lifelog", "traces"):
        manifest = json.loads((persona / "manifests" / f"{stage}.json").read_text())
        assert manifest["status"] == "complete" and manifest["provider"] == "local"
    chats = [json.loads(line) for line in (persona / "chats.jsonl").read_text().splitlines()]
    dialogues = [json.loads(line) for line in (persona / "lifelog.jsonl").read_text().splitlines()]
    traces = [json.loads(line) for line in (persona / "traces.jsonl").read_text().splitlines()]
    assert chats and dialogues, "the local model wrote chat days and dialogues"
    assert all(u["text"].strip() for c in chats for u in c["utterances"])
    assert {t["medium"] for t in traces} == {"group_chat", "lifelog_dialogue"}
    assert len(traces) == sum(bool(c["utterances"]) for c in chats) + sum(bool(d["lines"]) for d in dialogues)
    assert run_synth("validate", "--out", str(out)).returncode == 0
    stats = run_synth("stats", "--out", str(out))
    assert "group_chat validation over" in stats.stdout and "lifelog validation over" in stats.stdout
