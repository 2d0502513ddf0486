"""The LLM client layer: cache keys, transport retries against the fake server, validation with repair, budget."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel, Field

from synth.config.conf import resolve_route
from synth.core.errors import BudgetExceeded
from synth.llm.base import GenerationFailed, GenerationSettings, LLMRequest, TransportError
from synth.llm.cache import ResponseCache, cache_key
from synth.llm.client import LLM, CallStats, _wait, extract_json
from synth.llm.fake import FakeProvider
from synth.llm.limits import Budget
from synth.llm.providers import provider_factory
from synth.testing.fake_server import FakeServer


class Answer(BaseModel):
    name: str
    count: int = Field(ge=1, le=5)


def request(text: str = "hello", sample: int = 0, **settings) -> LLMRequest:
    return LLMRequest(task="t", messages=[{"role": "system", "content": "sys"}, {"role": "user", "content": text}],
                      json_schema=Answer.model_json_schema(), settings=GenerationSettings(**settings), sample=sample)


def test_cache_key_covers_everything_that_shapes_an_answer():
    base = cache_key("openai", "m", request())
    assert base.startswith("sha256:")
    assert base == cache_key("openai", "m", request())
    assert base != cache_key("anthropic", "m", request())
    assert base != cache_key("openai", "m2", request())
    assert base != cache_key("openai", "m", request("other"))
    assert base != cache_key("openai", "m", request(sample=1))
    assert base != cache_key("openai", "m", request(temperature=0.1))
    other_schema = request()
    other_schema.json_schema = {"type": "object"}
    assert base != cache_key("openai", "m", other_schema)


def fake_llm(tmp_path, provider=None, **kw):
    provider = provider or FakeProvider(seed=1)
    cache = ResponseCache(tmp_path / "cache.sqlite")
    return LLM(providers=lambda route: provider, cache=cache, **kw), provider, cache


def test_repair_reasks_with_the_validation_error(tmp_path):
    llm, fake, _ = fake_llm(tmp_path, max_repairs=2)
    fake.script = ["not json at all", json.dumps({"name": "x", "count": 9}), json.dumps({"name": "ok", "count": 2})]
    stats = CallStats()
    answer = asyncio.run(llm.generate(resolve_route("fake", None), request(), Answer, stats))
    assert answer == Answer(name="ok", count=2)
    assert stats.repairs == 2 and stats.provider_calls == 3
    last = fake.seen[-1].messages
    assert last[-2]["role"] == "assistant" and "count" in last[-1]["content"]  # the error names the field
    assert "less than or equal to 5" in last[-1]["content"]


def test_out_of_repairs_fails_and_forgets_the_bad_answers(tmp_path):
    llm, fake, cache = fake_llm(tmp_path, max_repairs=1)
    fake.script = ["{}", "{}"]
    stats = CallStats()
    with pytest.raises(GenerationFailed) as info:
        asyncio.run(llm.generate(resolve_route("fake", None), request(), Answer, stats))
    assert info.value.attempts == 2 and info.value.raw == "{}"
    assert stats.failures == 1
    assert len(cache) == 0  # the next run asks afresh instead of replaying the failure


def test_check_failure_triggers_a_reask(tmp_path):
    llm, fake, _ = fake_llm(tmp_path, max_repairs=1)
    fake.script = [json.dumps({"name": "bad", "count": 1}), json.dumps({"name": "good", "count": 1})]

    def check(answer: Answer) -> None:
        if answer.name != "good":
            raise ValueError("name must be good")

    answer = asyncio.run(llm.generate(resolve_route("fake", None), request(), Answer, CallStats(), check=check))
    assert answer.name == "good"
    assert "name must be good" in fake.seen[-1].messages[-1]["content"]


def test_a_check_s_reason_is_re_asked_in_the_request_s_language(tmp_path):
    """A capable Chinese planner was re-asked "你上一个回答不符合要求的 JSON 格式：outline: names '3月6日', which the
    selected evidence does not state; …": a check's reason (`Reask`) is worded by the repair template in the
    request's language, naming what to do (select the evidence that states the date, or drop it); the English
    form stays the error a run reports."""
    import re

    from synth.llm.base import Reask
    from synth.stages.qa.plan_checks import UNSTATED_DATE

    for language, wanted in (("zh", "请把说出这个日期的证据也选上"), ("en", "Select the evidence that states it")):
        llm, fake, _ = fake_llm(tmp_path / language, max_repairs=1)
        fake.script = [json.dumps({"name": "bad", "count": 1}), json.dumps({"name": "good", "count": 1})]

        def check(answer: Answer) -> None:
            if answer.name != "good":
                raise Reask("unstated_date", f"{UNSTATED_DATE} '3月6日', which the selected evidence does not state",
                            date="3月6日")

        asyncio.run(llm.generate(resolve_route("fake", None), request(), Answer, CallStats(), check=check,
                                 language=language))
        repair = fake.seen[-1].messages[-1]["content"]
        assert wanted in repair and "3月6日" in repair
        if language == "zh":
            assert not re.search(r"[A-Za-z]{3,}", repair.replace("JSON", "")), repair
    llm, fake, _ = fake_llm(tmp_path / "out", max_repairs=1)
    fake.script = [json.dumps({"name": "bad", "count": 1})] * 2

    def never(answer: Answer) -> None:
        raise Reask("unstated_date", f"{UNSTATED_DATE} '3月6日', which the selected evidence does not state",
                    date="3月6日")

    with pytest.raises(GenerationFailed, match=UNSTATED_DATE):
        asyncio.run(llm.generate(resolve_route("fake", None), request(), Answer, CallStats(), check=never,
                                 language="zh"))


def test_cache_replays_from_disk_without_provider_calls(tmp_path):
    llm, fake, cache = fake_llm(tmp_path)
    first = asyncio.run(llm.generate(resolve_route("fake", None), request(), Answer, CallStats()))
    cache.close()
    llm2, fake2, _ = fake_llm(tmp_path)
    stats = CallStats()
    second = asyncio.run(llm2.generate(resolve_route("fake", None), request(), Answer, stats))
    assert first == second
    assert stats.cache_hits == 1 and stats.provider_calls == 0 and fake2.seen == []


def test_budget_refuses_before_sending(tmp_path):
    llm, fake, _ = fake_llm(tmp_path, budget=Budget(max_tokens=100))
    with pytest.raises(BudgetExceeded):
        asyncio.run(llm.generate(resolve_route("fake", None), request(max_tokens=500), Answer, CallStats()))
    assert fake.seen == []


def test_retry_after_is_honoured_and_backoff_is_bounded():
    wait = _wait(0.5, 30.0)

    class State:
        attempt_number = 3

        class outcome:
            @staticmethod
            def exception():
                return TransportError("429", status=429, retry_after=2.0)

    assert 2.0 <= wait(State) <= 2.2
    State.outcome = type("O", (), {"exception": staticmethod(lambda: TransportError("500", status=500))})
    for _ in range(50):
        assert 0 < wait(State) <= 30.0


def test_extract_json_from_fenced_or_prose_answers():
    assert json.loads(extract_json('```json\n{"a": 1}\n```')) == {"a": 1}
    assert json.loads(extract_json('Sure! {"a": {"b": 2}} hope it helps')) == {"a": {"b": 2}}
    with pytest.raises(ValueError):
        extract_json("")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_transport_faults_are_retried_through_the_real_sdks(tmp_path, monkeypatch, provider):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with FakeServer(fault_rate=0.5, faults="429,429nra,500,502,503,529,drop", seed=3) as server:
        base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
        route = resolve_route(provider, "fake-model" if provider == "openai" else "claude-haiku-4-5", base)
        llm = LLM(providers=provider_factory(timeout_s=5), cache=None, max_attempts=12,
                  backoff_base_s=0.01, backoff_cap_s=0.05)
        stats = CallStats()

        async def many():
            return await asyncio.gather(*(llm.generate(route, request(f"q{i}"), Answer, stats) for i in range(12)))

        answers = asyncio.run(many())
        assert len(answers) == 12 and all(isinstance(a, Answer) for a in answers)
        assert stats.retries > 0
        assert stats.provider_calls == 12
        assert server.stats()["faults"] == stats.retries


class _SlowModel:
    """A provider whose calls queue for one model (one worker, like llama.cpp in process), each taking 0.15 s."""

    name = "fake"
    key_env = None

    def __init__(self, in_process: bool) -> None:
        if in_process:
            self.in_process = True
        self.lock = asyncio.Lock()
        self.calls = 0

    async def complete(self, request: LLMRequest, model: str):
        from synth.llm.base import ProviderResponse, Usage
        async with self.lock:
            self.calls += 1
            await asyncio.sleep(0.15)
            return ProviderResponse(text=json.dumps({"name": "x", "count": 1}), usage=Usage())


@pytest.mark.parametrize("in_process", [True, False])
def test_an_in_process_model_has_no_transport_timeout(in_process):
    """Eight concurrent calls queue for one model at 0.15 s each, the timeout 0.5 s: the in-process provider
    (llama.cpp) answers all eight, each once, because the queue is not a fault; a remote provider with the same
    timing times out those that waited (and retries them: more calls than answers)."""
    model = _SlowModel(in_process)
    llm = LLM(providers=lambda route: model, cache=None, max_attempts=2, timeout_s=0.5,
              backoff_base_s=0.01, backoff_cap_s=0.02)
    stats = CallStats()

    async def many():
        return await asyncio.gather(*(llm.generate(resolve_route("fake", None), request(f"t{i}"), Answer, stats)
                                      for i in range(8)), return_exceptions=True)

    answers = asyncio.run(many())
    if in_process:
        assert all(isinstance(a, Answer) for a in answers) and stats.retries == 0 and model.calls == 8
    else:
        assert stats.retries > 0 and any(isinstance(a, TransportError) for a in answers)


def test_the_local_provider_is_in_process():
    from synth.llm.local.provider import LocalProvider
    assert LocalProvider.in_process is True


def test_timeouts_are_retried(tmp_path):
    with FakeServer(fault_rate=0.5, faults="timeout", timeout_sleep_s=2.0, seed=5) as server:
        route = resolve_route("openai", "m", server.openai_base_url)
        llm = LLM(providers=provider_factory(timeout_s=0.3), cache=None, max_attempts=10, timeout_s=0.3,
                  backoff_base_s=0.01, backoff_cap_s=0.02)
        stats = CallStats()

        async def many():
            return await asyncio.gather(*(llm.generate(route, request(f"t{i}"), Answer, stats) for i in range(10)))

        answers = asyncio.run(many())
        assert len(answers) == 10 and stats.retries >= 1
        assert stats.retries == server.stats()["faults"]
