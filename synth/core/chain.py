"""The dependent-call chain: how many provider calls, one after another, the work in hand had to wait for.

Each asyncio task carries its own count (a context variable, copied into the tasks it starts). The client adds one
per provider call (synth.llm.client); whoever waits for concurrent work takes the longest of its counts (`join`,
`gather`, the engine's units), so the count where a stage ends is the longest chain of calls that led there — the
critical path the bench divides the wall time by, measured on the run itself rather than modelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from contextvars import ContextVar
from typing import Any

_DEPTH: ContextVar[int] = ContextVar("synth_chain_depth", default=0)


def depth() -> int:
    """Provider calls on the longest chain behind this point of the current task."""
    return _DEPTH.get()


def called() -> None:
    """One more provider call on this task's chain (the client's, once per call that reached a provider)."""
    _DEPTH.set(_DEPTH.get() + 1)


def join(*depths: int) -> None:
    """This task now also waited for work whose chains were `depths` long."""
    _DEPTH.set(max((_DEPTH.get(), *depths)))


async def measured(work: Awaitable[Any]) -> tuple[Any, int]:
    """`work`'s result and the chain length where it ended (run it in a task of its own to keep counts apart)."""
    result = await work
    return result, _DEPTH.get()


async def gather(*works: Awaitable[Any]) -> list[Any]:
    """`asyncio.gather` that joins the children's chains: what follows waited for the longest of them."""
    done = await asyncio.gather(*(measured(w) for w in works))
    join(*(d for _, d in done))
    return [result for result, _ in done]
