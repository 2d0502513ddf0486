"""Stage `filter`: named quality filters, each with a verdict and a reason; survivors go to final.jsonl."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, create_model

from synth.config.settings import FilterSettings, McqSettings, PromptsSettings
from synth.core.jsonl import write_json_atomic
from synth.engine.stage import Records, Stage, StageContext
from synth.quality import rules
from synth.quality.validity import (
    answerable,
    bias_report,
    blind_accuracy,
)
from synth.records import MCQ, REVIEW_FILE, Evidence, FilterVerdict, FinalItem, Rejected, Trace
from synth.stages.common import RelatedTraces, trace_excerpts
from synth.stages.filter.checks import (  # noqa: F401  (re-exported: tests and review import them from here)
    MULTI_POINT,
    centrality_problem,
    cross_type_duplicates,
    dated_question_problem,
    duplicate_problem,
    format_problem,
    length_problem,
    medium_span_check,
    needed_traces,
    profile_problem,
    similarity,
    single_answer_problem,
    span_problem,
    temporal_problem,
)

# The order in which filters are named; an item's rejection names the first that failed.
FILTERS = ("format", "profile_2x2", "medium_span", "dated_question", "multi_point_span", "single_answer", "sufficiency", "unique", "single_point",
           "inference_grounding", "blind", "length", "centrality", "temporal", "duplicate", "cross_type_duplicate", "human_review")


class Sufficiency(BaseModel):
    supported: bool
    reason: str


class Uniqueness(BaseModel):
    """EverMemBench's uniqueness check: do traces other than the item's own answer the question differently?"""

    only_answer: bool  # true: none of the other traces gives a different right answer
    reason: str


class Blind(BaseModel):
    choice: Literal["A", "B", "C", "D", "E"]
    confidence: float = Field(ge=0, le=1)
    reason: str


# --------------------------------------------------------------------------------------- model filters

class SingleTrace(BaseModel):
    trace_id: str
    choice: str
    confidence: float


def inference_model(count: int) -> type[BaseModel]:
    """The inference judge's answer: which of the `count` numbered statements state the answer outright."""
    return create_model("InferenceGrounding", states_answer=(list[Literal[tuple(range(1, count + 1))]], ...),
                        reason=(str, ...))


class Checked(BaseModel):
    """A check unit's record (journaled, not written out): the model judgements of one item."""

    id: str
    supported: bool
    support_reason: str
    blind_votes: list[str]  # each blind sample's pick, mapped back to the item's own letters
    blind_confidence: float  # the first sample's
    blind_reason: str
    single_trace: list[SingleTrace] = []  # multi-point items: what a judge picked from each needed trace alone
    stating: list[str] = []  # inference items: the evidence ids the judge found stating the answer outright
    stating_reason: str = ""
    unique: bool = True  # the uniqueness judge found no other trace answering the question differently
    unique_reason: str = ""



def blind_order(count: int, sample: int) -> list[int]:
    """Sample k shows A–D rotated by k (E stays last): the same judge, a different order each time, so a pick
    that follows the content and not the position is what counts."""
    shift = sample % count
    return list(range(shift, count)) + list(range(shift))


def blind_choices(item: MCQ, sample: int) -> tuple[list[dict], dict[str, str]]:
    """The options as sample `sample` shows them, and shown letter → the item's own letter."""
    heads = [c for c in item.choices if c.id in rules.POSITIONS]
    tail = [c for c in item.choices if c.id not in rules.POSITIONS]
    shown = [heads[i] for i in blind_order(len(heads), sample)] + tail
    letters = [c.id for c in item.choices]
    return ([{"id": letters[n], "text": c.text} for n, c in enumerate(shown)],
            {letters[n]: c.id for n, c in enumerate(shown)})


def first_seen(traces: Iterable[Trace]) -> dict[str, dt.datetime]:
    """Evidence id → when the first trace carrying it appeared."""
    seen: dict[str, dt.datetime] = {}
    for trace in traces:
        for evidence_id in trace.evidence_ids:
            if evidence_id not in seen or trace.time < seen[evidence_id]:
                seen[evidence_id] = trace.time
    return seen


def shown_evidence(item: MCQ, seen: dict[str, dt.datetime], evidence: list[Evidence], limit: int) -> list[dict]:
    """The evidence the sufficiency judge reads: an answerable item's own; for an unanswerable one, the newest
    `limit` statements the arc's traces had shown by the question time, to prove the topic is absent."""
    if answerable(item):
        return [{"date": seen[r.evidence_id].date().isoformat() if r.evidence_id in seen else "",
                 "statement": r.statement} for r in item.evidence]
    known = sorted(((seen[e.id], e) for e in evidence
                    if item.arc_id in e.arc_ids and e.id in seen and seen[e.id] <= item.question_time),
                   key=lambda pair: (pair[0], pair[1].id))
    return [{"date": when.date().isoformat(), "statement": e.statement} for when, e in known[-limit:]]


def sufficiency_variables(item: MCQ, shown: list[dict], traces: dict[str, Trace], prompts: PromptsSettings,
                          related: list[str] | None = None) -> dict:
    """What the sufficiency judge reads: an answerable item's evidence and traces; an unanswerable item's arc
    evidence and the persona's traces most related to the question across every arc (`related`), up to its time."""
    ids = [t for t in item.digital_trace_ids if t in traces] if answerable(item) else list(related or [])
    return {
        "question_type": item.question_type, "question": item.question,
        "question_time": item.question_time.isoformat(timespec="minutes"), "answer": item.answer,
        "unanswerable": not answerable(item), "evidence": shown, "traces": trace_excerpts(ids, traces, prompts),
    }


def single_trace_variables(item: MCQ, trace_id: str, traces: dict[str, Trace], prompts: PromptsSettings) -> dict:
    """The single-trace test sees the question, the options and ONE of the needed traces."""
    return {"question": item.question, "question_time": item.question_time.isoformat(timespec="minutes"),
            "choices": [c.model_dump() for c in item.choices], "traces": trace_excerpts([trace_id], traces, prompts)}


def single_trace_ids(item: MCQ, limit: int) -> list[str]:
    """The needed traces a multi-point item is tested on, one at a time (at most `limit`, newest first: the last
    point is the likeliest to give the whole answer away)."""
    if item.question_type not in MULTI_POINT:
        return []
    return list(reversed(needed_traces(item)))[:limit]


def blind_variables(item: MCQ, sample: int = 0) -> dict:
    """The blind test sees the question, its time and the options (rotated per sample): no context at all."""
    return {"question": item.question, "question_time": item.question_time.isoformat(timespec="minutes"),
            "choices": blind_choices(item, sample)[0]}


def build_checked(item: MCQ, support: Sufficiency, blinds: list[Blind],
                  singles: list[tuple[str, Blind]] = (), grounding: BaseModel | None = None,
                  unique: Uniqueness | None = None) -> Checked:
    votes = [blind_choices(item, k)[1].get(b.choice, b.choice) for k, b in enumerate(blinds)]
    refs = inference_statements(item)
    stating = [refs[n - 1].evidence_id for n in sorted(set(grounding.states_answer))] if grounding else []
    return Checked(id=item.id, supported=support.supported, support_reason=support.reason, blind_votes=votes,
                   blind_confidence=blinds[0].confidence, blind_reason=blinds[0].reason,
                   single_trace=[SingleTrace(trace_id=t, choice=b.choice, confidence=b.confidence) for t, b in singles],
                   stating=stating, stating_reason=grounding.reason if grounding else "",
                   unique=unique.only_answer if unique else True, unique_reason=unique.reason if unique else "")


def other_traces(item: MCQ, related: list[str], limit: int) -> list[str]:
    """The traces the uniqueness judge reads: the most related to the question before its time, not its own."""
    own = set(item.digital_trace_ids) | {t for e in item.evidence for t in e.digital_trace_ids}
    return [t for t in related if t not in own][:limit]


def unique_variables(item: MCQ, others: list[str], traces: dict[str, Trace], prompts: PromptsSettings) -> dict:
    return {"question": item.question, "question_time": item.question_time.isoformat(timespec="minutes"),
            "answer": item.answer, "traces": trace_excerpts(others, traces, prompts)}


def unique_problem(checked: Checked) -> str:
    return "" if checked.unique else f"another trace answers the question differently: {checked.unique_reason}"


def inference_statements(item: MCQ) -> list:
    """The evidence an inference item rests on (one per evidence id), as its judge numbers them; [] otherwise."""
    if item.question_type != "inference":
        return []
    return list({ref.evidence_id: ref for ref in item.evidence}.values())


def inference_variables(item: MCQ) -> dict:
    return {"question": item.question, "question_time": item.question_time.isoformat(timespec="minutes"),
            "answer": item.answer, "evidence": [{"statement": r.statement} for r in inference_statements(item)]}


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


class Judge:
    """The two model checks of one persona: evidence sufficiency and the no-context blind test; `check` is the
    unit, one per well-formed item."""

    def __init__(self, ctx: StageContext) -> None:
        self.ctx = ctx
        self.section: FilterSettings = ctx.section
        self.prompts = ctx.settings.prompts  # shared with qa and distractors
        self.traces = ctx.traces_by_id
        self.evidence = ctx.evidence
        self.first_seen = first_seen(self.traces.values())
        self._related: RelatedTraces | None = None

    def related(self, item: MCQ) -> list[str]:
        if answerable(item):
            return []
        if self._related is None:
            self._related = RelatedTraces(self.ctx.traces)
        return self._related.before(item.question, item.question_time, self.ctx.settings.mcq.related_traces)

    async def sufficiency(self, item: MCQ) -> Sufficiency:
        shown = shown_evidence(item, self.first_seen, self.evidence, self.section.sufficiency_max_evidence)
        return await self.ctx.ask("filter_sufficiency", "filter_sufficiency.j2",
                                  sufficiency_variables(item, shown, self.traces, self.prompts, self.related(item)),
                                  Sufficiency)

    async def single_trace(self, item: MCQ, trace_id: str) -> tuple[str, Blind]:
        answer = await self.ctx.ask("filter_single_trace", "filter_single_trace.j2",
                                    single_trace_variables(item, trace_id, self.traces, self.prompts), Blind)
        return trace_id, answer

    async def blind(self, item: MCQ, sample: int) -> Blind:
        return await self.ctx.ask("filter_blind", "filter_blind.j2", blind_variables(item, sample), Blind,
                                  sample=sample)

    async def grounding(self, item: MCQ) -> BaseModel | None:
        count = len(inference_statements(item))
        if count < 2:  # no inference item, or one the model-free count already rejects: no call
            return None
        return await self.ctx.ask("filter_inference", "filter_inference.j2", inference_variables(item),
                                  inference_model(count))

    async def unique(self, item: MCQ) -> Uniqueness | None:
        limit = self.section.unique_traces
        if not limit or not answerable(item):
            return None
        if self._related is None:
            self._related = RelatedTraces(self.ctx.traces)
        found = self._related.before(item.question, item.question_time, limit + len(item.digital_trace_ids))
        others = other_traces(item, found, limit)
        if not others:  # nothing else was written by then: nothing could answer it differently
            return None
        return await self.ctx.ask("filter_unique", "filter_unique.j2",
                                  unique_variables(item, others, self.traces, self.prompts), Uniqueness)

    async def check(self, item: MCQ) -> Records:
        # Independent judgements: ask them all at once (one level off the stage's critical path).
        singles = single_trace_ids(item, self.section.single_trace_max)
        support, grounding, unique, *rest = await asyncio.gather(self.sufficiency(item), self.grounding(item),
                                                                 self.unique(item), *(
            self.blind(item, k) for k in range(self.section.blind_samples)), *(
            self.single_trace(item, t) for t in singles))
        blinds, answered = rest[:self.section.blind_samples], rest[self.section.blind_samples:]
        return {"checks": [build_checked(item, support, blinds, answered, grounding, unique)]}


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
                  traces: dict[str, Trace], section: FilterSettings, mcq: McqSettings) -> list[tuple[str, str]]:
    """(filter, reason) for every filter but the near-duplicate one, in FILTERS order ('' passes). A malformed
    item is judged by format alone (it had no model checks: `checked` is None)."""
    if format_reason:
        return [("format", format_reason)]
    assert checked is not None, f"{item.id}: a well-formed item is decided only after its model checks"
    return [
        ("format", ""), ("profile_2x2", profile_problem(item)),
        ("medium_span", medium_span_check(item, traces)), ("dated_question", dated_question_problem(item)),
        ("multi_point_span", span_problem(item, traces, section.min_span_days)),
        ("single_answer", single_answer_problem(item)), ("sufficiency", support_problem(checked)),
        ("unique", unique_problem(checked)),
        ("single_point", single_point_problem(item, checked, section.single_trace_confidence)),
        ("inference_grounding", inference_problem(item, checked)),
        ("blind", blind_problem(item, checked, section.blind_unanswerable)),
        ("length", length_problem(item, mcq.length_ratio)),
        ("centrality", centrality_problem(item, mcq.centrality_margin)),
        ("temporal", temporal_problem(item, traces)), ("human_review", review_reason),
    ]


def decide(items: list[MCQ], checks: dict[str, Checked], problems: dict[str, list[tuple[str, str]]],
           section: FilterSettings) -> tuple[list[FinalItem], list[Rejected]]:
    """Apply every filter in order; near-duplicate questions are judged against the items kept so far (first one
    wins); cross-type duplicates among the items every other filter passed (the rarer type wins)."""
    final: list[FinalItem] = []
    rejected: list[Rejected] = []
    clean = [item for item in items if not any(reason for _, reason in problems[item.id])]
    cross = cross_type_duplicates(clean, section.cross_type_evidence_jaccard, section.cross_type_answer_overlap)
    for item in items:
        checked = checks.get(item.id)
        found = list(problems[item.id])
        if not any(reason for _, reason in found):
            at = FILTERS.index("duplicate")
            found[at:at] = [("duplicate", duplicate_problem(item, final, section.dedup_threshold)),
                            ("cross_type_duplicate", cross.get(item.id, ""))]
        verdicts = [FilterVerdict(filter=name, passed=not reason, reason=reason) for name, reason in found]
        votes = blind_votes(item, checked) if checked else []
        record = FinalItem(**item.model_dump(), blind_choice=checked.blind_votes[0] if checked else "",
                           blind_confidence=checked.blind_confidence if checked else 0.0, blind_votes=votes,
                           verdicts=verdicts)
        failing = next((v for v in verdicts if not v.passed), None)
        if failing is None:
            final.append(record)
        else:
            rejected.append(Rejected(**record.model_dump(), filter=failing.filter, reason=failing.reason))
    return final, rejected


def check_key(item: MCQ) -> str:
    return f"check/{item.id}"


async def run(ctx: StageContext) -> dict[str, list]:
    section: FilterSettings = ctx.section
    judge = Judge(ctx)
    items: list[MCQ] = ctx.mcq
    evidence_ids = {e.id for e in judge.evidence}
    min_chars = section.min_option_chars[ctx.language]
    formats = {i.id: format_problem(i, ctx.language, judge.traces, evidence_ids, min_chars) for i in items}
    # A malformed item is not worth a model call.
    await ctx.units([(check_key(i), partial(judge.check, i)) for i in items if not formats[i.id]])
    checks = {i.id: found[0] for i in items if (found := ctx.done_records(check_key(i), "checks", Checked))}
    reviewed = human_verdicts(ctx.dir / REVIEW_FILE)
    # An item whose checks failed this run is left to the retry (the runner reports the stage as failed).
    decidable = [i for i in items if formats[i.id] or i.id in checks]
    problems = {i.id: item_problems(i, checks.get(i.id), formats[i.id], reviewed.get(i.id, ""), judge.traces,
                                    section, ctx.settings.mcq) for i in decidable}
    final, rejected = decide(decidable, checks, problems, section)
    write_json_atomic(ctx.dir / "filter_report.json", report(items, final, rejected))
    return {"final.jsonl": final, "rejected.jsonl": rejected}



def report(items: list[MCQ], final: list[FinalItem], rejected: list[Rejected]) -> dict:
    by_filter: dict[str, int] = {}
    for r in rejected:
        by_filter[r.filter] = by_filter.get(r.filter, 0) + 1
    return {
        "items": len(items), "kept": len(final), "rejected": len(rejected), "rejected_by_filter": by_filter,
        "cross_type_duplicates": by_filter.get("cross_type_duplicate", 0),
        **blind_accuracy([*final, *rejected]),
        "final": bias_report(final),
        "before_filtering": bias_report(items),
    }


STAGE = Stage(
    name="filter",
    reads=("persona.jsonl", "evidence.jsonl", "traces.jsonl", "mcq.jsonl"),
    writes=("final.jsonl", "rejected.jsonl"),
    templates=("filter_sufficiency.j2", "filter_blind.j2", "filter_single_trace.j2", "filter_inference.j2",
               "filter_unique.j2"),
    judges=("filter_sufficiency", "filter_blind", "filter_single_trace", "filter_inference", "filter_unique"),
    tasks=("filter_sufficiency", "filter_blind", "filter_single_trace", "filter_inference", "filter_unique"),
    config_keys=("prompts", "mcq"),  # the shared trace excerpts and option shape
    body=run,
    help="Format, evidence sufficiency, blind test, option length, temporal leakage, near-duplicates, human review.",
)
