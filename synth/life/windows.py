"""Stage IV's grounding: evidence bucketed per life arc, a sliding window over the timeline, trajectory segments."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from synth.config import question_types
from synth.records import Event, Evidence, MajorEvent, Phase, Trace


@dataclass(frozen=True)
class SegmentEvidence:
    """One evidence statement as the traces make it observable: it exists from its first carrying trace on."""

    evidence_id: str
    arc_ids: tuple[str, ...]
    kind: str
    statement: str
    time: dt.datetime  # the earliest trace that carries it
    trace_ids: tuple[str, ...]  # every trace carrying it, oldest first
    trace_times: tuple[dt.datetime, ...]
    states: tuple[tuple[str, int], ...] = ()  # (arc id, anchor index) of the major event it happened under
    event_id: str = ""  # the event it belongs to: an event's evidence is shown together (a causal chain's steps)
    phase_id: str = ""  # the phase of its event: a change of state is lived somewhere inside its phase
    private: bool = False  # kept to the person or someone close: a friend asking cannot presuppose it

    @property
    def newest_trace_time(self) -> dt.datetime:
        return self.trace_times[-1]

    def state_of(self, arc_id: str) -> int | None:
        """The anchor state `arc_id` was in when this evidence happened (None when the data does not say)."""
        return next((index for arc, index in self.states if arc == arc_id), None)


@dataclass(frozen=True)
class Window:
    index: int
    start: dt.date  # inclusive
    end: dt.date  # inclusive


@dataclass(frozen=True)
class Segment:
    """An active arc bucket at one window position: its accumulated evidence as the planner sees it (at most the
    cap, chosen over the bucket's whole span by `planner_view`), oldest first."""

    arc_id: str
    window: Window
    evidence: tuple[SegmentEvidence, ...]
    new_ids: frozenset[str]  # evidence that arrived at this position (inside the window, after the last one)

    @property
    def key(self) -> str:
        return f"{self.arc_id}/{self.window.end.isoformat()}"

    @property
    def distinct_days(self) -> int:
        return len({e.time.date() for e in self.evidence})


def arc_states(events: Iterable[Event], phases: Iterable[Phase],
               major_events: Iterable[MajorEvent]) -> dict[str, tuple[tuple[str, int], ...]]:
    """Event id → the (arc id, anchor index) pairs its phase ends in (the phase's `arc_states`: arcs move with the
    phases), else those of the major event it happened under (event → phase → major event; data from before the
    phases carried states): the arc states an event's evidence shows. An event whose chain is broken gets none."""
    majors = {m.id: tuple((s.arc_id, s.anchor_index) for s in m.arc_states) for m in major_events}
    own = {p.id: (tuple((s.arc_id, s.anchor_index) for s in p.arc_states) if p.arc_states
                  else majors.get(p.major_event_id, ())) for p in phases}
    return {e.id: own.get(e.phase_id, ()) for e in events}


def observable_evidence(evidence: Iterable[Evidence], traces: Iterable[Trace],
                        states: Mapping[str, tuple[tuple[str, int], ...]] | None = None,
                        phases: Mapping[str, str] | None = None) -> list[SegmentEvidence]:
    """Evidence carried by at least one trace, timed by its first trace; evidence no trace carries cannot be asked
    about (nothing to retrieve), so it is left out. `states` (event id → arc states, from `arc_states`) dates each
    item's arc states when the data has them; `phases` (event id → phase id), its phase. Sorted by time, then id
    (deterministic)."""
    carriers: dict[str, list[Trace]] = {}
    for trace in traces:
        for evidence_id in trace.evidence_ids:
            carriers.setdefault(evidence_id, []).append(trace)
    out = []
    for item in evidence:
        carried = sorted(carriers.get(item.id, []), key=lambda t: (t.time, t.id))
        if not carried:
            continue
        out.append(SegmentEvidence(
            evidence_id=item.id, arc_ids=tuple(item.arc_ids), kind=item.kind, statement=item.statement,
            time=carried[0].time, trace_ids=tuple(t.id for t in carried), trace_times=tuple(t.time for t in carried),
            states=(states or {}).get(item.event_id, ()), event_id=item.event_id, private=item.private,
            phase_id=(phases or {}).get(item.event_id, ""),
        ))
    return sorted(out, key=lambda e: (e.time, e.evidence_id))


def window_positions(start: dt.date, end: dt.date, window_days: int, stride_days: int) -> list[Window]:
    """Windows of `window_days` days whose ends advance by `stride_days` until one reaches the timeline's end."""
    window_days, stride_days = max(1, int(window_days)), max(1, int(stride_days))
    out: list[Window] = []
    last = start + dt.timedelta(days=window_days - 1)
    while True:
        w_end = min(last, end)
        w_start = max(start, w_end - dt.timedelta(days=window_days - 1))
        out.append(Window(index=len(out), start=w_start, end=w_end))
        if w_end >= end:
            return out
        last += dt.timedelta(days=stride_days)


def trajectory_segments(items: Sequence[SegmentEvidence], arc_ids: Sequence[str], start: dt.date, end: dt.date,
                        window_days: int, stride_days: int, max_evidence: int) -> list[Segment]:
    """Slide the window; a bucket is active at a position when evidence arrived since the previous position; its
    segment is everything accumulated so far, at most `max_evidence` of it chosen over its whole span
    (`planner_view`). Evidence dated after the timeline's end still arrives at the last position. Ordered by
    window, then by `arc_ids` order."""
    windows = window_positions(start, end, window_days, stride_days)
    known = set(arc_ids)
    buckets: dict[str, list[SegmentEvidence]] = {arc: [] for arc in arc_ids}
    out: list[Segment] = []
    cursor = 0
    ordered = sorted(items, key=lambda e: (e.time, e.evidence_id))
    for window in windows:
        last = window is windows[-1]
        arrived: dict[str, list[SegmentEvidence]] = {}
        while cursor < len(ordered) and (last or ordered[cursor].time.date() <= window.end):
            item = ordered[cursor]
            cursor += 1
            for arc in dict.fromkeys(item.arc_ids):  # an arc named twice still gets the evidence once
                if arc in known:
                    buckets[arc].append(item)
                    arrived.setdefault(arc, []).append(item)
        for arc in arc_ids:
            if arc in arrived:
                new_ids = frozenset(e.evidence_id for e in arrived[arc])
                out.append(Segment(arc_id=arc, window=window, new_ids=new_ids,
                                   evidence=planner_view(buckets[arc], arc, new_ids, max_evidence)))
    return out


def state_changes(bucket: Sequence[SegmentEvidence], arc_id: str) -> list[int]:
    """Positions in `bucket` whose anchor state of `arc_id` differs from the last known one before it (the first
    known state is no change: the bucket's earliest item stands for where the arc starts)."""
    out, last = [], None
    for position, item in enumerate(bucket):
        state = item.state_of(arc_id)
        if state is None:
            continue
        if last is not None and state != last:
            out.append(position)
        last = state
    return out


def change_events(bucket: Sequence[SegmentEvidence], arc_id: str) -> list[int]:
    """The first position of each event (oldest first) of the phases in which `arc_id` changed state: the phase of
    each change (`state_changes`), and that of the earliest item when the arc already stands past its first state
    there (it started at its first). A phase's state is the one it ends in, so the change is lived in any of its
    events, not only the first seen (capable planners found the event that triggered a state missing while its
    phase's first evidence was shown)."""
    first = next((item.state_of(arc_id) for item in bucket if item.state_of(arc_id) is not None), None)
    starts = state_changes(bucket, arc_id) + ([0] if bucket and first else [])
    phases = {bucket[p].phase_id for p in starts if bucket[p].phase_id}
    out, seen = [], set()
    for position, item in enumerate(bucket):
        if item.phase_id in phases and item.event_id not in seen:
            seen.add(item.event_id)
            out.append(position)
    return out


def spread_in_time(bucket: Sequence[SegmentEvidence], chosen: set[int], count: int) -> set[int]:
    """Add `count` positions of `bucket`, each the item farthest in time from everything chosen so far (the
    middle of the widest gap); ties go to the earlier item, so with nothing chosen the first pick is the earliest.
    Deterministic."""
    chosen = set(chosen)
    seconds = [(item.time - bucket[0].time).total_seconds() for item in bucket] if bucket else []
    gap = [min((abs(s - seconds[c]) for c in chosen), default=0.0) for s in seconds]
    for _ in range(max(0, min(count, len(bucket) - len(chosen)))):
        pick = max((p for p in range(len(bucket)) if p not in chosen), key=lambda p: (gap[p], -p))
        chosen.add(pick)
        gap = [min(g, abs(s - seconds[pick])) for g, s in zip(gap, seconds, strict=True)]
    return chosen


def planner_view(bucket: Sequence[SegmentEvidence], arc_id: str, recent_ids: frozenset[str] | set[str],
                 cap: int) -> tuple[SegmentEvidence, ...]:
    """At most `cap` items of an arc's accumulated evidence (oldest first), chosen over its whole span rather
    than the newest `cap`: the arc's earliest item, its newest, each state change (spread over them when there
    are more than fit), up to half the room left for the other events of the phases the changes are lived in
    (`change_events`), up to half the room then left for the window's newest arrivals (`recent_ids`, what made the
    segment active), and the rest where the span is least covered (`spread_in_time`); a chosen item brings the
    other evidence of its event while they fit (`with_siblings`), so a causal chain is not split."""
    cap = max(1, int(cap))
    if len(bucket) <= cap:
        return tuple(bucket)
    chosen = list(dict.fromkeys([0, len(bucket) - 1]))[:cap]
    changes = [p for p in state_changes(bucket, arc_id) if p not in chosen]
    room = cap - len(chosen)
    chosen += [changes[i] for i in spread(room, len(changes))]
    shown_events = {bucket[p].event_id for p in chosen}
    lived = [p for p in change_events(bucket, arc_id) if bucket[p].event_id not in shown_events]
    chosen += lived[:(cap - len(chosen) + 1) // 2]
    recent = [p for p in reversed(range(len(bucket))) if bucket[p].evidence_id in recent_ids and p not in chosen]
    chosen += recent[:(cap - len(chosen)) // 2]
    chosen = with_siblings(bucket, chosen, chosen, cap)
    while len(chosen) < cap:
        (pick,) = spread_in_time(bucket, set(chosen), 1) - set(chosen)
        chosen = with_siblings(bucket, chosen + [pick], [pick], cap)
    return tuple(bucket[p] for p in sorted(chosen))


def with_siblings(bucket: Sequence[SegmentEvidence], chosen: list[int], of: list[int], cap: int) -> list[int]:
    """`chosen` plus, for each position in `of` (in turn), the other evidence of its event when they all fit
    under `cap`: spreading in time alone never picks two items of one moment, which split an event's causal
    chain (the cause shown, its consequence not) or dropped the line a question turns on."""
    out = list(dict.fromkeys(chosen))
    for position in of:
        event = bucket[position].event_id
        group = [p for p, item in enumerate(bucket) if event and item.event_id == event and p not in out]
        if len(out) + len(group) <= cap:
            out += group
    return out


def spread(count: int, population: int, offset: float = 0.0) -> list[int]:
    """`count` indices spread evenly over range(population), shifted by a fraction `offset` in [0, 1) so that
    different question types land on different segments. Unique and ascending."""
    if population <= 0 or count <= 0:
        return []
    if count >= population:
        return list(range(population))
    picks = [min(population - 1, int((i + offset) * population / count)) for i in range(count)]
    return sorted(dict.fromkeys(picks))


def eligible(segment: Segment, question_type: str, dimension: str | None = None) -> bool:
    """Whether a segment holds enough for a type to be plannable (its spec's minimum evidence, on enough days: a
    multi-point type needs several) and, when its arc's `dimension` is given, whether the type is asked on it."""
    spec = question_types.get(question_type) or question_types.QuestionTypeSpec(question_type, "extra")
    return (len(segment.evidence) >= spec.min_evidence and segment.distinct_days >= spec.min_days
            and (dimension is None or dimension in spec.dimensions))


def candidates(segments: Sequence[Segment], types: Sequence[str], per_type: int,
               dimensions: Mapping[str, str] | None = None) -> list[tuple[str, Segment]]:
    """Up to `per_type` (type, segment) pairs per type, spread deterministically over the segments that can carry
    that type (`dimensions`: arc id → its dimension, for the types asked on some dimensions only); type order
    first, then timeline order."""
    out = []
    for index, question_type in enumerate(types):
        pool = [s for s in segments if eligible(s, question_type, (dimensions or {}).get(s.arc_id))]
        for pick in spread(per_type, len(pool), offset=index / max(1, len(types))):
            out.append((question_type, pool[pick]))
    return out
