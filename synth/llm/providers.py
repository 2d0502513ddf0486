"""Provider adapters (anthropic, openai, local, fake) and the one table that registers them."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

from synth.config.conf import Route, key_env
from synth.config.prompts import render_text
from synth.core.errors import InputError
from synth.llm.base import FatalProviderError, LLMRequest, Provider, ProviderResponse, TransportError, Usage
from synth.llm.fake import FakeProvider
from synth.llm.http import HTTPStatusError, JSONClient

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}


def retry_after(headers: Any) -> float | None:
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = headers.get(name)
        if value:
            try:
                return float(value) * scale
            except ValueError:
                return None
    return None


def _status_error(exc: Exception, provider: str) -> Exception:
    """Map an SDK status error to our transport (retry) or fatal error; the message never carries a key."""
    status = getattr(exc, "status_code", None)
    headers = getattr(exc, "headers", None) or getattr(getattr(exc, "response", None), "headers", None)
    if status in RETRYABLE_STATUS or (status is not None and status >= 500):
        return TransportError(f"{provider}: HTTP {status}", status=status, retry_after=retry_after(headers))
    if status in (401, 403):
        return FatalProviderError(f"{provider}: authentication failed (HTTP {status}); check ${key_env(provider)}")
    return FatalProviderError(f"{provider}: HTTP {status}: {getattr(exc, 'message', '')[:300]}")


async def json_answer(provider: str, call: Awaitable[Any], kind: type) -> Any:
    """Await an SDK call whose 200 must carry a JSON `kind`. A 200 whose body is not JSON — cut off by a gateway,
    or the gateway's own HTML page — is a TransportError, retried like a 5xx: the SDKs raise the JSON error of a
    cut body and hand back the raw text of a non-JSON content type."""
    try:
        answer = await call
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TransportError(f"{provider}: HTTP 200 whose body is not JSON ({type(exc).__name__}: {exc})") from None
    if not isinstance(answer, kind):
        raise TransportError(f"{provider}: HTTP 200 whose body is not JSON: {_preview(answer)}")
    return answer


def _preview(body: Any) -> str:
    text = " ".join(str(body).split())
    return repr(text[:80] + ("…" if len(text) > 80 else ""))


def wire_field(obj: Any, name: str) -> Any:
    """A field of an SDK object, or of the same object as plain JSON (batch result lines); None when absent,
    as it is when a 200 carried JSON of another shape (the SDKs build their objects without validating)."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


class OpenAIProvider:
    """OpenAI chat completions; with a base URL, any OpenAI-compatible server (vLLM, Ollama, llama.cpp server).

    Structured output tries json_schema first; then a GBNF grammar (llama-cpp-python's server takes one as a
    body field and enforces it fully, integer bounds included, while it refuses json_schema); then json_object
    (+schema); then plain JSON-in-text with the schema in the prompt — whichever the server accepts, remembered
    per instance. Servers that speak json_schema (OpenAI, vLLM, Ollama, llama-server) never leave mode 0."""

    name = "openai"
    key_env = "OPENAI_API_KEY"
    MODES = ("json_schema", "grammar", "json_object", "text")

    def __init__(self, base_url: str | None = None, timeout_s: float = 180.0, **_: Any) -> None:
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE_URL
        key = os.environ.get("OPENAI_API_KEY")
        if not key and base_url == OPENAI_DEFAULT_BASE_URL:
            raise InputError("OPENAI_API_KEY is not set (needed by --provider openai without --base-url)")
        self.client = JSONClient(self.name, base_url, {"Authorization": f"Bearer {key or 'not-needed'}"}, timeout_s)
        self.mode = 0
        self._sdk_args = {"api_key": key or "not-needed", "base_url": base_url, "timeout": timeout_s}
        self._sdk: Any = None

    @property
    def sdk(self) -> Any:
        """The openai SDK client, for the batch API (files, batches) only; made on first use."""
        if self._sdk is None:
            import openai

            self._sdk = openai.AsyncOpenAI(max_retries=0, **self._sdk_args)
        return self._sdk

    async def aclose(self) -> None:
        await self.client.close()
        if self._sdk is not None:
            sdk, self._sdk = self._sdk, None
            await sdk.close()

    def _body(self, request: LLMRequest, model: str, mode: str, tighten: int = 1) -> dict:
        messages = list(request.messages)
        body: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "temperature": request.settings.temperature,
            "max_tokens": request.settings.max_tokens,
            "seed": request.sample,  # reproducible sampling where the server honours it (llama.cpp, vLLM, OpenAI)
        }
        if request.settings.top_p is not None:
            body["top_p"] = request.settings.top_p
        if mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.schema_name, "schema": request.json_schema, "strict": False},
            }
        elif mode == "grammar":
            from synth.llm.gbnf import schema_to_gbnf, string_cap

            # Cap every free string so the whole answer fits in max_tokens: a grammar-bound model that runs out
            # of tokens mid-string leaves JSON that no repair can save.
            cap = max(24, string_cap(request.json_schema, request.settings.max_tokens) // tighten)
            body["grammar"] = schema_to_gbnf(request.json_schema, max_string_chars=cap)
        elif mode == "json_object":
            body["response_format"] = {"type": "json_object", "schema": request.json_schema}
        if mode != "json_schema":
            hint = render_text("llm_json_format.j2", schema=json.dumps(request.json_schema, ensure_ascii=False))
            messages[-1] = {**messages[-1], "content": messages[-1]["content"] + "\n\n" + hint}
        return body

    async def complete(self, request: LLMRequest, model: str) -> ProviderResponse:
        tighten, wasted = 1, None
        while True:
            mode = self.MODES[self.mode]
            try:
                response = await self.client.post("/chat/completions", self._body(request, model, mode, tighten))
                choices = response.get("choices")
                cut = bool(choices) and isinstance(choices[0], dict) and choices[0].get("finish_reason") == "length"
                if mode == "grammar" and tighten == 1 and cut:
                    tighten = 4  # cut off mid-answer: once more with strings capped four times tighter
                    wasted = response.get("usage")
                    continue
                break
            except HTTPStatusError as exc:
                # A refused format comes back as 400, 422 or (llama-cpp-python's server) a 500 naming the field.
                if exc.status_code in (400, 422, 500):
                    refused = _mentions_format(exc) if exc.status_code != 500 else "response_format" in str(exc)
                    if self.mode + 1 < len(self.MODES) and refused:
                        self.mode += 1  # the server refused this structured-output form: try the next one
                        continue
                raise _status_error(exc, self.name) from None
        choices = response.get("choices")
        if not choices or not isinstance(choices[0], dict) or not isinstance(choices[0].get("message"), dict):
            raise TransportError("openai: response without choices")
        message = choices[0]["message"]
        usage = _usage(response.get("usage"))
        if wasted is not None:
            usage.add(_usage(wasted))
        return ProviderResponse(text=message.get("content") or "", usage=usage, refusal=message.get("refusal"))


def _usage(usage: Any) -> Usage:
    """Token counts of an OpenAI-style usage object, whether an SDK object (batch results) or plain JSON."""
    if usage is None:
        return Usage()
    details = wire_field(usage, "prompt_tokens_details")
    cached = wire_field(details, "cached_tokens") if details is not None else 0
    return Usage(input_tokens=wire_field(usage, "prompt_tokens") or 0,
                 output_tokens=wire_field(usage, "completion_tokens") or 0, cached_input_tokens=cached or 0)


def _mentions_format(exc: Exception) -> bool:
    text = str(exc).lower()
    return any(word in text for word in ("response_format", "json_schema", "json_object", "schema", "grammar"))


class AnthropicProvider:
    """Anthropic messages with a forced tool whose input schema is the output schema; the system prefix is
    marked with cache_control so a persona's repeated context is read from the prompt cache."""

    name = "anthropic"
    key_env = "ANTHROPIC_API_KEY"

    def __init__(self, base_url: str | None = None, timeout_s: float = 180.0, **_: Any) -> None:
        import anthropic

        self._anthropic = anthropic
        key = os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise InputError("ANTHROPIC_API_KEY is not set (needed by --provider anthropic)")
        self.client = anthropic.AsyncAnthropic(api_key=key, base_url=base_url, max_retries=0, timeout=timeout_s)

    @staticmethod
    def params(request: LLMRequest, model: str) -> dict:
        # No temperature: the current Messages API (SDK 2.x) takes none; sampling is the model's default.
        params: dict[str, Any] = {
            "model": model,
            "max_tokens": request.settings.max_tokens,
            "messages": request.turns,
            "tools": [
                {
                    "name": request.schema_name,
                    "description": request.json_schema.get("description", request.schema_name),
                    "input_schema": request.json_schema,
                }
            ],
            "tool_choice": {"type": "tool", "name": request.schema_name},
        }
        if request.system:
            params["system"] = [{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}]
        return params

    @staticmethod
    def parse(message: Any) -> ProviderResponse:
        """A message (an SDK object, or a batch result line's JSON) as a ProviderResponse."""
        content, u = wire_field(message, "content"), wire_field(message, "usage")
        if not isinstance(content, list) or u is None:
            raise TransportError("anthropic: HTTP 200 with a message without content or usage")
        text, refusal = "", None
        for block in content:
            if wire_field(block, "type") == "tool_use":
                text = json.dumps(wire_field(block, "input"), ensure_ascii=False)
                break
            if wire_field(block, "type") == "text":
                text += wire_field(block, "text") or ""
        if wire_field(message, "stop_reason") == "refusal":
            refusal = text or "refused"
        read = wire_field(u, "cache_read_input_tokens") or 0
        write = wire_field(u, "cache_creation_input_tokens") or 0
        return ProviderResponse(
            text=text,
            usage=Usage(
                input_tokens=(wire_field(u, "input_tokens") or 0) + read + write,
                output_tokens=wire_field(u, "output_tokens") or 0,
                cached_input_tokens=read,
                cache_write_tokens=write,
            ),
            refusal=refusal,
        )

    async def complete(self, request: LLMRequest, model: str) -> ProviderResponse:
        anthropic = self._anthropic
        try:
            message = await json_answer(self.name, self.client.messages.create(**self.params(request, model)),
                                        anthropic.types.Message)
        except anthropic.APITimeoutError:
            raise TransportError("anthropic: request timed out") from None
        except anthropic.APIConnectionError:
            raise TransportError("anthropic: connection error") from None
        except anthropic.APIStatusError as exc:
            raise _status_error(exc, self.name) from None
        return self.parse(message)


def _local(route: Route, timeout_s: float, seed: int) -> Provider:
    try:
        from synth.llm.local.provider import LocalProvider
    except ImportError as exc:  # the optional extra is not installed
        raise InputError(f"--provider local needs the local extra: pip install -e '.[local]' ({exc})") from None
    from synth.config.conf import model_table

    n_ctx = os.environ.get("SYNTH_LOCAL_N_CTX") or model_table()["providers"]["local"].get("n_ctx")
    return LocalProvider(model=route.model, n_ctx=int(n_ctx) if n_ctx else None)


REGISTRY: dict[str, Callable[[Route, float, int], Provider]] = {
    "anthropic": lambda route, timeout_s, seed: AnthropicProvider(base_url=route.base_url, timeout_s=timeout_s),
    "openai": lambda route, timeout_s, seed: OpenAIProvider(base_url=route.base_url, timeout_s=timeout_s),
    "local": _local,
    "fake": lambda route, timeout_s, seed: FakeProvider(seed=seed),
}


def provider_factory(timeout_s: float = 180.0, seed: int = 0) -> Callable[[Route], Provider]:
    def make(route: Route) -> Provider:
        return REGISTRY[route.provider](route, timeout_s, seed)

    return make
