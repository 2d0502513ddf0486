"""Throttles on the way to a provider: requests/tokens-per-minute buckets that slow down on 429, and the budget."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from synth.core.errors import BudgetExceeded


class RateLimiter:
    """Two token buckets (requests and tokens per minute). A 429 halves the rate; successes win it back slowly."""

    def __init__(self, rpm: float | None, tpm: float | None, clock=time.monotonic) -> None:
        self.rpm = rpm
        self.tpm = tpm
        self.factor = 1.0  # adaptive share of the configured limits, in (0, 1]
        self._clock = clock
        self._req_level = rpm or 0.0
        self._tok_level = tpm or 0.0
        self._stamp = clock()
        self._last_cut = float("-inf")
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = self._clock()
        elapsed = now - self._stamp
        self._stamp = now
        if self.rpm:
            self._req_level = min(self.rpm, self._req_level + elapsed * self.rpm * self.factor / 60)
        if self.tpm:
            self._tok_level = min(self.tpm, self._tok_level + elapsed * self.tpm * self.factor / 60)

    def wait_time(self, tokens: int) -> float:
        self._refill()
        waits = [0.0]
        if self.rpm and self._req_level < 1:
            waits.append((1 - self._req_level) * 60 / (self.rpm * self.factor))
        if self.tpm and self._tok_level < min(tokens, self.tpm):
            waits.append((min(tokens, self.tpm) - self._tok_level) * 60 / (self.tpm * self.factor))
        return max(waits)

    async def acquire(self, tokens: int) -> None:
        if not self.rpm and not self.tpm:
            return
        async with self._lock:
            while (delay := self.wait_time(tokens)) > 0:
                await asyncio.sleep(delay)
            if self.rpm:
                self._req_level -= 1
            if self.tpm:
                self._tok_level -= min(tokens, self.tpm)

    def on_rate_limited(self) -> None:
        # Many in-flight requests see the same 429 burst: cut once per second, not once per request.
        now = self._clock()
        if now - self._last_cut < 1.0:
            return
        self._last_cut = now
        self.factor = max(0.05, self.factor / 2)
        self._req_level = min(self._req_level, 0.0)
        self._tok_level = min(self._tok_level, 0.0)

    def on_success(self) -> None:
        self.factor = min(1.0, self.factor * 1.05)


@dataclass
class Budget:
    """Spend so far plus in-flight reservations; a request that could push either past its limit is refused."""

    max_usd: float | None = None
    max_tokens: int | None = None
    spent_usd: float = 0.0
    spent_tokens: int = 0
    reserved_usd: float = 0.0
    reserved_tokens: int = 0
    refused: int = 0
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    def reserve(self, usd: float, tokens: int) -> None:
        if self.max_usd is not None and self.spent_usd + self.reserved_usd + usd > self.max_usd:
            self.refused += 1
            raise BudgetExceeded(
                f"budget: the next request (≈${usd:.4f}) would exceed --budget-usd {self.max_usd} "
                f"(spent ${self.spent_usd:.4f})"
            )
        if self.max_tokens is not None and self.spent_tokens + self.reserved_tokens + tokens > self.max_tokens:
            self.refused += 1
            raise BudgetExceeded(
                f"budget: the next request (≈{tokens} tokens) would exceed --max-tokens {self.max_tokens} "
                f"(spent {self.spent_tokens})"
            )
        self.reserved_usd += usd
        self.reserved_tokens += tokens

    def settle(self, reserved_usd: float, reserved_tokens: int, usd: float, tokens: int) -> None:
        self.reserved_usd -= reserved_usd
        self.reserved_tokens -= reserved_tokens
        self.spent_usd += usd
        self.spent_tokens += tokens
