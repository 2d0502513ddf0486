"""The fake server's faults: which kinds exist, how a configured list of them is read, and the seeded draws."""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Iterable

FAULT_KINDS = ("429", "429nra", "500", "502", "503", "529", "timeout", "drop")
# A 200 whose body is not JSON, as gateways serve it: the answer cut in half (the Content-Length says the cut
# length, so it is valid HTTP), or the gateway's own HTML page. Transport faults too, drawn at the same rate.
BODY_FAULT_KINDS = ("cut200", "html200")
TRANSPORT_FAULT_KINDS = FAULT_KINDS + BODY_FAULT_KINDS
GATEWAY_PAGE = ("<!DOCTYPE html>\n<html><head><title>Service temporarily unavailable</title></head>\n"
                "<body><h1>Please try again later</h1><p>The upstream did not answer in time.</p></body></html>\n")
BAD_BODY_KINDS = ("truncated", "notjson", "invalid", "empty", "refusal")


def fault_kinds(value: str | Iterable[str] | None, allowed: tuple[str, ...], what: str) -> tuple[str, ...]:
    """The kinds a comma list (or iterable) names, all of `allowed` for None; unknown or no kinds are an error."""
    if value is None:
        return allowed
    kinds = tuple(k.strip() for k in (value.split(",") if isinstance(value, str) else value) if k.strip())
    unknown = [k for k in kinds if k not in allowed]
    if unknown or not kinds:
        raise ValueError(f"unknown {what} kind(s) {unknown or kinds}; choose from {','.join(allowed)}")
    return kinds


class FaultDraws:
    """Seeded draws of transport faults and bad bodies, counted per kind; mixed into the server's backend,
    which sets the rates and kinds and holds `lock`, `rng` and `by_fault` (reseeded on reset)."""

    fault_rate: float
    faults: tuple[str, ...]
    bad_body_rate: float
    bad_bodies: tuple[str, ...]
    lock: threading.Lock
    rng: random.Random
    by_fault: Counter[str]

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
