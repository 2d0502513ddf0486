"""`synth eval`: feed a memory system the traces in time order, query it at each question's time, answer, judge, score."""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import json
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, create_model
from rich.console import Console
from rich.table import Table

from synth import conf
from synth.eval.data import EvalPersona, EvalQuestion, EvalSet, EvalTrace, load_eval_set
from synth.eval.metrics import METRICS, aggregate, parse_choice, recall_scores
from synth.eval.systems import MemorySystem, OracleSystem, system_factory
from synth.jsonl import write_json_atomic
from synth.llm.base import GenerationFailed, InputError, LLMRequest, Settings
from synth.llm.cache import ResponseCache
from synth.llm.client import LLM, CallStats
from synth.llm.fake import estimate_tokens
from synth.llm.providers import provider_factory
from synth.prompts import render

TASKS = ("eval_answer_free", "eval_answer_choice", "eval_judge_memory", "eval_judge_consistency")
# Settings that make two runs' results incomparable: resuming into a directory made under others is refused.
_RUN_IDENTITY = ("data", "protocol", "system", "k", "answerer", "judge", "embed_model")


def eval_settings() -> dict:
    """The [defaults.eval] knobs of presets.toml, with the values used when a key is absent."""
    table = conf.preset_config("small")
    section = table.get("eval", {}) if isinstance(table.get("eval"), dict) else {}
    defaults = {"context_tokens": 100_000, "full_context_tokens": 100_000, "answer_temperature": 0.0,
                "answer_max_tokens": 1024, "judge_temperature": 0.0, "judge_max_tokens": 1024,
                "bootstrap_resamples": 1000, "bootstrap_seed": 0, "concurrency": 16,
                "max_repairs": table.get("max_repairs", 2), "max_attempts": table.get("max_attempts", 6),
                "timeout_s": table.get("timeout_s", 180)}
    return {**defaults, **section}


# ---- output schemas -------------------------------------------------------------------------------------------


class FreeAnswer(BaseModel):
    answer: str


@functools.lru_cache(maxsize=8)
def choice_model(letters: tuple[str, ...]) -> type[BaseModel]:
    """{"choice": one of the question's letters, "answer": a short reason}."""
    return create_model("ChoiceAnswer", choice=(Literal[letters], ...), answer=(str, ...))


@functools.lru_cache(maxsize=64)
def memory_judge_model(items: int) -> type[BaseModel]:
    """The memory judge's verdict; covered item numbers are bounded by the number of ground-truth items."""
    fields: dict = {"reason": (str, ...)}
    if items:
        fields["covered_items"] = (list[Annotated[int, Field(ge=1, le=items)]], ...)
    fields["helpfulness"] = (int, Field(ge=0, le=2))
    return create_model(f"MemoryJudgement{items}", **fields)


class ConsistencyJudgement(BaseModel):
    reason: str
    truthfulness: Literal[0, 1]
    consistency: int = Field(ge=0, le=3)


# ---- retrieval under the online / offline protocol ------------------------------------------------------------


@dataclass
class Retrieval:
    question: EvalQuestion
    retrieved: list[str]
    latency_s: float
    visible: int  # traces the system had been fed when asked
    system_answer: str | None = None


def _visible(trace: EvalTrace, question: EvalQuestion) -> bool:
    # Undated traces and undated questions cannot be ordered; they count as visible rather than hidden.
    return trace.time is None or question.question_time is None or trace.time <= question.question_time


def _by_question_time(questions: list[EvalQuestion]) -> list[EvalQuestion]:
    return sorted(questions, key=lambda q: (q.question_time is None, q.question_time or dt.datetime.max))


def retrieve_all(persona: EvalPersona, system: MemorySystem, k: int, offline: bool,
                 skip: Collection[str] = ()) -> list[Retrieval]:
    """Query `system` for each question of the persona; online, it has been fed exactly the traces up to the
    question's time (questions in time order, traces ingested incrementally); offline, every trace first."""
    traces = persona.traces
    fed = 0
    if offline:
        for trace in traces:
            system.ingest(trace.as_dict())
        fed = len(traces)
    out = []
    for question in _by_question_time(persona.questions):
        if not offline:
            while fed < len(traces) and _visible(traces[fed], question):
                system.ingest(traces[fed].as_dict())
                fed += 1
        if question.key in skip:
            continue
        if isinstance(system, OracleSystem):
            system.set_gold(question.gold_ids)
        start = time.perf_counter()
        ids = list(dict.fromkeys(system.retrieve(question.question, k, question.question_time)))
        if not getattr(system, "ignores_k", False):
            ids = ids[:k]
        answer_fn = getattr(system, "answer", None)
        text = answer_fn(question.question, [dict(id=c, text=t) for c, t in question.choices],
                         question.question_time) if callable(answer_fn) else None
        out.append(Retrieval(question, ids, time.perf_counter() - start, fed, text))
    return out


# ---- answering and judging -----------------------------------------------------------------------------------


@dataclass
class Scorer:
    llm: LLM
    answerer: conf.Route
    judge: conf.Route
    settings: dict
    persona: EvalPersona
    by_id: dict[str, EvalTrace]

    def _context(self, ids: list[str]) -> list[dict]:
        """Retrieved traces within the context budget (best first), shown in time order."""
        chosen, spent = [], 0
        for tid in ids:
            trace = self.by_id.get(tid)
            if trace is None:
                continue
            tokens = estimate_tokens(trace.content)
            if chosen and spent + tokens > int(self.settings["context_tokens"]):
                break
            chosen.append(trace)
            spent += tokens
        chosen.sort(key=lambda t: (t.time is not None, t.time or dt.datetime.min))
        return [{"time": t.event_date or (t.time.isoformat(sep=" ") if t.time else ""), "medium": t.medium,
                 "content": t.content} for t in chosen]

    async def _ask(self, route, task: str, template: str, variables: dict, model: type[BaseModel],
                   stats: CallStats, judge: bool) -> BaseModel:
        prefix = "judge" if judge else "answer"
        request = LLMRequest(
            task=task,
            messages=render(template, language=self.persona.language, name=self.persona.name, **variables),
            json_schema=model.model_json_schema(),
            settings=Settings(temperature=float(self.settings[f"{prefix}_temperature"]),
                              max_tokens=int(self.settings[f"{prefix}_max_tokens"])),
        )
        return await self.llm.generate(route, request, model, stats, language=self.persona.language)

    async def score(self, r: Retrieval) -> dict:
        q = r.question
        stats = CallStats()
        traces = self._context(r.retrieved)
        base = {"question": q.question, "question_time": q.time_text, "traces": traces}
        started = time.perf_counter()

        async def free() -> str:
            if r.system_answer is not None:
                return r.system_answer
            out = await self._ask(self.answerer, "eval_answer_free", "eval_answer_free.j2", base, FreeAnswer,
                                  stats, judge=False)
            return out.answer

        async def choose() -> tuple[str | None, str | None]:
            if not q.choices:
                return None, None
            if r.system_answer is not None:
                return parse_choice(r.system_answer), r.system_answer
            letters = tuple(sorted({c for c, _ in q.choices}))
            out = await self._ask(self.answerer, "eval_answer_choice", "eval_answer_choice.j2",
                                  {**base, "choices": [{"id": c, "text": t} for c, t in q.choices]},
                                  choice_model(letters), stats, judge=False)
            return out.choice or parse_choice(out.answer), out.answer

        async def judge_memory() -> dict:
            n = len(q.statements)
            out = await self._ask(self.judge, "eval_judge_memory", "eval_judge_memory.j2",
                                  {**base, "answer": q.answer, "statements": list(q.statements)},
                                  memory_judge_model(n), stats, judge=True)
            covered = sorted(set(getattr(out, "covered_items", [])))
            return {"memory_recall": len(covered) / n if n else None, "covered_items": covered,
                    "memory_helpfulness": out.helpfulness, "memory_reason": out.reason}

        (prediction, (letter, choice_text), memory) = await asyncio.gather(free(), choose(), judge_memory())
        answered = time.perf_counter()
        verdict = await self._ask(self.judge, "eval_judge_consistency", "eval_judge_consistency.j2",
                                  {"question": q.question, "statements": list(q.statements), "answer": q.answer,
                                   "prediction": prediction}, ConsistencyJudgement, stats, judge=True)
        # The rubric ties them: a hallucinated answer (truthfulness 0) scores 0 on consistency.
        consistency = 0 if verdict.truthfulness == 0 else verdict.consistency
        return {
            "key": q.key, "question_id": q.id, "persona": q.persona, "language": self.persona.language,
            "question_type": q.question_type, "dimension": q.dimension, "question_time": q.time_text,
            "visible_traces": r.visible, "retrieved": r.retrieved, "gold_trace_ids": q.gold_ids,
            "recall": recall_scores(r.retrieved, q.evidence_sets),
            "prediction": prediction, "choice_response": choice_text, "chosen": letter,
            "correct_choice_id": q.correct_choice_id,
            "correct": None if not q.choices or not q.correct_choice_id else letter == q.correct_choice_id,
            "judge": {**memory, "truthfulness": verdict.truthfulness, "consistency": consistency,
                      "consistency_reason": verdict.reason},
            "latency_s": {"retrieve": round(r.latency_s, 4), "answer_and_memory_judge": round(answered - started, 3),
                          "total": round(r.latency_s + time.perf_counter() - started, 3)},
            "tokens": {"input": stats.usage.input_tokens, "output": stats.usage.output_tokens,
                       "requests": stats.requests, "cache_hits": stats.cache_hits,
                       "provider_calls": stats.provider_calls},
            "error": None,
        }


# ---- results file (resumable) --------------------------------------------------------------------------------


def read_results(path: Path) -> dict[str, dict]:
    """Finished rows by key; a half-written last line (a killed run) is dropped, failed rows are retried."""
    rows: dict[str, dict] = {}
    if not path.is_file():
        return rows
    good: list[str] = []
    broken = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            broken = True
            continue
        good.append(line)
        if row.get("error") is None:
            rows[row["key"]] = row
    if broken:
        path.write_text("".join(line + "\n" for line in good), encoding="utf-8")
    return rows


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


# ---- summary, table, plots -----------------------------------------------------------------------------------


def summarize_rows(rows: list[dict], eval_set: EvalSet, questions: list[EvalQuestion], settings: dict,
                   run: dict) -> dict:
    resamples, seed = int(settings["bootstrap_resamples"]), int(settings["bootstrap_seed"])
    groups = {}
    for field in ("question_type", "dimension"):
        values = sorted({r[field] for r in rows})
        groups[f"by_{field}"] = {v: aggregate([r for r in rows if r[field] == v], resamples, seed) for v in values}
    return {"settings": run, "counts": _counts(rows, eval_set, questions, groups),
            "overall": aggregate(rows, resamples, seed), **groups}


def _future_evidence(eval_set: EvalSet, questions: list[EvalQuestion]) -> int:
    """Questions whose gold traces include one dated after the question time (a causality flaw in the data)."""
    times = {p.key: {t.id: t.time for t in p.traces} for p in eval_set.personas}
    return sum(1 for q in questions if q.question_time and any(
        (when := times[q.persona].get(t)) is not None and when > q.question_time for t in q.gold_ids))


def _counts(rows: list[dict], eval_set: EvalSet, questions: list[EvalQuestion], groups: dict) -> dict:
    def per(field: str) -> dict[str, int]:
        return {k: sum(1 for r in rows if r[field] == k) for k in groups[f"by_{field}"]}

    return {
        "personas": len({q.persona for q in questions}),
        "questions": len(questions),
        "scored": len(rows),
        "failed": len(questions) - len(rows),
        "recall_excluded_no_gold_traces": sum(1 for r in rows if r.get("recall") is None),
        "multiple_choice": sum(1 for r in rows if r.get("correct") is not None),
        "questions_with_future_evidence": _future_evidence(eval_set, questions),
        "by_question_type": per("question_type"),
        "by_dimension": per("dimension"),
    }


def _fmt(cell: dict) -> str:
    if cell["mean"] is None:
        return "—"
    return f"{cell['mean']:.3f} [{cell['ci_low']:.3f}, {cell['ci_high']:.3f}]"


# Column labels of the per-group tables, short enough for an 80-column terminal.
_SHORT = {"recall_flat": "R flat", "recall_all_all": "R all/all", "recall_all_any": "R all/any",
          "recall_any_all": "R any/all", "recall_any_any": "R any/any", "choice_accuracy": "acc",
          "memory_recall": "mem rec", "memory_helpfulness": "helpful", "hallucination_rate": "halluc",
          "qa_consistency": "consist", "perfect_rate": "perfect"}


def print_summary(summary: dict, console: Console) -> None:
    run = summary["settings"]
    overall = Table(title=f"synth eval — {run['system']} k={run['k']} ({run['protocol']}) on {run['data']}")
    overall.add_column("metric")
    overall.add_column("mean [95% CI]", justify="right")
    overall.add_column("n", justify="right")
    for metric in METRICS:
        overall.add_row(metric, _fmt(summary["overall"][metric]), str(summary["overall"][metric]["n"]))
    console.print(overall)
    for group in ("by_question_type", "by_dimension"):
        table = Table(title=group.replace("_", " "))
        table.add_column(group.removeprefix("by_"))
        table.add_column("n", justify="right")
        for metric in METRICS:
            table.add_column(_SHORT[metric], justify="right")
        for name, cells in summary[group].items():
            n = summary["counts"][group].get(name, 0)
            table.add_row(name, str(n), *("—" if cells[m]["mean"] is None else f"{cells[m]['mean']:.2f}"
                                          for m in METRICS))
        console.print(table)
    c = summary["counts"]
    console.print(f"{c['scored']}/{c['questions']} question(s) scored, {c['failed']} failed; "
                  f"{c['recall_excluded_no_gold_traces']} without gold traces left out of recall; "
                  f"{c['questions_with_future_evidence']} with gold traces after the question time")


def write_plots(summary: dict, out: Path) -> list[Path]:
    """One PNG per grouping: a bar chart per metric, one bar per question type (or dimension)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for group in ("by_question_type", "by_dimension"):
        names = list(summary[group])
        if not names:
            continue
        fig, axes = plt.subplots(3, 4, figsize=(16, 10), sharey=True)
        for ax, metric in zip(axes.flat, METRICS):
            means = [summary[group][n][metric]["mean"] or 0.0 for n in names]
            ax.bar(range(len(names)), means, color="#4c72b0")
            ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
            ax.set_title(metric, fontsize=10)
            ax.set_ylim(0, 1)
        for ax in list(axes.flat)[len(METRICS):]:
            ax.axis("off")
        fig.suptitle(f"{summary['settings']['system']} k={summary['settings']['k']} — {group.replace('_', ' ')}")
        fig.tight_layout()
        path = out / f"{group}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


# ---- the command ---------------------------------------------------------------------------------------------


def _route(provider: str | None, model: str | None, base_url: str | None) -> conf.Route:
    name, _ = conf.choose_provider(provider)
    return conf.resolve_route(name, model, base_url if name == "openai" else None)


async def _score_all(scorers: dict[str, Scorer], retrievals: list[Retrieval], results_path: Path,
                     concurrency: int, on_done: Callable[[dict], None]) -> dict:
    """Score concurrently; each finished question is appended (and flushed) at once, so a kill loses nothing."""
    gate = asyncio.Semaphore(concurrency * 2)
    calls = {"failed_questions": 0, "requests": 0, "cache_hits": 0, "provider_calls": 0, "input_tokens": 0,
             "output_tokens": 0}
    with results_path.open("a", encoding="utf-8") as handle:

        async def one(r: Retrieval) -> None:
            async with gate:
                try:
                    row = await scorers[r.question.persona].score(r)
                    for name in ("requests", "cache_hits", "provider_calls"):
                        calls[name] += row["tokens"][name]
                    calls["input_tokens"] += row["tokens"]["input"]
                    calls["output_tokens"] += row["tokens"]["output"]
                except GenerationFailed as exc:
                    calls["failed_questions"] += 1
                    row = {"key": r.question.key, "question_id": r.question.id, "error": str(exc)}
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            handle.flush()
            on_done(row)

        async with asyncio.TaskGroup() as group:
            for r in retrievals:
                group.create_task(one(r))
    return calls


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
        calls = asyncio.run(_score_all(scorers, retrievals, results_path, workers,
                                        lambda row: done.__setitem__(row["key"], row) if row.get("error") is None
                                        else None))
    finally:
        cache.close()
    rows = [done[q.key] for q in questions if q.key in done]
    summary = summarize_rows(rows, eval_set, questions, settings, run)
    summary["calls"] = calls  # this invocation only (resumed rows cost nothing now)
    write_json_atomic(out / "summary.json", summary)
    print_summary(summary, console)
    if plot:
        for path in write_plots(summary, out):
            console.print(f"plot: {path}", highlight=False)
    return summary
