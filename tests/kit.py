"""The test kit: run pipeline stages in a temporary directory with one scripted model, and run `synth` itself.

    from kit import Scripted, run_stage

    model = run_stage(tmp_path, "arcs", config="[arcs]\\nadded_seeds = 3\\n",
                      replies={"arcs": [SEEDS, ARCS, MAJORS]})
    assert model.tasks() == ["arcs"] * 3 and not model.unused()

- `run_stage(out, stages, config=, replies=, persona=, preset=, seed=, force=, fake_seed=)` runs one stage (a name)
  or several (a list) for one persona into `out` and returns the `Scripted` model that answered; `fake_seed` is the
  seed of the fake answers for what is not scripted. A persona of personas/ is
  named by `persona` (default p01_maya, tiny preset): the run goes through `open_session`, as `synth run` does.
  A hand-built persona directory already under `out` is run by passing its `seed` (a PersonaSeed); `config` is
  then the whole resolved config dict, used as given.
- `config`: TOML text (written to out/config.toml), a TOML file, a resolved config dict, or None (the preset).
- `replies`: {task: [reply, ...]} or a `Scripted` to reuse (its queues and `seen` carry over between runs).
- `Scripted(replies, seed=0)`: one queue per task, so concurrent units cannot take each other's answers. A reply
  is a dict (sent as JSON) or a str (sent raw, e.g. broken JSON); a task's value may instead be a function
  request → reply that answers every request of that task. A task with nothing queued gets the schema-driven
  fake answer (of `seed` on a hand-built persona; of the session's seed, 0, otherwise). Every request is recorded in `seen`; `tasks()`, `asked(task)` and `unused()` read it.
- `run_synth(*args)` runs the installed `synth` in a subprocess with no provider keys from the shell; `invoke(*args)`
  runs it in-process (typer's CliRunner) with those keys unset (`NO_KEYS`).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from typer.testing import CliRunner

from synth.cli import app
from synth.config import conf
from synth.config.personas import PersonaSeed
from synth.core.tokens import estimate_tokens
from synth.engine.runner import RunOptions
from synth.engine.runner import run_stage as run_one
from synth.llm.base import LLMRequest, ProviderResponse, Usage
from synth.llm.cache import ResponseCache
from synth.llm.client import LLM
from synth.llm.fake import FakeProvider
from synth.pipeline.session import open_session, run_stages
from synth.stages import STAGES

REPO = Path(__file__).resolve().parent.parent
PERSONAS = REPO / "personas"
PID = "p01_maya"

Reply = dict | list | str
Replies = dict[str, list[Reply] | Callable[[LLMRequest], Reply]]


class Scripted:
    """A model scripted per task: queued replies first, then the schema-driven fake; every request is kept."""

    name = "fake"
    key_env = None

    def __init__(self, replies: Replies | None = None, seed: int = 0) -> None:
        self.replies: Replies = {task: r if callable(r) else list(r) for task, r in (replies or {}).items()}
        self.seen: list[LLMRequest] = []
        self.fallback = FakeProvider(seed=seed).complete

    def queue(self, task: str, *replies: Reply) -> "Scripted":
        self.replies.setdefault(task, []).extend(replies)
        return self

    def tasks(self) -> list[str]:
        return [r.task for r in self.seen]

    def asked(self, task: str) -> list[LLMRequest]:
        return [r for r in self.seen if r.task == task]

    def unused(self) -> dict[str, list[Reply]]:
        """Replies still queued, by task: a test that scripts a conversation asserts this is empty."""
        return {task: r for task, r in self.replies.items() if not callable(r) and r}

    async def complete(self, request: LLMRequest, model: str) -> ProviderResponse:
        self.seen.append(request)
        script = self.replies.get(request.task)
        if callable(script):
            reply = script(request)
        elif script:
            reply = script.pop(0)
        else:
            return await self.fallback(request, model)
        text = reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False)
        prompt = " ".join(m["content"] for m in request.messages)
        return ProviderResponse(text=text, usage=Usage(input_tokens=estimate_tokens(prompt),
                                                       output_tokens=estimate_tokens(text)))


def run_stage(out: Path, stages: str | list[str], *, config: str | Path | dict | None = None,
              replies: Replies | Scripted | None = None, persona: str = PID, preset: str = "tiny",
              seed: PersonaSeed | None = None, force: bool = False, fake_seed: int = 0) -> Scripted:
    """Run `stages` for one persona into `out` with a scripted model; returns the model (see the module docstring)."""
    model = replies if isinstance(replies, Scripted) else Scripted(replies)
    names = [stages] if isinstance(stages, str) else list(stages)
    if isinstance(config, str):
        out.mkdir(parents=True, exist_ok=True)
        (out / "config.toml").write_text(config, encoding="utf-8")
        config = out / "config.toml"
    if seed is not None:
        _run_seed(out, names, seed, config if isinstance(config, dict) else conf.preset_config(preset, config),
                  model)
        return model
    session = open_session(out, [PERSONAS], [persona], preset, "fake", None, None, None, None, None, config,
                           seed=fake_seed)
    provider = session.llm.provider(session.options.route)
    model.fallback = provider.complete  # the session's own fake (its seed) answers what is not scripted
    provider.complete = model.complete
    try:
        asyncio.run(run_stages(session, names, force=force, show_progress=False))
    finally:
        session.close()
    return model


def _run_seed(out: Path, names: list[str], seed: PersonaSeed, config: dict, model: Scripted) -> None:
    """Stages for a hand-built persona (not in personas/): the runner directly, with the config as given."""
    options = RunOptions(out=out, config=config, route=conf.resolve_route("fake", None), registry=STAGES)
    cache = ResponseCache(out / "cache.sqlite")
    try:
        for name in names:
            # A fresh client per event loop: its semaphore belongs to the loop that first waits on it.
            llm = LLM(providers=lambda r: model, cache=cache, concurrency=4)
            asyncio.run(run_one(STAGES[name], seed, options, llm, config))
    finally:
        cache.close()


# ------------------------------------------------------------------------------------------ synth as a command

# What a test's `synth` must not read from the developer's shell (None: unset, as CliRunner's env takes it).
NO_KEYS = {"ANTHROPIC_API_KEY": None, "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None, "SYNTH_PROMPTS_DIR": None}


def invoke(*args: str, env: dict | None = None):
    """`synth ARGS` in-process (typer's CliRunner); provider keys from the developer's shell never leak in."""
    return CliRunner().invoke(app, list(args), env={**NO_KEYS, **(env or {})})


def synth_env(**extra: str) -> dict[str, str]:
    """The environment for a `synth` subprocess: no provider keys leak in from the developer's shell."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "SYNTH_PROMPTS_DIR")}
    env.update(extra)
    return env


def synth_cmd(*args: str) -> list[str]:
    """The installed `synth` script of the interpreter running the tests (PATH may not hold the venv)."""
    script = Path(sys.executable).parent / "synth"
    if script.is_file():
        return [str(script), *args]
    return [sys.executable, "-c", "import sys; from synth.cli import main; sys.argv[0] = 'synth'; main()", *args]


def run_synth(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(synth_cmd(*args), cwd=REPO, env=env or synth_env(), capture_output=True, text=True,
                          timeout=timeout)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


def eval_fake(data: Path, out: Path, system: str = "flat", k: int = 3, **options) -> dict:
    """`synth eval` in process with the fake answerer and judges and a silent console (unless `console=` is
    given): its summary. `options` are run_eval's own (offline, limit, embedder, embed_model, retriever,
    data_format, plot, concurrency …)."""
    import io

    from rich.console import Console

    from synth.eval.run import run_eval

    settings = {"answerer_model": None, "judge_model": None, "base_url": None, "embed_model": None,
                "offline": False, "plot": False, "limit": None, "concurrency": 4,
                "console": Console(file=io.StringIO(), width=100), **options}
    return run_eval(data=data, system=system, k=k, answerer_provider="fake", judge_provider="fake", out=out,
                    **settings)


def eval_rows(out: Path) -> list[dict]:
    """The per-question rows of an eval run (results.jsonl)."""
    return read_jsonl(out / "results.jsonl")
