"""Stage `filter`: named quality filters, each with a verdict and a reason; survivors go to final.jsonl."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterable
from functools import partial
from typing import Literal

from pydantic import BaseModel, Field, create_model

from synth.config.settings import FilterSettings
from synth.core.jsonl import write_json_atomic
from synth.engine.stage import Records, Stage, StageContext
from synth.quality import rules
from synth.quality.validity import answerable
from synth.records import MCQ, REVIEW_FILE, Evidence, Trace
from synth.stages.common import RelatedTraces, trace_excerpts
from synth.stages.filter.checks import (  # noqa: F401  (re-exported: tests and review import them from here)
    centrality_problem,
    cross_type_duplicates,
    dated_question_problem,
    duplicate_problem,
    format_problem,
    length_problem,
    medium_span_check,
    multi_point,
    needed_traces,
    profile_problem,
    similarity,
    single_answer_problem,
    span_problem,
    temporal_problem,
)
from synth.stages.filter.verdicts import (  # noqa: F401  (re-exported as the stage's own)
    GENERAL_FILTERS,
    Checked,
    SingleTrace,
    blind_problem,
    blind_votes,
    decide,
    filter_names,
    human_verdicts,
    inference_problem,
    inference_statements,
    item_problems,
    report,
    single_point_problem,
    support_problem,
    type_rules,
    unique_problem,
)


def __getattr__(name: str) -> tuple[str, ...]:
    if name == "FILTERS":  # the filters' names in order, computed on use: a type registered after import adds its rule
        return filter_names()
    raise AttributeError(name)


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

def inference_model(count: int) -> type[BaseModel]:
    """The inference judge's answer: which of the `count` numbered statements state the answer outright."""
    return create_model("InferenceGrounding", states_answer=(list[Literal[tuple(range(1, count + 1))]], ...),
                        reason=(str, ...))


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


def sufficiency_variables(item: MCQ, shown: list[dict], traces: dict[str, Trace], section: FilterSettings,
                          related: list[str] | None = None) -> dict:
    """What the sufficiency judge reads: an answerable item's evidence and traces; an unanswerable item's arc
    evidence and the persona's traces most related to the question across every arc (`related`), up to its time."""
    ids = [t for t in item.digital_trace_ids if t in traces] if answerable(item) else list(related or [])
    return {
        "question_type": item.question_type, "question": item.question,
        "question_time": item.question_time.isoformat(timespec="minutes"), "answer": item.answer,
        "unanswerable": not answerable(item), "evidence": shown, "traces": trace_excerpts(ids, traces, section),
    }


def single_trace_variables(item: MCQ, trace_id: str, traces: dict[str, Trace], section: FilterSettings) -> dict:
    """The single-trace test sees the question, the options and ONE of the needed traces."""
    return {"question": item.question, "question_time": item.question_time.isoformat(timespec="minutes"),
            "choices": [c.model_dump() for c in item.choices], "traces": trace_excerpts([trace_id], traces, section)}


def single_trace_ids(item: MCQ, limit: int) -> list[str]:
    """The needed traces a multi-point item is tested on, one at a time (at most `limit`, newest first: the last
    point is the likeliest to give the whole answer away)."""
    if not multi_point(item.question_type):
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


def unique_variables(item: MCQ, others: list[str], traces: dict[str, Trace], section: FilterSettings) -> dict:
    return {"question": item.question, "question_time": item.question_time.isoformat(timespec="minutes"),
            "answer": item.answer, "traces": trace_excerpts(others, traces, section)}


def inference_variables(item: MCQ) -> dict:
    return {"question": item.question, "question_time": item.question_time.isoformat(timespec="minutes"),
            "answer": item.answer, "evidence": [{"statement": r.statement} for r in inference_statements(item)]}


class Judge:
    """The two model checks of one persona: evidence sufficiency and the no-context blind test; `check` is the
    unit, one per well-formed item."""

    def __init__(self, ctx: StageContext) -> None:
        self.ctx = ctx
        self.section: FilterSettings = ctx.section
        self.traces = ctx.traces_by_id
        self.evidence = ctx.evidence
        self.first_seen = first_seen(self.traces.values())
        self._related: RelatedTraces | None = None

    def related(self, item: MCQ) -> list[str]:
        if answerable(item):
            return []
        if self._related is None:
            self._related = RelatedTraces(self.ctx.traces)
        return self._related.before(item.question, item.question_time, self.section.related_traces)

    async def sufficiency(self, item: MCQ) -> Sufficiency:
        shown = shown_evidence(item, self.first_seen, self.evidence, self.section.sufficiency_max_evidence)
        return await self.ctx.ask("filter_sufficiency", "filter_sufficiency.j2",
                                  sufficiency_variables(item, shown, self.traces, self.section, self.related(item)),
                                  Sufficiency)

    async def single_trace(self, item: MCQ, trace_id: str) -> tuple[str, Blind]:
        answer = await self.ctx.ask("filter_single_trace", "filter_single_trace.j2",
                                    single_trace_variables(item, trace_id, self.traces, self.section), Blind)
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
                                  unique_variables(item, others, self.traces, self.section), Uniqueness)

    async def check(self, item: MCQ) -> Records:
        # Independent judgements: ask them all at once (one level off the stage's critical path).
        singles = single_trace_ids(item, self.section.single_trace_max)
        support, grounding, unique, *rest = await asyncio.gather(self.sufficiency(item), self.grounding(item),
                                                                 self.unique(item), *(
            self.blind(item, k) for k in range(self.section.blind_samples)), *(
            self.single_trace(item, t) for t in singles))
        blinds, answered = rest[:self.section.blind_samples], rest[self.section.blind_samples:]
        return {"checks": [build_checked(item, support, blinds, answered, grounding, unique)]}


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
                                    section) for i in decidable}
    final, rejected = decide(decidable, checks, problems, section)
    write_json_atomic(ctx.dir / "filter_report.json", report(items, final, rejected))
    return {"final.jsonl": final, "rejected.jsonl": rejected}



STAGE = Stage(
    name="filter",
    reads=("persona.jsonl", "evidence.jsonl", "traces.jsonl", "mcq.jsonl"),
    writes=("final.jsonl", "rejected.jsonl"),
    templates=("filter_sufficiency.j2", "filter_blind.j2", "filter_single_trace.j2", "filter_inference.j2",
               "filter_unique.j2"),
    judges=("filter_sufficiency", "filter_blind", "filter_single_trace", "filter_inference", "filter_unique"),
    tasks=("filter_sufficiency", "filter_blind", "filter_single_trace", "filter_inference", "filter_unique"),
    body=run,
    help="final.jsonl, rejected.jsonl: format, each question type's own rule, evidence sufficiency, blind test, "
         "option length, temporal leakage, near-duplicates, human review",
)
