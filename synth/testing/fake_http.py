"""The fake server's HTTP side: the route table, a request handler that injects the drawn faults and answers
each route from the backend, and the threading server that tracks open connections so it can close them."""

from __future__ import annotations

import contextlib
import email.parser
import email.policy
import json
import socket
import sys
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from synth.testing.fake_backend import Backend
from synth.testing.fake_faults import GATEWAY_PAGE
from synth.testing.fake_wire import error_body, iso_time

# (method, path with ids replaced by {id}) -> handler name; the rest of the path space answers 404.
_ROUTES = {
    ("POST", "/v1/chat/completions"): "chat",
    ("POST", "/v1/messages"): "messages",
    ("POST", "/v1/embeddings"): "embeddings",
    ("GET", "/v1/models"): "models",
    ("POST", "/v1/files"): "file_upload",
    ("GET", "/v1/files/{id}"): "file_get",
    ("GET", "/v1/files/{id}/content"): "file_content",
    ("POST", "/v1/batches"): "openai_batch_create",
    ("GET", "/v1/batches/{id}"): "openai_batch_get",
    ("POST", "/v1/messages/batches"): "anthropic_batch_create",
    ("GET", "/v1/messages/batches/{id}"): "anthropic_batch_get",
    ("GET", "/v1/messages/batches/{id}/results"): "anthropic_batch_results",
}
_CONTROL = {("GET", "/_stats"), ("POST", "/_reset")}
# Transport faults hit calls a client makes once per unit of work; never control endpoints or batch polling.
_FAULTABLE = {"chat", "messages", "embeddings", "file_upload", "openai_batch_create", "anthropic_batch_create"}


def _route_key(path: str) -> tuple[str, str | None]:
    """The route pattern of a path (the id after `batches/` or `files/` becomes {id}) and that id."""
    parts = path.rstrip("/").split("/")
    ident = None
    for i in range(2, len(parts)):
        if parts[i - 1] in ("batches", "files"):
            ident, parts[i] = parts[i], "{id}"
            break
    return "/".join(parts) or "/", ident


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real providers
    disable_nagle_algorithm = True  # headers and body go out as separate writes
    server: FakeHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        self.server.connections.add(self.connection)

    def finish(self) -> None:
        self.server.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, payload: dict | bytes, headers: dict[str, str] | None = None,
              content_type: str | None = None, cut: bool = False) -> None:
        """Send `payload`; `cut` sends only its first half, with a Content-Length that matches (valid HTTP)."""
        data = payload if isinstance(payload, bytes) else json.dumps(payload, ensure_ascii=False).encode()
        if cut:
            data = data[: len(data) // 2]
        self.send_response_only(status)
        self.send_header("Content-Type", content_type or (
            "application/jsonl" if isinstance(payload, bytes) else "application/json"))
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _dispatch(self, method: str) -> None:
        backend = self.server.backend
        route, ident = _route_key(self.path.partition("?")[0])
        self.body = self._read_body()
        if (method, route) in _CONTROL:
            if route == "/_reset":
                backend.reset()
            return self._send(200, backend.stats())
        backend.count(route)
        if backend.latency_s:
            time.sleep(backend.latency_s)
        name = _ROUTES.get((method, route))
        self.anthropic = route.startswith("/v1/messages")
        fault = backend.draw_fault() if name in _FAULTABLE else None
        if fault == "drop":
            self.close_connection = True
            return
        if fault == "timeout":
            time.sleep(backend.timeout_sleep_s)  # the client should have given up by now; answer anyway
        elif fault == "html200":  # the gateway answered for the upstream, which never saw the request
            return self._send(200, GATEWAY_PAGE.encode(), content_type="text/html; charset=utf-8")
        elif fault and fault != "cut200":
            status = 429 if fault.startswith("429") else int(fault)
            headers = {"Retry-After": "1"} if fault == "429" else None
            return self._send(status, error_body(status, f"fake fault {fault}", self.anthropic), headers)
        if name is None:
            return self._send(404, error_body(404, f"no route {method} {route}", self.anthropic))
        try:
            status, payload = getattr(self, "_" + name)(backend, ident)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            status, payload = 400, error_body(400, f"bad request: {exc!r}", self.anthropic)
        except Exception as exc:  # noqa: BLE001 - a bug in the fake: say so loudly rather than hang the client
            traceback.print_exc(file=sys.stderr)
            status, payload = 500, error_body(500, f"fake server bug: {exc!r}", self.anthropic)
        # cut200: the upstream answered (its side effects happened) and the gateway passed on half the body.
        self._send(status, payload, cut=fault == "cut200" and status == 200)

    def _json(self) -> dict:
        body = json.loads(self.body or b"{}")
        if not isinstance(body, dict):
            raise TypeError("the request body must be a JSON object")
        return body

    def _not_found(self, what: str) -> tuple[int, dict]:
        return 404, error_body(404, f"no such {what}", self.anthropic)

    # --- routes: each returns (status, payload) -------------------------------------------------------

    def _chat(self, backend: Backend, _: Any) -> tuple[int, dict]:
        return 200, backend.chat_completion(self._json(), backend.draw_bad())

    def _messages(self, backend: Backend, _: Any) -> tuple[int, dict]:
        return 200, backend.message(self._json(), backend.draw_bad())

    def _embeddings(self, backend: Backend, _: Any) -> tuple[int, dict]:
        return 200, backend.embeddings(self._json())

    def _models(self, backend: Backend, _: Any) -> tuple[int, dict]:
        model = {"id": "fake", "object": "model", "created": 0, "owned_by": "synth",
                 "type": "model", "display_name": "Fake", "created_at": iso_time(0)}
        return 200, {"object": "list", "data": [model], "has_more": False, "first_id": "fake", "last_id": "fake"}

    def _file_upload(self, backend: Backend, _: Any) -> tuple[int, dict]:
        head = f"Content-Type: {self.headers.get('Content-Type', '')}\r\n\r\n".encode()
        form = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + self.body)
        fields: dict[str, Any] = {}
        filename = "upload.jsonl"
        for part in form.iter_parts():
            name = part.get_param("name", header="content-disposition")
            fields[name] = part.get_payload(decode=True)
            filename = part.get_filename() or filename
        if "file" not in fields:
            raise ValueError("multipart form without a `file` part")
        purpose = (fields.get("purpose") or b"batch").decode()
        return 200, backend.store_file(fields["file"], filename, purpose).view()

    def _file_get(self, backend: Backend, ident: str) -> tuple[int, dict]:
        stored = backend.files.get(ident)
        return (200, stored.view()) if stored else self._not_found("file")

    def _file_content(self, backend: Backend, ident: str) -> tuple[int, dict | bytes]:
        stored = backend.files.get(ident)
        return (200, stored.data) if stored else self._not_found("file")

    def _openai_batch_create(self, backend: Backend, _: Any) -> tuple[int, dict]:
        body = self._json()
        if body.get("input_file_id") not in backend.files:
            return self._not_found("input file")
        return 200, backend.openai_batch_view(backend.openai_batch_create(body))

    def _openai_batch_get(self, backend: Backend, ident: str) -> tuple[int, dict]:
        batch = backend.batches.get(ident)
        return (200, backend.openai_batch_view(batch)) if batch else self._not_found("batch")

    def _base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{self.headers.get('Host') or f'{host}:{port}'}"

    def _anthropic_batch_create(self, backend: Backend, _: Any) -> tuple[int, dict]:
        batch = backend.anthropic_batch_create(self._json())
        return 200, backend.anthropic_batch_view(batch, self._base_url())

    def _anthropic_batch_get(self, backend: Backend, ident: str) -> tuple[int, dict]:
        batch = backend.batches.get(ident)
        return (200, backend.anthropic_batch_view(batch, self._base_url())) if batch else self._not_found("batch")

    def _anthropic_batch_results(self, backend: Backend, ident: str) -> tuple[int, dict | bytes]:
        batch = backend.batches.get(ident)
        if batch is None:
            return self._not_found("batch")
        if backend.progress(batch) < 1.0:
            return 400, error_body(400, f"batch {ident} is still in progress", True)
        return 200, batch.results


class FakeHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many concurrent clients connect at once

    def __init__(self, address: tuple[str, int], backend: Backend) -> None:
        self.backend = backend
        self.connections: set[socket.socket] = set()
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # clients that hung up (timeouts, drops) are expected
            super().handle_error(request, client_address)
