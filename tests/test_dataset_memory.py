"""A dataset remembers how it was made: a command pointed at it reuses the recorded preset, provider, model, base
URL, config and personas; an explicit override is said on the first line with what it makes stale; status shows
stages downstream of a stale stage as stale. Personas named on the command line are all built."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from kit import PERSONAS, REPO, read_jsonl, run_synth, synth_env

from synth.config import conf
from synth.pipeline.session import select_personas


def _copy(tiny_dataset: Path, tmp_path: Path) -> Path:
    out = tmp_path / "data"
    shutil.copytree(tiny_dataset, out)
    return out


def _edited_prompts(tmp_path: Path, name: str) -> Path:
    prompts = tmp_path / "prompts"
    shutil.copytree(REPO / "prompts", prompts)
    with (prompts / name).open("a", encoding="utf-8") as handle:
        handle.write("\nKeep it short.\n")
    return prompts


def _status(out: Path, env: dict) -> dict[str, str]:
    result = run_synth("status", "--out", str(out), env=env)
    assert result.returncode == 0, result.stderr
    rows = {}
    for line in result.stdout.splitlines():
        cells = [c.strip() for c in line.split("│") if c.strip()]
        if len(cells) >= 3 and cells[1] in conf_stage_names():
            rows[cells[1]] = cells[2]
    return rows


def conf_stage_names() -> list[str]:
    from synth.stages import STAGES

    return STAGES.order()


@pytest.mark.slow
@pytest.mark.parametrize(("stage", "template"), [("qa", "qa_write.j2"), ("traces", "traces_write.j2")])
def test_edit_a_prompt_and_regenerate_one_stage_with_the_recorded_settings(tiny_dataset, tmp_path, stage,
                                                                          template) -> None:
    out = _copy(tiny_dataset, tmp_path)
    recorded = json.loads((out / "dataset.json").read_text())
    before = {p.name: len(read_jsonl(p)) for p in (out / "p01_maya").glob("*.jsonl")}
    env = synth_env(SYNTH_PROMPTS_DIR=str(_edited_prompts(tmp_path, template)))  # no key: would be `local`

    statuses = _status(out, env)
    order = conf_stage_names()
    downstream = order[order.index(stage):]
    assert {s: statuses[s] for s in downstream} == dict.fromkeys(downstream, "stale"), statuses
    assert all(statuses[s] == "fresh" for s in order[: order.index(stage)]), statuses

    result = run_synth(stage, "--out", str(out), env=env)
    assert result.returncode == 0, result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith("provider: fake (recorded in ") and first.endswith("; preset tiny"), first
    after = json.loads((out / "dataset.json").read_text())
    assert {k: v for k, v in after.items() if k != "validity"} == {k: v for k, v in recorded.items() if k != "validity"}
    assert (after["preset"], after["provider"]) == ("tiny", "fake")  # still the tiny fake dataset it was
    produced = {p.name: len(read_jsonl(p)) for p in (out / "p01_maya").glob("*.jsonl")}
    assert produced == before  # tiny's settings, not small's (11 QA items instead of 1 was the bug)
    statuses = _status(out, env)
    assert statuses[stage] == "fresh"
    if stage != "filter":
        assert statuses["filter"] == "stale"


@pytest.mark.slow
def test_run_resumes_with_the_recorded_settings_and_ends_fresh(tiny_dataset, tmp_path) -> None:
    out = _copy(tiny_dataset, tmp_path)
    env = synth_env(SYNTH_PROMPTS_DIR=str(_edited_prompts(tmp_path, "qa_write.j2")))
    result = run_synth("run", "--out", str(out), env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[0].startswith("provider: fake (recorded in ")
    ran = [line.split(":")[0] for line in result.stderr.splitlines() if line.startswith("p01_maya/")]
    # translate reads final.jsonl: it re-runs too (with one release language it has nothing to translate)
    assert ran == ["p01_maya/qa", "p01_maya/distractors", "p01_maya/filter", "p01_maya/translate"]
    assert set(_status(out, env).values()) == {"fresh"}


def test_an_explicit_override_is_said_first_with_what_it_makes_stale(tiny_dataset, tmp_path) -> None:
    out = _copy(tiny_dataset, tmp_path)
    result = run_synth("status", "--out", str(out), "--preset", "small")  # status shows the new staleness
    assert result.returncode == 0
    # a stage command says it on its first line; the lock-free check below stops before writing: unknown model
    result = run_synth("qa", "--out", str(out), "--preset", "small", "--provider", "fake", "--model", "nope-model")
    assert result.returncode == 2
    assert "unknown model 'nope-model'" in result.stderr
    result = run_synth("distractors", "--out", str(out), "--preset", "small")
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"changed from {out / 'dataset.json'}: preset tiny → small; stale now: persona, arcs"), first
    assert "this command runs distractors" in result.stderr.replace("\n", " ")
    assert json.loads((out / "dataset.json").read_text())["preset"] == "small"


def test_personas_named_on_the_command_line_are_all_built() -> None:
    config = conf.preset_config("small")
    assert config["personas"] == 1
    named = select_personas([PERSONAS], ["p01_maya", "p08_laoshen"], config)
    assert [s.id for s in named] == ["p01_maya", "p08_laoshen"]
    assert [s.id for s in select_personas([PERSONAS], [], config)] == ["p01_maya"]


def test_status_lists_every_named_persona(tmp_path) -> None:
    result = run_synth("status", "--out", str(tmp_path / "none"), "--preset", "small", "--provider", "fake",
                       "--persona", "p01_maya", "--persona", "p08_laoshen", env=synth_env(COLUMNS="200"))
    assert result.returncode == 0, result.stderr
    assert "p01_maya" in result.stdout and "p08_laoshen" in result.stdout


def test_a_new_dataset_without_preset_or_provider_takes_the_defaults(tmp_path) -> None:
    """No dataset.json, no --preset, no key: `synth status` resolves local → tiny (the path `make dataset` takes)."""
    result = run_synth("status", "--out", str(tmp_path / "fresh"), env=synth_env(COLUMNS="200"))
    assert result.returncode == 0, result.stderr
    assert "p01_maya" in result.stdout and "missing" in result.stdout
    result = run_synth("status", "--out", str(tmp_path / "fresh"), "--provider", "fake", env=synth_env(COLUMNS="200"))
    assert result.returncode == 0, result.stderr
