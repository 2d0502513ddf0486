"""Ranked indexes over memory units (a trace, or a memory extracted from one): BM25, dense, and their fusion.

A unit is a text and the trace it came from; `search` ranks units, and the systems map them back to trace ids.
Indexes grow as traces are ingested (the online protocol) and do their heavy work lazily, when asked to `prepare`
(before a query), so ingest cost and query latency are measured apart."""

from __future__ import annotations

import logging
import re

import numpy as np

from synth.eval.choices import RETRIEVERS  # noqa: F401  (re-exported)
from synth.eval.embed import Embedder

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


class BM25Index:
    """bm25s over the units' tokens; rebuilt lazily after new units (≈0.25 s per 5k traces). Only units sharing a
    term with the query are ranked."""

    def __init__(self) -> None:
        self.tokens: list[list[str]] = []
        self._index = None

    def __len__(self) -> int:
        return len(self.tokens)

    def add(self, texts: list[str]) -> None:
        self.tokens.extend(tokenize(t) or [""] for t in texts)
        self._index = None

    def prepare(self) -> None:
        if self._index is None and self.tokens:
            import bm25s

            self._index = bm25s.BM25()
            self._index.index(self.tokens, show_progress=False)

    def search(self, query: str, n: int) -> list[int]:
        if not self.tokens:
            return []
        self.prepare()
        terms = [t for t in tokenize(query) if t in self._index.vocab_dict]
        if not terms:
            return []
        scores = self._index.get_scores(terms)
        order = np.argsort(-scores, kind="stable")[:n]
        return [int(i) for i in order if scores[i] > 0]


class DenseIndex:
    """Cosine similarity of normalised embeddings; new units are embedded in one batch at the next `prepare`."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.pending: list[str] = []
        self.matrix: np.ndarray | None = None
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def add(self, texts: list[str]) -> None:
        self.pending.extend(texts)
        self.count += len(texts)

    def prepare(self) -> None:
        if self.pending:
            fresh = self.embedder.passages(self.pending)
            self.matrix = fresh if self.matrix is None else np.vstack([self.matrix, fresh])
            self.pending = []

    def search(self, query: str, n: int) -> list[int]:
        self.prepare()
        if self.matrix is None or not len(self.matrix):
            return []
        scores = self.matrix @ self.embedder.query(query)
        if n >= len(scores):
            order = np.argsort(-scores, kind="stable")
        else:
            top = np.argpartition(-scores, n)[:n]
            order = top[np.argsort(-scores[top], kind="stable")]
        return [int(i) for i in order[:n]]


class HybridIndex:
    """BM25 and dense rankings fused by reciprocal rank: score(u) = Σ 1 / (rrf_k + rank), over each ranking's
    top `depth` units (Cormack et al. 2009; rrf_k = 60 is their constant)."""

    def __init__(self, embedder: Embedder, rrf_k: int, depth: int) -> None:
        self.lexical = BM25Index()
        self.dense = DenseIndex(embedder)
        self.rrf_k = rrf_k
        self.depth = depth

    def __len__(self) -> int:
        return len(self.lexical)

    def add(self, texts: list[str]) -> None:
        self.lexical.add(texts)
        self.dense.add(texts)

    def prepare(self) -> None:
        self.lexical.prepare()
        self.dense.prepare()

    def search(self, query: str, n: int) -> list[int]:
        depth = max(n, self.depth)
        fused: dict[int, float] = {}
        for ranking in (self.lexical.search(query, depth), self.dense.search(query, depth)):
            for rank, unit in enumerate(ranking, 1):
                fused[unit] = fused.get(unit, 0.0) + 1.0 / (self.rrf_k + rank)
        return sorted(fused, key=lambda u: (-fused[u], u))[:n]




def make_index(retriever: str, embedder_factory, rrf_k: int, depth: int):
    """An empty index of the named kind; `embedder_factory()` is called only by the kinds that embed."""
    if retriever == "bm25":
        return BM25Index()
    if retriever == "dense":
        return DenseIndex(embedder_factory())
    if retriever == "hybrid":
        return HybridIndex(embedder_factory(), rrf_k, depth)
    raise ValueError(retriever)
