"""The filter's verdicts: each filter's reason for an item (model checks read from its check record), which
formats the item passes — the open question, the multiple choice, both or neither — and the report."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from synth.config import question_types
from synth.config.settings import FilterSettings, McqSettings
from synth.quality.validity import answerable, bias_report, blind_accuracy, choices_only_accuracy
from synth.records import MCQ, FilterVerdict, FinalItem, Rejected, Trace
from synth.stages.filter.checks import (
    centrality_problem,
    cross_type_duplicates,
    dated_question_problem,
    duplicate_problem,
    entity_problem,
    length_problem,
    rounds_problem,
    single_answer_problem,
    span_problem,
    temporal_problem,
)
from synth.stages.filter.readers import Checked, inference_statements

# The order in which filters are named; an item's rejection names the first that failed. The question types' own
# rules (their specs' `filter_rule`) come right after `format`, in the registry's order.
GENERAL_FILTERS = ("dated_question", "multi_point_span", "single_answer", "rounds_exhausted", "sufficiency", "unique",
                   "single_point", "inference_grounding", "blind", "open_blind", "length", "centrality",
                   "entity_centrality", "temporal", "duplicate", "cross_type_duplicate", "human_review")


def type_rules() -> list[tuple[str, str, Callable[..., str]]]:
    """(question type, filter name, check) of every registered type with a model-free filter rule."""
    return [(s.name, *s.filter_rule) for s in question_types.specs() if s.filter_rule is not None]


def filter_names() -> tuple[str, ...]:
    return ("format", *(name for _, name, _ in type_rules()), *GENERAL_FILTERS)


# Filters that judge only one form: a failing MCQ-only filter leaves the open question standing, and a failing
# open-only filter leaves the multiple choice; every other filter judges what both rest on.
MCQ_ONLY = ("single_answer", "rounds_exhausted", "single_point", "blind", "length", "centrality",
            "entity_centrality")
OPEN_ONLY = ("open_blind",)


def support_problem(checked: Checked) -> str:
    return "" if checked.supported else f"the evidence does not support the answer: {checked.support_reason}"


def blind_votes(item: MCQ, checked: Checked) -> list[str]:
    """Every no-context pick of this item: the refinement validator's last (when it made one), then the filter's."""
    last = item.refinement[-1].validator_choice if item.refinement else ""
    return ([last] if last else []) + list(checked.blind_votes)


def blind_problem(item: MCQ, checked: Checked, unanswerable_too: bool) -> str:
    """A majority of no-context picks lands on the key: guessable, whatever confidence the judge stated."""
    if not answerable(item) and not unanswerable_too:
        return ""
    votes = blind_votes(item, checked)
    right = sum(vote == item.correct_choice_id for vote in votes)
    if votes and right * 2 > len(votes):
        return (f"answered correctly without any context by {right} of {len(votes)} picks "
                f"({', '.join(votes)}): {checked.blind_reason}")
    return ""


def single_point_problem(item: MCQ, checked: Checked, threshold: float) -> str:
    """A multi-point item answered from ONE of its traces with confidence is a single-point item in disguise."""
    hit = next((s for s in checked.single_trace
                if s.choice == item.correct_choice_id and s.confidence >= threshold), None)
    return "" if hit is None else (f"trace {hit.trace_id} alone gives the answer ({hit.choice}, confidence "
                                   f"{hit.confidence:.2f}): a single-point item in disguise")


def unique_problem(checked: Checked) -> str:
    return "" if checked.unique else f"another trace answers the question differently: {checked.unique_reason}"


def inference_problem(item: MCQ, checked: Checked) -> str:
    """An inference item rests on two or more statements, none of which states its answer (else it is a lookup).
    The count is model-free; which statements state the answer is the inference judge's verdict."""
    if item.question_type != "inference":
        return ""
    count = len(inference_statements(item))
    if count < 2:
        return f"an inference item rests on {count} statement(s); it needs two or more"
    if checked.stating:
        return (f"evidence {', '.join(checked.stating)} states the answer outright, so the item is a lookup: "
                f"{checked.stating_reason}")
    return ""


def open_problem(item: MCQ, checked: Checked) -> str:
    """The open question stands on its own: a no-context reader's free answer that a judge matched with the
    reference rejects the open form (unanswerable items are not asked: "I cannot know" is every reader's answer)."""
    if checked.open_match:
        return (f"answered without any context in free text ({checked.open_answer!r}), matching the reference: "
                f"{checked.open_reason}")
    return ""


def formats_of(found: list[tuple[str, str]]) -> list[str]:
    """The forms an item passes: open unless a filter judging it failed, mcq likewise."""
    failed = {name for name, reason in found if reason}
    out = []
    if not failed - set(MCQ_ONLY):
        out.append("open")
    if not failed - set(OPEN_ONLY):
        out.append("mcq")
    return out


def human_verdicts(path: Path) -> dict[str, str]:
    """Item id → reason, for items a reviewer rejected (a later verdict for the same id wins)."""
    rejected: dict[str, str] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                if row.get("verdict") == "reject":
                    rejected[row["id"]] = row.get("reason") or "rejected by a reviewer"
                else:
                    rejected.pop(row["id"], None)
    return rejected


# ------------------------------------------------------------------------------------------------ stage

def item_problems(item: MCQ, checked: Checked | None, format_reason: str, review_reason: str,
                  traces: dict[str, Trace], section: FilterSettings, mcq: McqSettings,
                  names: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(filter, reason) for every filter but the near-duplicate one, in FILTERS order ('' passes). A malformed
    item is judged by format alone (it had no model checks: `checked` is None)."""
    if format_reason:
        return [("format", format_reason)]
    assert checked is not None, f"{item.id}: a well-formed item is decided only after its model checks"
    return [
        ("format", ""),
        *((name, check(item, traces) if item.question_type == kind else "") for kind, name, check in type_rules()),
        ("dated_question", dated_question_problem(item)),
        ("multi_point_span", span_problem(item, traces, section.min_span_days)),
        ("single_answer", single_answer_problem(item)), ("rounds_exhausted", rounds_problem(item)),
        ("sufficiency", support_problem(checked)),
        ("unique", unique_problem(checked)),
        ("single_point", single_point_problem(item, checked, section.single_trace_confidence)),
        ("inference_grounding", inference_problem(item, checked)),
        ("blind", blind_problem(item, checked, section.blind_unanswerable)), ("open_blind", open_problem(item, checked)),
        ("length", length_problem(item, mcq.length_ratio)),
        ("centrality", centrality_problem(item, mcq.centrality_margin)),
        ("entity_centrality", entity_problem(item, mcq.entity_margin, names)),
        ("temporal", temporal_problem(item, traces)), ("human_review", review_reason),
    ]


def decide(items: list[MCQ], checks: dict[str, Checked], problems: dict[str, list[tuple[str, str]]],
           section: FilterSettings) -> tuple[list[FinalItem], list[Rejected]]:
    """Apply every filter in order; an item keeps the formats whose filters all passed (final.jsonl, `formats`)
    and is rejected only when none is left, under the first failing filter. Near-duplicate questions are judged
    against the items kept so far (first one wins); cross-type duplicates among the items kept in some format
    (the rarer type wins)."""
    final: list[FinalItem] = []
    rejected: list[Rejected] = []
    clean = [item for item in items if formats_of(problems[item.id])]
    cross = cross_type_duplicates(clean, section.cross_type_evidence_jaccard, section.cross_type_answer_overlap)
    for item in items:
        checked = checks.get(item.id)
        found = list(problems[item.id])
        if formats_of(found):
            at = filter_names().index("duplicate")
            found[at:at] = [("duplicate", duplicate_problem(item, final, section.dedup_threshold)),
                            ("cross_type_duplicate", cross.get(item.id, ""))]
        verdicts = [FilterVerdict(filter=name, passed=not reason, reason=reason) for name, reason in found]
        votes = blind_votes(item, checked) if checked else []
        kept = formats_of(found)
        record = FinalItem(**item.model_dump(), blind_choice=checked.blind_votes[0] if checked else "",
                           blind_confidence=checked.blind_confidence if checked else 0.0, blind_votes=votes,
                           verdicts=verdicts, formats=kept,
                           choices_only_choice=checked.choices_only if checked else "",
                           open_blind_answer=checked.open_answer if checked else "",
                           open_blind_match=checked.open_match if checked else None)
        if kept:
            final.append(record)
        else:
            failing = next(v for v in verdicts if not v.passed)
            rejected.append(Rejected(**record.model_dump(), filter=failing.filter, reason=failing.reason))
    return final, rejected


def per_type_formats(items: list[MCQ], final: list[FinalItem]) -> dict[str, dict[str, int]]:
    """Per question type: items generated, open-valid, MCQ-valid."""
    made = Counter(i.question_type for i in items)
    opened = Counter(i.question_type for i in final if "open" in i.formats)
    chosen = Counter(i.question_type for i in final if "mcq" in i.formats)
    return {t: {"generated": made[t], "open_valid": opened[t], "mcq_valid": chosen[t]} for t in sorted(made)}


def report(items: list[MCQ], final: list[FinalItem], rejected: list[Rejected]) -> dict:
    by_filter: dict[str, int] = {}
    for r in rejected:
        by_filter[r.filter] = by_filter.get(r.filter, 0) + 1
    return {
        "items": len(items), "kept": len(final), "rejected": len(rejected), "rejected_by_filter": by_filter,
        "open_valid": sum("open" in i.formats for i in final), "mcq_valid": sum("mcq" in i.formats for i in final),
        "by_type": per_type_formats(items, final),
        **choices_only_accuracy([*final, *rejected]),
        "cross_type_duplicates": by_filter.get("cross_type_duplicate", 0),
        **blind_accuracy([*final, *rejected]),
        "final": bias_report([i for i in final if "mcq" in i.formats]),
        "before_filtering": bias_report(items),
    }


