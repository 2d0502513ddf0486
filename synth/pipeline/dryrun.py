"""`synth run --dry-run`: run the whole pipeline on the fake provider and price every request at the real model.

Output tokens come from a per-task table in the config (`[defaults.dry_run.output_tokens]`, task → tokens), except
an answer that is text of configured length and nothing else (a trace's `content`, or the list of them an event's
traces written together make): it is priced at the length the dry run's fake wrote, so the planner and the writer
of one task are not priced alike. Input tokens are those of the rendered prompt. Prompt caching is estimated per
task: the first request with a given system prefix writes it to the cache, every later one reads it — when the
prefix is at least the model's `cache_min_tokens` (a provider caches nothing shorter).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from synth.config import conf, settings
from synth.config.conf import Route
from synth.core.errors import SynthError
from synth.core.tokens import estimate_tokens
from synth.engine.runner import routes_for
from synth.llm.base import LLMRequest
from synth.pipeline.dryrun_fake import DryRunFake
from synth.stages import STAGES

DEFAULT_OUTPUT_TOKENS = 300


@dataclass
class Estimate:
    """Calls, tokens and USD of one stage (or the total) under the four pricing modes."""

    calls: int = 0
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0
    usd_batch: float = 0.0
    usd_cache: float = 0.0
    usd_batch_cache: float = 0.0

    def add(self, route: Route, input_tokens: int, output_tokens: int, cached: int, written: int) -> None:
        self.calls += 1
        self.input_tokens += input_tokens
        self.cached_input_tokens += cached
        self.output_tokens += output_tokens
        self.usd += route.cost(input_tokens, output_tokens)
        self.usd_batch += route.cost(input_tokens, output_tokens, batch=True)
        self.usd_cache += route.cost(input_tokens, output_tokens, cached, written)
        self.usd_batch_cache += route.cost(input_tokens, output_tokens, cached, written, batch=True)

    def merge(self, other: "Estimate") -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)


def default_preset(preset: str | None, provider: str) -> str:
    """As `synth run`: the embedded local model defaults to `tiny`, everything else to `small`."""
    return preset or ("tiny" if provider == "local" else "small")


def price_requests(requests: Iterable[LLMRequest], stage_of: dict[str, str], route_of: dict[str, Route],
                   output_tokens: dict[str, int], text_tokens: dict[int, int] | None = None) -> dict[str, Estimate]:
    """Per-stage estimates of the fake run's requests, in the order they were sent. `text_tokens`: id(request) →
    the size of its answer when that answer is a text of configured length (it replaces the task's table value)."""
    sized = text_tokens or {}
    per_stage: dict[str, Estimate] = {}
    seen_prefixes: set[tuple[str, str]] = set()
    for request in requests:
        stage = stage_of.get(request.task, request.task)
        input_tokens = estimate_tokens(" ".join(m["content"] for m in request.messages))
        out = sized.get(id(request)) or int(output_tokens.get(request.task, DEFAULT_OUTPUT_TOKENS))
        out = min(out, request.settings.max_tokens)
        cached = written = 0
        if request.system and estimate_tokens(request.system) >= route_of[request.task].price("cache_min_tokens"):
            prefix = (request.task, request.system)
            if prefix in seen_prefixes:
                cached = estimate_tokens(request.system)
            else:
                written = estimate_tokens(request.system)
                seen_prefixes.add(prefix)
        per_stage.setdefault(stage, Estimate()).add(route_of[request.task], input_tokens, out, cached, written)
    return per_stage


def fake_requests(preset: str, personas: list[Path], persona: list[str], config: Path | None,
                  real: Route, realistic: bool = True, keep: Path | None = None,
                  ) -> tuple[list[LLMRequest], dict[str, Route], dict, str | None, int, dict[int, int]]:
    """Run every stage on the fake provider in a temporary directory (`keep`: in this one, left in place); returns
    the requests it sent, the routes, the preset's config, an error, the final items the run kept and the sizes of
    its answers that are texts of configured length (id(request) → tokens; empty for the plain fake).
    `realistic`: the dry run's fake (synth.pipeline.dryrun_fake), else the plain one."""
    from synth.pipeline import session as pipeline

    with tempfile.TemporaryDirectory(prefix="synth-dryrun-") as tmp:
        session = pipeline.open_session(keep or Path(tmp), personas, persona, preset, "fake", None, None, None, None, None,
                                        config, write_dataset_json=False, log=Console(stderr=True, quiet=True))
        route_of: dict[str, Route] = {}
        for cfg in session.configs.values():
            for stage in STAGES.values():
                for task, route in routes_for(stage, cfg, real).items():
                    route_of.setdefault(task, route)
            cfg["routes"] = {}  # every task runs on the fake; the real routes only price it
        plain = session.llm.provider(session.options.route)
        error = None
        # Traces of the configured length, so the prompts that quote traces (QA, distractors, filter) are priced
        # at realistic sizes rather than at the fake's few placeholder words.
        parsed = [settings.parse(cfg) for cfg in session.configs.values()]
        sections = [p.traces for p in parsed]
        if not os.environ.get("SYNTH_FAKE_CONTENT_WORDS"):  # a size the user set wins
            plain.content_words = sum((t.min_words + t.max_words) // 2 for t in sections) // max(1, len(sections))
        fake = plain
        if realistic and parsed:
            # answers shaped like a real model's (synth.pipeline.dryrun_fake): the registry grows at the configured
            # rate and texts have the configured lengths; it takes the plain fake's place in the run's provider table
            shape = parsed[0].dry_run
            fake = DryRunFake(shape.output_tokens, shape.people_per_month, shape.places_per_month,
                              DEFAULT_OUTPUT_TOKENS, seed=plain.seed, content_words=plain.content_words,
                              public_media=frozenset(parsed[0].traces.public_media))
            route = session.options.route
            session.llm._providers[(route.provider, route.base_url)] = fake
        try:
            asyncio.run(pipeline.run_stages(session, STAGES.order(), show_progress=False))
        except SynthError as exc:
            error = str(exc)
        except ExceptionGroup as group:
            error = "; ".join(str(e) for e in group.exceptions)
        finally:
            session.close()
        final = sum(len(path.read_text(encoding="utf-8").splitlines())
                    for path in (keep or Path(tmp)).glob("*/final.jsonl"))
        sizes = fake.text_tokens if isinstance(fake, DryRunFake) else {}
        return list(fake.seen), route_of, session.options.config, error, final, sizes


def dry_run(preset: str | None, provider: str | None, model: str | None, base_url: str | None,
            personas: list[Path], persona: list[str], config: Path | None, batch: bool,
            console: Console, realistic: bool = True) -> dict:
    """Estimate calls, tokens and USD per stage for a preset on a real provider/model, calling no model."""
    name, _ = conf.choose_provider(provider)
    real = conf.resolve_route(name, model, base_url)
    preset = default_preset(preset, name)
    requests, route_of, preset_config, error, final, sizes = fake_requests(preset, personas, persona, config, real,
                                                                           realistic)
    stage_of = {task: stage.name for stage in STAGES.values() for task in stage.tasks}
    output_tokens = conf.get(preset_config, "dry_run.output_tokens", {}) or {}
    per_stage = price_requests(requests, stage_of, route_of, output_tokens, sizes)
    ordered = {s: per_stage[s] for s in STAGES if s in per_stage}
    ordered.update({s: e for s, e in per_stage.items() if s not in ordered})
    total = Estimate()
    for estimate in ordered.values():
        total.merge(estimate)
    shape = conf.get(preset_config, "dry_run", {}) or {}
    assumes = {"people_per_month": shape.get("people_per_month"), "places_per_month": shape.get("places_per_month"),
               "realistic_answers": realistic}
    result = {"preset": preset, "provider": real.provider, "model": real.model, "batch": batch,
              "stages": {s: asdict(e) for s, e in ordered.items()}, "total": asdict(total), "error": error,
              "final_items": final, "assumes": assumes}
    _print(console, result, ordered, total)
    return result


def _print(console: Console, result: dict, per_stage: dict[str, Estimate], total: Estimate) -> None:
    table = Table(title=f"dry run — {result['preset']} on {result['provider']}/{result['model']} (no model called)",
                  padding=(0, 1), collapse_padding=True)
    columns = ("stage", "calls", "in tok", "cached", "out tok", "USD", "batch", "caching", "both")
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i == 0 else "right")

    def row(label: str, e: Estimate, style: str | None = None) -> None:
        table.add_row(label, f"{e.calls:,}", f"{e.input_tokens:,}", f"{e.cached_input_tokens:,}",
                      f"{e.output_tokens:,}", f"{e.usd:.4f}", f"{e.usd_batch:.4f}", f"{e.usd_cache:.4f}",
                      f"{e.usd_batch_cache:.4f}", style=style)

    for stage, estimate in per_stage.items():
        row(stage, estimate)
    table.add_section()
    row("total", total, style="bold")
    console.print(table)
    mode = "with --batch and prompt caching" if result["batch"] else "with prompt caching (add --batch for half price)"
    usd = total.usd_batch_cache if result["batch"] else total.usd_cache
    console.print(f"estimated ${usd:.4f} {mode}. USD columns: plain, batch API, prompt caching, both. Output tokens "
                  "are per-task estimates (dry_run.output_tokens in the preset), input tokens those of the rendered "
                  "prompts.", highlight=False, markup=False)
    final = result["final_items"]
    if final:
        console.print(f"per final (valid) item of the fake run ({final:,} kept): {total.calls / final:,.1f} calls, "
                      f"${usd / final:.5f} ({mode}); the fake's answers pass checks a real model may fail, so a real "
                      "run keeps fewer and pays more per item.", highlight=False, markup=False)
    a = result["assumes"]
    if a["realistic_answers"]:
        console.print(f"assumes: the registry grows by {a['people_per_month']} people and {a['places_per_month']} "
                      "places per month of life (dry_run.people_per_month, places_per_month), answers as long as "
                      "dry_run.output_tokens, traces of the configured length (a trace's text is priced at that length, "
                      "not at the task's table value), every prompt's registry bounded by registry_days and "
                      "registry_tokens.", highlight=False, markup=False)
    if result["error"]:
        console.print(f"[yellow]warning:[/] the fake run stopped early, so this covers only the stages that ran: "
                      f"{result['error']}", highlight=False, soft_wrap=True)
