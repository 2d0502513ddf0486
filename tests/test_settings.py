"""Typed settings: every section's keys are checked (a typo is one line naming the file, section and key, exit 2,
nothing written); values are typed; defaults live only in presets.toml."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from kit import PERSONAS, run_synth

from synth.config import conf, settings
from synth.core.errors import InputError


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "override.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[qa]\nwindows_days = 30\n", "[qa] windows_days: unknown setting"),
        ("[filter]\nmin_option_char = 3\n", "[filter] min_option_char: unknown setting"),
        ("[traces.media.en]\ndiary = 0\nsocial_post = 0\nmessage_thread = 0\nemail = 0\nnote = 0\ntodo_list = 0\n"
         "calendar_entry = 0\nsearch_history = 0\nvoice_memo_transcript = 0\nphoto_caption = 0\n",
         "at least one medium needs a positive weight"),
        ('[scale."500k".qa]\ntarget_per_typ = 3\n', '[scale."500k".qa] target_per_typ: unknown setting'),
        ("concurency = 4\n", "concurency: unknown setting"),
        ('[qa]\nwindow_days = "sixty"\n', "[qa] window_days: Input should be a valid integer"),
        ("[filter.min_option_chars]\nfr = 3\n", "[filter.min_option_chars] fr: Input should be 'en' or 'zh'"),
        ("[eval]\nbootstrap_resample = 10\n", "[eval] bootstrap_resample: unknown setting"),
        ("qa = 3\n", "qa: must be a table"),
    ],
)
def test_a_bad_key_or_value_names_the_file_section_and_key(tmp_path, text, expected) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as caught:
        conf.preset_config("small", path)
    assert str(caught.value).startswith(f"{path}: ")
    assert expected in str(caught.value)


def test_cli_refuses_a_typo_before_writing_anything(tmp_path) -> None:
    path = _write(tmp_path, "[qa]\nwindows_days = 30\n")
    out = tmp_path / "out"
    result = run_synth("run", "--preset", "tiny", "--provider", "fake", "--out", str(out), "--personas",
                       str(PERSONAS), "--config", str(path))
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1  # the config is checked before the provider line: one line in all
    assert lines[0].startswith(f"error: {path}: [qa] windows_days: unknown setting (known here: window_days, ")
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_a_good_override_is_applied_and_typed(tmp_path) -> None:
    path = _write(tmp_path, '[qa]\nwindow_days = 30\n[scale."500k".qa]\ntarget_per_type = 3\n')
    config = conf.preset_config("clonemem", path)
    assert config["qa"]["window_days"] == 30
    typed = settings.parse(conf.persona_config(config, "500k"))
    assert typed.qa.window_days == 30 and typed.qa.target_per_type == 3
    assert settings.parse(conf.persona_config(config, "100k")).qa.target_per_type == 6


@pytest.mark.parametrize("preset", conf.PRESETS)
def test_every_preset_and_scale_is_complete_and_valid(preset) -> None:
    config = conf.preset_config(preset)
    for scale in ("100k", "500k"):
        typed = settings.parse(conf.persona_config(config, scale))
        assert typed.preset == preset


def test_models_declare_no_defaults_so_presets_toml_is_the_one_place() -> None:
    """A default in code could drift from presets.toml (min_option_chars was 2 in one place, 4 in another)."""

    def walk(model: type) -> list[str]:
        found = []
        for name, field in model.model_fields.items():
            if not field.is_required():
                found.append(f"{model.__name__}.{name}")
            sub = field.annotation
            if isinstance(sub, type) and issubclass(sub, settings.Section):
                found.extend(walk(sub))
        return found

    assert walk(settings.Settings) == []
    defaults = tomllib.loads((conf.CONFIG_DIR / "presets.toml").read_text())["defaults"]
    assert set(defaults) | {"preset"} == set(settings.Settings.model_fields)


@pytest.mark.parametrize("section, low, high", [("events", "min_events", "max_events"),
                                                ("traces", "min_words", "max_words"),
                                                ("chats", "min_utterances", "max_utterances"),
                                                ("lifelog", "min_lines", "max_lines"),
                                                ("variants", "min_words", "max_words")])
def test_a_low_bound_above_its_high_bound_is_one_line_naming_both(section, low, high):
    config = conf.preset_config("small")
    config[section] = {**config[section], low: config[section][high] + 1}
    with pytest.raises(InputError, match=f"{section}: .*{low} \\d+ is above {high} \\d+"):
        settings.parse(config)
