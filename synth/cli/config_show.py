"""`synth config show [--explain]`: the resolved configuration of a preset, a --config file or a dataset, as TOML."""

from __future__ import annotations

from typing import Annotated

import typer

from synth.cli.options import ConfigFile, Out, Preset, _out, _preset, guarded

config_app = typer.Typer(no_args_is_help=True, help="Show the resolved configuration.")


@config_app.command("show")
@guarded
def config_show(out: Out = None, preset: Preset = None, config: ConfigFile = None,
                explain: Annotated[bool, typer.Option("--explain", help="Each knob's meaning and default too.")] = False
                ) -> None:
    """Print the configuration a run would use: the preset with --config over it, or what --out's dataset.json
    recorded (as `synth run` would read it)."""
    from synth.config.explain import render_toml
    from synth.pipeline.session import resolve_run

    run = resolve_run(_out(out, preset), preset, None, None, None, config, [], _preset)
    typer.echo(render_toml(run.config, explain), nl=False)
