"""The online / offline protocol: what a memory system is fed before each question, and what it returns for it."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field

from synth.core.errors import SynthError
from synth.eval.data import EvalPersona, EvalQuestion, EvalTrace
from synth.eval.systems import MemorySystem, OracleSystem, describe_error


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
    notes: list[str] = field(default_factory=list)  # memory text the system returned beside its ids
    # a relation item's perfect retrieval (SubtleMemory): what the system stored from the gold sessions, read back
    # by provenance (`readback`); None for other items, [] for a system that keeps only the raw traces
    readback: list[str] | None = None


@dataclass
class IngestCost:
    """What building a system's memory took: traces fed, seconds in ingest and prepare (indexing, extraction)."""

    traces: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return {"traces": self.traces, "seconds": round(self.seconds, 3)}


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
                 skip: Collection[str] = (), cost: IngestCost | None = None) -> list[Retrieval]:
    """Query `system` for each question of the persona; online, it has been fed exactly the traces up to the
    question's time (questions in time order, traces ingested incrementally); offline, every trace first.

    Ids it returns that it was never given (unknown, or dated after the question time) are dropped before recall
    and answering, and counted. A system that raises, or returns no list, fails that question and the run goes
    on; one that raises in `ingest` (or `prepare`) fails the persona's remaining questions (its memory is
    incomplete). Time spent in `ingest` and `prepare` is added to `cost`."""
    cost = cost if cost is not None else IngestCost()
    traces = persona.traces
    known = {t.id for t in traces}
    given: set[str] = set()
    broken: str | None = None
    fed = 0

    def feed(upto: Callable[[EvalTrace], bool]) -> None:
        nonlocal fed, broken
        start = time.perf_counter()
        while broken is None and fed < len(traces) and upto(traces[fed]):
            try:
                _call(system, "ingest", traces[fed].as_dict())
            except _SystemFault as fault:
                broken = f"{fault} (on trace '{traces[fed].id}'; no later question of this persona is asked)"
                break
            given.add(traces[fed].id)
            fed += 1
            cost.traces += 1
        if broken is None and callable(getattr(system, "prepare", None)):
            try:
                _call(system, "prepare")
            except _SystemFault as fault:
                broken = f"{fault} (no later question of this persona is asked)"
        cost.seconds += time.perf_counter() - start

    # Online, feeding stops after the last question still to ask: traces after it would cost ingest (embeddings,
    # LLM extraction) and answer nothing (a resumed run or --limit leaves later questions out).
    ordered = _by_question_time(persona.questions)
    to_ask = [q for q in ordered if q.key not in skip]
    if not to_ask:
        return []
    if offline:
        feed(lambda trace: True)
    out = []
    for question in ordered:
        if not offline:
            feed(lambda trace, asked=question: _visible(trace, asked))
        if question.key in skip:
            continue
        out.append(Retrieval(question, [], 0.0, fed, error=broken) if broken is not None
                   else _ask(system, question, k, known, given, fed))
        if question is to_ask[-1]:
            break
    return out


def _ask(system: MemorySystem, question: EvalQuestion, k: int, known: set[str], given: set[str],
         fed: int) -> Retrieval:
    """One question to the system: its retrieval (and its own answer, if it gives one), with the ids it was never
    given dropped and counted; a fault of the system fails this question only."""
    if isinstance(system, OracleSystem):
        system.set_gold(question.gold_ids, question.statements)
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
        notes = _notes(system)
        readback = _readback(system, question, given) if question.correct_answers else None
    except _SystemFault as fault:
        return Retrieval(question, [], time.perf_counter() - start, fed, error=str(fault))
    ranked = ids if getattr(system, "ignores_k", False) else ids[:k]
    dropped = {"unknown": [i for i in ranked if i not in known],
               "future": [i for i in ranked if i in known and i not in given]}
    return Retrieval(question, [i for i in ranked if i in given], time.perf_counter() - start, fed, text,
                     at_k=[i for i in ids[:k] if i in given], dropped=dropped, notes=notes, readback=readback)


def _readback(system: MemorySystem, question: EvalQuestion, given: set[str]) -> list[str]:
    """The perfect-retrieval setting: the memory units the system wrote from the question's gold traces (its
    optional `readback(trace_ids)`), bypassing its own retrieval; a system without it keeps only raw traces, which
    the answerer is shown anyway."""
    if not callable(getattr(system, "readback", None)):
        return []
    value = _call(system, "readback", [t for t in question.gold_ids if t in given])
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable) or not all(isinstance(n, str) for n in value):
        raise _SystemFault(f"{type(system).__name__}.readback returned {type(value).__name__}, not a list of strings")
    return list(value)


def _notes(system: MemorySystem) -> list[str]:
    """The system's memory text for its last retrieval (optional `notes()`), as a list of strings."""
    if not callable(getattr(system, "notes", None)):
        return []
    value = _call(system, "notes")
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable) or not all(isinstance(n, str) for n in value):
        raise _SystemFault(f"{type(system).__name__}.notes returned {type(value).__name__}, not a list of strings")
    return list(value)
