"""When a trace may be written: once the traces it reads as its voice reference are, not after a whole earlier wave.

A trace's voice reference is the person's latest `[traces] voice_examples` traces of its medium dated before it, from
an earlier stretch of `voice_wave_days` (stretches count from the timeline's start; traces of one stretch never read
each other, so they are written side by side). Which traces those are is known once the events of the earlier
stretches are planned (a plan fixes each trace's medium and time): a trace waits for those plans, then only for the
traces it will read. The references are the ones a stretch-by-stretch sequential run shows, whatever the timing.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import dataclass

from synth.core import chain
from synth.records import Event, Trace


def stretch_of(event: Event, start: dt.date, wave_days: int) -> int:
    """The event's stretch of `wave_days` days, counted from the timeline's start."""
    return (event.time.date() - start).days // max(1, wave_days)


def voice_waves(events: list[Event], start: dt.date, wave_days: int) -> list[list[Event]]:
    """Events grouped into their stretches (time order): the traces of one stretch cannot read each other."""
    waves: dict[int, list[Event]] = {}
    for event in sorted(events, key=lambda e: (e.time, e.id)):
        waves.setdefault(stretch_of(event, start, wave_days), []).append(event)
    return [waves[k] for k in sorted(waves)]


def voice_reference(written: list[Trace], medium: str, before: dt.datetime, count: int, chars: int) -> list[dict]:
    """The person's latest `count` traces of `medium` written before `before`, oldest first, each cut to `chars`:
    the writer's voice reference."""
    same = sorted((t for t in written if t.medium == medium and t.time < before), key=lambda t: (t.time, t.id))
    return [{"time": t.time.isoformat(timespec="minutes"), "content": t.content[:chars]}
            for t in same[len(same) - count:]] if count > 0 else []


@dataclass(frozen=True)
class Slot:
    """A planned trace: its id, medium and time (what choosing a voice reference needs before it is written)."""

    id: str
    medium: str
    time: dt.datetime
    stretch: int


class VoiceBoard:
    """The traces of one persona as they are planned and written: a writer asks it for its voice reference and is
    answered as soon as the traces it reads exist. Build it inside the running event loop."""

    def __init__(self, events: list[Event], start: dt.date, wave_days: int, count: int, chars: int) -> None:
        self.count, self.chars = count, chars
        self.stretch = {e.id: stretch_of(e, start, wave_days) for e in events}
        stretches = sorted(set(self.stretch.values()))
        self.waiting = {s: sum(1 for v in self.stretch.values() if v == s) for s in stretches}
        self.unplanned = set(self.stretch)
        loop = asyncio.get_running_loop()
        # ready[s]: every event of stretches up to s is planned; its result is the longest chain among those plans
        self.ready: dict[int, asyncio.Future[int]] = {s: loop.create_future() for s in stretches}
        self.order = stretches
        self.plan_depth = dict.fromkeys(stretches, 0)
        self.by_medium: dict[str, list[Slot]] = {}
        self.traces: dict[str, asyncio.Future[tuple[Trace | None, int]]] = {}
        self.of_event: dict[str, list[str]] = {}

    def planned(self, event_id: str, slots: list[tuple[str, str, dt.datetime]]) -> None:
        """The event's plan is in: its traces' (id, medium, time). A second call (after a failure) is ignored."""
        if event_id not in self.unplanned:
            return
        self.unplanned.discard(event_id)
        stretch = self.stretch[event_id]
        loop = asyncio.get_running_loop()
        for trace_id, medium, time in slots:
            self.by_medium.setdefault(medium, []).append(Slot(trace_id, medium, time, stretch))
            self.traces[trace_id] = loop.create_future()
            self.of_event.setdefault(event_id, []).append(trace_id)
        self.plan_depth[stretch] = max(self.plan_depth[stretch], chain.depth())
        self.waiting[stretch] -= 1
        self._release()

    def _release(self) -> None:
        """Resolve `ready` for each stretch, in order, whose plans and earlier stretches' plans are all in."""
        behind = 0
        for s in self.order:
            if self.waiting[s] > 0:
                return
            behind = max(behind, self.plan_depth[s])
            if not self.ready[s].done():
                self.ready[s].set_result(behind)

    def written(self, trace: Trace) -> None:
        """A trace is written (its privacy checks and rewrites done): its readers may go on."""
        future = self.traces.get(trace.id)
        if future is not None and not future.done():
            future.set_result((trace, chain.depth()))

    def settle(self, event_id: str) -> None:
        """The event's unit ended: whatever of it was not planned or written never will be (a failed unit)."""
        self.planned(event_id, [])
        for trace_id in self.of_event.get(event_id, []):
            if not self.traces[trace_id].done():
                self.traces[trace_id].set_result((None, 0))

    def finished(self, event_id: str, traces: list[Trace]) -> None:
        """An event finished by an earlier run (the journal): its traces are planned and written."""
        self.planned(event_id, [(t.id, t.medium, t.time) for t in traces])
        for trace in traces:
            self.traces[trace.id].set_result((trace, 0))

    async def reference(self, event_id: str, medium: str, before: dt.datetime) -> list[dict]:
        """The voice reference of a trace of `event_id` in `medium` at `before`, once the traces it shows are
        written; this task's chain then includes the plans and traces it waited for."""
        mine = self.stretch[event_id]
        earlier = [s for s in self.order if s < mine]
        if self.count <= 0 or not earlier:
            return []
        chain.join(await self.ready[earlier[-1]])
        slots = sorted((s for s in self.by_medium.get(medium, []) if s.stretch < mine and s.time < before),
                       key=lambda s: (s.time, s.id))
        chosen: list[Trace] = []
        for slot in reversed(slots):  # the latest first; a trace whose unit failed is passed over
            trace, depth = await self.traces[slot.id]
            if trace is not None:
                chain.join(depth)
                chosen.append(trace)
                if len(chosen) == self.count:
                    break
        return voice_reference(chosen, medium, before, self.count, self.chars)
