"""The life's invariants: the persona, containment of events in phases in major events in the timeline, their order, arc alignment, the snapshot chain, evidence carried by traces, privacy and trace gaps."""

from __future__ import annotations

import datetime as dt
import itertools

from synth.core.fields import as_date, as_datetime, as_int, as_list, day_of, dict_list, id_list
from synth.quality.validate.checker import (
    _parsed,
    recorded_config,
)


class LifeChecks:
    """The life's invariants: the persona, containment of events in phases in major events in the timeline, their order, arc alignment, the snapshot chain, evidence carried by traces, privacy and trace gaps."""

    # ---- the persona record and persona_id

    def check_persona(self) -> None:
        people = self.records.get("persona.jsonl", [])
        if len(people) != 1:
            self.flag("persona.jsonl", None, f"holds {len(people)} persona records (expected exactly 1)")
        self.persona = people[0] if people else {}
        pid = self.persona.get("id")
        if pid is not None and pid != self.name:
            self.flag("persona.jsonl", self.persona, f"id differs from its directory name '{self.name}'")
        for name, record in self.each(*self.records):
            if pid is not None and record.get("persona_id") != pid:
                self.flag(name, record, f"persona_id {record.get('persona_id')!r} is not this persona ({pid!r})")

    # ---- time containment

    def check_containment(self) -> None:
        start, end = as_date(self.persona.get("start")), as_date(self.persona.get("end"))
        for name, record in self.each("persona.jsonl", "major_events.jsonl", "phases.jsonl"):
            self.check_span(name, record)
        for name, record in self.each("major_events.jsonl"):
            self.inside(name, record, "persona timeline", start, end)
        majors = self.by_id.get("major_events.jsonl", {})
        for name, record in self.each("phases.jsonl"):
            parent = majors.get(record.get("major_event_id"))
            if parent is not None:
                self.inside(name, record, f"major event {parent['id']}", as_date(parent.get("start")),
                            as_date(parent.get("end")))
        phases = self.by_id.get("phases.jsonl", {})
        for name, record in self.each("events.jsonl"):
            parent = phases.get(record.get("phase_id"))
            day = day_of(record.get("time"))
            if day is None:
                self.flag(name, record, f"time: not an ISO datetime ({record.get('time')!r})")
            elif parent is not None:
                lo, hi = as_date(parent.get("start")), as_date(parent.get("end"))
                if lo is not None and hi is not None and not lo <= day <= hi:
                    self.flag(name, record, f"time {record['time']} is outside its phase {parent['id']} "
                                            f"({lo}..{hi})")
        self.check_trace_times()

    def check_span(self, name: str, record: dict) -> None:
        lo, hi = as_date(record.get("start")), as_date(record.get("end"))
        for field, value in (("start", lo), ("end", hi)):
            if value is None:
                self.flag(name, record, f"{field}: not an ISO date ({record.get(field)!r})")
        if lo is not None and hi is not None and hi < lo:
            self.flag(name, record, f"ends ({hi}) before it starts ({lo})")

    def inside(self, name: str, record: dict, what: str, lo: dt.date | None, hi: dt.date | None) -> None:
        start, end = as_date(record.get("start")), as_date(record.get("end"))
        if None in (start, end, lo, hi):
            return
        if start < lo or end > hi:
            self.flag(name, record, f"{start}..{end} is outside its {what} ({lo}..{hi})")

    def check_trace_times(self) -> None:
        events = self.by_id.get("events.jsonl", {})
        for name, record in self.each("traces.jsonl"):
            when = as_datetime(record.get("time"))
            if when is None:
                self.flag(name, record, f"time: not an ISO datetime ({record.get('time')!r})")
                continue
            event = events.get(record.get("event_id"))
            happened = as_datetime(event.get("time")) if event is not None else None
            if happened is not None and when < happened:
                self.flag(name, record, f"time {record['time']} is before its event {event['id']} "
                                        f"({event['time']})")

    def check_major_event_order(self) -> None:
        majors = sorted(self.records.get("major_events.jsonl", []), key=lambda m: as_int(m.get("index")))
        previous = None
        for record in majors:
            start = as_date(record.get("start"))
            if start is None:
                continue
            if previous is not None and start < as_date(previous["start"]):
                self.flag("major_events.jsonl", record, f"index {record.get('index')} starts {start}, before "
                          f"index {previous.get('index')} ({previous['start']}): major events out of order")
            previous = record

    # ---- order of major events and arc alignment

    def majors_in_time_order(self) -> list[dict]:
        majors = [m for m in self.records.get("major_events.jsonl", []) if as_date(m.get("start")) is not None]
        return sorted(majors, key=lambda m: (as_date(m["start"]), as_int(m.get("index"))))

    def check_arc_alignment(self) -> None:
        arcs = self.by_id.get("arcs.jsonl", {})
        last: dict[str, tuple[int, str]] = {}
        for record in self.majors_in_time_order():
            for state in dict_list(record.get("arc_states")):
                arc_id, index = state.get("arc_id"), state.get("anchor_index")
                if not isinstance(index, int) or arc_id not in arcs:
                    continue  # a dangling arc or a bad index is reported by the reference and schema checks
                count = len(as_list(arcs[arc_id].get("anchor_states")))
                if not 0 <= index < count:
                    self.flag("major_events.jsonl", record,
                              f"arc {arc_id}: anchor_index {index} is outside its {count} anchor states")
                before = last.get(arc_id)
                if before is not None and index < before[0]:
                    self.flag("major_events.jsonl", record, f"arc {arc_id}: anchor_index goes back from "
                              f"{before[0]} (major event {before[1]}) to {index}")
                last[arc_id] = (index, record["id"])

    # ---- the rolling snapshot

    def check_snapshot_chain(self) -> None:
        order = {m["id"]: n for n, m in enumerate(self.majors_in_time_order())}
        # phases of unknown major events are dangling-id violations already; they cannot be placed in the chain
        phases = [p for p in self.records.get("phases.jsonl", []) if p.get("major_event_id") in order]
        phases.sort(key=lambda p: (order[p["major_event_id"]], as_int(p.get("index"))))
        for previous, phase in itertools.pairwise(phases):
            if phase.get("snapshot_before") != previous.get("snapshot_after"):
                self.flag("phases.jsonl", phase, f"snapshot_before differs from the snapshot_after of the "
                                                 f"previous phase {previous['id']}: the rolling snapshot chain "
                                                 "is broken")

    def check_arc_phases(self) -> None:
        """Arc states move with the phases, never in the gaps: along the phase chain a state never goes back, an
        everyday phase changes none, and a major event's alignment is the state its last phase ends in — so
        each change of state has a phase that carries it. Phases without `arc_states` (older data) are skipped."""
        majors = self.majors_in_time_order()
        order = {m["id"]: n for n, m in enumerate(majors)}
        phases = [p for p in self.records.get("phases.jsonl", [])
                  if p.get("major_event_id") in order and dict_list(p.get("arc_states"))]
        phases.sort(key=lambda p: (order[p["major_event_id"]], as_int(p.get("index"))))
        states = {}
        last_of: dict[str, dict] = {}
        for phase in phases:
            now = {s.get("arc_id"): s.get("anchor_index") for s in dict_list(phase.get("arc_states"))}
            everyday = majors[order[phase["major_event_id"]]].get("kind") == "everyday"
            for arc, index in now.items():
                before = states.get(arc, 0)
                if isinstance(index, int) and index < before:
                    self.flag("phases.jsonl", phase, f"arc {arc}: state goes back from {before} to {index}")
                elif isinstance(index, int) and index > before and everyday:
                    self.flag("phases.jsonl", phase, f"arc {arc}: state moves from {before} to {index} in an "
                                                     "everyday phase")
            states.update({a: i for a, i in now.items() if isinstance(i, int)})
            last_of[phase["major_event_id"]] = now
        for major in majors:
            ended = last_of.get(major["id"])
            if ended is None:
                continue
            for state in dict_list(major.get("arc_states")):
                if ended.get(state.get("arc_id"), state.get("anchor_index")) != state.get("anchor_index"):
                    self.flag("major_events.jsonl", major, f"arc {state.get('arc_id')}: aligned to state "
                              f"{state.get('anchor_index')} but its last phase ends in state "
                              f"{ended.get(state.get('arc_id'))}: no phase carries the change")

    # ---- evidence grounding and causality

    def check_evidence_carried(self) -> None:
        if not self.has("traces.jsonl"):
            return
        carried = {e for _, t in self.each("traces.jsonl") for e in id_list(t.get("evidence_ids"))}
        for name, record in self.each("evidence.jsonl"):
            if record["id"] not in carried:
                self.flag(name, record, "carried by no trace")

    def check_privacy(self) -> None:
        """Public media never reveal what the person hides (synth.quality.privacy): no trace of a public medium carries
        evidence marked private (a violation); one that repeats the distinctive words of a private statement of its
        phase or of the lookback before it is a warning (`warnings`: the word check is a heuristic). Thresholds and public media come from the
        dataset's recorded config (dataset.json), else the shipped defaults."""
        from synth.quality.privacy import LeakRule, PrivacyIndex
        from synth.records import Event, Evidence, Trace

        if not self.has("traces.jsonl") or not self.has("evidence.jsonl"):
            return
        index = PrivacyIndex(_parsed(self.records.get("events.jsonl", []), Event),
                             _parsed(self.records.get("evidence.jsonl", []), Evidence),
                             LeakRule.of(recorded_config(self.dir.parent).get("traces", {})))
        for record in self.records.get("traces.jsonl", []):
            for trace in _parsed([record], Trace):
                for leak in index.leaks(trace):
                    line = f"{trace.medium} is public but {leak.describe()}"
                    if leak.how == "carried":
                        self.flag("traces.jsonl", record, line)
                    else:
                        self.warnings.append(f"{self.name}/traces.jsonl: {trace.id}: {line}")

    def check_trace_gaps(self) -> None:
        """The longest stretch without a trace (synth.life.gaps): none longer than `[events] max_gap_days`
        inside the timeline, unless it overlaps a major event of a travel seed."""
        from synth.config.conf import recorded_section
        from synth.life.gaps import open_gaps, travel_spans
        from synth.records import EventSeed, MajorEvent

        start, end = as_date(self.persona.get("start")), as_date(self.persona.get("end"))
        if not self.has("traces.jsonl") or start is None or end is None:
            return
        events = recorded_section(recorded_config(self.dir.parent), "events")
        travel = travel_spans(_parsed(self.records.get("major_events.jsonl", []), MajorEvent),
                              _parsed(self.records.get("seeds.jsonl", []), EventSeed), events["travel_seeds"])
        days = [day for day in (day_of(t.get("time")) for _, t in self.each("traces.jsonl")) if day is not None]
        for gap in open_gaps(days, start, end, int(events["max_gap_days"]), travel):
            self.flag("traces.jsonl", "-", f"no trace for {gap.days} days ({gap.after} to {gap.before}), more than "
                                           f"max_gap_days {events['max_gap_days']}")
