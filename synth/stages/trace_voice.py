"""Who reads whose voice, and when: the schedule of the traces stage without barriers between waves.

A trace's voice reference is the person's latest `voice_examples` traces of its medium written before its time in
an earlier wave (`voice_wave_days`). Waves decide *what* a trace reads; they no longer hold the stage: every event
plans at once, and a trace waits only for the earlier events' plans (to know which traces are the latest of its
medium) and then for exactly those traces to be written — not for a whole earlier wave. The references are the
ones a wave-by-wave run gives, so the records do not change. A trace's dependent chain (synth.core.chain) takes in
the plans and traces it waited for.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import dataclass

from synth.core import chain
from synth.records import Event, Trace


@dataclass(frozen=True)
class Planned:
    """A trace as its event's plan fixed it, before it is written: what a later trace may read."""

    trace_id: str
    medium: str
    time: dt.datetime


def wave_index(events: list[Event], start: dt.date, wave_days: int) -> dict[str, int]:
    """Event id → its wave: consecutive stretches of `wave_days` from the timeline's start."""
    return {e.id: (e.time.date() - start).days // max(1, wave_days) for e in events}


class VoiceBoard:
    """The plans and written traces of one persona's events, as futures a trace can wait on."""

    def __init__(self, events: list[Event], start: dt.date, wave_days: int, count: int) -> None:
        self.wave = wave_index(events, start, wave_days)
        self.count = count
        loop = asyncio.get_running_loop()
        self.planned: dict[str, asyncio.Future[list[Planned]]] = {e.id: loop.create_future() for e in events}
        self.written: dict[str, asyncio.Future[Trace | None]] = {}
        # the chain (provider calls) behind each plan and each written trace: a reader's chain includes them
        self.depth: dict[str, int] = {}

    def _trace(self, trace_id: str) -> asyncio.Future[Trace | None]:
        if trace_id not in self.written:
            self.written[trace_id] = asyncio.get_running_loop().create_future()
        return self.written[trace_id]

    def plan(self, event_id: str, planned: list[Planned]) -> None:
        """The event has planned its traces: later traces may now choose among them."""
        for item in planned:
            self._trace(item.trace_id)
        if not self.planned[event_id].done():
            self.depth[event_id] = chain.depth()
            self.planned[event_id].set_result(planned)

    def wrote(self, trace: Trace) -> None:
        future = self._trace(trace.id)
        if not future.done():
            self.depth[trace.id] = chain.depth()
            future.set_result(trace)

    def stopped(self, event_id: str, error: BaseException) -> None:
        """The run stopped (a budget) before the event's unit ended: what it has not planned or written is neither
        written nor missing, so a trace waiting on it stops with the same error — it is not written without that
        reference and journaled, which would make a resumed run differ from one never stopped."""
        planned = self.planned[event_id]
        waiting = [planned] if not planned.done() else [self._trace(p.trace_id) for p in planned.result()]
        for future in waiting:
            if not future.done():
                future.set_exception(error)
                future.exception()  # retrieved here: no reader waiting is not an unhandled error

    def finished(self, event_id: str, traces: list[Trace]) -> None:
        """An event's unit is over — written, found in the journal, or failed: whatever it did not write is settled
        as missing, so no trace waits for it for ever. After `stopped`, what it settled stays so."""
        if self.planned[event_id].done() and self.planned[event_id].exception() is not None:
            return
        if not self.planned[event_id].done():
            self.depth[event_id] = chain.depth()
            self.planned[event_id].set_result([Planned(t.id, t.medium, t.time) for t in traces])
        for trace in traces:
            self.wrote(trace)
        for item in self.planned[event_id].result():
            future = self._trace(item.trace_id)
            if not future.done():
                future.set_result(None)

    async def reference(self, event_id: str, medium: str, before: dt.datetime) -> list[Trace]:
        """The latest `count` traces of `medium` before `before` in earlier waves, oldest first, once written."""
        if self.count <= 0:
            return []
        wave = self.wave[event_id]
        earlier = [eid for eid, w in self.wave.items() if w < wave]
        plans = [p for eid in earlier for p in await self.planned[eid]]
        chain.join(*(self.depth.get(eid, 0) for eid in earlier))
        same = sorted((p for p in plans if p.medium == medium and p.time < before), key=lambda p: (p.time, p.trace_id))
        chosen = same[len(same) - self.count:]
        traces = [await self.written[p.trace_id] for p in chosen]
        chain.join(*(self.depth.get(p.trace_id, 0) for p in chosen))
        return [t for t in traces if t is not None]
