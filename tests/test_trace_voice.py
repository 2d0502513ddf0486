"""The traces stage without barriers: a trace waits only for the earlier traces its voice reference reads (the
latest of its medium in an earlier wave), never for a whole earlier wave, and a failed event never leaves a trace
waiting."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from synth.core.errors import BudgetExceeded
from synth.records import Event, Trace
from synth.stages.trace_voice import Planned, VoiceBoard, wave_index
from synth.stages.traces import settled

START = dt.date(2022, 1, 1)


def event(eid: str, day: int) -> Event:
    return Event(id=eid, persona_id="p", phase_id="ph", time=dt.datetime(2022, 1, day, 9), title=eid,
                 description="d", location="", participant_ids=[])


def trace(tid: str, medium: str, day: int) -> Trace:
    return Trace(id=tid, persona_id="p", event_id=tid[0], evidence_ids=[], medium=medium, intent="i", audience="a",
                 time=dt.datetime(2022, 1, day, 20), content=f"{tid} text")


def planned(t: Trace) -> Planned:
    return Planned(t.id, t.medium, t.time)


def test_waves_are_stretches_of_days_from_the_start():
    assert wave_index([event("a", 1), event("b", 7), event("c", 8), event("d", 20)], START, 7) == {
        "a": 0, "b": 0, "c": 1, "d": 2}


def test_a_trace_reads_the_latest_of_its_medium_in_earlier_waves_and_waits_for_nothing_else():
    async def scenario() -> list[str]:
        events = [event("a", 1), event("b", 3), event("c", 9)]  # waves 0, 0, 1
        board = VoiceBoard(events, START, 7, count=1)
        a1, a2, b1 = trace("a1", "diary", 1), trace("a2", "email", 2), trace("b1", "diary", 4)
        board.plan("a", [planned(a1), planned(a2)])
        board.plan("b", [planned(b1)])
        board.wrote(b1)  # a1 and a2 are still being written
        found = await asyncio.wait_for(board.reference("c", "diary", dt.datetime(2022, 1, 9, 20)), timeout=1)
        return [t.id for t in found]

    assert asyncio.run(scenario()) == ["b1"]


def test_a_trace_waits_for_the_earlier_plans_then_for_the_traces_it_reads():
    async def scenario() -> tuple[bool, list[str]]:
        events = [event("a", 1), event("c", 9)]
        board = VoiceBoard(events, START, 7, count=2)
        task = asyncio.create_task(board.reference("c", "diary", dt.datetime(2022, 1, 9, 20)))
        await asyncio.sleep(0.01)
        waiting = not task.done()  # "a" has not planned yet: which diary is the latest is not known
        a1, a2 = trace("a1", "diary", 1), trace("a2", "diary", 2)
        board.plan("a", [planned(a1), planned(a2)])
        board.wrote(a2)
        await asyncio.sleep(0.01)
        waiting = waiting and not task.done()  # a1 is read too: still waiting for it
        board.wrote(a1)
        return waiting, [t.id for t in await asyncio.wait_for(task, timeout=1)]

    assert asyncio.run(scenario()) == (True, ["a1", "a2"])


def test_a_same_wave_trace_is_never_read_and_a_failed_event_releases_its_readers():
    async def scenario() -> tuple[list[str], list[str]]:
        events = [event("a", 1), event("b", 2), event("c", 9)]
        board = VoiceBoard(events, START, 7, count=2)
        b1 = trace("b1", "diary", 2)
        board.plan("b", [planned(b1)])
        board.finished("a", [])  # a failed before writing anything (or planning)
        board.wrote(b1)
        same_wave = await asyncio.wait_for(board.reference("b", "diary", dt.datetime(2022, 1, 5, 20)), timeout=1)
        later = await asyncio.wait_for(board.reference("c", "diary", dt.datetime(2022, 1, 9, 20)), timeout=1)
        return [t.id for t in same_wave], [t.id for t in later]

    assert asyncio.run(scenario()) == ([], ["b1"])


def test_a_failed_write_after_its_plan_is_missing_not_awaited_for_ever():
    async def scenario() -> list[str]:
        events = [event("a", 1), event("c", 9)]
        board = VoiceBoard(events, START, 7, count=1)
        a1 = trace("a1", "diary", 1)
        board.plan("a", [planned(a1)])
        board.finished("a", [])  # its write failed
        return [t.id for t in await asyncio.wait_for(board.reference("c", "diary", dt.datetime(2022, 1, 9)), 1)]

    assert asyncio.run(scenario()) == []


@pytest.mark.parametrize("count", [0, 1])
def test_no_voice_examples_reads_nothing(count):
    async def scenario() -> int:
        events = [event("a", 1), event("c", 9)]
        board = VoiceBoard(events, START, 7, count=count)
        a1 = trace("a1", "diary", 1)
        board.finished("a", [a1])  # found in the journal of an interrupted run
        return len(await asyncio.wait_for(board.reference("c", "diary", dt.datetime(2022, 1, 9)), 1))

    assert asyncio.run(scenario()) == count


class StoppingWriter:
    """A traces writer whose event "a" plans its diary, then meets the budget before writing it; every other event
    writes one diary read from the board (as TraceWriter.draft does)."""

    def __init__(self, board: VoiceBoard) -> None:
        self.board = board

    async def event(self, e: Event) -> dict:
        own = trace(f"{e.id}1", "diary", e.time.day)
        self.board.plan(e.id, [planned(own)])
        if e.id == "a":
            await asyncio.sleep(0.01)
            raise BudgetExceeded("max_tokens reached")
        read = await self.board.reference(e.id, "diary", own.time)
        written = own.model_copy(update={"content": f"in the voice of {[t.id for t in read]}"})
        self.board.wrote(written)
        return {"traces.jsonl": [written]}


@pytest.mark.parametrize("plan_first", [True, False])
def test_a_budget_stop_stops_the_traces_that_read_it_instead_of_writing_them_without_it(plan_first):
    """A reader released as if the stopped event's trace were missing would be written without it and journaled;
    the resumed run, which writes that trace, would then differ from a run never stopped."""
    async def scenario() -> list[str]:
        events = [event("a", 1), event("c", 9)]
        board = VoiceBoard(events, START, 7, count=1)
        writer = StoppingWriter(board)
        if not plan_first:  # stopped before its plan: which diary is the latest is not known either
            async def stop_early(e: Event) -> dict:
                raise BudgetExceeded("max_tokens reached")
            writer.event = lambda e, original=writer.event: stop_early(e) if e.id == "a" else original(e)
        results = await asyncio.gather(settled(writer, events[0]), settled(writer, events[1]), return_exceptions=True)
        return [type(r).__name__ for r in results]

    assert asyncio.run(scenario()) == ["BudgetExceeded", "BudgetExceeded"]
