"""Traces off the barrier, run end to end (synth.stages.trace_voice): a trace waits only for the traces its voice
reference reads, the references are those of a stretch-by-stretch sequential run, and the manifest counts the real
dependent chain (synth.core.chain)."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
import time

from handmade import PID, START, maya, write_records
from kit import Scripted, run_stage

from synth.config import conf
from synth.core import chain
from synth.core.jsonl import read_records
from synth.records import AnchorState, Event, Evidence, LifeArc, MajorEvent, Phase, Snapshot, Trace, mint_id

# title → day of January 2022; with 7-day stretches: D0, M0 in stretch 0, D1 in 1, D2 and D3 in 2, M1 and D4 in 3.
# D* are diaries, M* emails (the plan below chooses by title).
DAYS = {"D0": 2, "M0": 3, "D1": 9, "D2": 16, "D3": 17, "M1": 23, "D4": 24}
# The voice reference each write must show (latest two of its medium, before it, from an earlier stretch).
EXPECTED = {"D0": [], "M0": [], "D1": ["D0"], "D2": ["D0", "D1"], "D3": ["D0", "D1"], "M1": ["M0"],
            "D4": ["D2", "D3"]}
TITLE = re.compile(r': "([DM]\d)": ')
SLOW_S = 0.6


def inputs(directory) -> None:
    state = AnchorState(label="s", description="d", trigger="t", cues=["c"])
    arc = LifeArc(id="arc0", persona_id=PID, dimension="experience", title="A", description="d",
                  anchor_states=[state, state])
    end = START + dt.timedelta(days=41)
    major = MajorEvent(id="m0", persona_id=PID, index=0, title="M", description="d", start=START, end=end,
                       arc_states=[])
    snap = Snapshot(energy=5, stress=5, dominant_emotion="calm", focus="work", arc_status={})
    phase = Phase(id="ph0", persona_id=PID, major_event_id="m0", index=0, title="P", description="d",
                  start=START, end=end, snapshot_before=snap, snapshot_after=snap)
    events = [Event(id=f"e_{t}", persona_id=PID, phase_id="ph0", time=dt.datetime(2022, 1, day, 9), title=t,
                    description="d", location="home", participant_ids=["r1"]) for t, day in DAYS.items()]
    evidence = [Evidence(id=f"ev_{t}", persona_id=PID, event_id=f"e_{t}", kind="fact", statement=f"fact of {t}",
                         arc_ids=["arc0"]) for t in DAYS]
    directory.mkdir(parents=True)
    write_records(directory, {"persona.jsonl": [maya()], "arcs.jsonl": [arc], "major_events.jsonl": [major],
                              "phases.jsonl": [phase], "events.jsonl": events, "evidence.jsonl": evidence,
                              "people.jsonl": []})


def config() -> str:
    others = "\n".join(f"{m} = 0" for m in conf.preset_config("tiny")["traces"]["media"]["en"]
                       if m not in ("diary", "email"))
    return ('sources = ["written"]\n[traces]\ntraces_per_event = 1\nvoice_examples = 2\nvoice_wave_days = 7\n'
            f"privacy_judge = false\n[traces.media.en]\ndiary = 1\nemail = 1\n{others}\n")


def title_of(request) -> str:
    text = request.messages[-1]["content"].split("Earlier records of this person")[0]
    return TITLE.search(text).group(1)


def is_write(request) -> bool:
    return set(request.json_schema["properties"]) == {"content"}


def reply(request) -> dict:
    title = title_of(request)
    if is_write(request):
        return {"content": f"{title} entry: " + "an ordinary day written down in the person's own words " * 4}
    return {"traces": [{"reasons": "r", "medium": "diary" if title[0] == "D" else "email", "intent": "i",
                        "audience": "self", "key_information": "k", "evidence": [1], "delay_hours": 0}]}


class Timed(Scripted):
    """Answers by `reply`; the write of M0 takes SLOW_S seconds; keeps when each (kind, title) call ran."""

    def __init__(self) -> None:
        super().__init__({"traces": reply})
        self.spans: dict[tuple[str, str], tuple[float, float]] = {}

    async def complete(self, request, model):
        kind, title = ("write" if is_write(request) else "plan"), title_of(request)
        start = time.perf_counter()
        if (kind, title) == ("write", "M0"):
            await asyncio.sleep(SLOW_S)
        response = await super().complete(request, model)
        self.spans[kind, title] = (start, time.perf_counter())
        return response


def shown_voice(request) -> list[str]:
    """The titles of the voice examples a write prompt shows (each example's content starts with its title)."""
    text = request.messages[-1]["content"]
    if "Earlier records of this person" not in text:
        return []
    section = text.split("Earlier records of this person")[1]
    return re.findall(r"\n([DM]\d) entry:", section)


def test_each_write_shows_the_sequential_voice_and_waits_for_nothing_else(tmp_path):
    inputs(tmp_path / PID)
    model = run_stage(tmp_path, "traces", config=config(), replies=Timed())
    writes = {title_of(r): shown_voice(r) for r in model.asked("traces") if is_write(r)}
    assert writes == EXPECTED, "every write shows the references a sequential run shows"
    traces = read_records(tmp_path / PID / "traces.jsonl", Trace)
    assert [t.id for t in traces] == [mint_id(f"e_{t}", "trace", 0) for t in DAYS], "ids, in time order"
    # D1 reads only D0: it is written while M0 (same stretch as D0, slow, unrelated) is still being written
    d1_start = model.spans["write", "D1"][0]
    assert d1_start < model.spans["write", "M0"][1] - SLOW_S / 2, "D1 waited for an unrelated trace"
    # M1 reads M0: it cannot start before M0 is written
    assert model.spans["write", "M1"][0] >= model.spans["write", "M0"][1]
    manifest = json.loads((tmp_path / PID / "manifests" / "traces.json").read_text())
    # plan → D0 → D1 → D2 (or D3) → D4: five dependent calls, though 14 were made
    assert (manifest["provider_calls"], manifest["chain_calls"]) == (14, 5)


def test_a_rerun_resumes_from_the_journal_with_the_same_references(tmp_path):
    """Events finished by an earlier (failed) run are read from the journal: the writes asked again show the same
    voice references as in one run."""
    inputs(tmp_path / PID)

    def failing(request):
        if is_write(request) and title_of(request) == "D2":
            raise RuntimeError("a transport fault past every retry")
        return reply(request)

    first = Scripted({"traces": failing})
    try:
        run_stage(tmp_path, "traces", config=config(), replies=first)
    except Exception as exc:  # noqa: BLE001 - the stage fails on D2 and keeps the rest in its journal
        assert "failed" in str(exc)
    second = run_stage(tmp_path, "traces", config=config(), replies={"traces": reply})
    again = {title_of(r): shown_voice(r) for r in second.asked("traces") if is_write(r)}
    assert again == {"D2": EXPECTED["D2"]}, "only D2 is asked again, with its references from the journal"
    shown_first = {title_of(r): shown_voice(r) for r in first.asked("traces") if is_write(r)}
    assert shown_first["D4"] == ["D3"], "D2 failed: D4 shows what was written of its references, never waits for D2"


def test_a_chain_is_the_longest_of_what_was_waited_for():
    async def calls(n: int) -> int:
        for _ in range(n):
            chain.called()
        return n

    async def scenario() -> tuple[list[int], int]:
        chain.called()
        results = await chain.gather(calls(1), calls(3), calls(2))
        return results, chain.depth()

    assert asyncio.run(scenario()) == ([1, 3, 2], 4), "one call, then the longest of three side by side"
