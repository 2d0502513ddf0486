"""The openai adapter's thin HTTP client: one session per event loop, statuses mapped as the SDK mapped them."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from wire import requests

from synth.llm.base import FatalProviderError, TransportError
from synth.llm.http import error_message
from synth.llm.providers import OpenAIProvider
from synth.testing.fake_server import FakeServer


def _one(provider: OpenAIProvider):
    return provider.complete(requests(1)[0], "fake-model")


def test_one_provider_serves_several_event_loops_without_leaking_sessions(caplog):
    """`asyncio.run` twice with the same provider (tests and the bench do this): the second loop gets its own
    session, the first loop's is let go without the 'Unclosed client session' complaint."""
    caplog.set_level(logging.ERROR, logger="asyncio")
    with FakeServer() as server:
        provider = OpenAIProvider(base_url=server.openai_base_url, timeout_s=5)
        first = asyncio.run(_one(provider))
        first_session = provider.client._session
        second = asyncio.run(_one(provider))
        assert provider.client._session is not first_session
        assert first_session.closed
        asyncio.run(provider.aclose())
        assert provider.client._session is None
        gc.collect()
        assert server.stats()["by_path"]["/v1/chat/completions"] == 2
    assert json.loads(first.text) and json.loads(second.text)
    assert "Unclosed" not in caplog.text


class _Status(BaseHTTPRequestHandler):
    """Answers every POST with the status and body the test set on the server."""

    def do_POST(self):  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        status, headers, body = self.server.answer
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def status_server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Status)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _answer(httpd, status: int, body: dict | str, **headers: str) -> Exception:
    httpd.answer = (status, headers, (json.dumps(body) if isinstance(body, dict) else body).encode())
    provider = OpenAIProvider(base_url=f"http://127.0.0.1:{httpd.server_address[1]}/v1", timeout_s=5)

    async def go():
        try:
            await _one(provider)
        finally:
            await provider.aclose()

    with pytest.raises(Exception) as caught:
        asyncio.run(go())
    return caught.value


def test_429_is_retryable_with_its_retry_after(status_server):
    error = _answer(status_server, 429, {"error": {"message": "slow down"}}, **{"Retry-After": "7"})
    assert isinstance(error, TransportError) and error.status == 429 and error.retry_after == 7.0


def test_401_is_fatal_and_names_the_key_variable(status_server):
    error = _answer(status_server, 401, {"error": {"message": "bad key sk-secret"}})
    assert isinstance(error, FatalProviderError) and "OPENAI_API_KEY" in str(error) and "sk-secret" not in str(error)


def test_a_400_that_is_not_about_the_format_is_fatal_with_the_servers_message(status_server):
    error = _answer(status_server, 400, {"error": {"message": "context length exceeded"}})
    assert isinstance(error, FatalProviderError) and "context length exceeded" in str(error)


def test_a_200_without_choices_is_a_transport_error(status_server):
    error = _answer(status_server, 200, {"id": "x", "object": "chat.completion"})
    assert isinstance(error, TransportError) and "without choices" in str(error)


def test_error_message_reads_openai_and_plain_bodies():
    assert error_message(b'{"error": {"message": "no such model"}}') == "no such model"
    assert error_message(b'{"error": "overloaded"}') == "overloaded"
    assert error_message(b"<html>\n  Bad   gateway</html>") == "<html> Bad gateway</html>"
