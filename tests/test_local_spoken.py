"""`tiny` with both spoken sources on the embedded local model (Gemma 3 270M): one `synth run` through every stage,
cut down so it stays affordable on a loaded 2-core host — two weeks, one group with one chat day (rule level only: no judge
call, no repair), one lifelog dialogue with its year → month → week → day plan (no re-ask), one trace per event,
and `written_spoken` as the only question type. A real model answers every schema; its text is smoke quality,
so what is proven is that a real model drives the spoken stages to valid, linked records."""

from __future__ import annotations

import json
import os
import time

import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (the optional extra: pip install -e '.[local]')")

from kit import PERSONAS, run_synth, synth_env  # noqa: E402

pytestmark = [pytest.mark.local, pytest.mark.slow]

CONFIG = """sources = ["written", "group_chat", "lifelog"]
timeline_days = 14
[arcs]
anchor_states = 2
[events]
max_events = 1
[traces]
traces_per_event = 1
min_words = 20
max_words = 60
[chats]
max_groups = 1
max_days_per_group = 1
min_utterances = 2
max_utterances = 3
judge = false
max_repairs = 0
[lifelog]
max_events = 1
minutes = 5
min_lines = 2
max_lines = 3
max_repairs = 0
plan_max_items = 3
[qa]
types = ["written_spoken"]
[distractors]
rounds = 1
[filter]
blind_samples = 1
[task_max_tokens]
chats = 300
lifelog = 300
lifelog_plan = 250
"""


def local_env() -> dict[str, str]:
    """Short free strings (60 characters: the answers stay schema-valid, the calls short), and one llama.cpp thread
    when the host is busier than its cores: two threads on an oversubscribed 2-core host spin against each other
    (the persona stage alone ran over 8 minutes with two, 58 s with one, at load ≈ 8)."""
    extra = {"SYNTH_LOCAL_MAX_STRING_CHARS": "60"}
    if os.getloadavg()[0] >= (os.cpu_count() or 1):
        extra["SYNTH_LOCAL_N_THREADS"] = "1"
    return synth_env(**extra)


def records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_tiny_with_both_spoken_sources_on_the_local_model(tmp_path):
    out = tmp_path / "data"
    config = tmp_path / "spoken.toml"
    config.write_text(CONFIG)
    started = time.perf_counter()
    result = run_synth("run", "--personas", str(PERSONAS), "--persona", "p01_maya", "--out", str(out), "--preset",
                       "tiny", "--provider", "local", "--config", str(config), env=local_env(), timeout=1500)
    print(f"synth run (tiny, both spoken sources, local model): {time.perf_counter() - started:.0f} s")
    assert result.returncode == 0, result.stderr[-3000:]
    persona = out / "p01_maya"
    for stage in ("chats", "lifelog", "traces", "qa", "distractors", "filter"):
        manifest = json.loads((persona / "manifests" / f"{stage}.json").read_text())
        assert manifest["status"] == "complete" and manifest["provider"] == "local", stage
    chats, dialogues = records(persona / "chats.jsonl"), records(persona / "lifelog.jsonl")
    assert len({c["group_id"] for c in chats}) == 1 and len(chats) == 1, "one group, one chat day"
    assert len(dialogues) == 1 and dialogues[0]["lines"]
    assert all(u["text"].strip() for u in chats[0]["utterances"])
    plan = records(persona / "lifelog_plan.jsonl")
    assert [n["level"] for n in plan] == ["year", "month", "week", "day"]
    assert dialogues[0]["plan_day_id"] == plan[-1]["id"] and dialogues[0]["event_id"] in plan[-1]["event_ids"]
    media = {t["medium"] for t in records(persona / "traces.jsonl")}
    assert {"group_chat", "lifelog_dialogue"} < media, "written traces beside the spoken ones"
    items = records(persona / "qa.jsonl")
    assert items and all(i["question_type"] == "written_spoken" for i in items)
    assert run_synth("validate", "--out", str(out)).returncode == 0
    stats = run_synth("stats", "--out", str(out)).stdout
    assert "group_chat validation over 1 records" in stats and "lifelog plan, day: 1 nodes" in stats
