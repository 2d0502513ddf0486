"""A fake LLM HTTP server speaking the OpenAI and Anthropic wire formats (chat, messages, embeddings, batches),
answering any model from the schema-driven fake generator, with seeded transport faults and bad bodies.

Stdlib only, so tests and benchmarks can drive the real provider SDKs (and any OpenAI-compatible client)
against it: `FakeServer` in-process, or `python -m synth.testing.fake_server --port N` as a process.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime as dt
import email.parser
import email.policy
import itertools
import json
import math
import random
import re
import socket
import struct
import sys
import threading
import time
import traceback
import zlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from synth.llm.fake import estimate_tokens, respond

FAULT_KINDS = ("429", "429nra", "500", "502", "503", "529", "timeout", "drop")
# A 200 whose body is not JSON, as gateways serve it: the answer cut in half (the Content-Length says the cut
# length, so it is valid HTTP), or the gateway's own HTML page. Transport faults too, drawn at the same rate.
BODY_FAULT_KINDS = ("cut200", "html200")
TRANSPORT_FAULT_KINDS = FAULT_KINDS + BODY_FAULT_KINDS
GATEWAY_PAGE = ("<!DOCTYPE html>\n<html><head><title>Service temporarily unavailable</title></head>\n"
                "<body><h1>Please try again later</h1><p>The upstream did not answer in time.</p></body></html>\n")
BAD_BODY_KINDS = ("truncated", "notjson", "invalid", "empty", "refusal")
REFUSAL = "I can't help with that."
NOT_JSON = "Sure! Here is what I think: it depends on the day, the weather and who you ask."
INVALID_ANSWER = {"unexpected": 1}
EMBEDDING_DIM = 64

# Error `type` (and OpenAI `code`) per status, in each provider's error shape.
_OPENAI_ERRORS = {
    400: ("invalid_request_error", None),
    404: ("invalid_request_error", "not_found"),
    429: ("requests", "rate_limit_exceeded"),
}
_ANTHROPIC_ERRORS = {400: "invalid_request_error", 404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"}

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
_GENERATIVE = {"chat", "messages"}


def _kinds(value: str | Iterable[str] | None, allowed: tuple[str, ...], what: str) -> tuple[str, ...]:
    if value is None:
        return allowed
    kinds = tuple(k.strip() for k in (value.split(",") if isinstance(value, str) else value) if k.strip())
    unknown = [k for k in kinds if k not in allowed]
    if unknown or not kinds:
        raise ValueError(f"unknown {what} kind(s) {unknown or kinds}; choose from {','.join(allowed)}")
    return kinds


def _flatten(content: Any) -> str:
    """The text of a message's content: a string, or a list of text/tool parts in either provider's format."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                if "text" in block:
                    parts.append(str(block["text"]))
                elif block.get("type") == "tool_use":
                    parts.append(json.dumps(block.get("input"), sort_keys=True, ensure_ascii=False))
                elif block.get("type") == "tool_result":
                    parts.append(_flatten(block.get("content")))
        return "".join(parts)
    return str(content)


def _openai_turn(message: dict) -> dict:
    text = _flatten(message.get("content"))
    for call in message.get("tool_calls") or []:
        text += str(call.get("function", {}).get("arguments", ""))
    return {"role": message.get("role", "user"), "content": text}


def _openai_schema(body: dict) -> tuple[dict | None, str | None]:
    """(schema, tool name) of an OpenAI chat request: a forced/first tool, else the response_format."""
    tools = body.get("tools")
    if tools:
        chosen = body.get("tool_choice")
        wanted = chosen.get("function", {}).get("name") if isinstance(chosen, dict) else None
        fn = next((t["function"] for t in tools if t.get("function", {}).get("name") == wanted), tools[0]["function"])
        return fn.get("parameters"), fn.get("name", "answer")
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("schema"), None
    if fmt.get("type") == "json_object":
        return fmt.get("schema"), None  # llama.cpp server style; plain json_object has none
    return None, None


def _anthropic_tool(body: dict) -> dict | None:
    tools = body.get("tools")
    if not tools:
        return None
    chosen = body.get("tool_choice") or {}
    return next((t for t in tools if t.get("name") == chosen.get("name")), tools[0])


def _system_text(system: Any) -> tuple[str, bool]:
    """Anthropic `system` as text, and whether it asks for prompt caching."""
    if isinstance(system, list):
        return _flatten(system), any(isinstance(b, dict) and b.get("cache_control") for b in system)
    return (system or ""), False


def _spoil(kind: str, text: str) -> str:
    """The answer text a bad-body kind serves in place of `text`."""
    if kind == "truncated":
        return text[: len(text) // 2]
    if kind == "notjson":
        return NOT_JSON
    if kind == "invalid":
        return json.dumps(INVALID_ANSWER)
    return ""  # empty


_TOKEN = re.compile(r"[\u4e00-\u9fff]|[^\W_\u4e00-\u9fff]+")


def embed(text: str, dim: int = EMBEDDING_DIM) -> list[float]:
    """A hashed bag-of-words vector, L2-normalised: texts sharing words point the same way."""
    vec = [0.0] * dim
    for token in _TOKEN.findall(text.lower()):
        h = zlib.crc32(token.encode())
        vec[h % dim] += 1.0 if h & 0x80000000 else -1.0
    norm = math.sqrt(sum(x * x for x in vec))
    if norm == 0.0:
        vec[0], norm = 1.0, 1.0
    return [x / norm for x in vec]


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, tz=dt.UTC).isoformat().replace("+00:00", "Z")


def _error_body(status: int, message: str, anthropic: bool) -> dict:
    if anthropic:
        return {"type": "error", "error": {"type": _ANTHROPIC_ERRORS.get(status, "api_error"), "message": message}}
    kind, code = _OPENAI_ERRORS.get(status, ("server_error", None))
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


@dataclass
class _StoredFile:
    id: str
    data: bytes
    filename: str
    purpose: str
    created_at: int

    def view(self) -> dict:
        return {"id": self.id, "object": "file", "bytes": len(self.data), "created_at": self.created_at,
                "filename": self.filename, "purpose": self.purpose, "status": "processed",
                "expires_at": None, "status_details": None}


@dataclass
class _Batch:
    id: str
    created_at: float  # wall clock, for the wire
    started: float  # monotonic, for the status timeline
    total: int
    failed: int = 0
    request: dict = field(default_factory=dict)
    output_file_id: str = ""  # OpenAI
    results: bytes = b""  # Anthropic: the results JSONL


class _Backend:
    """Configuration, counters and in-memory state shared by every handler thread."""

    def __init__(self, latency_ms: float, seed: int, fault_rate: float, faults: Any, bad_body_rate: float,
                 bad_bodies: Any, timeout_sleep_s: float, batch_delay_s: float) -> None:
        self.latency_s = latency_ms / 1000.0
        self.seed = seed
        self.fault_rate = fault_rate
        self.faults = _kinds(faults, TRANSPORT_FAULT_KINDS, "fault")
        self.bad_body_rate = bad_body_rate
        self.bad_bodies = _kinds(bad_bodies, BAD_BODY_KINDS, "bad-body")
        self.timeout_sleep_s = timeout_sleep_s
        self.batch_delay_s = batch_delay_s
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.files: dict[str, _StoredFile] = {}
        self.batches: dict[str, _Batch] = {}
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.rng = random.Random(self.seed)
            self.requests = 0
            self.by_path: Counter[str] = Counter()
            self.by_fault: Counter[str] = Counter()
            self.cached_systems: set[str] = set()

    def stats(self) -> dict:
        with self.lock:
            faults = sum(n for k, n in self.by_fault.items() if k in TRANSPORT_FAULT_KINDS)
            return {"requests": self.requests, "by_path": dict(self.by_path), "faults": faults,
                    "bad_bodies": sum(self.by_fault.values()) - faults, "by_fault": dict(self.by_fault)}

    def count(self, route: str) -> None:
        with self.lock:
            self.requests += 1
            self.by_path[route] += 1

    def _draw(self, rate: float, kinds: tuple[str, ...]) -> str | None:
        if rate <= 0.0:
            return None
        with self.lock:
            if self.rng.random() >= rate:
                return None
            kind = self.rng.choice(kinds)
            self.by_fault[kind] += 1
            return kind

    def draw_fault(self) -> str | None:
        return self._draw(self.fault_rate, self.faults)

    def draw_bad(self) -> str | None:
        return self._draw(self.bad_body_rate, self.bad_bodies)

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self.ids):08d}"

    # --- generation -------------------------------------------------------------------------------

    def chat_completion(self, body: dict, bad: str | None) -> dict:
        messages = [_openai_turn(m) for m in body.get("messages") or []]
        schema, tool_name = _openai_schema(body)
        text = respond(schema, messages, self.seed, int(body.get("seed") or 0))
        message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
        finish = "stop"
        if bad == "refusal":
            message["content"], message["refusal"], text = None, REFUSAL, REFUSAL
        else:
            if bad:
                text = _spoil(bad, text)
                finish = "length" if bad == "truncated" else "stop"
            message["content"] = text
            if tool_name is not None:
                call = {"id": self.new_id("call_fake"), "type": "function", "function": {"name": tool_name, "arguments": text}}
                message["content"], message["tool_calls"] = None, [call]
                finish = "length" if bad == "truncated" else "tool_calls"
        prompt = estimate_tokens("".join(m["content"] for m in messages))
        completion = estimate_tokens(text)
        return {
            "id": self.new_id("chatcmpl-fake"), "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "fake"), "system_fingerprint": "fake",
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                      "prompt_tokens_details": {"cached_tokens": 0}},
        }

    def message(self, body: dict, bad: str | None) -> dict:
        system, cacheable = _system_text(body.get("system"))
        turns = [{"role": m.get("role", "user"), "content": _flatten(m.get("content"))} for m in body.get("messages") or []]
        messages = ([{"role": "system", "content": system}] if system else []) + turns
        tool = _anthropic_tool(body)
        output_format = (body.get("output_config") or {}).get("format") or {}
        schema = tool["input_schema"] if tool else output_format.get("schema")
        text = respond(schema, messages, self.seed, int(body.get("seed") or 0))
        stop = "max_tokens" if bad == "truncated" else "end_turn"
        if bad == "refusal":
            content, stop, text = [{"type": "text", "text": REFUSAL}], "refusal", REFUSAL
        elif tool and bad in (None, "invalid", "empty"):
            answer = json.loads(text) if bad is None else INVALID_ANSWER if bad == "invalid" else {}
            content = [{"type": "tool_use", "id": self.new_id("toolu_fake"), "name": tool["name"], "input": answer}]
            stop = "tool_use"
        else:  # text answers, and tool answers that never became a tool call (cut off, or prose)
            text = _spoil(bad, text) if bad else text
            content = [{"type": "text", "text": text}]
        return {
            "id": self.new_id("msg_fake"), "type": "message", "role": "assistant", "model": body.get("model", "fake"),
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": self._anthropic_usage(system, cacheable, turns, text),
        }

    def _anthropic_usage(self, system: str, cacheable: bool, turns: list[dict], output: str) -> dict:
        """Anthropic's accounting: input_tokens excludes what was written to or read from the prompt cache."""
        turn_tokens = estimate_tokens("".join(t["content"] for t in turns))
        system_tokens = estimate_tokens(system) if system else 0
        usage = {"input_tokens": turn_tokens + system_tokens, "output_tokens": estimate_tokens(output),
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if cacheable and system:
            with self.lock:
                hit = system in self.cached_systems
                self.cached_systems.add(system)
            usage["input_tokens"] = turn_tokens
            usage["cache_read_input_tokens" if hit else "cache_creation_input_tokens"] = system_tokens
        return usage

    def embeddings(self, body: dict) -> dict:
        inputs = body.get("input")
        if isinstance(inputs, str) or (isinstance(inputs, list) and inputs and isinstance(inputs[0], int)):
            inputs = [inputs]
        texts = [x if isinstance(x, str) else " ".join(map(str, x)) for x in inputs or []]
        dim = int(body.get("dimensions") or EMBEDDING_DIM)
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for i, text in enumerate(texts):
            vec: Any = embed(text, dim)
            if as_base64:  # what the openai SDK asks for by default
                vec = base64.b64encode(struct.pack(f"<{dim}f", *vec)).decode()
            data.append({"object": "embedding", "index": i, "embedding": vec})
        tokens = sum(estimate_tokens(t) for t in texts)
        return {"object": "list", "data": data, "model": body.get("model", "fake"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}

    # --- batches ----------------------------------------------------------------------------------

    def store_file(self, data: bytes, filename: str, purpose: str) -> _StoredFile:
        stored = _StoredFile(self.new_id("file-fake"), data, filename, purpose, int(time.time()))
        self.files[stored.id] = stored
        return stored

    def progress(self, batch: _Batch) -> float:
        """How far along the batch is: <0.5 validating, <1 in progress, 1 done."""
        if self.batch_delay_s <= 0:
            return 1.0
        return min(1.0, (time.monotonic() - batch.started) / self.batch_delay_s)

    def openai_batch_create(self, body: dict) -> _Batch:
        source = self.files[body["input_file_id"]]
        batch = _Batch(self.new_id("batch_fake"), time.time(), time.monotonic(), 0, request=body)
        lines = []
        for raw in source.data.decode().splitlines():
            if not raw.strip():
                continue
            item = json.loads(raw)
            url = item.get("url", body.get("endpoint", ""))
            response: dict | None = None
            error = None
            if url.endswith("/chat/completions"):
                response = self.chat_completion(item.get("body") or {}, self.draw_bad())
            elif url.endswith("/embeddings"):
                response = self.embeddings(item.get("body") or {})
            else:
                error = {"code": "invalid_url", "message": f"the fake server does not batch {url}"}
                batch.failed += 1
            batch.total += 1
            wrapped = {"status_code": 200, "request_id": self.new_id("req_fake"), "body": response} if response else None
            lines.append({"id": self.new_id("batch_req_fake"), "custom_id": item.get("custom_id"),
                          "response": wrapped, "error": error})
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        batch.output_file_id = self.store_file(text.encode(), f"{batch.id}_output.jsonl", "batch_output").id
        self.batches[batch.id] = batch
        return batch

    def openai_batch_view(self, batch: _Batch) -> dict:
        phase = self.progress(batch)
        status = "validating" if phase < 0.5 else "in_progress" if phase < 1.0 else "completed"
        done = status == "completed"
        created = int(batch.created_at)
        return {
            "id": batch.id, "object": "batch", "endpoint": batch.request.get("endpoint", "/v1/chat/completions"),
            "errors": None, "input_file_id": batch.request["input_file_id"],
            "completion_window": batch.request.get("completion_window", "24h"), "status": status,
            "output_file_id": batch.output_file_id if done else None, "error_file_id": None, "created_at": created,
            "in_progress_at": created if status != "validating" else None, "expires_at": created + 86400,
            "finalizing_at": None, "completed_at": int(time.time()) if done else None, "failed_at": None,
            "expired_at": None, "cancelling_at": None, "cancelled_at": None,
            "request_counts": {"total": batch.total, "completed": batch.total - batch.failed if done else 0,
                               "failed": batch.failed if done else 0},
            "metadata": batch.request.get("metadata"),
        }

    def anthropic_batch_create(self, body: dict) -> _Batch:
        requests = body["requests"]
        batch = _Batch(self.new_id("msgbatch_fake"), time.time(), time.monotonic(), len(requests), request=body)
        lines = [{"custom_id": r["custom_id"],
                  "result": {"type": "succeeded", "message": self.message(r.get("params") or {}, self.draw_bad())}}
                 for r in requests]
        batch.results = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
        self.batches[batch.id] = batch
        return batch

    def anthropic_batch_view(self, batch: _Batch, base_url: str) -> dict:
        ended = self.progress(batch) >= 1.0
        return {
            "id": batch.id, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
            "request_counts": {"processing": 0 if ended else batch.total, "succeeded": batch.total if ended else 0,
                               "errored": 0, "canceled": 0, "expired": 0},
            "created_at": _iso(batch.created_at), "expires_at": _iso(batch.created_at + 86400),
            "ended_at": _iso(time.time()) if ended else None, "archived_at": None, "cancel_initiated_at": None,
            "results_url": f"{base_url}/v1/messages/batches/{batch.id}/results" if ended else None,
        }


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
    server: _HTTPServer

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
            return self._send(status, _error_body(status, f"fake fault {fault}", self.anthropic), headers)
        if name is None:
            return self._send(404, _error_body(404, f"no route {method} {route}", self.anthropic))
        try:
            status, payload = getattr(self, "_" + name)(backend, ident)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            status, payload = 400, _error_body(400, f"bad request: {exc!r}", self.anthropic)
        except Exception as exc:  # noqa: BLE001 - a bug in the fake: say so loudly rather than hang the client
            traceback.print_exc(file=sys.stderr)
            status, payload = 500, _error_body(500, f"fake server bug: {exc!r}", self.anthropic)
        # cut200: the upstream answered (its side effects happened) and the gateway passed on half the body.
        self._send(status, payload, cut=fault == "cut200" and status == 200)

    def _json(self) -> dict:
        body = json.loads(self.body or b"{}")
        if not isinstance(body, dict):
            raise TypeError("the request body must be a JSON object")
        return body

    def _not_found(self, what: str) -> tuple[int, dict]:
        return 404, _error_body(404, f"no such {what}", self.anthropic)

    # --- routes: each returns (status, payload) -------------------------------------------------------

    def _chat(self, backend: _Backend, _: Any) -> tuple[int, dict]:
        return 200, backend.chat_completion(self._json(), backend.draw_bad())

    def _messages(self, backend: _Backend, _: Any) -> tuple[int, dict]:
        return 200, backend.message(self._json(), backend.draw_bad())

    def _embeddings(self, backend: _Backend, _: Any) -> tuple[int, dict]:
        return 200, backend.embeddings(self._json())

    def _models(self, backend: _Backend, _: Any) -> tuple[int, dict]:
        model = {"id": "fake", "object": "model", "created": 0, "owned_by": "synth",
                 "type": "model", "display_name": "Fake", "created_at": _iso(0)}
        return 200, {"object": "list", "data": [model], "has_more": False, "first_id": "fake", "last_id": "fake"}

    def _file_upload(self, backend: _Backend, _: Any) -> tuple[int, dict]:
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

    def _file_get(self, backend: _Backend, ident: str) -> tuple[int, dict]:
        stored = backend.files.get(ident)
        return (200, stored.view()) if stored else self._not_found("file")

    def _file_content(self, backend: _Backend, ident: str) -> tuple[int, dict | bytes]:
        stored = backend.files.get(ident)
        return (200, stored.data) if stored else self._not_found("file")

    def _openai_batch_create(self, backend: _Backend, _: Any) -> tuple[int, dict]:
        body = self._json()
        if body.get("input_file_id") not in backend.files:
            return self._not_found("input file")
        return 200, backend.openai_batch_view(backend.openai_batch_create(body))

    def _openai_batch_get(self, backend: _Backend, ident: str) -> tuple[int, dict]:
        batch = backend.batches.get(ident)
        return (200, backend.openai_batch_view(batch)) if batch else self._not_found("batch")

    def _base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{self.headers.get('Host') or f'{host}:{port}'}"

    def _anthropic_batch_create(self, backend: _Backend, _: Any) -> tuple[int, dict]:
        batch = backend.anthropic_batch_create(self._json())
        return 200, backend.anthropic_batch_view(batch, self._base_url())

    def _anthropic_batch_get(self, backend: _Backend, ident: str) -> tuple[int, dict]:
        batch = backend.batches.get(ident)
        return (200, backend.anthropic_batch_view(batch, self._base_url())) if batch else self._not_found("batch")

    def _anthropic_batch_results(self, backend: _Backend, ident: str) -> tuple[int, dict | bytes]:
        batch = backend.batches.get(ident)
        if batch is None:
            return self._not_found("batch")
        if backend.progress(batch) < 1.0:
            return 400, _error_body(400, f"batch {ident} is still in progress", True)
        return 200, batch.results


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many concurrent clients connect at once

    def __init__(self, address: tuple[str, int], backend: _Backend) -> None:
        self.backend = backend
        self.connections: set[socket.socket] = set()
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # clients that hung up (timeouts, drops) are expected
            super().handle_error(request, client_address)


class FakeServer:
    """The fake server in a background thread: `with FakeServer(...) as server: ... server.openai_base_url`."""

    def __init__(self, latency_ms: float = 0, seed: int = 0, fault_rate: float = 0.0,
                 faults: str | Iterable[str] | None = None, bad_body_rate: float = 0.0,
                 bad_bodies: str | Iterable[str] | None = None, timeout_sleep_s: float = 5.0,
                 batch_delay_s: float = 0.5, host: str = "127.0.0.1", port: int = 0) -> None:
        self.backend = _Backend(latency_ms, seed, fault_rate, faults, bad_body_rate, bad_bodies,
                                timeout_sleep_s, batch_delay_s)
        self.host, self.port = host, port
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        self._httpd = _HTTPServer((self.host, self.port), self.backend)
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
