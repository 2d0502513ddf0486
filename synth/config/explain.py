"""The configuration rendered from the typed settings: `synth config show [--explain]` and docs/configuration.md.

Every knob's meaning is its `Field(description=...)` in synth.config.sections / settings and its default is in
presets.toml's `[defaults]`; this module only prints them, so neither has a second copy that could drift.
Regenerate the page with `python -m synth.config.explain docs/configuration.md` (a test checks it is current).
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from synth.config import conf, settings

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key: str) -> str:
    return key if _BARE.match(key) else json.dumps(key, ensure_ascii=False)


def toml_value(value: Any) -> str:
    """One TOML value (tables inline): what a user may paste into a --config file."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }" if value else "{}"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def defaults() -> dict:
    """presets.toml's `[defaults]`: the value every preset starts from."""
    return conf._load(conf.CONFIG_DIR / "presets.toml")["defaults"]


def _sub(model: type[BaseModel], name: str) -> type[BaseModel] | None:
    return settings._section_model(model, name)


def _comment(text: str) -> list[str]:
    return textwrap.wrap(text, 116, initial_indent="# ", subsequent_indent="# ")


def render_toml(config: dict, explain: bool = False) -> str:
    """A resolved config as TOML in the settings' order; `explain` puts each knob's meaning and default above it."""
    base = defaults()
    lines: list[str] = []

    def knobs(model: type[BaseModel], values: dict, fallback: dict) -> None:
        for name, field in model.model_fields.items():
            if name not in values or _sub(model, name) is not None:
                continue
            if explain:
                default = f" (default {toml_value(fallback[name])})" if name in fallback else ""
                lines.extend(_comment(f"{field.description}{default}"))
            lines.append(f"{_key(name)} = {toml_value(values[name])}")

    knobs(settings.Settings, config, base)
    for name in settings.Settings.model_fields:
        model = _sub(settings.Settings, name)
        if model is None or name not in config:
            continue
        lines.append("")
        if explain and model.__doc__:
            lines.extend(_comment(" ".join(model.__doc__.split())))
        lines.append(f"[{name}]")
        knobs(model, config[name], base.get(name, {}))
    return "\n".join(lines).lstrip("\n") + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown() -> str:
    """docs/configuration.md: every section and knob with its default and meaning, and how tables are keyed."""
    base = defaults()
    out = [
        "# Configuration",
        "",
        "<!-- Generated from synth/config/sections.py, settings.py and presets.toml by "
        "`python -m synth.config.explain docs/configuration.md`; edit those, not this page. -->",
        "",
        "A run's settings resolve in this order, the later winning: presets.toml's `[defaults]`, the preset "
        "(`tiny`, `small`, `clonemem`), the preset's per-scale overrides (`[<preset>.scale.<scale>]`, chosen by a "
        "persona file's `scale`), then a `--config` TOML file. A command pointed at an existing dataset (`--out`) "
        "uses the config its `dataset.json` recorded. A key no section declares, or a value of the wrong type or "
        "range, is one error line naming the file, the section and the key.",
        "",
        "`synth config show [--preset P] [--config FILE] [--out DIR]` prints the resolved configuration as TOML; "
        "`--explain` adds each knob's meaning and default above it.",
        "",
        "## Shared knobs",
        "",
        "A knob several stages read lives in one section: `[prompts]` (trace excerpts in the prompts of qa, "
        "distractors and filter) and `[mcq]` (the options' length and centrality bounds the distractors stage writes "
        "toward and the filter rejects on, and how many related traces their judges read for an unanswerable item).",
        "",
        "## Per-task tables",
        "",
        "`task_max_tokens`, `routes` and `dry_run.output_tokens` are keyed by model task: the first argument of a "
        "stage's `ctx.ask(...)`, listed in its `STAGE.tasks` (`synth prompts show <stage>` shows its templates). A "
        "key that names no task is an error. A dataset recorded before this scheme still loads: `task_max_tokens` "
        "keyed by template (`traces_plan`, `traces_write`) becomes its task's (`traces`, the larger floor), a "
        "`routes` key naming a stage routes each of that stage's tasks (a task's own route still wins), and the "
        "shared knobs recorded in `[qa]`, `[distractors]` or `[filter]` move to `[prompts]` and `[mcq]`.",
        "",
    ]

    def table(model: type[BaseModel], values: dict) -> None:
        out.extend(["| key | default | meaning |", "|---|---|---|"])
        for name, field in model.model_fields.items():
            if _sub(model, name) is not None or name == "preset":
                continue
            shown = _cell(toml_value(values[name])) if name in values else ""
            out.append(f"| `{name}` | `{shown}` | {_cell(field.description or '')} |")
        out.append("")

    out.extend(["## Run-wide", ""])
    table(settings.Settings, base)
    for name in settings.Settings.model_fields:
        model = _sub(settings.Settings, name)
        if model is None:
            continue
        out.extend([f"## [{name}]", "", " ".join((model.__doc__ or "").split()), ""])
        table(model, base.get(name, {}))
    return "\n".join(out).rstrip("\n") + "\n"


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    if target is None:
        sys.stdout.write(markdown())
    else:
        target.write_text(markdown(), encoding="utf-8")
