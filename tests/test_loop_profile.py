"""The bench's event-loop breakdown (synth.testing.loop_profile): stacks land in the right category, and a profiled
run prints one. No timing is asserted: speed goals are the bench's to measure."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

from synth.testing.loop_profile import HTTP, IDLE, OTHER, SDK, LoopProfile


def stack(*frames: tuple[str, str]):
    """A fake frame chain, outermost first, as the sampler walks it (innermost first through f_back)."""
    frame = None
    for path, name in frames:
        code = compile("", path, "exec").replace(co_name=name)
        frame = SimpleNamespace(f_code=code, f_back=frame)
    return frame


def test_the_innermost_named_frame_decides_and_library_internals_charge_their_caller():
    profile = LoopProfile()
    run = ("/py/asyncio/base_events.py", "_run_once")
    provider = ("/repo/synth/llm/providers.py", "complete")
    sdk = ("/venv/site-packages/openai/_base_client.py", "request")
    http = ("/venv/site-packages/httpcore2/_async/connection_pool.py", "handle_async_request")
    assert profile.classify(stack(run, provider, sdk, http, ("/py/socket.py", "send"))) == HTTP
    assert profile.classify(stack(run, provider, sdk, ("/py/json/encoder.py", "iterencode"))) == SDK
    assert profile.classify(stack(run, ("/py/selectors.py", "select"))) == IDLE
    journal = ("/repo/synth/core/jsonl.py", "record")
    assert profile.classify(stack(run, journal, ("/venv/site-packages/pydantic/main.py", "model_dump"))) == \
        "journal (dump + append)"
    assert profile.classify(stack(("/repo/synth/llm/cache.py", "put"))) == "response cache (SQLite)"
    assert profile.classify(stack(("/repo/synth/llm/cache.py", "cache_key"))).startswith("cache keys")
    assert profile.classify(stack(("/repo/synth/llm/cache.py", "canonical"))).startswith("cache keys")
    assert profile.classify(stack(run)) == OTHER
    assert profile.classify(None) == OTHER


def test_a_profiled_loop_prints_its_breakdown():
    async def work() -> None:
        deadline = time.monotonic() + 5.0
        while profile.samples < 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.002)

    with LoopProfile(0.001) as profile:
        asyncio.run(work())
    lines = profile.lines(1.0)
    assert profile.samples >= 3
    assert lines[0].startswith("loop thread: ") and "category" in lines[1]
    assert set(profile.cpu) == set(profile.wall) and len(lines) == 2 + len(profile.wall)
