"""The rate limiter on an injected clock (rpm and tpm bound the rate, 429s halve it, successes win it back)
and the budget's reserve/settle accounting."""

from __future__ import annotations

import asyncio
import itertools
import types

import pytest

from synth.core.errors import BudgetExceeded
from synth.llm import limits
from synth.llm.limits import Budget, RateLimiter


class Clock:
    """Virtual time: the limiter's sleeps advance it instead of waiting."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(limits, "asyncio", types.SimpleNamespace(sleep=clock.sleep, Lock=asyncio.Lock))
    return clock


def acquire_times(limiter: RateLimiter, clock: Clock, n: int, tokens: int = 1) -> list[float]:
    async def go() -> list[float]:
        times = []
        for _ in range(n):
            await limiter.acquire(tokens)
            times.append(clock.now)
        return times

    return asyncio.run(go())


def most_in_window(times: list[float], window: float = 60.0) -> int:
    return max(sum(1 for t in times if start <= t < start + window) for start in times)


def test_rpm_bounds_the_request_rate(clock):
    limiter = RateLimiter(rpm=60, tpm=None, clock=clock)
    times = acquire_times(limiter, clock, 300)
    # A full bucket lets one minute's quota through at once; after that, one request per second.
    assert times[59] == pytest.approx(1000.0)
    gaps = [b - a for a, b in itertools.pairwise(times[60:])]
    assert all(g == pytest.approx(1.0) for g in gaps)
    steady = times[60:]
    assert most_in_window(steady) <= 60


def test_tpm_bounds_the_token_rate(clock):
    limiter = RateLimiter(rpm=None, tpm=6000, clock=clock)
    times = acquire_times(limiter, clock, 40, tokens=1000)
    gaps = [b - a for a, b in itertools.pairwise(times[6:])]
    assert all(g == pytest.approx(10.0) for g in gaps)  # 1000 of 6000 tokens a minute: one every 10 s
    assert times[5] == pytest.approx(1000.0)  # the first 6 fit the full bucket


def test_a_request_larger_than_tpm_still_passes_at_the_limit(clock):
    limiter = RateLimiter(rpm=None, tpm=1000, clock=clock)
    times = acquire_times(limiter, clock, 3, tokens=5000)
    assert [b - a for a, b in itertools.pairwise(times)] == [pytest.approx(60.0)] * 2


def test_the_tighter_of_rpm_and_tpm_wins(clock):
    limiter = RateLimiter(rpm=600, tpm=6000, clock=clock)  # 10 req/s but only 1 req/s of 100 tokens
    times = acquire_times(limiter, clock, 200, tokens=100)
    gaps = [b - a for a, b in itertools.pairwise(times[100:])]
    assert all(g == pytest.approx(1.0) for g in gaps)


def steady_gap(limiter: RateLimiter, clock: Clock) -> float:
    times = acquire_times(limiter, clock, 3)
    return times[2] - times[1]


def test_rate_limited_halves_the_rate_and_successes_recover_it(clock):
    limiter = RateLimiter(rpm=60, tpm=None, clock=clock)
    acquire_times(limiter, clock, 60)  # empty the bucket
    assert steady_gap(limiter, clock) == pytest.approx(1.0)
    limiter.on_rate_limited()
    assert limiter.factor == 0.5
    start = clock.now
    acquire_times(limiter, clock, 1)
    assert clock.now - start == pytest.approx(2.0)  # the 429 also empties the bucket: the next request waits
    assert steady_gap(limiter, clock) == pytest.approx(2.0)
    limiter.on_rate_limited()
    assert steady_gap(limiter, clock) == pytest.approx(4.0)
    for _ in range(200):
        limiter.on_success()
    assert limiter.factor == 1.0
    assert steady_gap(limiter, clock) == pytest.approx(1.0)


def test_recovery_is_gradual(clock):
    limiter = RateLimiter(rpm=60, tpm=None, clock=clock)
    limiter.on_rate_limited()
    limiter.on_success()
    assert 0.5 < limiter.factor < 0.6  # one success does not undo a 429
    for _ in range(10):
        limiter.on_success()
    assert limiter.factor < 1.0


def test_rate_never_drops_to_zero(clock):
    limiter = RateLimiter(rpm=60, tpm=None, clock=clock)
    for _ in range(50):
        limiter.on_rate_limited()
    assert limiter.factor > 0
    acquire_times(limiter, clock, 2)  # finishes: the limiter keeps a floor instead of stalling forever


def test_no_limits_never_wait(clock):
    limiter = RateLimiter(rpm=None, tpm=None, clock=clock)
    times = acquire_times(limiter, clock, 1000, tokens=10**6)
    assert times[-1] == 1000.0


def test_concurrent_acquires_are_spaced_too(clock):
    limiter = RateLimiter(rpm=60, tpm=None, clock=clock)

    async def go() -> list[float]:
        times: list[float] = []

        async def one() -> None:
            await limiter.acquire(1)
            times.append(clock.now)

        await asyncio.gather(*(one() for _ in range(90)))
        return sorted(times)

    times = asyncio.run(go())
    assert times[-1] - times[0] == pytest.approx(30.0)  # 60 from the bucket, 30 more at one a second


def test_budget_refuses_the_request_that_would_exceed_usd():
    budget = Budget(max_usd=1.0)
    budget.reserve(0.6, 10)
    with pytest.raises(BudgetExceeded):
        budget.reserve(0.5, 10)  # 0.6 in flight + 0.5 > 1.0
    assert budget.refused == 1
    budget.settle(0.6, 10, 0.3, 8)  # it cost less than reserved
    assert budget.spent_usd == pytest.approx(0.3) and budget.reserved_usd == pytest.approx(0.0)
    budget.reserve(0.5, 10)  # 0.3 spent + 0.5 fits now
    with pytest.raises(BudgetExceeded):
        budget.reserve(0.21, 1)
    budget.reserve(0.2, 1)  # exactly at the limit is allowed
    assert budget.refused == 2


def test_budget_refuses_the_request_that_would_exceed_tokens():
    budget = Budget(max_tokens=1000)
    budget.reserve(0.0, 700)
    with pytest.raises(BudgetExceeded, match="max-tokens"):
        budget.reserve(0.0, 301)
    budget.settle(0.0, 700, 0.0, 200)
    budget.reserve(0.0, 800)
    assert budget.spent_tokens == 200 and budget.reserved_tokens == 800


def test_unlimited_budget_counts_but_never_refuses():
    budget = Budget()
    for _ in range(100):
        budget.reserve(10.0, 10**6)
        budget.settle(10.0, 10**6, 9.0, 10**5)
    assert budget.spent_usd == pytest.approx(900.0) and budget.refused == 0
