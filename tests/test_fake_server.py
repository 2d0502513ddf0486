"""The fake LLM server, driven through the real openai and anthropic SDKs."""

from __future__ import annotations

import contextlib
import io
import json
import math
import subprocess
import sys
import time
import urllib.request

import pytest
from pydantic import BaseModel, Field

from synth.testing.fake_server import BAD_BODY_KINDS, GATEWAY_PAGE, REFUSAL, FakeServer, embed

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")


class Mood(BaseModel):
    label: str
    intensity: int = Field(ge=1, le=5)
    tags: list[str]


SCHEMA = Mood.model_json_schema()
OPENAI_FORMAT = {"type": "json_schema", "json_schema": {"name": "Mood", "schema": SCHEMA}}
ANTHROPIC_TOOL = {"name": "Mood", "description": "answer", "input_schema": SCHEMA}
MESSAGES = [{"role": "system", "content": "You are a diarist."}, {"role": "user", "content": "How was today?"}]


@pytest.fixture(scope="module")
def server():
    with FakeServer(batch_delay_s=0.2) as srv:
        yield srv


def _openai(url: str, **kw) -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key="test", max_retries=0, **kw)


def _anthropic(url: str, **kw) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, api_key="test", max_retries=0, **kw)


def _chat(client, **kw):
    return client.chat.completions.create(model="any-model", messages=MESSAGES, response_format=OPENAI_FORMAT, **kw)


def _message(client, **kw):
    return client.messages.create(model="claude-whatever", max_tokens=512, system="You are a diarist.",
                                  messages=[{"role": "user", "content": "How was today?"}], tools=[ANTHROPIC_TOOL],
                                  tool_choice={"type": "tool", "name": "Mood"}, **kw)


def test_openai_structured_answer_validates_and_is_deterministic(server):
    client = _openai(server.openai_base_url)
    first, second = _chat(client), _chat(client)
    mood = Mood.model_validate_json(first.choices[0].message.content)
    assert first.choices[0].message.content == second.choices[0].message.content
    assert first.choices[0].finish_reason == "stop" and first.model == "any-model"
    assert first.usage.prompt_tokens > 0 and first.usage.prompt_tokens_details.cached_tokens == 0
    other = _chat(client, seed=3)
    assert Mood.model_validate_json(other.choices[0].message.content) != mood  # the seed picks another sample


def test_openai_tools_list_parts_and_llama_cpp_json_object(server):
    client = _openai(server.openai_base_url)
    tool = {"type": "function", "function": {"name": "Mood", "parameters": SCHEMA}}
    parts = [{"role": "user", "content": [{"type": "text", "text": "How was "}, {"type": "text", "text": "today?"}]}]
    answer = client.chat.completions.create(model="m", messages=parts, tools=[tool],
                                            tool_choice={"type": "function", "function": {"name": "Mood"}})
    call = answer.choices[0].message.tool_calls[0]
    assert call.function.name == "Mood" and answer.choices[0].finish_reason == "tool_calls"
    Mood.model_validate_json(call.function.arguments)
    llama = client.chat.completions.create(model="m", messages=MESSAGES,
                                           response_format={"type": "json_object", "schema": SCHEMA})
    Mood.model_validate_json(llama.choices[0].message.content)
    plain = client.chat.completions.create(model="m", messages=MESSAGES, response_format={"type": "json_object"})
    assert json.loads(plain.choices[0].message.content)


def test_openai_sdk_parse_helper(server):
    parsed = _openai(server.openai_base_url).chat.completions.parse(model="m", messages=MESSAGES, response_format=Mood)
    assert isinstance(parsed.choices[0].message.parsed, Mood)


def test_anthropic_tool_answer_validates_and_is_deterministic(server):
    client = _anthropic(server.anthropic_base_url)
    first, second = _message(client), _message(client)
    block = first.content[0]
    assert block.type == "tool_use" and block.name == "Mood" and first.stop_reason == "tool_use"
    Mood.model_validate(block.input)
    assert second.content[0].input == block.input
    text = client.messages.create(model="c", max_tokens=64, messages=[{"role": "user", "content": "hi"}])
    assert text.content[0].type == "text" and json.loads(text.content[0].text)


def test_anthropic_prompt_cache_usage(server):
    client = _anthropic(server.anthropic_base_url)
    system = [{"type": "text", "text": "A long stable persona profile. " * 40, "cache_control": {"type": "ephemeral"}}]
    kw = {"model": "c", "max_tokens": 64, "system": system, "messages": [{"role": "user", "content": "hi"}]}
    written, read = client.messages.create(**kw).usage, client.messages.create(**kw).usage
    assert written.cache_creation_input_tokens > 0 and written.cache_read_input_tokens == 0
    assert read.cache_read_input_tokens == written.cache_creation_input_tokens and read.cache_creation_input_tokens == 0
    assert read.input_tokens < 10  # the cached prefix is not counted again
    plain = client.messages.create(model="c", max_tokens=64, system=system[0]["text"],
                                   messages=[{"role": "user", "content": "hi"}]).usage
    assert plain.cache_read_input_tokens == 0 and plain.input_tokens > 100


@pytest.mark.parametrize(
    "kind,openai_error,anthropic_error",
    [
        ("429", "RateLimitError", "RateLimitError"),
        ("429nra", "RateLimitError", "RateLimitError"),
        ("500", "InternalServerError", "InternalServerError"),
        ("502", "InternalServerError", "InternalServerError"),
        ("503", "InternalServerError", "InternalServerError"),
        ("529", "InternalServerError", "OverloadedError"),
        ("drop", "APIConnectionError", "APIConnectionError"),
    ],
)
def test_transport_faults_surface_as_sdk_errors(kind, openai_error, anthropic_error):
    with FakeServer(fault_rate=1.0, faults=kind) as srv:
        with pytest.raises(getattr(openai, openai_error)) as caught:
            _chat(_openai(srv.openai_base_url, timeout=5))
        with pytest.raises(getattr(anthropic, anthropic_error)) as caught_a:
            _message(_anthropic(srv.anthropic_base_url, timeout=5))
        assert srv.stats()["faults"] == 2
    for exc in (caught.value, caught_a.value):
        if kind == "drop":
            assert not isinstance(exc, (openai.APITimeoutError, anthropic.APITimeoutError))
            continue
        assert exc.status_code == (429 if kind.startswith("429") else int(kind))
        assert exc.response.headers.get("retry-after") == ("1" if kind == "429" else None)
    if kind == "529":
        assert caught_a.value.body["error"]["type"] == "overloaded_error"


def test_cut200_is_half_a_body_in_valid_http():
    """The answer cut in half, with a Content-Length that matches the cut: the SDKs' JSON parsing fails."""
    with FakeServer() as clean, FakeServer(fault_rate=1.0, faults="cut200") as srv:
        request = urllib.request.Request(srv.openai_base_url + "/chat/completions", method="POST",
                                         data=json.dumps({"model": "m", "messages": MESSAGES}).encode())
        clean_request = urllib.request.Request(clean.openai_base_url + "/chat/completions", method="POST",
                                               data=request.data)
        with urllib.request.urlopen(request) as reply, urllib.request.urlopen(clean_request) as whole:
            cut, full = reply.read(), whole.read()
            assert reply.status == 200 and int(reply.headers["Content-Length"]) == len(cut)
        assert len(cut) == len(full) // 2 and cut.startswith(b'{"id": "chatcmpl-fake')  # (the clock may differ)
        with pytest.raises(json.JSONDecodeError):
            _chat(_openai(srv.openai_base_url))
        with pytest.raises(json.JSONDecodeError):
            _message(_anthropic(srv.anthropic_base_url))
        assert srv.stats()["by_fault"] == {"cut200": 3} and srv.stats()["faults"] == 3


def test_html200_is_a_gateway_page_the_sdks_return_as_text():
    with FakeServer(fault_rate=1.0, faults="html200") as srv:
        assert _chat(_openai(srv.openai_base_url)) == GATEWAY_PAGE
        assert _message(_anthropic(srv.anthropic_base_url)) == GATEWAY_PAGE
        with urllib.request.urlopen(urllib.request.Request(srv.url + "/v1/messages", data=b"{}")) as reply:
            assert reply.status == 200 and reply.headers["Content-Type"].startswith("text/html")
        assert srv.stats()["faults"] == 3 and srv.stats()["bad_bodies"] == 0


def test_timeout_fault_trips_the_client_timeout():
    with FakeServer(fault_rate=1.0, faults="timeout", timeout_sleep_s=1.5) as srv:
        start = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            _chat(_openai(srv.openai_base_url, timeout=0.5))
        with pytest.raises(anthropic.APITimeoutError):
            _message(_anthropic(srv.anthropic_base_url, timeout=0.5))
        assert time.monotonic() - start < 1.5


def test_fault_counts_are_reproducible_and_spare_control_endpoints():
    def run() -> dict:
        with FakeServer(seed=7, fault_rate=0.5, faults="500,503") as srv:
            client = _openai(srv.openai_base_url)
            for _ in range(20):
                with contextlib.suppress(openai.InternalServerError):
                    _chat(client)
            with urllib.request.urlopen(srv.url + "/_stats") as reply:
                return json.load(reply)

    first, second = run(), run()
    assert first == second and 0 < first["faults"] < 20 and first["requests"] == 20


def test_faults_spare_polling_and_control_endpoints():
    with FakeServer(fault_rate=1.0, faults="500") as srv:
        assert [m.id for m in _openai(srv.openai_base_url).models.list()] == ["fake"]
        with urllib.request.urlopen(srv.url + "/_stats") as reply:
            assert json.load(reply) == {"requests": 1, "by_path": {"/v1/models": 1}, "faults": 0,
                                        "bad_bodies": 0, "by_fault": {}}


@pytest.mark.parametrize("kind", BAD_BODY_KINDS)
def test_bad_bodies_openai(kind):
    with FakeServer(bad_body_rate=1.0, bad_bodies=kind) as srv:
        answer = _chat(_openai(srv.openai_base_url))
    message = answer.choices[0].message
    if kind == "refusal":
        assert message.content is None and message.refusal == REFUSAL
        return
    with pytest.raises(ValueError):  # pydantic's ValidationError is a ValueError, as is a JSON error
        Mood.model_validate_json(message.content)
    if kind == "empty":
        assert message.content == ""
    if kind == "notjson":
        assert not message.content.lstrip().startswith("{")
    if kind == "invalid":
        assert json.loads(message.content) == {"unexpected": 1}
    if kind == "truncated":
        assert answer.choices[0].finish_reason == "length"


@pytest.mark.parametrize("kind", BAD_BODY_KINDS)
def test_bad_bodies_anthropic(kind):
    with FakeServer(bad_body_rate=1.0, bad_bodies=kind) as srv:
        answer = _message(_anthropic(srv.anthropic_base_url))
    block = answer.content[0]
    if kind in ("invalid", "empty"):
        assert block.type == "tool_use"
        with pytest.raises(ValueError):
            Mood.model_validate(block.input)
    else:
        assert block.type == "text" and not any(b.type == "tool_use" for b in answer.content)
    if kind == "refusal":
        assert block.text == REFUSAL and answer.stop_reason == "refusal"
    if kind == "truncated":
        assert answer.stop_reason == "max_tokens"
        with pytest.raises(ValueError):
            json.loads(block.text)


def test_openai_batch_end_to_end(server):
    client = _openai(server.openai_base_url)
    lines = [{"custom_id": f"req-{i}", "method": "POST", "url": "/v1/chat/completions",
              "body": {"model": "m", "messages": MESSAGES, "response_format": OPENAI_FORMAT, "seed": i}}
             for i in range(3)]
    upload = io.BytesIO("".join(json.dumps(line) + "\n" for line in lines).encode())
    upload.name = "requests.jsonl"
    stored = client.files.create(file=upload, purpose="batch")
    assert stored.purpose == "batch" and stored.bytes > 0
    batch = client.batches.create(input_file_id=stored.id, endpoint="/v1/chat/completions", completion_window="24h")
    assert batch.status == "validating" and batch.output_file_id is None
    while batch.status != "completed":
        time.sleep(0.05)
        batch = client.batches.retrieve(batch.id)
    assert batch.request_counts.completed == 3 and batch.request_counts.failed == 0
    results = [json.loads(line) for line in client.files.content(batch.output_file_id).text.splitlines()]
    assert [r["custom_id"] for r in results] == ["req-0", "req-1", "req-2"]
    for result in results:
        assert result["error"] is None and result["response"]["status_code"] == 200
        completion = openai.types.chat.ChatCompletion.model_validate(result["response"]["body"])
        Mood.model_validate_json(completion.choices[0].message.content)
    same = _chat(client, seed=1).choices[0].message.content
    assert results[1]["response"]["body"]["choices"][0]["message"]["content"] == same


def test_anthropic_batch_end_to_end(server):
    client = _anthropic(server.anthropic_base_url)
    params = {"model": "c", "max_tokens": 256, "messages": [{"role": "user", "content": "How was today?"}],
              "system": "You are a diarist.", "tools": [ANTHROPIC_TOOL], "tool_choice": {"type": "tool", "name": "Mood"}}
    batch = client.messages.batches.create(requests=[{"custom_id": f"r{i}", "params": params} for i in range(2)])
    assert batch.processing_status == "in_progress" and batch.results_url is None
    while batch.processing_status != "ended":
        time.sleep(0.05)
        batch = client.messages.batches.retrieve(batch.id)
    assert batch.request_counts.succeeded == 2
    results = list(client.messages.batches.results(batch.id))
    assert [r.custom_id for r in results] == ["r0", "r1"]
    for result in results:
        assert result.result.type == "succeeded"
        Mood.model_validate(result.result.message.content[0].input)
    assert results[0].result.message.content[0].input == _message(client).content[0].input


def test_embeddings_and_models(server):
    client = _openai(server.openai_base_url)
    texts = ["morning walk by the river", "morning walk by the river", "a walk by the river", "tax forms due"]
    vectors = [d.embedding for d in client.embeddings.create(model="e", input=texts).data]
    floats = client.embeddings.create(model="e", input=texts[0], encoding_format="float").data[0].embedding

    def cosine(a, b):
        return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))

    assert len(vectors[0]) == 64 and cosine(vectors[0], vectors[1]) == pytest.approx(1.0, abs=1e-6)
    assert cosine(vectors[0], vectors[2]) > cosine(vectors[0], vectors[3])
    assert floats == pytest.approx(vectors[0], abs=1e-6) and embed(texts[0]) == pytest.approx(floats)
    assert [m.id for m in client.models.list()] == ["fake"]


def test_stats_and_reset(server):
    server.reset()
    _chat(_openai(server.openai_base_url))
    stats = server.stats()
    assert stats["requests"] == 1 and stats["by_path"] == {"/v1/chat/completions": 1} and stats["faults"] == 0
    request = urllib.request.Request(server.url + "/_reset", data=b"", method="POST")
    with urllib.request.urlopen(request) as reply:
        assert json.load(reply)["requests"] == 0


def test_module_entry_point_serves_until_terminated():
    proc = subprocess.Popen([sys.executable, "-m", "synth.testing.fake_server", "--port", "0", "--latency-ms", "1"],
                            stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("fake server listening on http://127.0.0.1:")
        url = line.rsplit(" ", 1)[1]
        assert not url.endswith(":0")
        Mood.model_validate_json(_chat(_openai(url + "/v1")).choices[0].message.content)
    finally:
        proc.terminate()
        proc.wait(timeout=5)
    assert proc.returncode is not None


def test_unknown_fault_kind_is_rejected():
    with pytest.raises(ValueError, match="unknown fault"):
        FakeServer(faults="418")
