"""A 200 whose body is not JSON (issue 11 §2): a gateway cut the body, or served its own HTML page with status 200.

Both are transport faults: retried like a 5xx within `max_attempts`, then the unit lands in
`failures/<stage>.jsonl` — through the real openai and anthropic SDK adapters, and for batch result lines. And no
exception of any type that escapes a unit reaches the user as a traceback."""

from __future__ import annotations

import asyncio
import json

import pytest
from clean_runs import (
    ANTHROPIC_ENV,
    FAST,
    SEED,
    anthropic_args,
    assert_same_dataset,
    config_file,
    manifests,
    openai_args,
    tiny,
)
from kit import PERSONAS, invoke, read_jsonl, run_synth, synth_env
from wire import Answer, close, make_route, providers, requests, submit_then_die

from synth.llm.base import LLMRequest, TransportError
from synth.llm.batch import BatchDispatcher, result_lines
from synth.llm.cache import ResponseCache, cache_key
from synth.llm.client import LLM, CallStats
from synth.llm.fake import FakeProvider
from synth.llm.providers import AnthropicProvider, OpenAIProvider
from synth.testing.fake_server import BODY_FAULT_KINDS, GATEWAY_PAGE, FakeServer, _Backend

pytestmark = pytest.mark.slow  # `synth` subprocesses running whole pipelines

WIRES = ("openai", "anthropic")


def wire_args(wire: str, server: FakeServer) -> list[str]:
    return openai_args(server) if wire == "openai" else anthropic_args(server)


def wire_env(wire: str) -> dict | None:
    return ANTHROPIC_ENV if wire == "anthropic" else None


# ------------------------------------------------------------------------------------------- the adapters

def _request() -> LLMRequest:
    return requests(1)[0]


@pytest.mark.parametrize("kind", BODY_FAULT_KINDS)
@pytest.mark.parametrize("wire", WIRES)
def test_the_adapter_raises_a_transport_error(wire, kind, monkeypatch):
    """The SDKs raise JSONDecodeError for a cut body and return a str for an HTML page: both become the one
    retryable error type, whose message says what came back."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with FakeServer(fault_rate=1.0, faults=kind) as server:
        provider = (OpenAIProvider(base_url=server.openai_base_url, timeout_s=5) if wire == "openai"
                    else AnthropicProvider(base_url=server.anthropic_base_url, timeout_s=5))

        async def go() -> None:
            try:
                await provider.complete(_request(), "fake-model")
            finally:
                await provider.client.close()

        with pytest.raises(TransportError, match="HTTP 200 whose body is not JSON") as caught:
            asyncio.run(go())
        assert server.stats()["by_fault"] == {kind: 1}
    if kind == "html200":
        assert "Service temporarily unavailable" in str(caught.value)


# --------------------------------------------------------------------------------------- a whole run, retried

@pytest.mark.parametrize("wire", WIRES)
def test_cut_and_html_bodies_are_retried_and_change_nothing(wire, tmp_path, request):
    """30% of calls come back 200 with half a body or an HTML page: the run ends equal to a clean run, and each
    such answer cost exactly one retry."""
    clean = request.getfixturevalue(f"clean_{wire}")
    out = tmp_path / "cut"
    with FakeServer(fault_rate=0.3, faults=BODY_FAULT_KINDS, seed=SEED) as server:
        result = invoke(*tiny(out, *wire_args(wire, server), "--config", str(config_file(tmp_path, FAST))),
                        env=wire_env(wire))
        stats = server.stats()
    assert result.exit_code == 0, result.output
    assert set(stats["by_fault"]) == set(BODY_FAULT_KINDS), stats
    assert stats["faults"] >= 5, stats
    assert sum(m["retries"] for m in manifests(out)) == stats["faults"]
    assert_same_dataset(out, clean)


@pytest.mark.parametrize("kind", BODY_FAULT_KINDS)
@pytest.mark.parametrize("wire", WIRES)
def test_every_attempt_not_json_fails_the_unit_cleanly(wire, kind, tmp_path):
    """Every answer cut (or an HTML page) until max_attempts runs out: the unit is in failures/persona.jsonl with
    the reason, exit 1 with one error line, and no traceback on the real stderr of a `synth` process."""
    out = tmp_path / "out"
    config = config_file(tmp_path, "max_attempts = 3\ntimeout_s = 5\n")
    env = synth_env(**(ANTHROPIC_ENV if wire == "anthropic" else {}))
    with FakeServer(fault_rate=1.0, faults=kind, seed=SEED) as server:
        result = run_synth("persona", "--preset", "tiny", "--out", str(out), "--personas", str(PERSONAS),
                           *wire_args(wire, server), "--config", str(config), env=env)
        stats = server.stats()
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "JSONDecodeError" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "1 failed of 1 units" in errors[0], result.stderr
    persona = next(out.glob("*/failures")).parent
    failures = read_jsonl(persona / "failures" / "persona.jsonl")
    assert len(failures) == 1 and failures[0]["stage"] == "persona"
    assert failures[0]["reason"].startswith(f"TransportError: {wire}: HTTP 200 whose body is not JSON")
    assert "\n" not in failures[0]["reason"]
    assert stats["faults"] == stats["requests"] == 3  # max_attempts, all of them spent
    manifest = json.loads((persona / "manifests" / "persona.json").read_text())
    assert manifest["status"] == "failed" and manifest["retries"] == 2
    assert not (persona / "persona.jsonl").exists()


def test_a_failed_unit_is_asked_again_by_the_next_run(tmp_path, request):
    out = tmp_path / "again"
    config = config_file(tmp_path, "max_attempts = 2\ntimeout_s = 5\n")
    with FakeServer(fault_rate=1.0, faults="cut200", seed=SEED) as server:
        failed = invoke(*tiny(out, *openai_args(server), "--config", str(config)))
    assert failed.exit_code == 1, failed.output
    assert list(out.glob("*/failures/*.jsonl"))
    with FakeServer(seed=SEED) as server:
        again = invoke(*tiny(out, *openai_args(server)))
    assert again.exit_code == 0, again.output
    assert not list(out.glob("*/failures/*.jsonl"))
    assert_same_dataset(out, request.getfixturevalue("clean_openai"))


# ---------------------------------------------------------------------------- anything unexpected in a unit

def test_an_unexpected_exception_is_that_units_failure(tmp_path, monkeypatch):
    """A bug-shaped exception (not one of ours) in one unit: the other units finish and are kept, that unit is in
    failures/events.jsonl as one `TypeName: message` line, exit 1 without a traceback; the next run resumes."""
    out = tmp_path / "out"
    for stage in ("persona", "arcs", "phases"):
        done = invoke(stage, "--preset", "tiny", "--provider", "fake", "--out", str(out), "--personas", str(PERSONAS))
        assert done.exit_code == 0, done.output
    original = FakeProvider.complete
    calls = {"events": 0}

    async def first_events_call_breaks(self, request, model):
        if request.task == "events":
            calls["events"] += 1
            if calls["events"] == 1:
                raise KeyError("no such\nfield")
        return await original(self, request, model)

    monkeypatch.setattr(FakeProvider, "complete", first_events_call_breaks)
    args = ["events", "--preset", "tiny", "--provider", "fake", "--out", str(out), "--personas", str(PERSONAS),
            "--concurrency", "1"]
    broken = invoke(*args)
    assert broken.exit_code == 1, broken.output
    assert isinstance(broken.exception, SystemExit), repr(broken.exception)  # not a KeyError escaping the CLI
    assert "Traceback" not in broken.output
    persona = next(out.glob("*/failures")).parent
    failures = read_jsonl(persona / "failures" / "events.jsonl")
    assert [f["reason"] for f in failures] == ["KeyError: 'no such\\nfield'"]
    journal = [json.loads(line) for line in (persona / ".work" / "events.journal.jsonl").read_text().splitlines()[1:]]
    kept = [entry for entry in journal if "records" in entry]
    assert kept and calls["events"] == len(kept) + 1  # the others were asked and kept

    monkeypatch.setattr(FakeProvider, "complete", original)
    again = invoke(*args)
    assert again.exit_code == 0, again.output
    assert (persona / "events.jsonl").is_file()
    assert not (persona / "failures" / "events.jsonl").exists()


# ---------------------------------------------------------------------------------------------- batch mode

def test_result_lines_skip_what_is_not_json():
    good = {"custom_id": "req-1", "result": {"type": "succeeded"}}
    text = "\n".join([json.dumps(good), json.dumps(good)[:20], GATEWAY_PAGE, "[1, 2]", '{"no_id": 1}', ""])
    assert result_lines(text) == [("req-1", good)]
    assert result_lines(b"\xff\xfe not utf-8\n") == []


@pytest.fixture
def spoiled(monkeypatch) -> list[str]:
    """Wrap the fake server's batch creation: in the first batch's results, the first line is cut in half and
    the second is an HTML page. Holds the custom ids those two lines answered once the batch exists."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    ids: list[str] = []

    def spoil(data: bytes) -> bytes:
        lines = data.splitlines(keepends=True)
        ids.extend(json.loads(line)["custom_id"] for line in lines[:2])
        lines[0] = lines[0][: len(lines[0]) // 2] + b"\n"
        lines[1] = GATEWAY_PAGE.encode()
        return b"".join(lines)

    for name in ("openai_batch_create", "anthropic_batch_create"):
        original = getattr(_Backend, name)

        def create(self, body, original=original):
            batch = original(self, body)
            if not ids:
                if batch.results:
                    batch.results = spoil(batch.results)
                else:
                    stored = self.files[batch.output_file_id]
                    stored.data = spoil(stored.data)
            return batch

        monkeypatch.setattr(_Backend, name, create)
    return ids


@pytest.mark.parametrize("provider", WIRES)
def test_unreadable_result_lines_fail_only_their_requests(tmp_path, spoiled, provider):
    reqs = requests(5)
    with FakeServer(batch_delay_s=0.2) as server:
        route = make_route(server, provider)

        async def go():
            get = providers()
            dispatcher = BatchDispatcher(tmp_path, None, get, window_s=0.05, poll_s=0.05)
            outcomes = await asyncio.gather(*(dispatcher.complete(route, r) for r in reqs), return_exceptions=True)
            await close(get)
            return outcomes, dispatcher

        outcomes, dispatcher = asyncio.run(go())
    assert len(spoiled) == 2
    failed = [o for o in outcomes if isinstance(o, Exception)]
    assert len(failed) == 2 and all(isinstance(o, TransportError) and "no readable result" in str(o) for o in failed)
    assert all(Answer.model_validate_json(o.text) for o in outcomes if not isinstance(o, Exception))
    record = json.loads((tmp_path / "batches" / f"{dispatcher.submitted[0]}.json").read_text())
    assert record["status"] == "done" and record["errored"] == sorted(spoiled)


@pytest.mark.parametrize("provider", WIRES)
def test_through_the_client_an_unreadable_result_line_is_retried(tmp_path, spoiled, provider):
    """Via the client's retry policy: the two requests whose lines were unreadable go out again in a second batch;
    every request gets an answer and the client counted two retries."""
    reqs = requests(5)
    with FakeServer(batch_delay_s=0.2) as server:
        route = make_route(server, provider)

        async def go():
            get = providers()
            cache = ResponseCache(tmp_path / "cache.sqlite")
            dispatcher = BatchDispatcher(tmp_path, cache, get, window_s=0.05, poll_s=0.05)
            llm = LLM(get, cache, max_attempts=3, backoff_base_s=0.01, backoff_cap_s=0.05, batch=dispatcher)
            stats = CallStats()
            answers = await asyncio.gather(*(llm.call(route, r, stats) for r in reqs))
            cache.close()
            await close(get)
            return answers, stats, dispatcher

        answers, stats, dispatcher = asyncio.run(go())
    assert len(spoiled) == 2 and len(dispatcher.submitted) == 2
    assert all(Answer.model_validate_json(a.text) for a in answers)
    assert stats.retries == 2 and stats.provider_calls == 5


@pytest.mark.parametrize("provider", WIRES)
def test_a_resumed_batch_with_unreadable_lines_keeps_the_rest(tmp_path, spoiled, provider):
    """A restarted run collects a persisted batch whose result file holds lines that are not JSON: no crash, the
    readable answers go to the cache, the batch file lists the rest as errored, and those are asked again."""
    reqs = requests(5)
    with FakeServer(batch_delay_s=0.5) as server:
        route = make_route(server, provider)
        keys = {cache_key(route.provider, route.model, r): r for r in reqs}

        submit_then_die(tmp_path, route, reqs)

        async def second_run():
            cache = ResponseCache(tmp_path / "cache.sqlite")
            get = providers()
            dispatcher = BatchDispatcher(tmp_path, cache, get, window_s=0.05, poll_s=0.05)
            resumed = await dispatcher.resume()
            cached = {k for k in keys if cache.get(k) is not None}
            again = await asyncio.gather(*(dispatcher.complete(route, r) for r in reqs))
            cache.close()
            await close(get)
            return resumed, cached, again, dispatcher

        resumed, cached, again, dispatcher = asyncio.run(second_run())
    assert resumed == 1 and len(spoiled) == 2 and len(cached) == 3
    assert len(dispatcher.submitted) == 1  # only the two unreadable ones went out again, in one new batch
    assert all(Answer.model_validate_json(a.text) for a in again)
    files = sorted((tmp_path / "batches").glob("*.json"), key=lambda p: json.loads(p.read_text())["created_at"])
    first = json.loads(files[0].read_text())
    assert first["status"] == "done" and first["errored"] == sorted(spoiled)


@pytest.mark.parametrize("kind", BODY_FAULT_KINDS)
@pytest.mark.parametrize("provider", WIRES)
def test_a_batch_call_answered_with_no_json_is_a_transport_error(tmp_path, monkeypatch, provider, kind):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with FakeServer(fault_rate=1.0, faults=kind) as server:
        route = make_route(server, provider)

        async def go():
            get = providers()
            dispatcher = BatchDispatcher(tmp_path, None, get, window_s=0.05, poll_s=0.05)
            try:
                return await dispatcher.complete(route, _request())
            finally:
                await close(get)

        with pytest.raises(TransportError, match="not JSON"):
            asyncio.run(go())
        assert server.stats()["by_fault"] == {kind: 1}
