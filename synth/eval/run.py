"""`synth eval`: feed memory systems the traces in time order, query them at each question's time, answer, judge,
score.

The steps live beside it: protocol (what a system is fed and asked), scoring (answerer and judge, results.jsonl),
report (summary.json and the tables), compare (several runs side by side) and plots. Several systems in one
command (`--system a,b,c`) share one event loop, one LLM client, one response cache and one vector cache."""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

from synth.config import conf
from synth.core.errors import InputError
from synth.core.jsonl import write_json_atomic
from synth.eval.backbone import Backbone, LoopThread
from synth.eval.data import EvalSet
from synth.eval.embed import EMBEDDERS, LOCAL_EMBEDDER, CachedEmbedder, VectorCache, make_embedder
from synth.eval.formats import load_data
from synth.eval.index import RETRIEVERS
from synth.eval.plots import write_plots
from synth.eval.protocol import IngestCost, Retrieval, retrieve_all
from synth.eval.report import print_summary, summarize_rows
from synth.eval.scoring import Scorer, read_results, score_all
from synth.eval.systems import BUILT_IN, SystemOptions, system_factory
from synth.llm.cache import ResponseCache
from synth.llm.client import LLM
from synth.llm.providers import provider_factory

# Settings that make two runs' results incomparable: resuming into a directory made under others is refused.
_RUN_IDENTITY = ("data", "protocol", "system", "k", "answerer", "judge", "embed_model", "retriever")
_USES_RETRIEVER = ("flat", "memory")
_USES_EMBEDDER = ("mem0", "tree")
# what a question sees in the formats whose own rules decide it (summary.json says so)
_QUESTION_TIME = {
    "longmemeval": "each instance is its own persona: its haystack, asked at its question_date",
    "locomo": "LoCoMo has no question time: every question sees the whole conversation",
}


def eval_settings() -> dict:
    """The [defaults.eval] knobs of presets.toml (typed and complete: synth.config.settings) and the client's retry knobs."""
    from synth.config import settings

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


@dataclass
class SystemSpec:
    """One --system entry: its name (the output folder under a multi-system --out), the built-in or plugin it
    names, and the retriever it uses (`flat-dense` is flat with the dense retriever)."""

    name: str
    base: str | object
    retriever: str | None


def parse_systems(system, retriever: str) -> list[SystemSpec]:
    """`flat`, `flat-hybrid,memory-dense,oracle`, `my_mod:Mine` — or one callable (tests)."""
    if callable(system):
        return [SystemSpec(getattr(system, "__name__", repr(system)), system, None)]
    specs: list[SystemSpec] = []
    for part in (p.strip() for p in str(system).split(",")):
        if not part:
            raise InputError(f"--system: '{system}': an empty name between commas")
        base, _, suffix = part.rpartition("-") if part.rpartition("-")[2] in RETRIEVERS else (part, "", "")
        if base in _USES_RETRIEVER:
            specs.append(SystemSpec(part, base, suffix or retriever))
        else:
            specs.append(SystemSpec(part, part, None))
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise InputError(f"--system: '{system}': a system is named twice")
    return specs


class _Shared:
    """What the systems of one command share: the loop, the LLM client and its cache, the vector cache and the
    embedder. Made before anything is written (a bad --embed-model or plugin stops the command first); `open`
    attaches the caches under --out."""

    def __init__(self, settings: dict, concurrency: int, embed_model: str | None, base_url: str | None,
                 needs_embedder: bool, embedder: str = "e5") -> None:
        self.settings = settings
        self.workers = concurrency
        self.llm = LLM(providers=provider_factory(timeout_s=float(settings["timeout_s"])), cache=None,
                       concurrency=concurrency, max_repairs=int(settings["max_repairs"]),
                       max_attempts=int(settings["max_attempts"]), timeout_s=float(settings["timeout_s"]))
        self.vectors = VectorCache(None)
        self._embedder = None
        if needs_embedder:
            inner = make_embedder(embed_model, base_url, int(settings["embed_max_chars"]), None, embedder,
                                  int(settings["use_max_tokens"]))
            self._embedder = CachedEmbedder(inner, self.vectors)
        self.loop = LoopThread()

    def embedder(self):
        if self._embedder is None:
            raise InputError("internal: a system asked for an embedder the command did not make")
        return self._embedder

    def open(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.llm.cache = ResponseCache(root / "cache.sqlite")
        self.vectors.path = root / "vectors.sqlite"

    def close(self) -> None:
        # the providers' HTTP sessions belong to the loop: closed in it, before it stops
        self.loop.run(self.llm.aclose())
        self.loop.close()
        if self.llm.cache is not None:
            self.llm.cache.close()
        self.vectors.close()


def run_eval(data, system, k, answerer_provider, answerer_model, judge_provider, judge_model, base_url, embed_model,
             offline, out, plot, limit, concurrency, console, retriever: str | None = None,
             embedder: str | None = None, data_format: str | None = None) -> dict:
    """Score each system of `system` (a --system string, comma-separated, or a callable returning a MemorySystem)
    on the data at `data`. One system writes results.jsonl, summary.json (and plots) under `out`; several write
    one folder each under `out` and a side-by-side table (compare.json; --plot: compare.png). Returns the summary
    (one system) or {"systems": {name: summary}, "compare": ...}."""
    settings = eval_settings()
    if k < 1:
        raise InputError("--k must be at least 1")
    # --embed-model alone (the old way to ask for dense retrieval) still means dense
    retriever = retriever or ("dense" if embed_model else settings["retriever"])
    if retriever not in RETRIEVERS:
        raise InputError(f"--retriever: '{retriever}' is not one of {', '.join(RETRIEVERS)}")
    embedder = embedder or settings["embedder"]
    if embedder not in EMBEDDERS:
        raise InputError(f"--embedder: '{embedder}' is not one of {', '.join(EMBEDDERS)}")
    specs = parse_systems(system, retriever)
    eval_set = load_data(Path(data), data_format)
    answerer, judge = _route(answerer_provider, answerer_model, base_url), _route(judge_provider, judge_model, base_url)
    out = Path(out)
    shared = _Shared(settings, int(concurrency or settings["concurrency"]), embed_model, base_url,
                     any(_embeds(s) for s in specs), embedder)
    # what a run's settings.json records as its embedder: e5 keeps the name it always had ("local"), so runs made
    # before --embedder resume; another offline embedder is "local:<kind>"; a server's model is its own name
    embed_model = embed_model or (LOCAL_EMBEDDER if embedder == "e5" else f"{LOCAL_EMBEDDER}:{embedder}")
    summaries: dict[str, dict] = {}
    try:
        # every system is made once before anything is written: one that cannot be made stops the command here
        makers = {s.name: (system_factory(s.base, options := _options(s, shared, answerer)), options.backbone)
                  for s in specs}
        shared.open(out)
        for spec in specs:
            target = out if len(specs) == 1 else out / spec.name
            summaries[spec.name] = _run_one(spec, *makers[spec.name], eval_set, data, k, answerer, judge,
                                            embed_model, offline, target, plot, limit, shared, console)
    finally:
        shared.close()
    if len(specs) == 1:
        return summaries[specs[0].name]
    from synth.eval.compare import compare_runs, print_compare, write_compare_plot

    table = compare_runs([out / s.name for s in specs])
    write_json_atomic(out / "compare.json", table)
    print_compare(table, console)
    if plot:
        console.print(f"plot: {write_compare_plot(table, out / 'compare.png')}", highlight=False)
    return {"systems": summaries, "compare": table}


def _embeds(spec: SystemSpec) -> bool:
    return spec.retriever in ("dense", "hybrid") or spec.base in _USES_EMBEDDER


def _options(spec: SystemSpec, shared: _Shared, answerer: conf.Route) -> SystemOptions:
    backbone = None
    if spec.base in ("memory", "mem0", "tree"):
        backbone = Backbone(shared.llm, answerer, shared.loop, float(shared.settings["answer_temperature"]),
                            int(shared.settings["answer_max_tokens"]))
    return SystemOptions(retriever=spec.retriever or "bm25", settings=shared.settings, embedder=shared.embedder,
                         backbone=backbone)


def _run_one(spec: SystemSpec, make_system, backbone: Backbone | None, eval_set: EvalSet, data, k: int,
             answerer: conf.Route, judge: conf.Route, embed_model: str | None, offline: bool, out: Path, plot: bool,
             limit: int | None, shared: _Shared, console) -> dict:
    settings = shared.settings
    questions = eval_set.questions[:limit] if limit else eval_set.questions
    keep = {q.key for q in questions}
    embeds = _embeds(spec)
    out.mkdir(parents=True, exist_ok=True)
    run = {"data": str(data), "source": eval_set.source, "protocol": "offline" if offline else "online",
           "system": spec.name, "k": k, "retriever": spec.retriever,
           "answerer": answerer.spec, "judge": judge.spec, "embed_model": embed_model if embeds else None,
           "limit": limit, "context_tokens": settings["context_tokens"],
           "bootstrap_resamples": settings["bootstrap_resamples"], "bootstrap_seed": settings["bootstrap_seed"]}
    if eval_set.source in _QUESTION_TIME:
        run["question_time"] = _QUESTION_TIME[eval_set.source]
    _check_identity(out, run)
    results_path = out / "results.jsonl"
    done = read_results(results_path)
    retrievals: list[Retrieval] = []
    scorers: dict[str, Scorer] = {}
    cost = IngestCost()
    for persona in eval_set.personas:
        if not any(q.key in keep for q in persona.questions):
            continue
        skip = {q.key for q in persona.questions if q.key in done or q.key not in keep}
        if len(skip) < len(persona.questions):
            instance = make_system()
            if callable(getattr(instance, "set_persona", None)):
                instance.set_persona(persona.name, persona.language)
            retrievals += retrieve_all(persona, instance, k, offline, skip, cost)
        scorers[persona.key] = Scorer(shared.llm, answerer, judge, settings, persona,
                                      {t.id: t for t in persona.traces})
    console.print(f"{spec.name}: {len(questions)} question(s) over {len(scorers)} persona(s): "
                  f"{len(done.keys() & keep)} already scored, {len(retrievals)} to score ({run['protocol']} "
                  "protocol)", highlight=False)
    failed: dict[str, dict] = {}

    def finished(row: dict) -> None:
        (done if row["error"] is None else failed)[row["key"]] = row

    calls = shared.loop.run(score_all(scorers, retrievals, results_path, shared.workers, finished))
    rows = [done[q.key] for q in questions if q.key in done]
    summary = summarize_rows(rows, eval_set, questions, settings, run, list(failed.values()))
    summary["calls"] = calls  # this invocation only (resumed rows cost nothing now)
    summary["ingest"] = _ingest_record(out, cost, backbone, retrievals)
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


def _ingest_record(out: Path, cost: IngestCost, backbone: Backbone | None, retrievals: list[Retrieval]) -> dict:
    """What building the memory cost (traces, seconds, LLM calls at ingest) and query latency, for this
    invocation; a run that had nothing left to ask keeps the record of the run that did the work."""
    path = out / "ingest.json"
    if not cost.traces and path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    latencies = sorted(r.latency_s for r in retrievals if r.error is None)
    record = {**cost.as_dict(),
              "llm": backbone.calls() if backbone is not None else None,
              "queries": len(latencies),
              "query_ms_mean": round(1000 * statistics.fmean(latencies), 2) if latencies else None,
              "query_ms_p95": round(1000 * latencies[math.ceil(0.95 * len(latencies)) - 1], 2) if latencies else None}
    write_json_atomic(path, record)
    return record


__all__ = ["run_eval", "parse_systems", "eval_settings", "BUILT_IN"]
