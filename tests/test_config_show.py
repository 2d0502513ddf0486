"""Config once: every knob's help text lives in its settings field and is rendered, never copied (the generated
docs page is current, `synth config show` round-trips); per-task tables are keyed by task; an older dataset.json
with the old keys still loads, mapped."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from conftest import PERSONAS, run_synth
from typer.testing import CliRunner

from synth.cli import app
from synth.config import conf, settings
from synth.config.explain import markdown, render_toml
from synth.core.errors import InputError
from synth.pipeline.session import resolve_run

ROOT = Path(__file__).resolve().parents[1]


def _public(config: dict) -> dict:
    return {k: v for k, v in config.items() if not k.startswith("_")}


def test_the_configuration_page_is_generated_from_the_settings() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert page == markdown(), "regenerate: python -m synth.config.explain docs/configuration.md"


def test_every_knob_has_its_help_text_once_in_its_field() -> None:
    def walk(model) -> list[str]:
        missing = []
        for name, field in model.model_fields.items():
            sub = settings._section_model(model, name)
            if sub is not None:
                missing += [f"{name}.{m}" for m in walk(sub)]
            elif not (field.description or "").strip():
                missing.append(name)
        return missing

    assert walk(settings.Settings) == []
    # presets.toml holds values only: no knob's meaning is written there a second time
    text = (conf.CONFIG_DIR / "presets.toml").read_text(encoding="utf-8")
    assert [line for line in text.splitlines()[3:] if "#" in line] == []


@pytest.mark.parametrize("preset", conf.PRESETS)
@pytest.mark.parametrize("explain", [False, True])
def test_config_show_prints_toml_that_reads_back_as_the_resolved_config(preset, explain) -> None:
    config = conf.preset_config(preset)
    assert tomllib.loads(render_toml(config, explain)) == _public(config)


def test_config_show_explains_a_knob_with_its_default_and_meaning(tmp_path) -> None:
    override = tmp_path / "over.toml"
    override.write_text("[prompts]\ntrace_chars = 700\n")
    result = CliRunner().invoke(app, ["config", "show", "--preset", "small", "--config", str(override), "--explain",
                                      "--out", str(tmp_path / "none")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    at = lines.index("trace_chars = 700")
    assert lines[at - 1] == "# a trace excerpt's length in characters (default 1500)"


def test_a_shared_knob_lives_in_one_section_only(tmp_path) -> None:
    override = tmp_path / "over.toml"
    override.write_text("[qa]\ntrace_chars = 600\n")
    with pytest.raises(InputError, match=r"\[qa\] trace_chars: unknown setting"):
        conf.preset_config("small", override)


def _old_shape(config: dict) -> dict:
    """The config as a dataset.json recorded it before: shared knobs in each stage section, task_max_tokens by
    template, a route by stage."""
    old = json.loads(json.dumps(_public(config)))
    prompts, mcq = old.pop("prompts"), old.pop("mcq")
    for home in ("qa", "distractors", "filter"):
        old[home].update(prompts)
    old["distractors"].update({**mcq, "related_traces": 3})
    old["filter"].update(mcq)
    old["task_max_tokens"] = {"phases_generate": 900, "phases_update": 700, "events_generate": 2400,
                              "traces_plan": 900, "traces_write": 1400}
    old["routes"] = {"filter": "fake/fake-model", "filter_blind": "fake/other"}
    return old


def test_an_older_dataset_json_with_the_old_keys_still_loads(tmp_path) -> None:
    config = conf.preset_config("small")
    (tmp_path / "dataset.json").write_text(json.dumps({
        "preset": "small", "provider": "fake", "model": None, "base_url": None, "personas": ["p01_maya"],
        "config": _old_shape(config), "scale_overrides": {"500k": {"filter": {"trace_chars": 900}}}}))
    run = resolve_run(tmp_path, None, None, None, None, None, [], lambda *_: "small")
    typed = settings.parse(run.config)
    assert typed.prompts == settings.PromptsSettings(trace_chars=1500, max_prompt_traces=8)
    assert typed.mcq.related_traces == 3  # the first stage section that held it (distractors before filter)
    assert "trace_chars" not in run.config["qa"] and "length_ratio" not in run.config["filter"]
    assert typed.task_max_tokens == {"phases": 900, "events": 2400, "traces": 1400}
    assert typed.routes["filter_blind"] == "fake/other"  # a task's own route wins over its stage's
    assert typed.routes["filter_sufficiency"] == typed.routes["filter_unique"] == "fake/fake-model"
    assert "filter" not in typed.routes
    assert run.config["_scale"] == {"500k": {"prompts": {"trace_chars": 900}, "filter": {}}}


def test_a_per_task_key_naming_no_task_is_one_line_naming_the_file(tmp_path) -> None:
    override = tmp_path / "over.toml"
    override.write_text("[task_max_tokens]\ntraces_write = 900\n")
    out = tmp_path / "out"
    result = run_synth("run", "--preset", "tiny", "--provider", "fake", "--out", str(out), "--personas",
                       str(PERSONAS), "--config", str(override))
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [f"error: {override}: [task_max_tokens] traces_write: not a model task (the task of that "
                     f"template is traces); tasks: " + lines[0].split("tasks: ")[-1]]
    assert not out.exists()


@pytest.mark.parametrize("preset", conf.PRESETS)
def test_the_shipped_per_task_tables_name_tasks_and_every_task_has_a_dry_run_estimate(preset) -> None:
    from synth.stages import STAGES

    tasks = {task for stage in STAGES.values() for task in stage.tasks}
    config = conf.preset_config(preset)
    settings.check_tasks(config, tasks, "presets.toml")
    assert set(config["dry_run"]["output_tokens"]) == tasks
