"""Referential integrity: no duplicate ids, and every id a record names exists in the file it points into."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from synth.core.fields import dict_list, id_list
from synth.quality.validate.checker import (
    ASKED_FILES,
    QUESTION_FILES,
    REGISTRY_FILES,
)


class ReferenceChecks:
    """Referential integrity: no duplicate ids, and every id a record names exists in the file it points into."""

    # ---- duplicates

    def check_duplicates(self) -> None:
        where: dict[str, list[str]] = defaultdict(list)
        for name, records in self.records.items():
            seen: set[str] = set()
            for record in records:
                rid = record["id"]
                if rid in seen:
                    self.flag(name, rid, "duplicate id within the file")
                    continue
                seen.add(rid)
                where[rid].append(name)
        for rid, names in where.items():
            if {"final.jsonl", "rejected.jsonl"} <= set(names):
                self.flag("rejected.jsonl", rid, "duplicate id: the item is also in final.jsonl (both accepted "
                                                 "and rejected)")
            elif len(names) > 1 and not (all(n in QUESTION_FILES for n in names)
                                         or all(n in REGISTRY_FILES for n in names)):
                self.flag(names[-1], rid, f"duplicate id: also in {', '.join(names[:-1])}")

    # ---- referential integrity

    def check_references(self) -> None:
        self.check_plan_refs()
        self.check_event_refs()
        self.check_spoken_refs()
        for name, record in self.each(*ASKED_FILES):
            self.check_question_refs(name, record)

    def check_plan_refs(self) -> None:
        """The ids arcs, major events and phases name (seeds, arcs, major events)."""
        for name, record in self.each("arcs.jsonl"):
            self.refs(name, record, "seed_ids", id_list(record.get("seed_ids")), "seeds.jsonl")
        for name, record in self.each("major_events.jsonl"):
            states = dict_list(record.get("arc_states"))
            self.refs(name, record, "arc_states.arc_id", [s.get("arc_id") for s in states], "arcs.jsonl")
            if record.get("seed_id") is not None:
                self.refs(name, record, "seed_id", [record.get("seed_id")], "seeds.jsonl")
        for name, record in self.each("phases.jsonl"):
            self.refs(name, record, "major_event_id", [record.get("major_event_id")], "major_events.jsonl")
            for side in ("snapshot_before", "snapshot_after"):
                status = (record.get(side) or {}).get("arc_status") if isinstance(record.get(side), dict) else None
                if isinstance(status, dict):
                    self.refs(name, record, f"{side}.arc_status", list(status), "arcs.jsonl")

    def check_event_refs(self) -> None:
        """The ids events, evidence and traces name (phases, relations of the persona, events, arcs, evidence)."""
        relations = {r.get("id") for r in dict_list(self.persona.get("relations"))}
        relations |= {p["id"] for _, p in self.each("people.jsonl") if p.get("kind") == "person"}
        for name, record in self.each(*REGISTRY_FILES):
            if record.get("first_phase_id") is not None:
                self.refs(name, record, "first_phase_id", [record.get("first_phase_id")], "phases.jsonl")
            if record.get("first_event_id") is not None:
                self.refs(name, record, "first_event_id", [record.get("first_event_id")], "events.jsonl")
        for name, record in self.each("events.jsonl"):
            self.refs(name, record, "phase_id", [record.get("phase_id")], "phases.jsonl")
            # participants point into people.jsonl too: not checked when a partial check did not load it
            if self.persona and not (self.partial and "people.jsonl" not in self.records):
                missing = [p for p in id_list(record.get("participant_ids")) if p not in relations]
                for pid in missing:
                    self.flag(name, record, f"participant_ids: '{pid}' is neither a relation of the persona nor "
                                            "in people.jsonl")
        for name, record in self.each("evidence.jsonl"):
            self.refs(name, record, "event_id", [record.get("event_id")], "events.jsonl")
            self.refs(name, record, "arc_ids", id_list(record.get("arc_ids")), "arcs.jsonl")
        for name, record in self.each("traces.jsonl"):
            self.refs(name, record, "event_id", [record.get("event_id")], "events.jsonl")
            self.refs(name, record, "evidence_ids", id_list(record.get("evidence_ids")), "evidence.jsonl")

    def check_spoken_refs(self) -> None:
        """Group chats and lifelog dialogues: members are the persona or people of its registry (relations
        included); a chat day's or dialogue's evidence exists and belongs to the events it is bound to; a line
        carries only its record's evidence and a chat speaker with an id is a member of the group."""
        people = {self.persona.get("id")} | {r.get("id") for r in dict_list(self.persona.get("relations"))}
        people |= {p["id"] for _, p in self.each("people.jsonl") if p.get("kind") == "person"}
        for name, record in self.each("groups.jsonl"):
            for member in dict_list(record.get("members")):
                # a stage's input check that does not read the registry cannot tell (those introduced later)
                if self.persona and (self.has("people.jsonl") or not self.partial) and member.get("person_id") not in people:
                    self.flag(name, record, f"members: '{member.get('person_id')}' is neither the persona nor in "
                                            "its registry")
        groups = self.by_id.get("groups.jsonl", {})
        evidence = self.by_id.get("evidence.jsonl", {})
        for name, record in self.each("chats.jsonl", "lifelog.jsonl"):
            chat = name == "chats.jsonl"
            events = id_list(record.get("event_ids")) if chat else [record.get("event_id")]
            if chat:
                self.refs(name, record, "group_id", [record.get("group_id")], "groups.jsonl")
            self.refs(name, record, "event_ids" if chat else "event_id", events, "events.jsonl")
            bound = id_list(record.get("evidence_ids"))
            self.refs(name, record, "evidence_ids", bound, "evidence.jsonl")
            for evidence_id in bound:
                item = evidence.get(evidence_id)
                if item is not None and item.get("event_id") not in events:
                    self.flag(name, record, f"evidence_ids: '{evidence_id}' belongs to an event it is not bound to")
            members = {m.get("person_id") for m in dict_list(groups.get(record.get("group_id"), {}).get("members"))}
            for i, line in enumerate(dict_list(record.get("utterances" if chat else "lines")), 1):
                stray = [e for e in id_list(line.get("evidence_ids")) if e not in bound]
                if stray:
                    self.flag(name, record, f"line {i}: carries evidence '{stray[0]}' the record is not bound to")
                if chat and members and line.get("speaker_id") and line.get("speaker_id") not in members:
                    self.flag(name, record, f"line {i}: speaker '{line.get('speaker')}' is not a member of the group")

    def check_question_refs(self, name: str, record: dict) -> None:
        self.refs(name, record, "arc_id", [record.get("arc_id")], "arcs.jsonl")
        self.refs(name, record, "digital_trace_ids", id_list(record.get("digital_trace_ids")), "traces.jsonl")
        for ref in dict_list(record.get("evidence")):
            self.refs(name, record, "evidence[].evidence_id", [ref.get("evidence_id")], "evidence.jsonl")
            traces = id_list(ref.get("digital_trace_ids"))
            self.refs(name, record, "evidence[].digital_trace_ids", traces, "traces.jsonl")
            carried_by = self.by_id.get("traces.jsonl", {})
            for tid in traces:
                trace = carried_by.get(tid)
                if trace is not None and ref.get("evidence_id") not in id_list(trace.get("evidence_ids")):
                    self.flag(name, record, f"evidence {ref.get('evidence_id')} cites trace {tid}, "
                                            "which does not carry it")

    def refs(self, name: str, record: dict, field: str, ids: Iterable[Any], target: str) -> None:
        """Every id in `ids` must exist in `target`; a missing target file is reported once per referring file."""
        ids = list(ids)
        if not ids:
            return
        if not self.has(target):
            if not self.partial and (name, target) not in self.missing_targets:
                self.missing_targets.add((name, target))
                self.flag(name, None, f"{field} names records of {target}, which is missing")
            return
        known = self.by_id[target]
        for rid in ids:
            if not isinstance(rid, str) or rid not in known:
                self.flag(name, record, f"{field}: dangling id {rid!r} (not in {target})")
