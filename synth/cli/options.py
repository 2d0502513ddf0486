"""The command line's shared pieces: the typer app, the consoles, the common options, the error boundary (`guarded`, the one place exit codes are decided) and small resolvers."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape

from synth.config import conf
from synth.core.errors import SynthError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Generate long-term-memory benchmarks for AI clones (CloneMem-style) and score memory systems.")
prompts_app = typer.Typer(no_args_is_help=True, help="Show the prompt templates.")
app.add_typer(prompts_app, name="prompts")
out_console = Console()
err_console = Console(stderr=True)

Out = Annotated[Optional[Path], typer.Option("--out", help="Dataset directory (default outputs/<preset>).")]
Personas = Annotated[Optional[list[Path]], typer.Option("--personas", help="Seed file or folder (repeatable).")]
PersonaId = Annotated[Optional[list[str]], typer.Option("--persona", help="Restrict to persona ids (repeatable).")]
Provider = Annotated[Optional[str], typer.Option("--provider", help="anthropic | openai | local | fake.")]
Model = Annotated[Optional[str], typer.Option("--model", help="Model name or alias (local: a .gguf path).")]
BaseUrl = Annotated[Optional[str], typer.Option("--base-url", help="OpenAI-compatible server URL (vLLM, Ollama, llama.cpp).")]
Concurrency = Annotated[Optional[int], typer.Option("--concurrency", min=1, help="Concurrent requests.")]
BudgetUsd = Annotated[Optional[float], typer.Option("--budget-usd", min=0, help="Stop before spending more.")]
MaxTokens = Annotated[Optional[int], typer.Option("--max-tokens", min=1, help="Stop before using more tokens.")]
Force = Annotated[bool, typer.Option("--force", help="Re-run even fresh stages.")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Estimate calls, tokens and USD without calling a model.")]
Batch = Annotated[bool, typer.Option("--batch", help="Send independent requests through the provider's batch API.")]
Preset = Annotated[Optional[str], typer.Option("--preset", help="tiny | small | clonemem (default: tiny with the local provider, else small).")]
ConfigFile = Annotated[Optional[Path], typer.Option("--config", help="TOML overrides (stage settings, routes).")]
Seed = Annotated[int, typer.Option("--seed", help="Seed of the fake provider.")]
Languages = Annotated[Optional[str], typer.Option(
    "--languages", help="Release languages, e.g. en,zh: the structure once, traces and items in each.")]


def first_error(group: BaseExceptionGroup) -> BaseException:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            exc = first_error(exc)
        if isinstance(exc, (SynthError, KeyboardInterrupt)):
            return exc
    return group.exceptions[0]


def guarded(fn):
    """The one error boundary: domain errors become one line on stderr and an exit code, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            try:
                return fn(*args, **kwargs)
            except BaseExceptionGroup as group:  # from asyncio task groups: report the first domain error
                raise first_error(group) from None
        except typer.Exit:
            raise
        except SynthError as exc:
            # escaped: a message may name a TOML section ("[qa]") that rich would take for markup
            err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            err_console.print("interrupted: finished units are kept; run again to resume")
            raise typer.Exit(130) from None

    return wrapper


def _preset(preset: str | None, provider: str | None) -> str:
    """Explicit --preset wins; the embedded local model defaults to `tiny`, everything else to `small`."""
    if preset:
        return preset
    return "tiny" if conf.choose_provider(provider)[0] == "local" else "small"


def _out(out: Path | None, preset: str | None) -> Path:
    return out if out is not None else Path("outputs") / (preset or "small")


def _personas(paths: list[Path] | None) -> list[Path]:
    return paths or [Path("personas")]


def _languages(value: str | None) -> list[str] | None:
    """`--languages en,zh` → ["en", "zh"]; an unknown code is one line and exit 2."""
    if value is None:
        return None
    from synth.core.errors import InputError

    found = [part.strip() for part in value.split(",") if part.strip()]
    unknown = [code for code in found if code not in ("en", "zh")]
    if unknown or not found:
        raise InputError(f"--languages: unknown language '{unknown[0] if unknown else value}' (choose from en, zh)")
    return list(dict.fromkeys(found))
