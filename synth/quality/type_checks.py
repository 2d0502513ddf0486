"""The `synth validate` checks of the extra question types, attached to their specs (synth.config.question_types):
a profile item against groups.jsonl and its 2×2, a written_spoken item's traces against both kinds of medium."""

from __future__ import annotations

from typing import Any

from synth.config import question_types
from synth.core.fields import dict_list, id_list
from synth.quality import rules

MCQ_FILES = ("mcq.jsonl", "final.jsonl")  # the files whose items carry options


def needed_traces(record: dict) -> list[str]:
    return rules.needed_traces(id_list(record.get("digital_trace_ids")),
                               (id_list(ref.get("digital_trace_ids")) for ref in dict_list(record.get("evidence"))))


def profile_item(validator: Any, name: str, record: dict) -> None:
    """A profile item with options: its member, stored levels, style traces and (kept) 2×2 (Validator.check_profile)."""
    profile = record.get("profile")
    if name in MCQ_FILES and isinstance(profile, dict):
        choices = [(c.get("id"), c.get("text")) for c in dict_list(record.get("choices"))]
        validator.check_profile(name, record, profile, choices)


def medium_span(validator: Any, name: str, record: dict) -> None:
    """A written_spoken item (not a rejected one) rests on a spoken and a written trace."""
    if name == "rejected.jsonl":
        return
    traces = validator.by_id.get("traces.jsonl", {})
    media = [traces[t].get("medium", "") for t in needed_traces(record) if t in traces]
    if problem := rules.medium_span_problem(media):
        validator.flag(name, record, f"written_spoken: {problem}")


question_types.attach("profile_style", validate_check=profile_item)
question_types.attach("written_spoken", validate_check=medium_span)
