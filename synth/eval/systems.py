"""Memory systems under evaluation: the protocol a user implements, and the built-ins (oracle, oracle-traces, flat,
full; memory and mem0 live in their own modules).

A memory system sees a persona's digital traces one at a time, oldest first, and is asked to retrieve trace ids for a
question at the question's time. Under the online protocol (the default) `synth eval` interleaves the two: before a
question it ingests exactly the traces dated at or before the question time, so a system can never see the future.
Write your own as any class with these two methods (no base class needed) and pass `--system my_module:MySystem`
(a module importable from the working directory, or `path/to/file.py:MySystem`); one instance is made per persona,
with no constructor arguments. A class that cannot be made stops `synth eval` with one line before anything is
written; an exception (or a reply that is not a list of id strings) on one question fails that question only.
"""

from __future__ import annotations

import datetime as dt
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from synth.core.errors import InputError
from synth.core.tokens import estimate_tokens
from synth.eval.choices import BUILT_IN  # noqa: F401  (re-exported)
from synth.eval.index import BM25Index


@runtime_checkable
class MemorySystem(Protocol):
    """What `synth eval` drives.

    ingest(trace): called once per trace, in time order. `trace` is a dict with `id`, `medium`, `event_date`
        (as the data has it), `time` (ISO datetime or None) and `content`.
    retrieve(question, k, question_time): the ids of at most k ingested traces that help answer `question`, best
        first. `question_time` (a datetime or None) is when the question is asked; every trace ingested so far is
        at or before it under the online protocol. The list is cut to k unless the class sets `ignores_k = True`
        (then the answerer sees it all); recall@k is always of the first k ids. Ids it was never given (unknown,
        or dated after the question time) are dropped before recall and answering, and counted.

    Optional: answer(question, choices, question_time) -> str. A system that answers by itself (an agent) returns
    its text; `synth eval` then uses that text as the free-text prediction and parses the chosen letter from it
    ("B) …", "Answer: B", "答案：B") instead of calling the answerer model. Judges still run.
    Optional: set_persona(name, language), called once after construction; prepare(), called before each retrieve
    (heavy indexing goes here: it is timed as ingest cost, not as query latency); notes() -> list[str], called after
    each retrieve: memory text (extracted memories, evidence statements) shown to the answerer beside the traces;
    ingest_calls() -> dict with requests, provider_calls, input_tokens, output_tokens spent at ingest.
    """

    def ingest(self, trace: dict) -> None: ...

    def retrieve(self, question: str, k: int, question_time: dt.datetime | None) -> list[str]: ...


class OracleSystem:
    """The paper's Oracle: each question's gold traces *and* its gold evidence statements (ignores k) — the ceiling
    every memory system is measured against. The runner hands it the gold through `set_gold` just before asking;
    the statements reach the answerer as notes beside the traces."""

    ignores_k = True  # the runner does not cut its list to k
    with_statements = True

    def __init__(self) -> None:
        self._gold: list[str] = []
        self._statements: list[str] = []

    def set_gold(self, ids: list[str], statements: list[str] | tuple[str, ...] = ()) -> None:
        self._gold = list(ids)
        self._statements = list(statements) if self.with_statements else []

    def ingest(self, trace: dict) -> None:
        return None

    def retrieve(self, question: str, k: int, question_time: dt.datetime | None) -> list[str]:
        return list(self._gold)

    def notes(self) -> list[str]:
        return list(self._statements)


class OracleTracesSystem(OracleSystem):
    """The gold traces only, no statements (`oracle-traces`: the Oracle before the paper's statements were added)."""

    with_statements = False


class FlatSystem:
    """Flat top-k over raw traces with a ranked index (BM25, dense or hybrid): the paper's "w/o memory" Flat."""

    def __init__(self, index) -> None:
        self.index = index
        self.ids: list[str] = []

    def ingest(self, trace: dict) -> None:
        self.ids.append(trace["id"])
        self.index.add([f"{trace.get('medium', '')} {trace.get('content', '')}"])

    def prepare(self) -> None:
        """Index what was ingested since the last query (timed as ingest, not as query latency)."""
        self.index.prepare()

    def retrieve(self, question: str, k: int, question_time: dt.datetime | None) -> list[str]:
        return [self.ids[i] for i in self.index.search(question, k)]


class BM25System(FlatSystem):
    """Flat BM25 (bm25s; Chinese through jieba): the default `flat`, and the filter's related-trace finder."""

    def __init__(self) -> None:
        super().__init__(BM25Index())


class FullContextSystem:
    """Every visible trace, newest first, until a token budget is spent (ignores k)."""

    ignores_k = True

    def __init__(self, budget_tokens: int = 100_000) -> None:
        self.budget = budget_tokens
        self.traces: list[tuple[str, int]] = []

    def ingest(self, trace: dict) -> None:
        self.traces.append((trace["id"], estimate_tokens(trace.get("content", "") or " ")))

    def retrieve(self, question: str, k: int, question_time: dt.datetime | None) -> list[str]:
        out, spent = [], 0
        for tid, tokens in reversed(self.traces):
            if spent + tokens > self.budget and out:
                break
            out.append(tid)
            spent += tokens
        return out


def _load_class(spec: str) -> type:
    """`module:Class` (importable from the working directory) or `path/to/file.py:Class`."""
    target, _, name = spec.rpartition(":")
    if not target or not name:
        raise InputError(f"--system: '{spec}' is not one of {', '.join(BUILT_IN)} or module:Class")
    return _checked_class(spec, getattr(_import_target(spec, target), name, None), target, name)


def _import_target(spec: str, target: str) -> Any:
    try:
        if target.endswith(".py"):
            path = Path(target)
            if not path.is_file():
                raise InputError(f"--system {spec}: {path}: no such file")
            module_spec = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
        else:
            if "" not in sys.path and str(Path.cwd()) not in sys.path:
                sys.path.insert(0, str(Path.cwd()))
            module = importlib.import_module(target)
    except ImportError as exc:
        raise InputError(f"--system {spec}: cannot import '{target}' ({exc})") from None
    except InputError:
        raise
    except Exception as exc:  # the plugin's own module failed while loading: name it, no traceback
        raise InputError(f"--system {spec}: importing '{target}' raised {describe_error(exc)}") from None
    return module


def _checked_class(spec: str, cls: Any, target: str, name: str) -> type:
    """The plugin class, or one line naming what is wrong with it."""
    if cls is None:
        raise InputError(f"--system {spec}: '{target}' has no '{name}'")
    if not inspect.isclass(cls):
        raise InputError(f"--system {spec}: '{name}' is a {type(cls).__name__}, not a class")
    missing = [m for m in ("ingest", "retrieve") if not callable(getattr(cls, m, None))]
    if missing:
        raise InputError(f"--system {spec}: the class lacks {' and '.join(missing)} "
                         "(needs ingest(trace) and retrieve(question, k, question_time))")
    try:
        inspect.signature(cls).bind()
    except TypeError:
        raise InputError(f"--system {spec}: the class needs constructor arguments {inspect.signature(cls)}; "
                         "synth eval makes it with none") from None
    except ValueError:
        pass  # no signature to inspect (a C extension): constructing it will tell
    return cls


def describe_error(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _made_now(build: Callable[[], MemorySystem]) -> Callable[[], MemorySystem]:
    """A maker whose first instance is made at once, so a constructor that fails stops `synth eval` with one line
    before it writes anything; that instance is handed out on the first call."""
    ready = [build()]

    def make() -> MemorySystem:
        return ready.pop() if ready else build()

    return make


def plugin_factory(spec: str) -> Callable[[], MemorySystem]:
    """A maker of instances of the user's class (`module:Class` or `path/to/file.py:Class`)."""
    cls = _load_class(spec)

    def build() -> MemorySystem:
        try:
            return cls()
        except Exception as exc:
            raise InputError(f"--system {spec}: constructing it raised {describe_error(exc)}") from None

    return _made_now(build)


@dataclass
class SystemOptions:
    """What the built-in systems are made with: the [eval] settings, the embedder and the backbone LLM."""

    retriever: str = "bm25"
    settings: dict = field(default_factory=dict)
    embedder: Callable[[], Any] | None = None  # makes (or hands out the shared) embedder; None: bundled offline
    backbone: Any = None  # synth.eval.backbone.Backbone, for systems that call an LLM at ingest




def system_factory(spec: str | Callable[[], MemorySystem], options: SystemOptions | None = None
                   ) -> Callable[[], MemorySystem]:
    """A maker of fresh systems (one per persona) from a --system value; a callable is taken as it is."""
    options = options or SystemOptions()
    if callable(spec):
        return spec
    if spec == "oracle":
        return OracleSystem
    if spec == "oracle-traces":
        return OracleTracesSystem
    if spec == "full":
        return lambda: FullContextSystem(int(options.settings.get("full_context_tokens", 100_000)))
    if spec in ("flat", "memory", "mem0", "tree"):
        return _made_now(_built_in(spec, options))
    return plugin_factory(spec)


def _built_in(spec: str, options: SystemOptions) -> Callable[[], MemorySystem]:
    from synth.eval.index import make_index

    def index():
        return make_index(options.retriever, options.embedder, int(options.settings.get("rrf_k", 60)),
                          int(options.settings.get("rrf_depth", 100)))

    if spec == "flat":
        return lambda: FlatSystem(index())
    if spec == "memory":
        from synth.eval.memory import ExtractedMemorySystem

        return lambda: ExtractedMemorySystem(index(), options.backbone, options.settings)
    if spec == "tree":
        from synth.eval.tree import PersonaTreeSystem

        return lambda: PersonaTreeSystem(options.embedder, options.backbone, options.settings)
    from synth.eval.mem0_adapter import Mem0System

    return lambda: Mem0System(options.embedder, options.backbone, options.settings)
