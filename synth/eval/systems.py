"""Memory systems under evaluation: the protocol a user implements, and the built-ins (oracle, flat, full).

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
import logging
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from synth.llm.base import InputError
from synth.llm.fake import estimate_tokens


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
    """

    def ingest(self, trace: dict) -> None: ...

    def retrieve(self, question: str, k: int, question_time: dt.datetime | None) -> list[str]: ...


class OracleSystem:
    """The gold traces of each question (ignores k): the ceiling every retriever is measured against.
    The runner hands it the gold ids through `set_gold` just before asking."""

    ignores_k = True  # the runner does not cut its list to k

    def __init__(self) -> None:
        self._gold: list[str] = []

    def set_gold(self, ids: list[str]) -> None:
        self._gold = list(ids)

    def ingest(self, trace: dict) -> None:
        return None

    def retrieve(self, question: str, k: int, question_time: dt.datetime | None) -> list[str]:
        return list(self._gold)


_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_CJK = re.compile(r"[\u3400-\u9fff]")
_jieba_ready = False


def tokenize(text: str) -> list[str]:
    """English: lowercase word tokens. Chinese (any CJK present): jieba's search-mode cut, punctuation dropped."""
    global _jieba_ready
    if _CJK.search(text):
        import jieba

        if not _jieba_ready:
            jieba.setLogLevel(logging.WARNING)  # it logs its dictionary build on first use
            _jieba_ready = True
        return [t.lower() for t in jieba.cut_for_search(text) if t.strip() and (_CJK.search(t) or _WORD.search(t.lower()))]
    return _WORD.findall(text.lower())


class BM25System:
    """Flat top-k lexical retrieval over raw traces with bm25s; the index is rebuilt lazily after new traces."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.tokens: list[list[str]] = []
        self._index = None

    def ingest(self, trace: dict) -> None:
        self.ids.append(trace["id"])
        self.tokens.append(tokenize(f"{trace.get('medium', '')} {trace.get('content', '')}") or [""])
        self._index = None

    def _retriever(self):
        if self._index is None:
            import bm25s

            self._index = bm25s.BM25()
            self._index.index(self.tokens, show_progress=False)
        return self._index

    def retrieve(self, question: str, k: int, question_time: dt.datetime | None) -> list[str]:
        if not self.ids:
            return []
        index = self._retriever()
        query = [t for t in tokenize(question) if t in index.vocab_dict]
        if not query:
            return []
        scores = index.get_scores(query)
        order = np.argsort(-scores, kind="stable")[:k]
        return [self.ids[i] for i in order if scores[i] > 0]


class DenseSystem:
    """Flat top-k by cosine similarity of embeddings from any OpenAI-compatible /embeddings endpoint."""

    def __init__(self, model: str, base_url: str | None = None, batch: int = 64) -> None:
        import os

        import openai

        key = os.environ.get("OPENAI_API_KEY")
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        if not key and not base_url:
            raise InputError("--embed-model needs OPENAI_API_KEY or --base-url (an OpenAI-compatible server)")
        self.client = openai.OpenAI(api_key=key or "not-needed", base_url=base_url)
        self.model = model
        self.batch = batch
        self.ids: list[str] = []
        self.pending: list[str] = []
        self.vectors: list[np.ndarray] = []

    def _embed(self, texts: list[str]) -> list[np.ndarray]:
        import openai

        out = []
        for start in range(0, len(texts), self.batch):
            try:
                response = self.client.embeddings.create(model=self.model, input=texts[start:start + self.batch])
            except openai.APIError as exc:
                raise InputError(f"--embed-model {self.model}: the embeddings endpoint failed ({exc})") from None
            for item in sorted(response.data, key=lambda d: d.index):
                vector = np.asarray(item.embedding, dtype=np.float32)
                out.append(vector / (np.linalg.norm(vector) or 1.0))
        return out

    def ingest(self, trace: dict) -> None:
        self.ids.append(trace["id"])
        self.pending.append(trace.get("content", "") or " ")

    def retrieve(self, question: str, k: int, question_time: dt.datetime | None) -> list[str]:
        if self.pending:  # embed new traces in batches, only when a question needs them
            self.vectors.extend(self._embed(self.pending))
            self.pending = []
        if not self.vectors:
            return []
        query = self._embed([question])[0]
        scores = np.stack(self.vectors) @ query
        return [self.ids[i] for i in np.argsort(-scores, kind="stable")[:k]]


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
        raise InputError(f"--system: '{spec}' is not oracle, flat, full or module:Class")
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


def system_factory(spec: str | Callable[[], MemorySystem], embed_model: str | None = None,
                   base_url: str | None = None, full_budget_tokens: int = 100_000) -> Callable[[], MemorySystem]:
    """A maker of fresh systems (one per persona) from a --system value; a callable is taken as it is."""
    if callable(spec):
        return spec
    if spec == "oracle":
        return OracleSystem
    if spec == "flat":
        return _made_now(lambda: DenseSystem(embed_model, base_url)) if embed_model else BM25System
    if spec == "full":
        return lambda: FullContextSystem(full_budget_tokens)
    return plugin_factory(spec)
