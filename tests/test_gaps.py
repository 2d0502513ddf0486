"""The longest gap without a trace, enforced on dates (synth.life.gaps): events re-dated inside their phases,
travel exempt, the events stage applying it to a scripted timeline, `synth validate` reporting what is left."""

from __future__ import annotations

import datetime as dt
import json

from handmade import phase_inputs
from kit import run_stage

from synth.core.jsonl import read_records, write_atomic
from synth.life.gaps import close_gaps, open_gaps, travel_spans
from synth.quality.validate import PersonaCheck
from synth.records import Event, EventSeed, MajorEvent, Phase, Snapshot, Trace, mint_id

START, END = dt.date(2022, 1, 1), dt.date(2022, 2, 11)
SNAP = Snapshot(energy=5, stress=5, dominant_emotion="calm", focus="work", arc_status={})


def _phase(pid: str, lo: int, hi: int) -> Phase:
    return Phase(id=pid, persona_id="p", major_event_id="m", index=0, title="t", description="d",
                 start=START + dt.timedelta(days=lo), end=START + dt.timedelta(days=hi), snapshot_before=SNAP,
                 snapshot_after=SNAP)


def _event(eid: str, phase: str, day: int) -> Event:
    return Event(id=eid, persona_id="p", phase_id=phase, time=dt.datetime.combine(START + dt.timedelta(days=day),
                                                                                   dt.time(18, 30)),
                 title=eid, description="d", location="l", participant_ids=[])


def _days(events: list[Event]) -> list[int]:
    return [(e.time.date() - START).days for e in events]


def test_a_gap_is_closed_by_moving_events_inside_their_phases():
    phases = {"a": _phase("a", 0, 20), "b": _phase("b", 21, 41)}
    # the model put everything at the phases' ends: days 0-17 and 21-37 have nothing
    events = [_event("a1", "a", 18), _event("a2", "a", 19), _event("b1", "b", 38), _event("b2", "b", 40)]
    assert [g.days for g in open_gaps([e.time.date() for e in events], START, END, 8)] == [18, 18]
    fixed = close_gaps(events, phases, START, END, 8)
    assert _days(fixed) == [8, 17, 26, 35], "each to the last day that keeps the stretch behind it at 8"
    assert open_gaps([e.time.date() for e in fixed], START, END, 8) == []
    assert all(e.time.time() == dt.time(18, 30) for e in fixed), "only the day moves"
    assert all(e.redated_from is not None for e in fixed)
    assert fixed[0].redated_from == events[0].time
    for event in fixed:  # containment: each stays inside its phase
        assert phases[event.phase_id].start <= event.time.date() <= phases[event.phase_id].end


def test_the_event_before_a_gap_moves_later_when_the_one_after_cannot_move_back():
    # a fake tiny run's timeline: an everyday phase to Jan 24 with its events on Jan 5 and 7, the next phase's
    # first event on Jan 26; limit 12
    phases = {"a": _phase("a", 0, 23), "b": _phase("b", 24, 28)}
    events = [_event("a1", "a", 4), _event("a2", "a", 6), _event("b1", "b", 25)]
    fixed = close_gaps(events, phases, START, START + dt.timedelta(days=30), 12)
    assert _days(fixed) == [4, 11, 24], "b1 to its phase's first day, a2 later just enough"
    assert open_gaps([e.time.date() for e in fixed], START, START + dt.timedelta(days=30), 12) == []


def test_a_gap_no_event_can_reach_stays_and_travel_is_exempt():
    phases = {"a": _phase("a", 0, 5), "b": _phase("b", 30, 41)}
    events = [_event("a1", "a", 2), _event("b1", "b", 35), _event("b2", "b", 40)]
    fixed = close_gaps(events, phases, START, END, 8)
    assert _days(fixed)[:2] == [5, 30], "b1 moves to its phase's start, no earlier; a1 to its phase's end"
    assert [g.days for g in open_gaps([e.time.date() for e in fixed], START, END, 8)] == [24]
    trip = [(START + dt.timedelta(days=6), START + dt.timedelta(days=29))]
    assert _days(close_gaps(events, phases, START, END, 8, trip)) == [2, 35, 40], "no move across a trip"
    assert open_gaps([e.time.date() for e in events], START, END, 8, trip) == []
    seeds = [EventSeed(id="s1", persona_id="p", name="long_trip_abroad", title="t", description="d",
                       origin="predefined"),
             EventSeed(id="s2", persona_id="p", name="move", title="t", description="d", origin="predefined")]
    majors = [MajorEvent(id=f"m{i}", persona_id="p", index=i, title="t", description="d", start=START,
                         end=END, arc_states=[], seed_id=s) for i, s in enumerate(["s1", "s2"])]
    assert travel_spans(majors, seeds, ["long_trip_abroad"]) == [(START, END)]


def _one_phase_per_major_event(tmp_path):
    """The scripted timeline of `phase_inputs` (major events Jan 1-10 and Jan 15-20), one phase each."""
    d = tmp_path / "p01_maya"
    _, majors = phase_inputs(d)
    write_atomic(d / "phases.jsonl", [
        Phase(id=f"ph{m.index}", persona_id="p01_maya", major_event_id=m.id, index=0, title="t", description="d",
              start=m.start, end=m.end, snapshot_before=SNAP, snapshot_after=SNAP, arc_states=m.arc_states)
        for m in majors])
    write_atomic(d / "phase_people.jsonl", [])
    return d


def test_the_events_stage_redates_a_scripted_timeline_and_validate_reports_a_remaining_gap(tmp_path):
    """Two major events (Jan 1-10, Jan 15-20) of one phase each, the timeline to Feb 11; the model puts both events
    of each phase on its day 5 (Jan 6, Jan 20). With max_gap_days 6 and 1 day of room (events at most 5 days
    apart), the second phase's first event moves to its phase's first day (Jan 15) and the first phase's second
    event later (Jan 9); the stretch after the last phase cannot be closed by re-dating: a validate finding."""
    d = _one_phase_per_major_event(tmp_path)
    answer = json.dumps({"events": [
        {"title": f"e{n}", "description": "d", "location": "ward", "day": 5, "hour": 9, "minute": n,
         "participants": [], "evidence": [{"kind": "fact", "statement": "s", "arcs": ["Arc 0"], "private": False}] * 2}
        for n in range(2)]})
    config = tmp_path / "c.toml"
    config.write_text("[events]\nmin_events = 2\nmax_events = 2\nmax_gap_days = 6\ngap_room_days = 1\n")
    fake = run_stage(tmp_path, "events", config=config, replies={"events": [answer] * 2})
    assert not fake.unused() and len(fake.seen) == 2, "one scripted answer per phase, none repaired"
    events = read_records(d / "events.jsonl", Event)
    assert [e.time.date().isoformat() for e in events] == ["2022-01-06", "2022-01-09", "2022-01-15", "2022-01-20"]
    moved = {(e.title, e.redated_from) for e in events if e.redated_from is not None}
    assert moved == {("e0", dt.datetime(2022, 1, 20, 9, 0)), ("e1", dt.datetime(2022, 1, 6, 9, 1))}

    traces = [Trace(id=f"t{i}", persona_id="p01_maya", event_id=e.id, evidence_ids=[], medium="diary",
                    time=e.time, intent="i", audience="a", content="text") for i, e in enumerate(events)]
    write_atomic(d / "traces.jsonl", traces)
    (tmp_path / "dataset.json").write_text(json.dumps({"config": {"events": {"max_gap_days": 6}}}))
    found = [p for p, k in zip(*_run(d), strict=True) if k == "trace_gaps"]
    assert len(found) == 1 and "no trace for 22 days (2022-01-20 to 2022-02-12), more than max_gap_days 6" in found[0]
    write_atomic(d / "traces.jsonl", [t for t in traces if t.id != "t1"])  # the Jan 9 trace lost
    found = [p for p, k in zip(*_run(d), strict=True) if k == "trace_gaps"]
    assert len(found) == 2 and "no trace for 8 days (2022-01-06 to 2022-01-15)" in found[0]
    (tmp_path / "dataset.json").write_text(json.dumps({"config": {"events": {"max_gap_days": 30}}}))
    assert "trace_gaps" not in _run(d)[1], "the limit is the dataset's recorded one"


def one_phase_life(tmp_path):
    """p01_maya's directory with one major event and one phase over the whole timeline, no registry yet."""
    d = tmp_path / "p01_maya"
    _, majors = phase_inputs(d)
    whole = majors[0].model_copy(update={"start": START, "end": END})
    write_atomic(d / "major_events.jsonl", [whole])
    write_atomic(d / "phases.jsonl", [Phase(id="ph0", persona_id="p01_maya", major_event_id=whole.id, index=0,
                                            title="t", description="d", start=START, end=END, snapshot_before=SNAP,
                                            snapshot_after=SNAP, arc_states=whole.arc_states)])
    write_atomic(d / "phase_people.jsonl", [])
    return d


def _draft(n: int, day: int, title: str = "") -> dict:
    return {"title": title or f"e{n}", "description": "d", "location": "home", "day": day, "hour": 9, "minute": n,
            "participants": [], "evidence": [{"kind": "fact", "statement": "s", "arcs": [], "private": False}]}


def both_on_the_first_morning_then(tmp_path, filler: list[dict]):
    """One phase over the whole timeline whose model put both its events on its first morning, then a filler
    answering `filler`: the fake (with the requests it saw) and the persona directory."""
    d = one_phase_life(tmp_path)
    first = json.dumps({"events": [{**_draft(n, 0), "evidence": [{"kind": "fact", "statement": "s",
                                                                   "arcs": ["Arc 0"], "private": False}] * 2}
                                   for n in range(2)]})
    config = tmp_path / "c.toml"
    config.write_text("[events]\nevents_per_week = 0.34\nmin_events = 2\nmax_events = 8\nmax_gap_days = 6\n"
                      "gap_room_days = 1\n")
    fake = run_stage(tmp_path, "events", config=config, replies={"events": [first, json.dumps({"events": filler})]})
    return fake, d


def test_a_stretch_no_event_can_reach_is_filled_with_everyday_events(tmp_path):
    """One phase over the whole timeline whose model put both its events on its first morning: re-dating moves the
    second to Jan 7 and no further (the stretch behind it), so the days from Jan 8 get everyday events of their own
    (one call), spread evenly over the stretch, then everything is re-dated again."""
    fake, d = both_on_the_first_morning_then(tmp_path, [_draft(n, 6 * n) for n in range(6)])
    assert not fake.unused() and len(fake.seen) == 2
    asked = fake.seen[1].messages[-1]["content"]
    assert "small everyday events" in asked and "day 0 is 2022-01-08" in asked
    assert "The events of this phase already written:" in asked  # the filler sees what the phase already holds
    events = read_records(d / "events.jsonl", Event)
    assert len(events) == 8
    fillers = [e for e in events if e.id in {mint_id("ph0", "gap-2022-01-08", i) for i in range(6)}]
    first_filler = min(fillers, key=lambda e: e.time)
    placed = sorted((e.redated_from or e.time).date() for e in fillers)
    # the filler's 35 days (Jan 8 to Feb 11) get its six events spread evenly, whatever days the answer chose
    assert len(fillers) == 6 and first_filler is not None
    assert placed == [dt.date(2022, 1, 8) + dt.timedelta(days=(2 * k + 1) * 35 // 12) for k in range(6)]
    assert open_gaps([e.time.date() for e in events], START, END, 5) == []


def test_the_events_a_filler_was_shown_keep_the_days_it_was_shown(tmp_path):
    """A capable writer's filler was shown "2022-01-09: a bike ride" as already written, and the next request dated
    the ride 2022-01-16 inside the filler's days: re-dating after the filler started again from the model's days."""
    import re

    fake, d = both_on_the_first_morning_then(tmp_path, [_draft(n, 0, f"f{n}") for n in range(6)])
    shown = dict((title, when) for when, title in
                 re.findall(r"^- (\d{4}-\d\d-\d\d \d\d:\d\d): (e\d)$", fake.seen[1].messages[-1]["content"], re.M))
    assert sorted(shown) == ["e0", "e1"]
    final = {e.title: e.time.isoformat(sep=" ", timespec="minutes") for e in read_records(d / "events.jsonl", Event)}
    assert {t: final[t] for t in shown} == shown


def _run(directory) -> tuple[list[str], list[str]]:
    check = PersonaCheck(directory)
    problems = check.run()
    return problems, check.kinds


def _named(eid: str, phase: str, day: int, description: str) -> Event:
    return _event(eid, phase, day).model_copy(update={"description": description})


def test_an_event_that_names_its_weekday_moves_by_whole_weeks_or_not_at_all():
    phases = {"a": _phase("a", 0, 20), "b": _phase("b", 21, 41)}
    events = [_event("a1", "a", 18), _named("a2", "a", 19, "Saturday brunch with her sister"),
              _event("b1", "b", 38), _named("b2", "b", 40, "周六去爬山")]
    fixed = close_gaps(events, phases, START, END, 8)
    by_id = {e.id: e for e in fixed}
    for eid in ("a2", "b2"):
        before = next(e for e in events if e.id == eid).time.date()
        after = by_id[eid].time.date()
        assert after.weekday() == before.weekday(), f"{eid} keeps the weekday its text names"
        assert (after - before).days % 7 == 0
    assert _days([by_id["a2"], by_id["b2"]]) == [12, 33], \
        "a2 whole weeks earlier, as far as closes its stretch; b2, the last event, only as far as keeps the end closed"
    # pinned events close less than free ones would (the last stretch stays open), never more
    left = max(g.days for g in open_gaps([e.time.date() for e in fixed], START, END, 8))
    assert left < max(g.days for g in open_gaps([e.time.date() for e in events], START, END, 8))
    # with no day of its weekday inside its phase and range, a named event stays where the model put it
    short = {"a": _phase("a", 0, 20), "c": _phase("c", 30, 33)}
    stuck = [_event("a1", "a", 2), _named("c1", "c", 33, "a quiet Wednesday at home")]
    assert _days(close_gaps(stuck, short, START, START + dt.timedelta(days=33), 8))[1] == 33
    assert _days(close_gaps([stuck[0], _event("c1", "c", 33)], short, START,
                            START + dt.timedelta(days=33), 8))[1] == 30, "the same event unnamed moves"


def test_weekday_names_are_recognised_in_english_and_chinese_but_not_in_ordinary_words():
    from synth.life.gaps import names_weekday
    assert names_weekday(_named("x", "a", 0, "Dinner on Fridays"))
    assert names_weekday(_named("x", "a", 0, "礼拜天在家"))
    assert names_weekday(_named("x", "a", 0, "weekend errands"))
    assert not names_weekday(_named("x", "a", 0, "She sat in the sun and read"))


def test_an_event_that_names_a_date_or_an_occasion_keeps_its_day():
    """The same timeline as the first test: its events move to close the stretches, except one whose text names a
    calendar date, a configured occasion or a public holiday (`DayPins`), which stays where the model put it."""
    from synth.life.gaps import DayPins
    phases = {"a": _phase("a", 0, 20), "b": _phase("b", 21, 41)}
    free = [_event("a1", "a", 18), _event("a2", "a", 19), _event("b1", "b", 38), _event("b2", "b", 40)]
    moved = {e.id: _days([e])[0] for e in close_gaps(free, phases, START, END, 8)}
    assert moved["a1"] != 18 and moved["b1"] != 38, "unnamed, both move"
    assert close_gaps([_named("a1", "a", 18, "Tom's birthday"), *free[1:]], phases, START, END, 8)[0].time.day != 19, \
        "no pins given: the date word alone does not pin"
    pins = DayPins(["birthday", "春节", "Boxing Day"])
    for text in ("Dinner for Tom's birthday", "Tickets booked for 25 December", "除夕夜守岁，春节前一天",
                 "2月1日回老家", "Quiet Boxing Day walk", "the 1st of March deadline"):
        named = [_named("a1", "a", 18, text), *free[1:]]
        kept = {e.id: _days([e])[0] for e in close_gaps(named, phases, START, END, 8, pins=pins)}
        assert kept["a1"] == 18, f"{text!r} keeps its day"
        assert kept["b1"] != 38, "the other events still move"
    for text in ("She boxed up old books", "A decent day at the ward", "I may call her", "3号线地铁很挤"):
        assert not pins(_named("a1", "a", 18, text)), f"{text!r} names no date"


def test_an_event_whose_evidence_names_its_date_keeps_its_day():
    """An event was moved to 2022-02-25 while its evidence still said "2022年3月4日"; and one whose evidence names
    its weekday moves by whole weeks only."""
    from synth.life.gaps import DayPins
    from synth.records import Evidence
    phases = {"a": _phase("a", 0, 20), "b": _phase("b", 21, 41)}
    free = [_event("a1", "a", 18), _event("a2", "a", 19), _event("b1", "b", 38), _event("b2", "b", 40)]

    def said(text: str) -> Evidence:
        return Evidence(id="v", persona_id="p", event_id="a1", kind="fact", statement=text, arc_ids=[])

    kept = close_gaps(free, phases, START, END, 8, pins=DayPins().with_evidence([said("她在2022年1月19日交了报告。")]))
    assert _days(kept)[0] == 18, "the evidence names the date: the event keeps its day"
    assert _days(close_gaps(free, phases, START, END, 8, pins=DayPins().with_evidence([said("She filed it.")])))[0] \
        != 18, "evidence naming no date pins nothing"
    weekly = close_gaps(free, phases, START, END, 8, pins=DayPins().with_evidence([said("On Wednesday she filed it.")]))
    assert (_days(weekly)[0] - 18) % 7 == 0, "a weekday its evidence names moves it by whole weeks"


def test_the_events_stage_pins_an_event_naming_a_public_holiday_of_the_timeline(tmp_path):
    """The first stage test's timeline with `date_words` empty: an event whose text names New Year's Day (a GB
    public holiday on Jan 1, inside the timeline; the library's name, no configured word) keeps its day where the
    unnamed one moved to Jan 15 (the first phase's e1 goes as late as its phase allows; the stretch left is the
    filler's, off here)."""
    d = _one_phase_per_major_event(tmp_path)
    text = ["Still eating New Year's Day leftovers", "d"]
    answer = json.dumps({"events": [
        {"title": f"e{n}", "description": text[n], "location": "ward", "day": 5, "hour": 9, "minute": n,
         "participants": [], "evidence": [{"kind": "fact", "statement": "s", "arcs": ["Arc 0"], "private": False}] * 2}
        for n in range(2)]})
    config = tmp_path / "c.toml"
    config.write_text("[events]\nmin_events = 2\nmax_events = 2\nmax_gap_days = 6\ngap_room_days = 1\n"
                      "date_words = []\nfill_gaps = false\n")
    fake = run_stage(tmp_path, "events", config=config, replies={"events": [answer] * 2})
    assert not fake.unused()
    events = read_records(d / "events.jsonl", Event)
    assert [(e.title, e.time.date().isoformat()) for e in events] == [
        ("e0", "2022-01-06"), ("e1", "2022-01-10"), ("e0", "2022-01-20"), ("e1", "2022-01-20")]
    assert all(e.redated_from is None for e in events if e.title == "e0"), "the holiday's event stays"


def test_events_the_model_put_on_one_day_spread_into_the_stretch_after_it():
    """Five events on a phase's first day, the next event 41 days later in a one-day phase (it cannot move back):
    moving only the last of the five would leave most of the stretch; they spread every limit + 1 days, the
    last no further than the stretch needs, and one whose text names a date stays on its day."""
    phases = {"a": _phase("a", 0, 40), "b": _phase("b", 41, 41)}
    cluster = [_event(f"a{i}", "a", 0) for i in range(5)]
    fixed = close_gaps([*cluster, _event("b1", "b", 41)], phases, START, START + dt.timedelta(days=41), 8)
    assert _days(fixed) == [0, 9, 18, 27, 32, 41]
    assert [e.id for e in fixed] == ["a0", "a1", "a2", "a3", "a4", "b1"], "the time order is kept"
    assert open_gaps([e.time.date() for e in fixed], START, START + dt.timedelta(days=41), 8) == []
    from synth.life.gaps import DayPins
    pinned = [_named("a4", "a", 0, "Dinner on 1 January"), *cluster[:4]]
    kept = close_gaps([*pinned, _event("b1", "b", 41)], phases, START, START + dt.timedelta(days=41), 8,
                      pins=DayPins())
    assert {e.id: _days([e])[0] for e in kept}["a4"] == 0, "the dated one keeps its day"
    assert _days(kept) == [0, 9, 18, 27, 32, 41] and kept[0].id == "a4", "it stays first; the other four spread"


def test_the_last_event_does_not_move_back_so_far_that_the_end_of_the_timeline_opens():
    """A burst early in a long phase and one event on its last day (a local small run: the filler's event of 31
    December moved back to 24 October, and the stretch to the year's end opened behind it): the last event moves
    back at most as far as keeps the end closed, and the burst spreads into the stretch instead."""
    phases = {"a": _phase("a", 0, 41)}
    events = [_event("a1", "a", 0), _event("a2", "a", 1), _event("a3", "a", 1), _event("a4", "a", 1),
              _event("z", "a", 41)]
    end = START + dt.timedelta(days=41)
    fixed = close_gaps(events, phases, START, end, 8)
    assert (end - fixed[-1].time.date()).days <= 8, "the end stays closed"
    assert open_gaps([e.time.date() for e in fixed], START, end, 8) == []


def test_a_stretch_still_open_after_a_filler_round_gets_another(tmp_path, monkeypatch):
    """A 270M model's tiny run ended with 20 days without a trace: the stretch its filler was planned for had moved
    by the time the filler's events were re-dated. What is still open after a round gets a filler of its own."""
    from synth.stages import events as events_stage

    d = one_phase_life(tmp_path)
    draft = lambda n: {"title": f"e{n}", "description": "d", "location": "home", "day": 0, "hour": 9,  # noqa: E731
                       "minute": n, "participants": [],
                       "evidence": [{"kind": "fact", "statement": "s", "arcs": ["Arc 0"], "private": False}] * 2}
    def answer(request) -> dict:  # as many events as the request's schema asks for, all on its first day
        return {"events": [draft(n) for n in range(request.json_schema["properties"]["events"]["minItems"])]}

    real = events_stage.EventsRun.fillers
    calls = []

    def short_first(self, events):  # the first round sees only the first week of the open stretch
        found = real(self, events)
        calls.append(len(found))
        if len(calls) == 1:
            return [(phase, window.model_copy(update={"end": window.start + dt.timedelta(days=6)}))
                    for phase, window in found]
        return found

    monkeypatch.setattr(events_stage.EventsRun, "fillers", short_first)
    config = tmp_path / "c.toml"
    config.write_text("[events]\nevents_per_week = 0.34\nmin_events = 2\nmax_events = 8\nmax_gap_days = 6\n"
                      "gap_room_days = 1\n")
    fake = run_stage(tmp_path, "events", config=config, replies={"events": answer})
    assert len(fake.seen) >= 3 and calls[1] > 0  # a second round was asked for what stayed open
    events = read_records(d / "events.jsonl", Event)
    assert len({e.id for e in events}) == len(events)  # the rounds' events have ids of their own
    assert open_gaps([e.time.date() for e in events], START, END, 5) == []
