"""`synth eval`: feed a memory system the traces in time order, query it at each question's time, answer, judge, score.

The steps live beside it: protocol (what the system is fed and asked), scoring (answerer and judge, results.jsonl),
report (summary.json and the tables) and plots."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from synth import conf
from synth.eval.data import load_eval_set
from synth.eval.plots import write_plots
from synth.eval.protocol import Retrieval, retrieve_all
from synth.eval.report import print_summary, summarize_rows
from synth.eval.scoring import Scorer, read_results, score_all
from synth.eval.systems import system_factory
from synth.jsonl import write_json_atomic
from synth.llm.base import InputError
from synth.llm.cache import ResponseCache
from synth.llm.client import LLM, closing
from synth.llm.providers import provider_factory

# Settings that make two runs' results incomparable: resuming into a directory made under others is refused.
_RUN_IDENTITY = ("data", "protocol", "system", "k", "answerer", "judge", "embed_model")


def eval_settings() -> dict:
    """The [defaults.eval] knobs of presets.toml (typed and complete: synth.settings) and the client's retry knobs."""
    from synth import settings

    typed = settings.parse(conf.preset_config("small"))
    return {**typed.eval.model_dump(), "max_repairs": typed.max_repairs, "max_attempts": typed.max_attempts,
            "timeout_s": typed.timeout_s}


def _check_identity(out: Path, settings: dict) -> None:
    path = out / "settings.json"
    if path.is_file():
        before = json.loads(path.read_text(encoding="utf-8"))
        differs = [k for k in _RUN_IDENTITY if before.get(k) != settings.get(k)]
        if differs and (out / "results.jsonl").is_file():
            key = differs[0]
            raise InputError(f"--out {out}: its results were made with {key}={before.get(key)!r}, not "
                             f"{settings.get(key)!r}; choose another --out or delete {out / 'results.jsonl'}")
    write_json_atomic(path, settings)


def _route(provider: str | None, model: str | None, base_url: str | None) -> conf.Route:
    name, _ = conf.choose_provider(provider)
    return conf.resolve_route(name, model, base_url if name == "openai" else None)


def run_eval(data, system, k, answerer_provider, answerer_model, judge_provider, judge_model, base_url, embed_model,
             offline, out, plot, limit, concurrency, console) -> dict:
    """Score `system` on the data at `data`; writes results.jsonl, summary.json (and plots) under `out`.
    `system` is a --system string (oracle, flat, full, module:Class) or a callable returning a MemorySystem."""
    settings = eval_settings()
    if k < 1:
        raise InputError("--k must be at least 1")
    eval_set = load_eval_set(Path(data))
    questions = eval_set.questions[:limit] if limit else eval_set.questions
    keep = {q.key for q in questions}
    answerer, judge = _route(answerer_provider, answerer_model, base_url), _route(judge_provider, judge_model, base_url)
    make_system = system_factory(system, embed_model, base_url, int(settings["full_context_tokens"]))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    run = {"data": str(data), "source": eval_set.source, "protocol": "offline" if offline else "online",
           "system": system if isinstance(system, str) else getattr(system, "__name__", repr(system)), "k": k,
           "answerer": answerer.spec, "judge": judge.spec, "embed_model": embed_model, "limit": limit,
           "context_tokens": settings["context_tokens"], "bootstrap_resamples": settings["bootstrap_resamples"],
           "bootstrap_seed": settings["bootstrap_seed"]}
    _check_identity(out, run)
    results_path = out / "results.jsonl"
    done = read_results(results_path)

    retrievals: list[Retrieval] = []
    scorers: dict[str, Scorer] = {}
    cache = ResponseCache(out / "cache.sqlite")
    workers = int(concurrency or settings["concurrency"])
    llm = LLM(providers=provider_factory(timeout_s=float(settings["timeout_s"])), cache=cache, concurrency=workers,
              max_repairs=int(settings["max_repairs"]), max_attempts=int(settings["max_attempts"]),
              timeout_s=float(settings["timeout_s"]))
    try:
        for persona in eval_set.personas:
            wanted = [q for q in persona.questions if q.key in keep]
            if not wanted:
                continue
            skip = {q.key for q in persona.questions if q.key in done or q.key not in keep}
            if len(skip) < len(persona.questions):
                retrievals += retrieve_all(persona, make_system(), k, offline, skip)
            scorers[persona.key] = Scorer(llm, answerer, judge, settings, persona, {t.id: t for t in persona.traces})
        console.print(f"{len(questions)} question(s) over {len(scorers)} persona(s): {len(done.keys() & keep)} already "
                      f"scored, {len(retrievals)} to score ({run['protocol']} protocol, system {run['system']})",
                      highlight=False)
        failed: dict[str, dict] = {}

        def finished(row: dict) -> None:
            (done if row["error"] is None else failed)[row["key"]] = row

        calls = asyncio.run(closing(llm, score_all(scorers, retrievals, results_path, workers, finished)))
    finally:
        cache.close()
    rows = [done[q.key] for q in questions if q.key in done]
    summary = summarize_rows(rows, eval_set, questions, settings, run, list(failed.values()))
    summary["calls"] = calls  # this invocation only (resumed rows cost nothing now)
    write_json_atomic(out / "summary.json", summary)
    print_summary(summary, console)
    for row in list(failed.values())[:3]:
        console.print(f"failed {row['key']}: {row['error']}", highlight=False)
    if len(failed) > 3:
        console.print(f"and {len(failed) - 3} more failed question(s): see {results_path}", highlight=False)
    if plot:
        for path in write_plots(summary, out):
            console.print(f"plot: {path}", highlight=False)
    return summary
