"""The one client every stage calls: cache → budget → rate limit → provider (transport retries) → validate → re-ask."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, ValidationError
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt

from synth.config.conf import Route
from synth.config.prompts import render_text
from synth.config.shown_schema import decode_answer, native_schema
from synth.core import chain
from synth.core.tokens import estimate_tokens
from synth.llm.base import GenerationFailed, LLMRequest, Provider, ProviderResponse, Reask, TransportError, Usage
from synth.llm.cache import ResponseCache, cache_key
from synth.llm.limits import Budget, RateLimiter

if TYPE_CHECKING:
    from synth.llm.batch import BatchDispatcher

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


@dataclass
class CallStats:
    """What one stage (or one eval) asked of the models; manifests and progress bars read it."""

    requests: int = 0
    cache_hits: int = 0
    provider_calls: int = 0
    repairs: int = 0
    retries: int = 0
    failures: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    cache_saving_usd: float = 0.0
    on_change: Callable[[], None] | None = None

    def changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    @property
    def tokens(self) -> int:
        return self.usage.input_tokens + self.usage.output_tokens


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


def extract_json(text: str) -> str:
    """The JSON object inside an answer that may wrap it in prose or a code fence."""
    stripped = _FENCE.sub("", text.strip())
    start, end = stripped.find("{"), stripped.rfind("}")
    if start == -1 or end < start:
        raise ValueError("the answer holds no JSON object" if stripped else "the answer is empty")
    return stripped[start : end + 1]


def validation_message(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        parts = []
        for err in exc.errors()[:6]:
            loc = ".".join(str(p) for p in err["loc"]) or "(root)"
            parts.append(f"{loc}: {err['msg']}")
        return "; ".join(parts)
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON ({exc.msg} at char {exc.pos})"
    return str(exc)


def _wait(base: float, cap: float) -> Callable:
    """The backoff after a failed attempt (a tenacity `wait`): the server's Retry-After when it sent one, else
    full-jitter exponential, both capped."""

    def wait(retry_state) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        if isinstance(exc, TransportError) and exc.retry_after is not None:
            return min(cap, max(0.0, exc.retry_after)) + random.uniform(0, base / 4)
        expo = base * 2 ** (retry_state.attempt_number - 1)
        return min(cap, random.uniform(0, expo) + base / 2)

    return wait


class LLM:
    """Shared across stages and personas of one run: one cache, one budget, one concurrency limit."""

    def __init__(
        self,
        providers: Callable[[Route], Provider],
        cache: ResponseCache | None,
        budget: Budget | None = None,
        concurrency: int = 16,
        max_repairs: int = 2,
        max_attempts: int = 6,
        timeout_s: float = 180.0,
        backoff_base_s: float = 0.5,
        backoff_cap_s: float = 30.0,
        limits: Callable[[Route], tuple[float | None, float | None]] | None = None,
        batch: "BatchDispatcher | None" = None,
    ) -> None:
        self._make_provider = providers
        self._providers: dict[tuple, Provider] = {}
        self._limiters: dict[tuple, RateLimiter] = {}
        self._limits = limits or (lambda route: (route.price("rpm") or None, route.price("tpm") or None))
        self.cache = cache
        self.budget = budget or Budget()
        self.semaphore = asyncio.Semaphore(concurrency)
        self.max_repairs = max_repairs
        self.max_attempts = max_attempts
        self.timeout_s = timeout_s
        self._wait = _wait(backoff_base_s, backoff_cap_s)
        self.batch = batch  # set: requests go through the provider's batch API (synth run --batch)

    async def aclose(self) -> None:
        """Close the providers' HTTP sessions (those that hold one); the next call opens a new one."""
        for provider in list(self._providers.values()):
            close = getattr(provider, "aclose", None)
            if close is not None:
                await close()

    def provider(self, route: Route) -> Provider:
        key = (route.provider, route.base_url)
        if key not in self._providers:
            self._providers[key] = self._make_provider(route)
        return self._providers[key]

    def limiter(self, route: Route) -> RateLimiter:
        key = (route.provider, route.model)
        if key not in self._limiters:
            self._limiters[key] = RateLimiter(*self._limits(route))
        return self._limiters[key]

    async def generate(
        self,
        route: Route,
        request: LLMRequest,
        model: type[M],
        stats: CallStats,
        check: Callable[[M], None] | None = None,
        language: str = "en",
    ) -> M:
        """A schema-valid answer, re-asking with the validation error up to `max_repairs` times. A non-English
        request shows the schema in its language (synth.config.native): native enum labels, mapped back here."""
        schema, labels = native_schema(request.json_schema, language)
        request = replace(request, json_schema=schema)
        messages = list(request.messages)
        keys: list[str] = []
        last_raw, last_error, reason = "", "", {}
        for attempt in range(self.max_repairs + 1):
            current = replace(request, messages=messages)
            key = cache_key(route.provider, route.model, current)
            keys.append(key)
            response = await self._respond(route, current, key, stats)
            last_raw = response.text
            try:
                if response.refusal:
                    raise ValueError(f"the model refused: {response.refusal}")
                if labels:
                    parsed = model.model_validate(decode_answer(json.loads(extract_json(response.text)), labels))
                else:
                    parsed = model.model_validate_json(extract_json(response.text))
                if check is not None:
                    check(parsed)
                return parsed
            except (ValueError, ValidationError) as exc:
                last_error = validation_message(exc)
                reason = {"kind": exc.kind, **exc.detail} if isinstance(exc, Reask) else {}
            if attempt < self.max_repairs:
                stats.repairs += 1
                repair = render_text("llm_repair.j2", error=last_error, reason=reason, language=language)
                messages = messages + [
                    {"role": "assistant", "content": response.text or "(empty answer)"},
                    {"role": "user", "content": repair},
                ]
        # Forget the failed attempts so the next run asks afresh instead of replaying them.
        if self.cache is not None:
            self.cache.delete(keys)
        stats.failures += 1
        stats.changed()
        raise GenerationFailed(
            f"{request.task}: no valid answer after {self.max_repairs + 1} attempts: {last_error}",
            raw=last_raw,
            attempts=self.max_repairs + 1,
            usage=stats.usage,
        )

    async def _respond(self, route: Route, request: LLMRequest, key: str, stats: CallStats) -> ProviderResponse:
        stats.requests += 1
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            stats.cache_hits += 1
            stats.changed()
            return hit
        response = await self.call(route, request, stats)
        if self.cache is not None:
            # Not waited for: the cache's writer thread commits answers in batches, off the event loop.
            self.cache.put(key, request.task, response, wait=False)
        return response

    async def call(self, route: Route, request: LLMRequest, stats: CallStats) -> ProviderResponse:
        """One provider call under the budget, the rate limiter and the transport retry policy."""
        prompt_tokens = estimate_tokens("".join(m["content"] for m in request.messages))
        reserve_tokens = prompt_tokens + request.settings.max_tokens
        reserve_usd = route.cost(prompt_tokens, request.settings.max_tokens)
        self.budget.reserve(reserve_usd, reserve_tokens)
        used_usd, used_tokens = 0.0, 0
        provider = self.provider(route)
        limiter = self.limiter(route)
        try:
            # A batch queues on the provider's side: it takes no concurrency slot, rate limit or timeout here.
            async with contextlib.nullcontext() if self.batch is not None else self.semaphore:
                if self.batch is None:
                    await limiter.acquire(reserve_tokens)
                async for attempt in self._retrying(stats):
                    with attempt:
                        response = await self._attempt(route, request, provider, limiter)
            limiter.on_success()
            usage = response.usage
            used_usd = route.cost(
                usage.input_tokens, usage.output_tokens, usage.cached_input_tokens, usage.cache_write_tokens,
                batch=self.batch is not None,
            )
            used_tokens = usage.input_tokens + usage.output_tokens
            stats.provider_calls += 1
            chain.called()  # a cache hit costs no latency: only calls that reached a provider lengthen the chain
            stats.usage.add(usage)
            stats.cost_usd += used_usd
            stats.cache_saving_usd += usage.cached_input_tokens * (route.price("input") - route.price("cache_read")) / 1e6
            stats.changed()
            return response
        finally:
            self.budget.settle(reserve_usd, reserve_tokens, used_usd, used_tokens)

    def _retrying(self, stats: CallStats) -> AsyncRetrying:
        """The transport retry policy for one call: a TransportError (429, 5xx, a dropped connection, a timeout) is
        retried until `max_attempts`, then re-raised as itself. One instance per call: tenacity keeps its attempt
        state on the instance, and calls run concurrently."""

        def count(_state: RetryCallState) -> None:
            stats.retries += 1

        return AsyncRetrying(stop=stop_after_attempt(self.max_attempts), wait=self._wait,
                             retry=retry_if_exception_type(TransportError), reraise=True, before_sleep=count,
                             sleep=asyncio.sleep)

    async def _attempt(self, route: Route, request: LLMRequest, provider: Provider,
                       limiter: RateLimiter) -> ProviderResponse:
        """One attempt; a timeout is a TransportError (retried) and a 429 slows the rate limiter down. A provider
        that runs in this process (`in_process`: llama.cpp) has no timeout: its calls queue for one model, so the
        clock would count the wait behind other units, and a call abandoned at the deadline cannot be stopped — it
        keeps the model busy while its retry, the same seed, is bound to time out again (its answer is bounded by
        max_tokens instead)."""
        try:
            if self.batch is not None:
                return await self.batch.complete(route, request)
            if getattr(provider, "in_process", False):
                return await provider.complete(request, route.model)
            # asyncio.timeout, not wait_for: no extra task per call.
            async with asyncio.timeout(self.timeout_s):
                return await provider.complete(request, route.model)
        except TimeoutError:
            raise TransportError(f"timed out after {self.timeout_s:g}s") from None
        except TransportError as exc:
            if exc.status == 429:
                limiter.on_rate_limited()
            raise


async def closing(llm: LLM, work: Awaitable[T]) -> T:
    """Await `work`, then close the client's HTTP sessions in the same event loop (`asyncio.run(closing(llm, …))`)."""
    try:
        return await work
    finally:
        await llm.aclose()
