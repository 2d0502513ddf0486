"""Batch mode against the fake server through the real SDKs: one batch for many requests, the same answers as
direct calls, and a restart while a batch is in flight that fetches its results instead of resubmitting."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from wire import Answer, close, make_route, providers, requests, submit_then_die

from synth.config.conf import Route
from synth.llm.base import TransportError
from synth.llm.batch import BatchDispatcher, _openai_line
from synth.llm.cache import ResponseCache, cache_key
from synth.testing.fake_server import FakeServer

CREATE_PATH = {"anthropic": "/v1/messages/batches", "openai": "/v1/batches"}


@pytest.fixture
def server():
    with FakeServer(batch_delay_s=0.3) as srv:
        yield srv


def creates(server: FakeServer, provider: str) -> int:
    return server.stats()["by_path"].get(CREATE_PATH[provider], 0)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_many_requests_become_one_batch_with_the_direct_answers(tmp_path, monkeypatch, server, provider):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    route = make_route(server, provider)
    reqs = requests(12)

    async def direct() -> list[str]:
        get = providers()
        texts = [(await get(route).complete(r, route.model)).text for r in reqs]
        await close(get)
        return texts

    async def batched() -> tuple[list[str], BatchDispatcher]:
        cache = ResponseCache(tmp_path / "cache.sqlite")
        get = providers()
        dispatcher = BatchDispatcher(tmp_path, cache, get, window_s=0.1, poll_s=0.05)
        answers = await asyncio.gather(*(dispatcher.complete(route, r) for r in reqs))
        cache.close()
        await close(get)
        return [a.text for a in answers], dispatcher

    expected = asyncio.run(direct())
    got, dispatcher = asyncio.run(batched())
    assert got == expected
    assert all(Answer.model_validate_json(text) for text in got)
    assert creates(server, provider) == 1 and len(dispatcher.submitted) == 1
    record = json.loads((tmp_path / "batches" / f"{dispatcher.submitted[0]}.json").read_text())
    assert record["status"] == "done" and len(record["items"]) == 12
    keys = {cache_key(route.provider, route.model, r) for r in reqs}
    assert {item["key"] for item in record["items"].values()} == keys


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_restart_while_in_flight_resumes_the_persisted_batch(tmp_path, monkeypatch, provider):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    reqs = requests(5)
    with FakeServer(batch_delay_s=1.0) as server:
        route = make_route(server, provider)
        keys = [cache_key(route.provider, route.model, r) for r in reqs]

        submit_then_die(tmp_path, route, reqs)
        assert creates(server, provider) == 1
        assert all(ResponseCache(tmp_path / "cache.sqlite").get(k) is None for k in keys)

        async def second_run() -> tuple[int, list[str]]:
            cache = ResponseCache(tmp_path / "cache.sqlite")
            get = providers()
            dispatcher = BatchDispatcher(tmp_path, cache, get, window_s=0.05, poll_s=0.05)
            resumed = await dispatcher.resume()
            cached = [cache.get(k) for k in keys]
            assert all(c is not None for c in cached)
            again = await asyncio.gather(*(dispatcher.complete(route, r) for r in reqs))  # served from the cache
            cache.close()
            await close(get)
            assert [a.text for a in again] == [c.text for c in cached]
            return resumed, [c.text for c in cached]

        resumed, texts = asyncio.run(second_run())
        assert resumed == 1
        assert creates(server, provider) == 1  # no second batch
        assert all(Answer.model_validate_json(t) for t in texts)

        async def direct() -> list[str]:
            get = providers()
            texts = [(await get(route).complete(r, route.model)).text for r in reqs]
            await close(get)
            return texts

        assert texts == asyncio.run(direct())
    files = list((tmp_path / "batches").glob("*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["status"] == "done"


def test_identical_requests_share_one_batch_slot(tmp_path, monkeypatch, server):
    route = make_route(server, "openai")
    req = requests(1)[0]

    async def go():
        get = providers()
        dispatcher = BatchDispatcher(tmp_path, None, get, window_s=0.05, poll_s=0.05)
        answers = await asyncio.gather(*(dispatcher.complete(route, req) for _ in range(3)))
        await close(get)
        return answers, dispatcher

    answers, dispatcher = asyncio.run(go())
    assert len({a.text for a in answers}) == 1
    record = json.loads((tmp_path / "batches" / f"{dispatcher.submitted[0]}.json").read_text())
    assert len(record["items"]) == 1


def test_max_requests_splits_batches(tmp_path, server):
    route = make_route(server, "openai")

    async def go():
        get = providers()
        dispatcher = BatchDispatcher(tmp_path, None, get, window_s=5.0, max_requests=4, poll_s=0.05)
        await asyncio.gather(*(dispatcher.complete(route, r) for r in requests(8)))
        await close(get)
        return dispatcher

    dispatcher = asyncio.run(go())  # a 5 s window would time the test out if size did not trigger the send
    assert len(dispatcher.submitted) == 2 and creates(server, "openai") == 2


def test_an_errored_item_is_a_transport_error_so_the_client_retries_it():
    custom_id, outcome = _openai_line({"custom_id": "req-1", "response": {"status_code": 500, "body": {"error": "x"}},
                                       "error": None})
    assert custom_id == "req-1" and isinstance(outcome, TransportError)
    _, ok = _openai_line({"custom_id": "req-2", "error": None, "response": {"status_code": 200, "body": {
        "choices": [{"message": {"content": "{\"a\": 1}"}}], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}}})
    assert ok.text == "{\"a\": 1}" and ok.usage.input_tokens == 7 and ok.usage.output_tokens == 3


def test_providers_without_a_batch_api_are_called_directly(tmp_path):
    route = Route(provider="fake", model="fake")

    async def go():
        dispatcher = BatchDispatcher(tmp_path, None, providers(), window_s=0.05)
        return await dispatcher.complete(route, requests(1)[0]), dispatcher

    answer, dispatcher = asyncio.run(go())
    assert Answer.model_validate_json(answer.text) and dispatcher.submitted == []
    assert not Path(tmp_path / "batches").exists()
