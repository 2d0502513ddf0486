"""`synth validate`: check a dataset directory against DESIGN.md's invariants (principle 8 and the linkage fields).

Files are read line by line with plain `json`, never the strict pydantic readers, so a hand-corrupted file is still
checked as far as it can be and every problem becomes one line naming the persona, the file, the record and what is
wrong — nothing here raises on bad data."""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from synth.config import question_types
from synth.core.fields import as_date, as_datetime, as_int, as_list, day_of, dict_list, id_list
from synth.life.lifelog_calendar import tree_problems
from synth.quality import rules, type_checks  # noqa: F401  (type_checks attaches the extra types' checks)
from synth.records import FILES

# Question items flow qa → mcq → final | rejected and may keep their id along the way.
QUESTION_FILES = ("qa.jsonl", "mcq.jsonl", "final.jsonl", "rejected.jsonl")
# The files whose items are asked: causality, references and (for the MCQ-shaped ones) the choice layout.
ASKED_FILES = ("qa.jsonl", "mcq.jsonl", "final.jsonl")
MCQ_FILES = ("mcq.jsonl", "final.jsonl")
# The registry as the phases left it, and as the events completed it: the second repeats the first's entries.
REGISTRY_FILES = ("phase_people.jsonl", "people.jsonl")


def validate_dataset(out: Path) -> list[str]:
    """Every violation under `out`, one human-readable line each; an empty list means every invariant holds."""
    return [line for _, line in violations(out)]


def violations(out: Path) -> list[tuple[str, str]]:
    """Every violation as (kind, line); the kind names the invariant: parse, persona, duplicates, references,
    containment, major_event_order, arc_alignment, snapshot_chain, arc_phases, evidence_carried, privacy,
    trace_gaps, causality, mcq_shape, medium_span, lifelog_plan, variants, translations."""
    out = Path(out)
    if not out.is_dir():
        return [("dataset", f"{out}: no such dataset directory")]
    directories = sorted(p.parent for p in out.glob("*/persona.jsonl") if p.is_file())
    if not directories:
        return [("dataset", f"{out}: no persona directory (a folder holding persona.jsonl)")]
    found: list[tuple[str, str]] = []
    for directory in directories:
        check = PersonaCheck(directory)
        check.run()
        found.extend(zip(check.kinds, check.problems, strict=True))
    return found


def privacy_warnings(out: Path) -> list[str]:
    """The public traces that repeat a private statement's distinctive words (synth.quality.privacy's word check): a
    lexical heuristic, so a warning beside the violations (as the label check's), counted by `synth stats`."""
    found: list[str] = []
    for directory in sorted(p.parent for p in Path(out).glob("*/persona.jsonl") if p.is_file()):
        check = PersonaCheck(directory)
        for name in ("events.jsonl", "evidence.jsonl", "traces.jsonl"):
            if (directory / name).is_file():
                check.load(name)
        check.check_privacy()
        found += check.warnings
    return found


def reference_problems(directory: Path, names: Iterable[str]) -> list[str]:
    """Duplicate and dangling ids among the named files of one persona directory (the inputs a stage is about to
    read), so a hand-edited input is refused before any model call; ids into files not named are not checked."""
    check = PersonaCheck(Path(directory), partial=True)
    for name in names:
        if name in FILES and (check.dir / name).is_file():
            check.load(name)
    people = check.records.get("persona.jsonl", [])
    check.persona = people[0] if people else {}
    check.check_duplicates()
    check.check_references()
    return check.problems


# ------------------------------------------------------------------------------------------------ one persona

class PersonaCheck:
    """The checks of one persona directory over whatever files it holds."""

    def __init__(self, directory: Path, partial: bool = False) -> None:
        self.dir = directory
        self.partial = partial  # only some files loaded: references into the others are not checked
        self.name = directory.name
        self.problems: list[str] = []
        self.kinds: list[str] = []  # the invariant each problem breaks (parallel to `problems`)
        self.warnings: list[str] = []  # heuristic findings that do not fail validation (privacy_warnings)
        self.kind = "parse"
        self.records: dict[str, list[dict]] = {}  # file -> records (objects with a string id)
        self.by_id: dict[str, dict[str, dict]] = {}  # file -> id -> first record with that id
        self.persona: dict = {}
        self.missing_targets: set[tuple[str, str]] = set()

    def flag(self, file: str, record: dict | str | None, what: str) -> None:
        if isinstance(record, dict):
            label = record.get("id") if isinstance(record.get("id"), str) else "(no id)"
        else:
            label = record or "-"
        self.problems.append(f"{self.name}/{file}: {label}: {what}")
        self.kinds.append(self.kind)

    def run(self) -> list[str]:
        for name in FILES:
            if (self.dir / name).is_file():
                self.load(name)
        for check in (self.check_persona, self.check_duplicates, self.check_references, self.check_containment,
                      self.check_major_event_order, self.check_arc_alignment, self.check_snapshot_chain,
                      self.check_arc_phases, self.check_evidence_carried, self.check_privacy, self.check_trace_gaps,
                      self.check_causality, self.check_mcq_shape, self.check_question_types, self.check_lifelog_plan,
                      self.check_variants, self.check_translations):
            self.kind = check.__name__.removeprefix("check_")
            check()
        return self.problems

    # ---- relation-controlled variants (SubtleMemory)

    def check_variants(self) -> None:
        """A variant set names its seed evidence, event and arc; a kept set's sessions are traces marked with its id,
        at least `min_gap_days` apart and before its question; a marked trace belongs to a kept set; a relation item
        names a kept set of its own relation, cites exactly its sessions and keeps its references; an MCQ's key is
        one of the accepted answers and its other A–D options are known-wrong ones."""
        sets = self.by_id.get("variants.jsonl", {})
        for name, record in self.each("variants.jsonl"):
            self.check_variant_set(name, record)
        for name, record in self.each("traces.jsonl"):
            owner = record.get("variant_set_id")
            if owner:
                found = sets.get(owner)
                if found is None or found.get("kept") is not True:
                    self.flag(name, record, f"variant_set_id {owner!r}: no kept set in variants.jsonl")
        for name, record in self.each(*QUESTION_FILES):
            self.check_relation_item(name, record, sets)

    def check_variant_set(self, name: str, record: dict) -> None:
        self.refs(name, record, "seed_evidence_id", [record.get("seed_evidence_id")], "evidence.jsonl")
        self.refs(name, record, "event_id", [record.get("event_id")], "events.jsonl")
        self.refs(name, record, "arc_id", [record.get("arc_id")], "arcs.jsonl")
        if len(as_list(record.get("correct_answers"))) != 3 or len(as_list(record.get("wrong_answers"))) != 3:
            self.flag(name, record, "needs 3 correct and 3 wrong reference answers")
        variants = dict_list(record.get("variants"))
        times = sorted(t for v in variants if (t := as_datetime(v.get("time"))) is not None)
        gap = as_int(record.get("min_gap_days"))
        for a, b in itertools.pairwise(times):
            if (b.date() - a.date()).days < gap:
                self.flag(name, record, f"sessions on {a.date()} and {b.date()} are closer than {gap} days")
        asked = as_datetime(record.get("question_time"))
        if asked is not None and times and times[-1] > asked:
            self.flag(name, record, f"a session at {times[-1]} is after question_time {asked}")
        if record.get("kept") is not True or not self.has("traces.jsonl"):
            return
        traces = self.by_id.get("traces.jsonl", {})
        for v in variants:
            trace = traces.get(v.get("trace_id"))
            if trace is None:
                self.flag(name, record, f"session {v.get('trace_id')!r}: not in traces.jsonl")
            elif trace.get("variant_set_id") != record.get("id"):
                self.flag(name, record, f"session {v.get('trace_id')}: its trace is not marked with this set")

    def check_relation_item(self, name: str, record: dict, sets: dict[str, dict]) -> None:
        relation = str(record.get("question_type", ""))
        owner = record.get("variant_set_id")
        if not relation.startswith("relation_") and not owner:
            return
        found = sets.get(owner) if owner else None
        if found is None or found.get("kept") is not True:
            self.flag(name, record, f"variant_set_id {owner!r}: a relation item needs a kept set in variants.jsonl")
            return
        if found.get("relation") != relation:
            self.flag(name, record, f"question_type {relation} but its set's relation is {found.get('relation')}")
        sessions = {v.get("trace_id") for v in dict_list(found.get("variants"))}
        if set(id_list(record.get("digital_trace_ids"))) != sessions:
            self.flag(name, record, "digital_trace_ids are not its set's sessions")
        correct, wrong = as_list(found.get("correct_answers")), as_list(found.get("wrong_answers"))
        if as_list(record.get("correct_answers")) != correct or as_list(record.get("wrong_answers")) != wrong:
            self.flag(name, record, "its reference answers differ from its set's")
        choices = [(c.get("id"), c.get("text")) for c in dict_list(record.get("choices"))]
        if choices:
            key = rules.choice_text(choices, record.get("correct_choice_id"))
            if key not in correct:
                self.flag(name, record, "the key is not one of its accepted answers")
            stray = [t for t in rules.distractors_of(choices, record.get("correct_choice_id")) if t not in wrong]
            if stray:
                self.flag(name, record, f"option {stray[0]!r} is not one of its known-wrong answers")

    # ---- translations

    def check_translations(self) -> None:
        """Each translation names a trace or final item of this persona and keeps its structure (same option
        letters, same evidence ids); every final item and trace has one per translated language."""
        rows = self.records.get("translations.jsonl", [])
        if not rows:
            return
        from synth.quality.translation import structure_problem
        from synth.records import FinalItem, Trace, Translation

        sources = {"trace": {r["id"]: r for r in self.records.get("traces.jsonl", [])},
                   "item": {r["id"]: r for r in self.records.get("final.jsonl", [])}}
        done: dict[str, set[str]] = {}
        for row in rows:
            try:
                translation = Translation.model_validate(row)
            except ValueError:
                continue  # a parse problem, already reported
            source = sources[translation.kind].get(translation.source_id)
            if source is None:
                self.flag("translations.jsonl", row, f"source {translation.source_id}: no such {translation.kind}")
                continue
            model = Trace if translation.kind == "trace" else FinalItem
            problem = structure_problem(model.model_validate(source), translation)
            if problem:
                self.flag("translations.jsonl", row, problem)
            done.setdefault(translation.language, set()).add(translation.source_id)
        for language, covered in sorted(done.items()):
            missing = [i for kind in ("trace", "item") for i in sources[kind] if i not in covered]
            if missing:
                self.flag("translations.jsonl", missing[0], f"no {language} translation "
                                                            f"(and {len(missing) - 1} more missing)")

    # ---- reading

    def load(self, name: str) -> None:
        model = FILES[name]
        records: list[dict] = []
        for number, data in self._lines(name):
            if not isinstance(data, dict):
                self.flag(name, f"line {number}", "not a JSON object")
                continue
            if not isinstance(data.get("id"), str):
                self.flag(name, f"line {number}", "record without a string `id`")
                continue
            try:
                model.model_validate(data)
            except ValidationError as exc:
                err = exc.errors()[0]
                loc = ".".join(str(p) for p in err["loc"]) or "record"
                self.flag(name, data, f"line {number}: {loc}: {err['msg']}")
            records.append(data)
        self.records[name] = records
        index: dict[str, dict] = {}
        for record in records:
            index.setdefault(record["id"], record)
        self.by_id[name] = index

    def _lines(self, name: str) -> Iterator[tuple[int, Any]]:
        try:
            text = (self.dir / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.flag(name, None, f"cannot read ({exc})")
            return
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                self.flag(name, f"line {number}", f"not valid JSON ({exc.msg} at column {exc.colno})")

    def has(self, name: str) -> bool:
        return name in self.records

    def each(self, *names: str) -> Iterator[tuple[str, dict]]:
        for name in names:
            for record in self.records.get(name, []):
                yield name, record

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

    def check_lifelog_plan(self) -> None:
        """The lifelog plan's tree (synth.life.lifelog_calendar.tree_problems) and each dialogue's plan day."""
        if not self.has("lifelog_plan.jsonl"):
            return
        days = {e.get("id"): day for _, e in self.each("events.jsonl") if (day := as_date(e.get("time")))}
        records = [r for _, r in self.each("lifelog_plan.jsonl")]
        for record, problem in tree_problems(records, days):
            self.flag("lifelog_plan.jsonl", record, problem)
        planned = {r.get("id"): r for r in records if r.get("level") == "day"}
        for name, dialogue in self.each("lifelog.jsonl"):
            day = planned.get(dialogue.get("plan_day_id")) if dialogue.get("plan_day_id") else None
            if dialogue.get("plan_day_id") and day is None:
                self.flag(name, dialogue, f"plan_day_id: dangling id {dialogue.get('plan_day_id')!r}")
            elif day is not None and dialogue.get("event_id") not in (day.get("event_ids") or []):
                self.flag(name, dialogue, f"its event is not among the events of its plan day {day.get('start')}")

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

    # ---- order of major events and arc alignment

    def majors_in_time_order(self) -> list[dict]:
        majors = [m for m in self.records.get("major_events.jsonl", []) if as_date(m.get("start")) is not None]
        return sorted(majors, key=lambda m: (as_date(m["start"]), as_int(m.get("index"))))

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

    def check_causality(self) -> None:
        traces = self.by_id.get("traces.jsonl", {})
        evidence = self.by_id.get("evidence.jsonl", {})
        events = self.by_id.get("events.jsonl", {})
        for name, record in self.each(*ASKED_FILES):
            asked = as_datetime(record.get("question_time"))
            if asked is None:
                self.flag(name, record, f"question_time: not an ISO datetime ({record.get('question_time')!r})")
                continue
            for tid in sorted(set(_needed_traces(record))):
                trace = traces.get(tid)
                written = as_datetime(trace.get("time")) if trace is not None else None
                if written is not None and written > asked:
                    self.flag(name, record, f"needs trace {tid} written at {trace['time']}, after question_time "
                                            f"{record['question_time']}")
            for ref in dict_list(record.get("evidence")):
                item = evidence.get(ref.get("evidence_id"))
                event = events.get(item.get("event_id")) if item is not None else None
                happened = as_datetime(event.get("time")) if event is not None else None
                if happened is not None and happened > asked:
                    self.flag(name, record, f"evidence {item['id']} comes from event {event['id']} at "
                                            f"{event['time']}, after question_time {record['question_time']}")

    # ---- multiple choice

    def check_mcq_shape(self) -> None:
        language = self.persona.get("language")
        for name, record in self.each(*MCQ_FILES):
            choices = [(c.get("id"), c.get("text")) for c in dict_list(record.get("choices"))]
            for problem in rules.shape_problems(choices, record.get("correct_choice_id"),
                                                str(record.get("question_type")), language):
                self.flag(name, record, problem)

    def check_question_types(self) -> None:
        """Each question item by its type's own check (the spec's `validate_check`, synth.config.question_types)."""
        for name, record in self.each(*QUESTION_FILES):
            spec = question_types.get(str(record.get("question_type")))
            if spec is not None and spec.validate_check is not None:
                spec.validate_check(self, name, record)

    def check_profile(self, name: str, record: dict, profile: dict, choices: list) -> None:
        """A profile item: its member and stored levels are those of groups.jsonl; its style traces exist; a kept
        item passes the model-free 2×2 check where its options stand."""
        group = self.by_id.get("groups.jsonl", {}).get(profile.get("group_id"))
        if group is None:
            self.flag(name, record, f"profile.group_id: dangling id {profile.get('group_id')!r} (not in groups.jsonl)")
            return
        member = next((m for m in dict_list(group.get("members")) if m.get("person_id") == profile.get("member_id")), None)
        if member is None:
            self.flag(name, record, f"profile.member_id: {profile.get('member_id')!r} is not a member of the group")
            return
        stored = member.get("style") or {}
        for dim, level in (profile.get("style") or {}).items():
            if stored.get(dim) != level:
                self.flag(name, record, f"profile.style: {dim} {level}, groups.jsonl stores {stored.get(dim)}")
        self.refs(name, record, "profile.style_trace_ids", id_list(profile.get("style_trace_ids")), "traces.jsonl")
        if name == "final.jsonl":
            for problem in [*rules.profile_problems(profile, record.get("correct_choice_id")),
                            *rules.profile_text_problems(profile, choices)]:
                self.flag(name, record, f"profile: {problem}")


def _parsed(rows: Iterable[dict], model: Any) -> list:
    """The rows that parse as `model` (the others are reported by the parse check already)."""
    out = []
    for row in rows:
        try:
            out.append(model.model_validate(row))
        except ValidationError:
            continue
    return out


def recorded_config(out: Path) -> dict:
    """The resolved configuration a dataset recorded (dataset.json's `config`), {} when there is none."""
    path = Path(out) / "dataset.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        return {}
    config = data.get("config", data) if isinstance(data, dict) else {}
    return config if isinstance(config, dict) else {}


def _needed_traces(record: dict) -> list[str]:
    return rules.needed_traces(id_list(record.get("digital_trace_ids")),
                               (id_list(ref.get("digital_trace_ids")) for ref in dict_list(record.get("evidence"))))

