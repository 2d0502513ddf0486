"""The `synth` command line: a thin typer layer over the pipeline. `options` holds the app, the options and the
error boundary (the one place exit codes are decided); `running` the stage commands, run and status; `dataset`
the commands over a finished dataset; `evaluate` synth eval. Importing them registers their commands, in the order
`synth --help` lists them; `config_show` is `synth config show`."""

from __future__ import annotations

from synth.cli import dataset, evaluate, running
from synth.cli.config_show import config_app
from synth.cli.options import app

# `synth --help` lists what makes a dataset first, then what reads one (imports above run in name order)
_ORDER = [module.__name__ for module in (running, dataset, evaluate)]
app.registered_commands.sort(key=lambda command: _ORDER.index(command.callback.__module__))
app.add_typer(config_app, name="config")


def main() -> None:
    import warnings

    from synth.llm.local.provider import LocalModelWarning

    warnings.simplefilter("ignore", LocalModelWarning)  # the CLI says it itself, once, before any work
    app()


if __name__ == "__main__":
    main()
