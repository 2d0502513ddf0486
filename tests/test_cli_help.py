"""Help that is true: option help comes from the registries and settings the code uses, so every built-in system,
retriever, embedder and shipped default shows up, and no help text loses a placeholder to rich's markup."""

from __future__ import annotations

import re

import click
import pytest
import typer.main
from typer.testing import CliRunner

from synth.cli import app
from synth.config import conf
from synth.eval.choices import BUILT_IN, EMBEDDERS, RETRIEVERS

runner = CliRunner()


def _commands(group: click.Group, prefix: tuple[str, ...] = ()):
    for name, command in group.commands.items():
        yield (*prefix, name)
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))


def _help(*path: str) -> str:
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "400", "TERM": "dumb", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_eval_help_lists_every_built_in_choice_and_the_shipped_defaults():
    text = _help("eval")
    for name in (*BUILT_IN, *RETRIEVERS, *EMBEDDERS):
        assert re.search(rf"\b{re.escape(name)}\b", text), f"synth eval --help does not mention {name}"
    defaults = conf.recorded_section({}, "eval")
    assert f"default: {defaults['retriever']}, from presets.toml [eval]" in text
    assert f"default: {defaults['embedder']}, from presets.toml [eval]" in text


@pytest.mark.parametrize("path", sorted(_commands(typer.main.get_command(app))))
def test_no_help_text_has_an_empty_placeholder(path):
    text = _help(*path)
    assert "()" not in text and "from )" not in text and "from ;" not in text, f"synth {' '.join(path)} --help: {text}"
    # a code span that lost its start to rich's markup ("`[qa] types`" shown as "` types`")
    assert not re.search(r"`\s+\w[^`]*`", text), f"synth {' '.join(path)} --help: {text}"
