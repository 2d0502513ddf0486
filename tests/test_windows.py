"""Arc buckets and the sliding window on a hand-made timeline (synth.life.windows: pure functions)."""

from __future__ import annotations

import datetime as dt

from synth.life.windows import (
    SegmentEvidence,
    arc_states,
    candidates,
    change_events,
    eligible,
    observable_evidence,
    planner_view,
    spread,
    state_changes,
    trajectory_segments,
    window_positions,
)
from synth.records import ArcState, Event, Evidence, MajorEvent, Phase, Snapshot, Trace

START = dt.date(2022, 1, 1)
END = START + dt.timedelta(days=99)


def at(day: int, hour: int = 9) -> dt.datetime:
    return dt.datetime.combine(START + dt.timedelta(days=day), dt.time(hour))


def item(name: str, day: int, arcs: tuple[str, ...], states: tuple[tuple[str, int], ...] = ()) -> SegmentEvidence:
    return SegmentEvidence(evidence_id=name, arc_ids=arcs, kind="fact", statement=name, time=at(day),
                           trace_ids=(f"t-{name}",), trace_times=(at(day),), states=states)


def test_window_positions_slide_by_the_stride_and_clip_at_the_end():
    windows = window_positions(START, END, 60, 30)
    assert [(w.start, w.end) for w in windows] == [
        (START, START + dt.timedelta(days=59)),
        (START + dt.timedelta(days=30), START + dt.timedelta(days=89)),
        (START + dt.timedelta(days=40), END),
    ]
    assert [w.index for w in windows] == [0, 1, 2]
    # a window longer than the timeline is one position covering all of it
    assert [(w.start, w.end) for w in window_positions(START, END, 500, 30)] == [(START, END)]


def test_observable_evidence_is_timed_by_its_first_trace_and_drops_untraced_evidence():
    ev = [Evidence(id=i, persona_id="p", event_id="e", kind="fact", statement=i, arc_ids=["x"]) for i in "abc"]
    traces = [
        Trace(id="t2", persona_id="p", event_id="e", evidence_ids=["a"], medium="post", time=at(9), intent="",
              audience="", content=""),
        Trace(id="t1", persona_id="p", event_id="e", evidence_ids=["a", "b"], medium="diary", time=at(3),
              intent="", audience="", content=""),
    ]
    out = observable_evidence(ev, traces)
    assert [e.evidence_id for e in out] == ["a", "b"]  # c: no trace carries it
    assert out[0].time == at(3) and out[0].trace_ids == ("t1", "t2") and out[0].newest_trace_time == at(9)


def test_active_buckets_and_accumulated_segments():
    items = [item("x1", 5, ("X",)), item("y1", 10, ("Y",)), item("x2", 40, ("X",)), item("x3", 95, ("X",))]
    segments = trajectory_segments(items, ["X", "Y"], START, END, 60, 30, max_evidence=24)
    # position 0 (days 0-59): both buckets received evidence; position 1 (60-89): none; position 2: only X
    assert [(s.arc_id, s.window.index) for s in segments] == [("X", 0), ("Y", 0), ("X", 2)]
    x0, y0, x2 = segments
    assert [e.evidence_id for e in x0.evidence] == ["x1", "x2"] and x0.new_ids == {"x1", "x2"}
    assert [e.evidence_id for e in y0.evidence] == ["y1"]
    assert [e.evidence_id for e in x2.evidence] == ["x1", "x2", "x3"]  # accumulated, not just the window
    assert x2.new_ids == {"x3"}
    assert x2.key == f"X/{END.isoformat()}"


def test_a_capped_segment_keeps_the_arc_start_and_late_evidence_reaches_the_last_position():
    items = [item("x1", 5, ("X",)), item("x2", 40, ("X",)), item("x3", 95, ("X",)), item("late", 130, ("X",))]
    segments = trajectory_segments(items, ["X"], START, END, 60, 30, max_evidence=2)
    assert [e.evidence_id for e in segments[-1].evidence] == ["x1", "late"]  # not the newest two
    assert segments[-1].new_ids == {"x3", "late"}
    assert [e.evidence_id for e in trajectory_segments(items, ["X"], START, END, 60, 30, 3)[-1].evidence] == \
        ["x1", "x2", "late"]  # the third slot: the middle of the widest gap (x2 and x3 tie; the earlier wins)


def long_arc(count: int, every: int = 3, states: dict[int, int] | None = None) -> list[SegmentEvidence]:
    """One arc's evidence, one item every `every` days; `states` maps an item's position to its anchor state from
    that position on (none: the data carries no states)."""
    out, state = [], None
    for n in range(count):
        state = (states or {}).get(n, state)
        out.append(item(f"x{n:03d}", n * every, ("X",), (("X", state),) if state is not None else ()))
    return out


def test_a_long_arc_is_shown_across_its_whole_span_not_its_newest_items():
    bucket = long_arc(60)  # 180 days, no states in the data: spread evenly
    recent = frozenset(e.evidence_id for e in bucket[50:])
    for cap in (1, 2, 5, 8, 12, 24):
        shown = planner_view(bucket, "X", recent, cap)
        assert len(shown) == min(cap, len(bucket)) and list(shown) == sorted(shown, key=lambda e: e.time)
        assert shown[0] is bucket[0]  # the arc's beginning stays in view
        assert len({e.evidence_id for e in shown}) == len(shown)
        if cap >= 2:
            assert shown[-1] is bucket[-1]
    shown = planner_view(bucket, "X", recent, 12)
    span = (bucket[-1].time - bucket[0].time) / 4
    quarters = [sum(1 for e in shown if bucket[0].time + q * span <= e.time < bucket[0].time + (q + 1) * span)
                for q in range(4)]
    assert all(quarters), quarters  # every quarter of the span is represented
    assert sum(e.evidence_id in recent for e in shown) <= 6  # the window's arrivals take at most half the room
    gaps = [(b.time - a.time).days for a, b in zip(shown, shown[1:], strict=False)]
    assert max(gaps) <= 180 / 4  # no quarter of the arc is left dark
    assert planner_view(bucket[:8], "X", recent, 12) == tuple(bucket[:8])  # under the cap: everything


def test_each_state_change_of_the_arc_is_shown():
    bucket = long_arc(60, states={0: 0, 17: 1, 18: 2, 41: 1})
    assert state_changes(bucket, "X") == [17, 18, 41]
    shown = planner_view(bucket, "X", frozenset(), 8)
    names = [e.evidence_id for e in shown]
    assert {"x000", "x017", "x018", "x041", "x059"} <= set(names) and len(names) == 8
    # more changes than room: the earliest and newest stay, the changes are spread over what is left
    flapping = long_arc(30, states={n: n % 2 for n in range(30)})
    shown = planner_view(flapping, "X", frozenset(), 5)
    assert shown[0] is flapping[0] and shown[-1] is flapping[-1] and len(shown) == 5
    # another arc's states are not this arc's changes
    assert state_changes(long_arc(10, states={0: 0, 5: 1}), "Y") == []


def test_every_event_of_a_phase_that_changes_state_is_shown():
    """Capable planners (en and zh, 75-day lives, eight items per arc shown) found the event that triggered a state
    missing: a phase's state is the one it ends in, so its first evidence marked the change while the event that
    lived it — the midnight redline, the crash — was left out. Each event of a change's phase is shown."""
    from dataclasses import replace

    plan = [("a", "P1", 6, 1, 2), ("b", "P1", 11, 1, 3), ("c", "P2", 16, 2, 2), ("d", "P2", 26, 2, 3),
            ("e", "P3", 63, 2, 1)]  # event, phase, day, the phase's state, evidence count
    bucket = [replace(item(f"{event}{n}", day, ("X",), (("X", state),)), event_id=event, phase_id=phase)
              for event, phase, day, state, count in plan for n in range(count)]
    everything = frozenset(e.evidence_id for e in bucket)  # a 75-day window: all of it arrived in this window
    shown = planner_view(bucket, "X", everything, 8)
    assert len(shown) == 8 and {e.event_id for e in shown} == {"a", "b", "c", "d", "e"}
    assert change_events(bucket, "X") == [0, 2, 5, 7]  # the arc stood at state 1 from its first phase on
    # an arc first seen at its first state: its first phase holds no change
    calm = [replace(e, states=(("X", 0 if e.phase_id == "P1" else 2),)) for e in bucket]
    assert change_events(calm, "X") == [5, 7]


def test_arc_states_follow_event_phase_major_event():
    snap = Snapshot(energy=5, stress=5, dominant_emotion="calm", focus="f", arc_status={})
    majors = [MajorEvent(id="m1", persona_id="p", index=0, title="t", description="d", start=START, end=END,
                         arc_states=[ArcState(arc_id="X", anchor_index=2), ArcState(arc_id="Y", anchor_index=0)])]
    phases = [Phase(id="ph", persona_id="p", major_event_id="m1", index=0, title="t", description="d", start=START,
                    end=END, snapshot_before=snap, snapshot_after=snap)]
    events = [Event(id=e, persona_id="p", phase_id=phase, time=at(3), title="t", description="d", location="l",
                    participant_ids=[]) for e, phase in (("e1", "ph"), ("e2", "gone"))]
    states = arc_states(events, phases, majors)
    assert states == {"e1": (("X", 2), ("Y", 0)), "e2": ()}
    ev = [Evidence(id="a", persona_id="p", event_id="e1", kind="fact", statement="a", arc_ids=["X"])]
    traces = [Trace(id="t", persona_id="p", event_id="e1", evidence_ids=["a"], medium="diary", time=at(3), intent="",
                    audience="", content="")]
    [found] = observable_evidence(ev, traces, states)
    assert found.state_of("X") == 2 and found.state_of("Z") is None
    assert observable_evidence(ev, traces)[0].states == ()
    # a phase that carries its own states (arcs move with the phases) wins over its major event's alignment
    carried = [phases[0].model_copy(update={"arc_states": [ArcState(arc_id="X", anchor_index=1)]})]
    assert arc_states(events, carried, majors) == {"e1": (("X", 1),), "e2": ()}


def test_evidence_of_two_arcs_lands_in_both_and_unknown_arcs_are_ignored():
    items = [item("both", 5, ("X", "Y", "X")), item("ghost", 6, ("Z",))]
    segments = trajectory_segments(items, ["X", "Y"], START, END, 60, 30, max_evidence=5)
    assert [(s.arc_id, [e.evidence_id for e in s.evidence]) for s in segments] == [("X", ["both"]), ("Y", ["both"])]


def test_spread_is_even_unique_and_shifted_by_the_offset():
    assert spread(3, 3) == [0, 1, 2]
    assert spread(5, 2) == [0, 1]
    assert spread(2, 10) == [0, 5]
    assert spread(2, 10, offset=0.5) == [2, 7]
    assert spread(0, 10) == [] and spread(3, 0) == []
    picks = spread(4, 9, offset=0.9)
    assert picks == sorted(set(picks)) and all(0 <= p < 9 for p in picks)


def test_candidates_respect_eligibility_and_the_per_type_limit():
    one = trajectory_segments([item("a", 5, ("X",))], ["X"], START, END, 60, 30, 24)[0]
    many = trajectory_segments([item("a", 5, ("X",)), item("b", 6, ("X",)), item("c", 7, ("X",))], ["X"],
                               START, END, 60, 30, 24)[0]
    same_day = trajectory_segments([item("a", 5, ("X",)), item("b", 5, ("X",)), item("c", 5, ("X",))], ["X"],
                                   START, END, 60, 30, 24)[0]
    assert eligible(one, "factual") and not eligible(one, "comparison")
    assert eligible(many, "trajectory") and not eligible(same_day, "trajectory")
    picks = candidates([one, many, same_day], ["factual", "trajectory"], per_type=2)
    assert [(t, s) for t, s in picks if t == "trajectory"] == [("trajectory", many)]
    assert len([p for p in picks if p[0] == "factual"]) == 2


def _bucket(events: list[str]) -> list:
    """One item per entry, a day apart unless two entries share an event (then at the same moment)."""
    from synth.life.windows import SegmentEvidence

    out, day = [], 0
    for n, event in enumerate(events):
        if n and event != events[n - 1]:
            day += 1
        when = dt.datetime(2022, 1, 1, 9) + dt.timedelta(days=day)
        out.append(SegmentEvidence(evidence_id=f"e{n}", arc_ids=("X",), kind="fact", statement=f"s{n}", time=when,
                                   trace_ids=(f"t{n}",), trace_times=(when,), event_id=event))
    return out


def test_an_events_evidence_is_shown_together():
    """Spreading picks in time never chose two items of one moment, which split an event's causal chain (the cause
    shown, the rule or the concealment a question turns on dropped): a chosen item brings its event's others."""
    from synth.life.windows import planner_view

    bucket = _bucket(["a", "b", "c", "d", "chain", "chain", "chain", "f", "g", "h", "i", "j"])
    shown = {e.evidence_id for e in planner_view(bucket, "X", frozenset(), 7)}
    chain = {"e4", "e5", "e6"}
    assert len(shown) == 7
    assert chain <= shown or not chain & shown, f"an event's chain split: {sorted(shown)}"
    recent = planner_view(bucket, "X", frozenset({"e5"}), 6)
    assert chain <= {e.evidence_id for e in recent}, "a recent item brings its event's other evidence"
