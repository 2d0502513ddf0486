"""`synth eval`: feed a memory system the traces in time order, query it at each question's time, answer, judge, score."""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import json
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, create_model
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table

from synth import conf
from synth.eval.data import EvalPersona, EvalQuestion, EvalSet, EvalTrace, load_eval_set
from synth.eval.metrics import METRICS, aggregate, parse_choice, recall_scores
from synth.eval.systems import MemorySystem, OracleSystem, describe_error, system_factory
from synth.jsonl import write_json_atomic
from synth.llm.base import GenerationFailed, InputError, LLMRequest, Settings, SynthError
from synth.llm.cache import ResponseCache
from synth.llm.client import LLM, CallStats
from synth.llm.fake import estimate_tokens
from synth.llm.providers import provider_factory
from synth.prompts import render

TASKS = ("eval_answer_free", "eval_answer_choice", "eval_judge_memory", "eval_judge_consistency")
# Settings that make two runs' results incomparable: resuming into a directory made under others is refused.
_RUN_IDENTITY = ("data", "protocol", "system", "k", "answerer", "judge", "embed_model")


def eval_settings() -> dict:
    """The [defaults.eval] knobs of presets.toml (typed and complete: synth.settings) and the client's retry knobs."""
    from synth import settings

    typed = settings.parse(conf.preset_config("small"))
    return {**typed.eval.model_dump(), "max_repairs": typed.max_repairs, "max_attempts": typed.max_attempts,
            "timeout_s": typed.timeout_s}


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
    retrieved: list[str]  # the ids the answerer sees: given to the system, cut to k unless it ignores k
    latency_s: float
    visible: int  # traces the system had been fed when asked
    system_answer: str | None = None
    at_k: list[str] = field(default_factory=list)  # of the first k ids it returned, those it was given: recall@k
    dropped: dict[str, list[str]] = field(default_factory=lambda: {"unknown": [], "future": []})
    error: str | None = None  # the system failed on this question: it is recorded as failed, not scored


def _visible(trace: EvalTrace, question: EvalQuestion) -> bool:
    # Undated traces and undated questions cannot be ordered; they count as visible rather than hidden (and are
    # counted in summary.json as traces_without_date / questions_without_time).
    return trace.time is None or question.question_time is None or trace.time <= question.question_time


def _by_question_time(questions: list[EvalQuestion]) -> list[EvalQuestion]:
    return sorted(questions, key=lambda q: (q.question_time is None, q.question_time or dt.datetime.max))


class _SystemFault(Exception):
    """The memory system misbehaved on one question."""


def _trace_ids(value: object, method: str) -> list[str]:
    """What `retrieve` returned, as a list of id strings; anything else is the system's error on this question."""
    if value is None:
        raise _SystemFault(f"{method} returned None, not a list of trace ids")
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise _SystemFault(f"{method} returned a {type(value).__name__}, not a list of trace ids")
    ids = list(value)
    wrong = next((i for i in ids if not isinstance(i, str)), None)
    if wrong is not None:
        raise _SystemFault(f"{method} returned {wrong!r} ({type(wrong).__name__}) among its ids; ids are strings")
    return ids


def _call(system: MemorySystem, method: str, *args):
    """One call into the system; its own exceptions become a _SystemFault naming the class and the method.
    Domain errors (a built-in's unreachable embeddings endpoint) still stop the run with their own line."""
    try:
        return getattr(system, method)(*args)
    except SynthError:
        raise
    except Exception as exc:
        raise _SystemFault(f"{type(system).__name__}.{method} raised {describe_error(exc)}") from None


def retrieve_all(persona: EvalPersona, system: MemorySystem, k: int, offline: bool,
                 skip: Collection[str] = ()) -> list[Retrieval]:
    """Query `system` for each question of the persona; online, it has been fed exactly the traces up to the
    question's time (questions in time order, traces ingested incrementally); offline, every trace first.

    Ids it returns that it was never given (unknown, or dated after the question time) are dropped before recall
    and answering, and counted. A system that raises, or returns no list, fails that question and the run goes
    on; one that raises in `ingest` fails the persona's remaining questions (its memory is incomplete)."""
    traces = persona.traces
    known = {t.id for t in traces}
    given: set[str] = set()
    broken: str | None = None
    fed = 0

    def feed(upto: Callable[[EvalTrace], bool]) -> None:
        nonlocal fed, broken
        while broken is None and fed < len(traces) and upto(traces[fed]):
            try:
                _call(system, "ingest", traces[fed].as_dict())
            except _SystemFault as fault:
                broken = f"{fault} (on trace '{traces[fed].id}'; no later question of this persona is asked)"
                return
            given.add(traces[fed].id)
            fed += 1

    if offline:
        feed(lambda trace: True)
    out = []
    for question in _by_question_time(persona.questions):
        if not offline:
            feed(lambda trace: _visible(trace, question))
        if question.key in skip:
            continue
        if broken is not None:
            out.append(Retrieval(question, [], 0.0, fed, error=broken))
            continue
        if isinstance(system, OracleSystem):
            system.set_gold(question.gold_ids)
        start = time.perf_counter()
        try:
            name = f"{type(system).__name__}.retrieve"
            ids = list(dict.fromkeys(_trace_ids(_call(system, "retrieve", question.question, k,
                                                      question.question_time), name)))
            text = None
            if callable(getattr(system, "answer", None)):
                text = _call(system, "answer", question.question, [dict(id=c, text=t) for c, t in question.choices],
                             question.question_time)
                if text is not None and not isinstance(text, str):
                    raise _SystemFault(f"{type(system).__name__}.answer returned a {type(text).__name__}, not text")
        except _SystemFault as fault:
            out.append(Retrieval(question, [], time.perf_counter() - start, fed, error=str(fault)))
            continue
        ranked = ids if getattr(system, "ignores_k", False) else ids[:k]
        dropped = {"unknown": [i for i in ranked if i not in known],
                   "future": [i for i in ranked if i in known and i not in given]}
        out.append(Retrieval(question, [i for i in ranked if i in given], time.perf_counter() - start, fed, text,
                             at_k=[i for i in ids[:k] if i in given], dropped=dropped))
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
            "visible_traces": r.visible, "retrieved": r.retrieved, "retrieved_at_k": r.at_k,
            "dropped_ids": r.dropped, "gold_trace_ids": q.gold_ids,
            "recall": recall_scores(r.at_k, q.evidence_sets),
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
                   run: dict, failed: Collection[dict] = ()) -> dict:
    resamples, seed = int(settings["bootstrap_resamples"]), int(settings["bootstrap_seed"])
    groups = {}
    for grouping in ("question_type", "dimension"):
        values = sorted({r[grouping] for r in rows})
        groups[f"by_{grouping}"] = {v: aggregate([r for r in rows if r[grouping] == v], resamples, seed)
                                    for v in values}
    return {"settings": run, "counts": _counts(rows, eval_set, questions, groups, failed),
            "overall": aggregate(rows, resamples, seed), **groups}


def _future_evidence(eval_set: EvalSet, questions: list[EvalQuestion]) -> int:
    """Questions whose gold traces include one dated after the question time (a causality flaw in the data)."""
    times = {p.key: {t.id: t.time for t in p.traces} for p in eval_set.personas}
    return sum(1 for q in questions if q.question_time and any(
        (when := times[q.persona].get(t)) is not None and when > q.question_time for t in q.gold_ids))


def _counts(rows: list[dict], eval_set: EvalSet, questions: list[EvalQuestion], groups: dict,
            failed: Collection[dict]) -> dict:
    def per(grouping: str) -> dict[str, int]:
        return {k: sum(1 for r in rows if r[grouping] == k) for k in groups[f"by_{grouping}"]}

    def dropped(kind: str) -> int:
        return sum(len((r.get("dropped_ids") or {}).get(kind, [])) for r in rows)

    asked = {q.persona for q in questions}
    return {
        "personas": len(asked),
        "questions": len(questions),
        "scored": len(rows),
        "failed": len(questions) - len(rows),
        # why, for the questions this invocation tried: the memory system raised or returned no list of ids, or
        # the answerer/judge model gave no valid reply within its attempts
        "failed_by_cause": {cause: sum(1 for f in failed if f.get("cause") == cause) for cause in ("system", "model")},
        "recall_excluded_no_gold_traces": sum(1 for r in rows if r.get("recall") is None),
        "multiple_choice": sum(1 for r in rows if r.get("correct") is not None),
        "questions_with_future_evidence": _future_evidence(eval_set, questions),
        # ids the system returned that it was never given, dropped before recall and answering
        "retrieved_ids_dropped": {"unknown": dropped("unknown"), "future": dropped("future"),
                                  "questions": sum(1 for r in rows if any((r.get("dropped_ids") or {}).values()))},
        # the online protocol cannot order these: such a question sees every trace, such a trace every question
        "questions_without_time": sum(1 for q in questions if q.question_time is None),
        "traces_without_date": sum(1 for p in eval_set.personas if p.key in asked for t in p.traces if t.time is None),
        "by_question_type": per("question_type"),
        "by_dimension": per("dimension"),
    }


def _fmt(cell: dict) -> str:
    if cell["mean"] is None:
        return "—"
    return f"{cell['mean']:.3f} [{cell['ci_low']:.3f}, {cell['ci_high']:.3f}]"


def group_tables(summary: dict, group: str, width: int) -> list[Table]:
    """The metrics of one grouping (by_question_type or by_dimension) as tables no wider than `width`: a row per
    metric, a column per group (mean only; summary.json has the intervals), split into as many tables as needed."""
    label = group.removeprefix("by_")
    label_width = max(cell_len(text) for text in (label, "n", *METRICS))
    names = list(summary[group])
    chunks: list[list[str]] = []
    used = width  # start a new table at the first name
    for name in names:
        column = max(cell_len(name), 4) + 3  # the text, one space either side, a border
        if not chunks or used + column > width:
            chunks.append([])
            used = 1 + label_width + 3
        chunks[-1].append(name)
        used += column
    tables = []
    for number, chunk in enumerate(chunks, 1):
        part = f" ({number}/{len(chunks)})" if len(chunks) > 1 else ""
        table = Table(title=group.replace("_", " ") + part)
        table.add_column(label, no_wrap=True)
        for name in chunk:
            table.add_column(name, justify="right", overflow="fold")  # a name wider than the screen wraps, uncut
        table.add_row("n", *(str(summary["counts"][group].get(name, 0)) for name in chunk))
        for metric in METRICS:
            table.add_row(metric, *("—" if summary[group][name][metric]["mean"] is None
                                    else f"{summary[group][name][metric]['mean']:.2f}" for name in chunk))
        tables.append(table)
    return tables


def print_summary(summary: dict, console: Console) -> None:
    run = summary["settings"]
    # Not the table's title: a long --data path would be folded into the table's width.
    console.print(f"synth eval — {run['system']} k={run['k']} ({run['protocol']}) on {run['data']}", highlight=False)
    overall = Table(title="overall")
    overall.add_column("metric", no_wrap=True)
    overall.add_column("mean [95% CI]", justify="right", no_wrap=True)
    overall.add_column("n", justify="right", no_wrap=True)
    for metric in METRICS:
        overall.add_row(metric, _fmt(summary["overall"][metric]), str(summary["overall"][metric]["n"]))
    console.print(overall)
    for group in ("by_question_type", "by_dimension"):
        for table in group_tables(summary, group, console.width):
            console.print(table)
    c = summary["counts"]
    lines = [f"{c['scored']}/{c['questions']} question(s) scored, {c['failed']} failed; "
             f"{c['recall_excluded_no_gold_traces']} without gold traces left out of recall; "
             f"{c['questions_with_future_evidence']} with gold traces after the question time"]
    dropped = c["retrieved_ids_dropped"]
    if dropped["unknown"] or dropped["future"]:
        lines.append(f"dropped before scoring: {dropped['unknown']} retrieved id(s) the system was never given and "
                     f"{dropped['future']} dated after the question time ({dropped['questions']} question(s))")
    if run["protocol"] == "online" and (c["questions_without_time"] or c["traces_without_date"]):
        lines.append(f"not ordered in time: {c['questions_without_time']} question(s) without a readable "
                     f"question_time (they see every trace), {c['traces_without_date']} trace(s) without a "
                     "readable date (every question sees them)")
    for line in lines:
        console.print(line, highlight=False)


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


def _failed_row(q: EvalQuestion, cause: str, error: str) -> dict:
    """A question that could not be scored: kept in results.jsonl with its error, retried on the next run."""
    return {"key": q.key, "question_id": q.id, "persona": q.persona, "question_type": q.question_type,
            "dimension": q.dimension, "cause": cause, "error": error}


async def _score_all(scorers: dict[str, Scorer], retrievals: list[Retrieval], results_path: Path,
                     concurrency: int, on_done: Callable[[dict], None]) -> dict:
    """Score concurrently; each finished question is appended (and flushed) at once, so a kill loses nothing."""
    gate = asyncio.Semaphore(concurrency * 2)
    calls = {"failed_questions": 0, "requests": 0, "cache_hits": 0, "provider_calls": 0, "input_tokens": 0,
             "output_tokens": 0}
    with results_path.open("a", encoding="utf-8") as handle:

        async def one(r: Retrieval) -> None:
            async with gate:
                if r.error is not None:
                    row = _failed_row(r.question, "system", r.error)
                else:
                    try:
                        row = await scorers[r.question.persona].score(r)
                        for name in ("requests", "cache_hits", "provider_calls"):
                            calls[name] += row["tokens"][name]
                        calls["input_tokens"] += row["tokens"]["input"]
                        calls["output_tokens"] += row["tokens"]["output"]
                    except GenerationFailed as exc:
                        row = _failed_row(r.question, "model", str(exc))
                if row["error"] is not None:
                    calls["failed_questions"] += 1
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
        failed: dict[str, dict] = {}

        def finished(row: dict) -> None:
            (done if row["error"] is None else failed)[row["key"]] = row

        calls = asyncio.run(_score_all(scorers, retrievals, results_path, workers, finished))
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
