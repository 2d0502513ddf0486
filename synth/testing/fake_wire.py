"""The OpenAI and Anthropic wire formats the fake server speaks: request bodies read (messages, schemas, tools),
answer bodies written (chat completions, messages, embeddings, usage, errors) and the bad bodies served in their place.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import re
import struct
import threading
import time
import zlib
from collections.abc import Callable
from typing import Any

from synth.core.tokens import estimate_tokens
from synth.llm.fake import respond

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


def iso_time(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, tz=dt.UTC).isoformat().replace("+00:00", "Z")


def error_body(status: int, message: str, anthropic: bool) -> dict:
    if anthropic:
        return {"type": "error", "error": {"type": _ANTHROPIC_ERRORS.get(status, "api_error"), "message": message}}
    kind, code = _OPENAI_ERRORS.get(status, ("server_error", None))
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class WireFormats:
    """Answer bodies in each provider's format, mixed into the server's backend, which holds the fake answers'
    `seed`, `new_id`, and the systems seen with caching asked (`cached_systems`, under `lock`)."""

    seed: int
    lock: threading.Lock
    cached_systems: set[str]
    new_id: Callable[[str], str]

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
