"""Arc buckets and the sliding window on a hand-made timeline (synth.windows: pure functions)."""

from __future__ import annotations

import datetime as dt

from synth.models import Evidence, Trace
from synth.windows import (
    SegmentEvidence, candidates, eligible, observable_evidence, spread, trajectory_segments, window_positions,
)

START = dt.date(2022, 1, 1)
END = START + dt.timedelta(days=99)


def at(day: int, hour: int = 9) -> dt.datetime:
    return dt.datetime.combine(START + dt.timedelta(days=day), dt.time(hour))


def item(name: str, day: int, arcs: tuple[str, ...]) -> SegmentEvidence:
    return SegmentEvidence(evidence_id=name, arc_ids=arcs, kind="fact", statement=name, time=at(day),
                           trace_ids=(f"t-{name}",), trace_times=(at(day),))


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


def test_segments_keep_the_newest_evidence_and_late_evidence_reaches_the_last_position():
    items = [item("x1", 5, ("X",)), item("x2", 40, ("X",)), item("x3", 95, ("X",)), item("late", 130, ("X",))]
    segments = trajectory_segments(items, ["X"], START, END, 60, 30, max_evidence=2)
    assert [e.evidence_id for e in segments[-1].evidence] == ["x3", "late"]
    assert segments[-1].new_ids == {"x3", "late"}


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
