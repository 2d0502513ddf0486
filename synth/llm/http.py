"""A thin async JSON-over-HTTP client for OpenAI-compatible servers, on aiohttp.

The openai SDK spent about 2.5 ms of event-loop CPU per call (request building, typed response objects, httpx's
connection bookkeeping) where this client spends about 0.2 ms: at a few hundred concurrent calls per stage that CPU
was most of the pipeline's wall time beyond its critical path (`make bench`). Chat completions are one POST with a
JSON body and a JSON answer, so the adapter speaks the wire itself; the SDK stays for the batch API.

One aiohttp session per event loop, made on first use: `asyncio.run` is called once per command, but tests and the
bench run several loops in one process. `close()` ends it; the pipeline calls it when its stages finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import aiohttp

from synth.llm.base import TransportError


class HTTPStatusError(Exception):
    """A non-2xx answer: the status, the headers (Retry-After) and the server's error message."""

    def __init__(self, status: int, headers: Any, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status_code = status
        self.headers = headers
        self.message = message


def error_message(raw: bytes) -> str:
    """The `error.message` of an OpenAI-style error body, else the body's text (cut to 500 characters)."""
    text = raw.decode("utf-8", errors="replace")
    try:
        body = json.loads(text)
    except ValueError:
        return " ".join(text.split())[:500]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:500]
    if isinstance(error, str):
        return error[:500]
    return " ".join(text.split())[:500]


def preview(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat[:80] + ("…" if len(flat) > 80 else ""))


class JSONClient:
    """POST a JSON body, get a JSON answer. Timeouts and connection failures are TransportErrors (retried), so is a
    2xx whose body is not JSON (cut off by a gateway, or its HTML page); other statuses raise HTTPStatusError."""

    def __init__(self, name: str, base_url: str, headers: dict[str, str], timeout_s: float) -> None:
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.headers = {"Content-Type": "application/json", "Accept": "application/json", **headers}
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _session_here(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is not None and self._loop is not loop:
            self._abandon()
        if self._session is None:
            # No connection cap of our own: the pipeline's semaphore bounds the calls in flight. trust_env honours
            # HTTP(S)_PROXY and NO_PROXY as the SDKs do.
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=self.timeout,
                                                  trust_env=True)
            self._loop = loop
        return self._session

    def _abandon(self) -> None:
        """A session of a loop that has ended cannot be awaited closed: detach it quietly."""
        session, self._session, self._loop = self._session, None, None
        if session is not None and not session.closed:
            connector = session.connector
            session.detach()
            if connector is not None:
                with contextlib.suppress(Exception):
                    connector._close()  # noqa: SLF001 - the sync close of a connector whose loop is gone

    async def post(self, path: str, body: dict) -> Any:
        session = self._session_here()
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        try:
            async with session.post(self.base_url + path, data=data, headers=self.headers) as response:
                raw = await response.read()
                status, headers = response.status, response.headers
        except asyncio.TimeoutError:
            raise TransportError(f"{self.name}: request timed out") from None
        except aiohttp.ClientError as exc:
            raise TransportError(f"{self.name}: connection error ({type(exc).__name__})") from None
        if status >= 300:
            raise HTTPStatusError(status, headers, error_message(raw))
        text = raw.decode("utf-8", errors="replace")
        try:
            answer = json.loads(text)
        except ValueError as exc:
            raise TransportError(f"{self.name}: HTTP 200 whose body is not JSON "
                                 f"({type(exc).__name__}: {preview(text)})") from None
        if not isinstance(answer, dict):
            raise TransportError(f"{self.name}: HTTP 200 whose body is not JSON: {preview(text)}")
        return answer

    async def close(self) -> None:
        session, self._session, self._loop = self._session, None, None
        if session is not None and not session.closed:
            await session.close()
