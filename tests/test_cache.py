"""The response cache's writer thread: an answer is readable the moment it is put, on disk once flushed or closed,
deletes cancel queued puts, and a failed write is raised to the caller instead of being lost."""

from __future__ import annotations

import sqlite3

import pytest

from synth.llm.base import ProviderResponse, Usage
from synth.llm.cache import ResponseCache


def answer(text: str) -> ProviderResponse:
    return ProviderResponse(text=text, usage=Usage(input_tokens=3, output_tokens=len(text)))


def on_disk(path) -> dict[str, str]:
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT key, text FROM responses"))


def test_an_unwaited_put_is_read_back_at_once_and_is_on_disk_after_close(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite", linger_s=30.0)  # the writer would sit on it: reads come first
    cache.put("k1", "task", answer('{"a": 1}'), wait=False)
    hit = cache.get("k1")
    assert hit is not None and hit.text == '{"a": 1}' and hit.usage.output_tokens == 8
    cache.close()
    assert on_disk(tmp_path / "cache.sqlite") == {"k1": '{"a": 1}'}
    reopened = ResponseCache(tmp_path / "cache.sqlite")
    assert reopened.get("k1").text == '{"a": 1}' and len(reopened) == 1
    reopened.close()


def test_a_waited_put_is_on_disk_when_it_returns(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite", linger_s=30.0)  # waiting cuts the linger short
    cache.put("k1", "task", answer("x"))
    assert on_disk(tmp_path / "cache.sqlite") == {"k1": "x"}
    cache.close()


def test_delete_cancels_queued_puts_and_removes_written_ones(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    cache.put("written", "task", answer("w"))
    cache.put("queued", "task", answer("q"), wait=False)
    cache.delete(["written", "queued"])
    assert cache.get("written") is None and cache.get("queued") is None and len(cache) == 0
    cache.put("queued", "task", answer("again"), wait=False)  # a later put of a deleted key stands
    cache.close()
    assert on_disk(tmp_path / "cache.sqlite") == {"queued": "again"}


def test_a_failed_write_is_raised_not_lost(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")

    def broken(ops):
        raise sqlite3.OperationalError("disk I/O error")

    cache._commit = broken
    cache.put("k1", "task", answer("x"), wait=False)
    with pytest.raises(sqlite3.OperationalError):
        cache.flush()
    with pytest.raises(sqlite3.OperationalError):
        cache.put("k2", "task", answer("y"), wait=False)
    with pytest.raises(sqlite3.OperationalError):
        cache.close()
