"""A fake LLM HTTP server speaking the OpenAI and Anthropic wire formats (chat, messages, embeddings, batches),
answering any model from the schema-driven fake generator, with seeded transport faults and bad bodies.

Stdlib only, so tests and benchmarks can drive the real provider SDKs (and any OpenAI-compatible client)
against it: `FakeServer` in-process, or `python -m synth.testing.fake_server --port N` as a process.

The server is split by responsibility: wire formats (`fake_wire`), batches (`fake_batches`), faults
(`fake_faults`), shared state (`fake_backend`) and HTTP (`fake_http`); this module starts it and re-exports
what tests import.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import threading
from collections.abc import Iterable
from typing import Self

from synth.testing.fake_backend import Backend
from synth.testing.fake_faults import (
    BAD_BODY_KINDS,
    BODY_FAULT_KINDS,
    FAULT_KINDS,
    GATEWAY_PAGE,
    TRANSPORT_FAULT_KINDS,
)
from synth.testing.fake_http import FakeHTTPServer
from synth.testing.fake_wire import EMBEDDING_DIM, INVALID_ANSWER, NOT_JSON, REFUSAL, embed

__all__ = [
    "BAD_BODY_KINDS", "BODY_FAULT_KINDS", "EMBEDDING_DIM", "FAULT_KINDS", "GATEWAY_PAGE", "INVALID_ANSWER", "NOT_JSON",
    "REFUSAL", "TRANSPORT_FAULT_KINDS", "FakeServer", "_Backend", "embed", "main",
]
_Backend = Backend  # the name tests wrap with monkeypatch


class FakeServer:
    """The fake server in a background thread: `with FakeServer(...) as server: ... server.openai_base_url`."""

    def __init__(self, latency_ms: float = 0, seed: int = 0, fault_rate: float = 0.0,
                 faults: str | Iterable[str] | None = None, bad_body_rate: float = 0.0,
                 bad_bodies: str | Iterable[str] | None = None, timeout_sleep_s: float = 5.0,
                 batch_delay_s: float = 0.5, host: str = "127.0.0.1", port: int = 0) -> None:
        self.backend = Backend(latency_ms, seed, fault_rate, faults, bad_body_rate, bad_bodies,
                               timeout_sleep_s, batch_delay_s)
        self.host, self.port = host, port
        self._httpd: FakeHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        self._httpd = FakeHTTPServer((self.host, self.port), self.backend)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"fake-server-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        for conn in list(self._httpd.connections):  # idle keep-alive connections would hold threads
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._httpd = None

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    def stats(self) -> dict:
        return self.backend.stats()

    def reset(self) -> None:
        """Zero the counters, reseed the fault draws and forget the prompt cache (files and batches stay)."""
        self.backend.reset()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m synth.testing.fake_server", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True, help="0 picks a free port")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="sleep before each answer")
    parser.add_argument("--seed", type=int, default=0, help="seeds the fault draws and the fake answers")
    parser.add_argument("--fault-rate", type=float, default=0.0, help="chance a call gets a transport fault")
    parser.add_argument("--faults", default=None,
                        help=f"comma list of {','.join(TRANSPORT_FAULT_KINDS)} (default all)")
    parser.add_argument("--bad-body-rate", type=float, default=0.0, help="chance a 200 answer is spoiled")
    parser.add_argument("--bad-bodies", default=None, help=f"comma list of {','.join(BAD_BODY_KINDS)} (default all)")
    parser.add_argument("--timeout-sleep-s", type=float, default=5.0, help="how long a `timeout` fault stalls")
    parser.add_argument("--batch-delay-s", type=float, default=0.5, help="how long a batch takes to complete")
    args = parser.parse_args(argv)
    try:
        server = FakeServer(args.latency_ms, args.seed, args.fault_rate, args.faults, args.bad_body_rate,
                            args.bad_bodies, args.timeout_sleep_s, args.batch_delay_s, args.host, args.port)
    except ValueError as exc:
        parser.error(str(exc))
    server.start()
    print(f"fake server listening on {server.url}", flush=True)
    try:
        server.wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
