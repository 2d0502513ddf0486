"""The content-addressed response cache: SQLite beside the outputs, keyed by a hash of everything that shapes an answer."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from synth.llm.base import LLMRequest, ProviderResponse, Usage


def canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def content_hash(data: Any) -> str:
    """sha256 of canonical JSON, with the algorithm as a prefix so a later change of form is detectable."""
    return "sha256:" + hashlib.sha256(canonical(data).encode("utf-8")).hexdigest()


def cache_key(provider: str, model: str, request: LLMRequest) -> str:
    # Concurrency, batch size, timeouts and retry budgets cannot change an answer, so they stay out.
    return content_hash(
        {
            "provider": provider,
            "model": model,
            "messages": request.messages,
            "schema": request.json_schema,
            "settings": request.settings.as_dict(),
            "sample": request.sample,
        }
    )


class ResponseCache:
    """Reads on the caller's thread; writes go through one writer thread that commits them in batches, so a
    provider call's answer costs the event loop a dict insert instead of an SQLite transaction. A written answer
    is visible to `get` at once; on disk within `linger_s` (a killed process loses at most that much: those
    calls are asked again on resume, and no unit of work is finished on the strength of the cache alone)."""

    def __init__(self, path: Path, linger_s: float = 0.05) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.linger_s = linger_s
        self._lock = threading.Lock()  # the reader connection
        self._db = self._connect()
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, task TEXT, text TEXT NOT NULL,"
            " input_tokens INTEGER, output_tokens INTEGER, created REAL DEFAULT (unixepoch('subsec')))"
        )
        self._writer_db = self._connect()
        # Queued writes, in order: ("put", row) or ("delete", key); `_pending` maps a key to its queued row until
        # that row is committed, so `get` sees it in the meantime.
        self._queue: list[tuple[str, Any]] = []
        self._pending: dict[str, tuple] = {}
        self._written = 0  # writes committed, against `_queued` (for `flush`)
        self._queued = 0
        self._waiting = 0  # callers blocked in `flush`
        self._closing = False
        self._failure: BaseException | None = None  # what stopped the writer thread
        self._changed = threading.Condition()
        self._writer = threading.Thread(target=self._write_loop, name="synth-cache-writer", daemon=True)
        self._writer.start()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        return db

    def get(self, key: str) -> ProviderResponse | None:
        row = self._pending.get(key)
        if row is None:
            with self._lock:
                row = self._db.execute(
                    "SELECT key, task, text, input_tokens, output_tokens FROM responses WHERE key = ?", (key,)
                ).fetchone()
        if row is None:
            return None
        return ProviderResponse(text=row[2], usage=Usage(input_tokens=row[3], output_tokens=row[4]))

    def put(self, key: str, task: str, response: ProviderResponse, wait: bool = True) -> None:
        """Store an answer; with `wait`, on disk when this returns (for answers that cannot be asked again)."""
        row = (key, task, response.text, response.usage.input_tokens, response.usage.output_tokens)
        with self._changed:
            self._pending[key] = row
            self._enqueue(("put", row))
        if wait:
            self.flush()

    def delete(self, keys: list[str]) -> None:
        with self._changed:
            for key in keys:
                self._pending.pop(key, None)
                self._enqueue(("delete", key))
        self.flush()

    def _enqueue(self, op: tuple[str, Any]) -> None:
        self._raise_failure()
        if self._closing:
            raise RuntimeError(f"{self.path}: the response cache is closed")
        self._queue.append(op)
        self._queued += 1
        if len(self._queue) == 1:  # the writer sleeps until there is work; while it lingers, it is not woken
            self._changed.notify_all()

    def flush(self) -> None:
        """Wait until every write queued so far is committed."""
        with self._changed:
            target = self._queued
            self._waiting += 1
            self._changed.notify_all()
            try:
                self._changed.wait_for(lambda: self._written >= target or self._failure is not None)
            finally:
                self._waiting -= 1
            self._raise_failure()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    def _write_loop(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._queue or self._closing)
                if not self._queue:
                    return
                # Linger so a burst of answers shares one transaction, unless someone waits for these writes.
                self._changed.wait_for(lambda: self._closing or self._waiting, timeout=self.linger_s)
                ops, self._queue = self._queue, []
            try:
                self._commit(ops)
            except BaseException as exc:  # noqa: BLE001 - handed to the next caller of put/delete/flush/close
                with self._changed:
                    self._failure = exc
                    self._changed.notify_all()
                return
            with self._changed:
                for kind, item in ops:
                    if kind == "put" and self._pending.get(item[0]) is item:
                        del self._pending[item[0]]
                self._written += len(ops)
                self._changed.notify_all()

    def _commit(self, ops: list[tuple[str, Any]]) -> None:
        db = self._writer_db
        db.execute("BEGIN")
        try:
            for kind, item in ops:
                if kind == "put":
                    db.execute("INSERT OR REPLACE INTO responses (key, task, text, input_tokens, output_tokens)"
                               " VALUES (?,?,?,?,?)", item)
                else:
                    db.execute("DELETE FROM responses WHERE key = ?", (item,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def __len__(self) -> int:
        self.flush()
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        """Write what is queued, then close; a write that failed is raised here if nothing raised it before."""
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        self._writer.join()
        self._writer_db.close()
        with self._lock:
            self._db.close()
        self._raise_failure()
