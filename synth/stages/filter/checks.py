"""The filter stage's model-free checks: each takes an item (and what it needs) and returns a reason, "" when the
item passes. The rules they share with `synth validate` and the distractor guard live in synth.quality.rules."""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections import Counter

from synth.config import question_types
from synth.quality import rules
from synth.quality.validity import answerable, distractor_texts, option_text
from synth.records import MCQ, Trace


def multi_point(question_type: str) -> bool:
    """Its answer needs several traces (the spec says): one of them alone must not give the key away."""
    spec = question_types.get(question_type)
    return spec is not None and spec.multi_point


def spanning(question_type: str) -> bool:
    """Its evidence must also span min_span_days over two or more traces (the spec says)."""
    spec = question_types.get(question_type)
    return spec is not None and spec.spanning


def _choices(item: MCQ) -> list[tuple[str, str]]:
    return [(c.id, c.text) for c in item.choices]


def key_seed_at(item: MCQ) -> str | None:
    """The letter an item's key seed was rendered at (None: its options were not rendered from seeds)."""
    return next((s.choice_id for s in item.option_seeds if s.role == "key"), None)


def format_problem(item: MCQ, language: str, traces: dict[str, Trace], evidence_ids: set[str],
                   min_option_chars: int = 4) -> str:
    """Schema is already checked on read; this catches empty, misaligned, stub or dangling content."""
    choices = _choices(item)
    problems = [*rules.shape_problems(choices, item.correct_choice_id, item.question_type, language),
                *rules.option_problems(choices, item.correct_choice_id, item.question, item.answer,
                                       item.question_type, min_option_chars, key_seed_at(item))]
    if problems:
        return problems[0]
    if not answerable(item):
        return ""
    if not item.evidence:
        return "an answerable question without evidence"
    for ref in item.evidence:
        if not ref.statement.strip() or not ref.digital_trace_ids:
            return f"evidence {ref.evidence_id}: empty statement or no trace"
        if ref.evidence_id not in evidence_ids:
            return f"evidence {ref.evidence_id}: no such evidence"
    union = {t for ref in item.evidence for t in ref.digital_trace_ids}
    if set(item.digital_trace_ids) != union:
        return "digital_trace_ids is not the union of the evidence's traces"
    missing = [t for t in union if t not in traces]
    return f"trace {missing[0]}: no such trace" if missing else ""


def length_problem(item: MCQ, ratio: float) -> str:
    if not answerable(item):
        return ""
    return rules.length_problem(option_text(item, item.correct_choice_id), distractor_texts(item), ratio)


def needed_traces(item: MCQ) -> list[str]:
    return rules.needed_traces(item.digital_trace_ids, (r.digital_trace_ids for r in item.evidence))


def temporal_problem(item: MCQ, traces: dict[str, Trace]) -> str:
    late = [traces[t] for t in needed_traces(item) if t in traces and traces[t].time > item.question_time]
    if late:
        first = min(late, key=lambda t: t.time)
        return f"needs trace {first.id} dated {first.time.isoformat()}, after the question time {item.question_time.isoformat()}"
    return ""


def normalise_question(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    return " ".join(re.sub(r"[^\w\s]", " ", text).split())


def similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, normalise_question(a), normalise_question(b), autojunk=False).ratio()


def duplicate_problem(item: MCQ, kept: list[MCQ], threshold: float) -> str:
    for other in kept:
        score = similarity(item.question, other.question)
        if score >= threshold:
            return f"near-duplicate of {other.id} (similarity {score:.2f} ≥ {threshold:g})"
    return ""


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def answer_overlap(a: str, b: str) -> float:
    """Jaccard overlap of two answers' words (Chinese: character bigrams, as the option-centrality measure)."""
    return _jaccard(rules.option_words(a), rules.option_words(b))


def cross_type_duplicates(items: list[MCQ], evidence_min: float, answer_min: float) -> dict[str, str]:
    """Items of different types that rest on (nearly) the same evidence and give (nearly) the same answer — a
    comparison and a trajectory item over one arc and window, a causal and a counterfactual one — test one memory
    twice. Of each such pair the item of the type with fewer items is kept (on a tie, the earlier one); the others
    map to their reason."""
    per_type = Counter(item.question_type for item in items)
    evidence = {item.id: {ref.evidence_id for ref in item.evidence} for item in items}
    dropped: dict[str, str] = {}
    for n, first in enumerate(items):
        if first.id in dropped:
            continue
        for second in items[n + 1:]:
            if second.id in dropped or second.question_type == first.question_type:
                continue
            shared = _jaccard(evidence[first.id], evidence[second.id])
            if shared < evidence_min:
                continue
            alike = answer_overlap(first.answer, second.answer)
            if alike < answer_min:
                continue
            keep, drop = ((first, second) if per_type[first.question_type] <= per_type[second.question_type]
                          else (second, first))
            dropped[drop.id] = (f"tests the same memory as {keep.id} ({keep.question_type}, the rarer type): evidence "
                                f"Jaccard {shared:.2f} ≥ {evidence_min:g}, answer overlap {alike:.2f} ≥ {answer_min:g}")
            if drop is first:
                break
    return dropped


def single_answer_problem(item: MCQ) -> str:
    """The verify judge found the final options wrong as a set: the key unsupported or another option holding as
    well. Options that came from elsewhere (no refinement record) are not judged here."""
    if not item.refinement:
        return ""
    last = item.refinement[-1]
    if last.supported is False:
        return f"not exactly one right option: {last.support_reason}"
    return ""


def rounds_problem(item: MCQ) -> str:
    """The refinement rounds ran out while the last one still failed a guard, the no-context validator or the
    question-wording check: the options were never accepted (named for what happened, not for the answer)."""
    if not item.refinement:
        return ""
    last = item.refinement[-1]
    if not last.too_easy or last.supported is False:
        return ""
    if last.guard:
        stopped = f"a give-away rule ({last.guard}): {last.reason}"
    elif last.question_favours:
        stopped = f"the question's wording favours one option: {last.support_reason}"
    else:
        stopped = f"the no-context validator (picked {last.validator_choice or '-'}): {last.reason}"
    return f"out of rounds after {len(item.refinement)}; the last stopped at {stopped}"


def entity_problem(item: MCQ, margin: int, names: tuple[str, ...] = ()) -> str:
    """The key as the options' entity centroid: it shares `margin` or more people/places more than the next."""
    if not margin or not answerable(item):
        return ""
    lead = rules.entity_margin({c.id: c.text for c in item.choices}, item.correct_choice_id, names)
    if lead >= margin:
        return (f"the correct option shares the most people/places with the other options ({lead} more shared "
                "than the next): the distractors orbit it")
    return ""


def span_problem(item: MCQ, traces: dict[str, Trace], min_days: int) -> str:
    """Comparison and trajectory items compare points in time: their traces must span `min_days`, two or more."""
    if not spanning(item.question_type):
        return ""
    times = sorted(traces[t].time for t in needed_traces(item) if t in traces)
    if len(times) < 2:
        return f"a {item.question_type} item rests on {len(times)} trace(s); it needs two or more"
    days = (times[-1] - times[0]).days
    return "" if days >= min_days else (
        f"its traces span {days} day(s); a {item.question_type} item needs at least {min_days}")


def dated_question_problem(item: MCQ) -> str:
    found = rules.explicit_date(item.question)
    return f"the question names {found}; questions carry no explicit dates" if found else ""


def centrality_problem(item: MCQ, margin: float) -> str:
    """The key as the centroid of the options (distractors that perturb it): rejected by a clear margin."""
    if not answerable(item):
        return ""
    options = {c.id: c.text for c in item.choices}
    lead = rules.centrality_margin(options, item.correct_choice_id)
    if lead > 0 and lead >= margin:
        return (f"the correct option is the most central (mean word overlap {lead:+.2f} above the next option): "
                "the distractors read as variations of it")
    return ""


def profile_problem(item: MCQ, traces: dict[str, Trace] | None = None) -> str:
    """EverMemBench's 2×2, model-free (synth.quality.rules.profile_problems): each option's cell, claimed style and fact,
    the both-right option at the key's letter, each option's text where its letter says."""
    if item.question_type != "profile_style":
        return ""
    if item.profile is None:
        return "a profile item without its profile record"
    profile = item.profile.model_dump()
    found = [*rules.profile_problems(profile, item.correct_choice_id), *rules.profile_text_problems(profile, _choices(item))]
    return "" if not found else found[0] + (f" (and {len(found) - 1} more)" if len(found) > 1 else "")


def medium_span_check(item: MCQ, traces: dict[str, Trace]) -> str:
    """A `written_spoken` item needs a spoken and a written trace: its needed traces must include both."""
    if item.question_type != "written_spoken":
        return ""
    return rules.medium_span_problem(traces[t].medium for t in needed_traces(item) if t in traces)


# the model-free rules of two extra types, named as the filter stage's verdicts name them
question_types.attach("profile_style", filter_rule=("profile_2x2", profile_problem))
question_types.attach("written_spoken", filter_rule=("medium_span", medium_span_check))
