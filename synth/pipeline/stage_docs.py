"""One docs page per registered stage — what it does, what it reads and writes, its prompts, its model tasks and its
knobs — rendered from the stage registry and the typed settings, so the pages cannot drift from the code.

Regenerate with `python -m synth.pipeline.stage_docs docs/stages` (a test checks the pages are current).
"""

from __future__ import annotations

import sys
from pathlib import Path

from synth.config import settings
from synth.config.explain import defaults, toml_value
from synth.engine.stage import Stage
from synth.stages import STAGES

NOTE = ("<!-- Generated from the stage registry (synth/stages) and the typed settings by "
        "`python -m synth.pipeline.stage_docs docs/stages`; edit those, not this page. -->")


def _files(names: tuple[str, ...]) -> str:
    return ", ".join(f"`{n}`" for n in names) or "—"


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def _knobs(section: str) -> list[str]:
    model = settings.Settings.model_fields.get(section)
    if model is None or not isinstance(model.annotation, type):
        return []
    values = defaults().get(section, {})
    rows = ["| key | default | meaning |", "|---|---|---|"]
    for name, field in model.annotation.model_fields.items():
        shown = _cell(toml_value(values[name])) if name in values else ""
        rows.append(f"| `{name}` | `{shown}` | {_cell(field.description or '')} |")
    return rows


def page(stage: Stage) -> str:
    """The Markdown page of one stage."""
    order = list(STAGES)
    before = [name for name in order[: order.index(stage.name)]
              if set(STAGES[name].writes) & set((*stage.reads, *stage.optional_reads))]
    tasks = [f"`{t}`" + (" (a judge: runs at `judge_temperature`)" if t in stage.judges else "") for t in stage.tasks]
    out = [f"# {stage.name}", "", NOTE, "", _cell(stage.help), "",
           f"Run it alone with `synth {stage.name} --out DIR` (it says which stage to run first when an input is "
           "missing); `synth run` runs it when it is stale.", "",
           "| | |", "|---|---|",
           f"| reads | {_files(stage.reads)} |",
           f"| reads when present | {_files(stage.optional_reads)} |",
           f"| writes | {_files(stage.writes)} and `manifests/{stage.name}.json` |",
           f"| after | {', '.join(f'[{n}]({n}.md)' for n in before) or '—'} |",
           f"| prompts | {_files(tuple(f'prompts/{t}' for t in stage.templates))} |",
           f"| model tasks (routable in `[routes]`) | {', '.join(tasks) or '— (no model call)'} |",
           ""]
    sections = [s for s in (stage.name, *stage.config_keys) if s in settings.Settings.model_fields]
    for section in sections:
        rows = _knobs(section)
        if rows:
            out += [f"## Knobs: `[{section}]`", "", *rows, ""]
    out += ["Every knob and its default: [configuration](../configuration.md).", ""]
    return "\n".join(out)


def write_pages(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for stage in STAGES.values():
        path = folder / f"{stage.name}.md"
        path.write_text(page(stage), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for written in write_pages(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/stages")):
        print(written)
