"""Stage `filter`: named quality filters, each with a verdict and a reason; survivors go to final.jsonl."""

from __future__ import annotations

import datetime as dt
from functools import partial

from pydantic import BaseModel

from synth.config.settings import FilterSettings, PromptsSettings
from synth.core import chain
from synth.core.jsonl import write_json_atomic
from synth.engine.stage import Records, Stage, StageContext
from synth.quality.validity import answerable
from synth.records import MCQ, REVIEW_FILE, Evidence, Trace
from synth.stages.common import RelatedTraces, first_seen, statements_of, trace_excerpts
from synth.stages.filter.checks import (  # noqa: F401  (re-exported: tests and review import them from here)
    centrality_problem,
    cross_type_duplicates,
    dated_question_problem,
    duplicate_problem,
    entity_problem,
    format_problem,
    length_problem,
    medium_span_check,
    multi_point,
    needed_traces,
    profile_problem,
    rounds_problem,
    similarity,
    single_answer_problem,
    span_problem,
    temporal_problem,
)
from synth.stages.filter.decide import (  # noqa: F401  (re-exported)
    GENERAL_FILTERS,
    MCQ_ONLY,
    OPEN_ONLY,
    blind_problem,
    blind_votes,
    decide,
    filter_names,
    formats_of,
    human_verdicts,
    inference_problem,
    item_problems,
    open_problem,
    report,
    single_point_problem,
    support_problem,
    type_rules,
    unique_problem,
)
from synth.stages.filter.readers import (  # noqa: F401  (re-exported)
    Blind,
    Checked,
    ChoicesOnly,
    OpenAnswer,
    OpenMatch,
    SingleTrace,
    Sufficiency,
    Uniqueness,
    blind_choices,
    blind_order,
    choices_only_variables,
    inference_model,
    inference_statements,
    open_blind_variables,
    open_judge_variables,
)


def __getattr__(name: str) -> tuple[str, ...]:
    if name == "FILTERS":  # the filters' names in order, computed on use: a type registered after import adds its rule
        return filter_names()
    raise AttributeError(name)


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
                          related: list[str] | None = None, persona=None) -> dict:
    """What the sufficiency judge reads: an answerable item's evidence and traces; an unanswerable item's arc
    evidence and the persona's traces most related to the question across every arc (`related`), up to its time;
    and `persona`'s background (who they are, where they live and work, the people around them), which the QA
    writer saw too: a capable judge rejected answers for "回深圳以后" and "in the staff room", the person's own city
    and workplace, as details "no evidence states"."""
    ids = [t for t in item.digital_trace_ids if t in traces] if answerable(item) else list(related or [])
    return {
        "persona": persona, "question_type": item.question_type, "question": item.question,
        "question_time": item.question_time.isoformat(timespec="minutes"), "answer": item.answer,
        "unanswerable": not answerable(item), "evidence": shown, "settled": item.settled,
        "traces": trace_excerpts(ids, traces, prompts, statements_of(item.evidence) or [item.question]),
    }


def single_trace_variables(item: MCQ, trace_id: str, traces: dict[str, Trace], prompts: PromptsSettings) -> dict:
    """The single-trace test sees the question, the options and ONE of the needed traces."""
    return {"question": item.question, "question_time": item.question_time.isoformat(timespec="minutes"),
            "choices": [c.model_dump() for c in item.choices],
            "traces": trace_excerpts([trace_id], traces, prompts, statements_of(item.evidence))}


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
                  unique: Uniqueness | None = None, only: ChoicesOnly | None = None,
                  opened: tuple[OpenAnswer, OpenMatch] | None = None) -> Checked:
    votes = [blind_choices(item, k)[1].get(b.choice, b.choice) for k, b in enumerate(blinds)]
    refs = inference_statements(item)
    stating = [refs[n - 1].evidence_id for n in sorted(set(grounding.states_answer))] if grounding else []
    return Checked(id=item.id, supported=support.supported, support_reason=support.reason, blind_votes=votes,
                   blind_confidence=blinds[0].confidence, blind_reason=blinds[0].reason,
                   single_trace=[SingleTrace(trace_id=t, choice=b.choice, confidence=b.confidence) for t, b in singles],
                   stating=stating, stating_reason=grounding.reason if grounding else "",
                   unique=unique.only_answer if unique else True, unique_reason=unique.reason if unique else "",
                   choices_only=only.choice if only else "",
                   open_answer=opened[0].answer if opened else "", open_match=opened[1].matches if opened else None,
                   open_reason=opened[1].reason if opened else "")


def other_traces(item: MCQ, related: list[str], limit: int) -> list[str]:
    """The traces the uniqueness judge reads: the most related to the question before its time, not its own."""
    own = set(item.digital_trace_ids) | {t for e in item.evidence for t in e.digital_trace_ids}
    return [t for t in related if t not in own][:limit]


def unique_variables(item: MCQ, others: list[str], traces: dict[str, Trace], prompts: PromptsSettings) -> dict:
    return {"question": item.question, "question_time": item.question_time.isoformat(timespec="minutes"),
            "answer": item.answer, "traces": trace_excerpts(others, traces, prompts, [item.question, item.answer])}


def inference_variables(item: MCQ) -> dict:
    return {"question": item.question, "question_time": item.question_time.isoformat(timespec="minutes"),
            "answer": item.answer, "evidence": [{"statement": r.statement} for r in inference_statements(item)]}


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
                                  sufficiency_variables(item, shown, self.traces, self.prompts, self.related(item),
                                                        self.ctx.persona),
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

    async def choices_only(self, item: MCQ) -> ChoicesOnly | None:
        if not self.section.choices_only or not answerable(item):
            return None
        return await self.ctx.ask("filter_choices_only", "filter_choices_only.j2", choices_only_variables(item),
                                  ChoicesOnly)

    async def open_blind(self, item: MCQ) -> tuple[OpenAnswer, OpenMatch] | None:
        """The open question on its own: a no-context reader answers in free text, a judge compares the answer
        with the reference (two routable tasks: the reader and the judge may be different models)."""
        if not self.section.open_blind or not answerable(item):
            return None
        answer = await self.ctx.ask("filter_open_blind", "filter_open_blind.j2", open_blind_variables(item),
                                    OpenAnswer)
        matched = await self.ctx.ask("filter_open_judge", "filter_open_judge.j2",
                                     open_judge_variables(item, answer.answer), OpenMatch)
        return answer, matched

    async def check(self, item: MCQ) -> Records:
        # Independent judgements: ask them all at once (the open question's reader → judge is the longest chain).
        singles = single_trace_ids(item, self.section.single_trace_max)
        support, grounding, unique, only, opened, *rest = await chain.gather(
            self.sufficiency(item), self.grounding(item), self.unique(item), self.choices_only(item),
            self.open_blind(item), *(self.blind(item, k) for k in range(self.section.blind_samples)),
            *(self.single_trace(item, t) for t in singles))
        blinds, answered = rest[:self.section.blind_samples], rest[self.section.blind_samples:]
        return {"checks": [build_checked(item, support, blinds, answered, grounding, unique, only, opened)]}


def check_key(item: MCQ) -> str:
    return f"check/{item.id}"


def registry_names(ctx: StageContext) -> tuple[str, ...]:
    """The people and places of this life (people.jsonl when the run has one, and the relations): the entities
    the entity-overlap measure counts."""
    people = [p.name for p in ctx.people] if (ctx.dir / "people.jsonl").is_file() else []
    return tuple(dict.fromkeys([*people, *(r.name for r in ctx.persona.relations)]))


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
    names = registry_names(ctx)
    # An item whose checks failed this run is left to the retry (the runner reports the stage as failed).
    decidable = [i for i in items if formats[i.id] or i.id in checks]
    problems = {i.id: item_problems(i, checks.get(i.id), formats[i.id], reviewed.get(i.id, ""), judge.traces,
                                    section, ctx.settings.mcq, names) for i in decidable}
    final, rejected = decide(decidable, checks, problems, section)
    write_json_atomic(ctx.dir / "filter_report.json", report(items, final, rejected))
    return {"final.jsonl": final, "rejected.jsonl": rejected}


STAGE = Stage(
    name="filter",
    reads=("persona.jsonl", "evidence.jsonl", "traces.jsonl", "mcq.jsonl"),
    writes=("final.jsonl", "rejected.jsonl"),
    templates=("filter_sufficiency.j2", "filter_blind.j2", "filter_single_trace.j2", "filter_inference.j2",
               "filter_unique.j2", "filter_choices_only.j2", "filter_open_blind.j2", "filter_open_judge.j2"),
    judges=("filter_sufficiency", "filter_blind", "filter_single_trace", "filter_inference", "filter_unique",
            "filter_choices_only", "filter_open_blind", "filter_open_judge"),
    tasks=("filter_sufficiency", "filter_blind", "filter_single_trace", "filter_inference", "filter_unique",
           "filter_choices_only", "filter_open_blind", "filter_open_judge"),
    config_keys=("prompts", "mcq"),  # the shared trace excerpts and option shape
    body=run,
    help="final.jsonl, rejected.jsonl: format, each question type's own rule, evidence sufficiency, blind tests (options; options alone; the open question), option length, "
         "centrality, temporal leakage, near-duplicates, human review; each item keeps the formats that passed.",
)
