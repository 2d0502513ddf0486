"""The small LLM interface every provider adapter speaks: a request, a raw response, usage, and typed errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from synth.core.errors import SynthError


@dataclass(frozen=True)
class GenerationSettings:
    """Generation settings that can change the output (and so belong in the cache key)."""

    temperature: float = 0.7
    max_tokens: int = 2048
    top_p: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "max_tokens": self.max_tokens, "top_p": self.top_p}


@dataclass
class LLMRequest:
    """Rendered messages + the output schema + settings. `messages[0]` may be a system message holding the
    stable, cacheable prefix (persona profile, relations, arcs)."""

    task: str
    messages: list[dict[str, str]]
    json_schema: dict
    settings: GenerationSettings = field(default_factory=GenerationSettings)
    sample: int = 0
    schema_name: str = "answer"
    # Strings a valid answer must keep as written (names a translation may not change): the code checks them,
    # the prompt lists them; only the fake provider reads this field (not sent, not in the cache key).
    keep: tuple[str, ...] = ()

    @property
    def system(self) -> str | None:
        return self.messages[0]["content"] if self.messages and self.messages[0]["role"] == "system" else None

    @property
    def turns(self) -> list[dict[str, str]]:
        return [m for m in self.messages if m["role"] != "system"]


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0  # read from a provider-side prompt cache
    cache_write_tokens: int = 0

    def add(self, other: "Usage") -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cached_input_tokens += other.cached_input_tokens
        self.cache_write_tokens += other.cache_write_tokens


@dataclass
class ProviderResponse:
    text: str  # the JSON answer as text (tool input serialised for Anthropic)
    usage: Usage
    refusal: str | None = None


class Provider(Protocol):
    name: str
    key_env: str | None  # the environment variable holding its key, if it needs one
    # (optional) `in_process = True`: the provider computes in this process (llama.cpp), so no transport timeout

    async def complete(self, request: LLMRequest, model: str) -> ProviderResponse: ...


class TransportError(Exception):
    """A retryable provider fault (429, 5xx, 529, timeout, dropped connection)."""

    def __init__(self, message: str, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class FatalProviderError(SynthError):
    """A provider fault that retrying will not fix (bad request, auth)."""


class Reask(ValueError):
    """An answer that parsed but fails a check of its content, re-asked with a reason the repair prompt words in
    the request's language (`kind` names its sentence in llm_repair.j2; `detail` fills it). The message is the
    English form, for logs and for the error a run reports when the re-asks run out."""

    def __init__(self, kind: str, message: str, **detail: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.detail = detail


class GenerationFailed(Exception):
    """The structured-output layer ran out of repair attempts; carries what it last saw."""

    def __init__(self, message: str, raw: str, attempts: int, usage: Usage) -> None:
        super().__init__(message)
        self.raw = raw
        self.attempts = attempts
        self.usage = usage
