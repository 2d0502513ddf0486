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
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, task TEXT, text TEXT NOT NULL,"
            " input_tokens INTEGER, output_tokens INTEGER, created REAL DEFAULT (unixepoch('subsec')))"
        )

    def get(self, key: str) -> ProviderResponse | None:
        with self._lock:
            row = self._db.execute(
                "SELECT text, input_tokens, output_tokens FROM responses WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        return ProviderResponse(text=row[0], usage=Usage(input_tokens=row[1], output_tokens=row[2]))

    def put(self, key: str, task: str, response: ProviderResponse) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses (key, task, text, input_tokens, output_tokens) VALUES (?,?,?,?,?)",
                (key, task, response.text, response.usage.input_tokens, response.usage.output_tokens),
            )

    def delete(self, keys: list[str]) -> None:
        with self._lock:
            self._db.executemany("DELETE FROM responses WHERE key = ?", [(k,) for k in keys])

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
