"""The question items' invariants: causality (nothing needed after the question time), the MCQ shape, and each type's own check."""

from __future__ import annotations

from synth.config import question_types
from synth.core.fields import as_datetime, dict_list, id_list
from synth.quality import rules
from synth.quality.validate.checker import (
    ASKED_FILES,
    MCQ_FILES,
    QUESTION_FILES,
    _needed_traces,
)


class ItemChecks:
    """The question items' invariants: causality (nothing needed after the question time), the MCQ shape, and each type's own check."""

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
