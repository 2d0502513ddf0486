"""The optional sources' invariants: relation-controlled variant sets, translations and the lifelog plan."""

from __future__ import annotations

import itertools

from synth.core.fields import as_date, as_datetime, as_int, as_list, dict_list, id_list
from synth.life.lifelog_calendar import tree_problems
from synth.quality import rules
from synth.quality.validate.checker import (
    QUESTION_FILES,
)


class SourceChecks:
    """The optional sources' invariants: relation-controlled variant sets, translations and the lifelog plan."""

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
