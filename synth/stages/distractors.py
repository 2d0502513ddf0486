"""Stage `distractors`: free-text QA → multiple choice A–E, refined until a no-context validator finds it not too easy."""

from __future__ import annotations

import random
from functools import partial
from typing import Literal

from pydantic import BaseModel, Field

from synth import rules
from synth.llm.cache import content_hash
from synth.models import (
    CANNOT_DETERMINE,
    CHOICE_IDS,
    MCQ,
    QA,
    Choice,
    LifeArc,
    Persona,
    RefinementRound,
    Trace,
)
from synth.settings import DistractorsSettings
from synth.stage import Records, Stage, StageContext
from synth.stages.common import trace_excerpts


class Distractor(BaseModel):
    text: str = Field(min_length=1)
    why_wrong: str


class DistractorSet(BaseModel):
    distractors: list[Distractor] = Field(min_length=4, max_length=4)


class Verdict(BaseModel):
    choice: Literal["A", "B", "C", "D", "E"]
    too_easy: bool
    reason: str


def balanced_positions(qa_ids: list[str]) -> dict[str, int]:
    """Where each correct answer goes among A–D: every item's position is uniform over A–D, yet the persona's
    items are balanced (each block of four, in a seeded order, uses every position once), so the position
    distribution stays within a point or two of 25% instead of drifting as independent draws do on small sets.
    Deterministic: keyed on the QA ids only."""
    order = sorted(qa_ids, key=lambda qa_id: content_hash(["position", qa_id]))
    positions: dict[str, int] = {}
    for start in range(0, len(order), 4):
        block = order[start : start + 4]
        slots = [0, 1, 2, 3]
        random.Random(content_hash(["positions", block])).shuffle(slots)
        positions.update(zip(block, slots, strict=False))  # the last block may be short
    return positions


def closest_in_length(texts: list[str], target: int, count: int) -> list[str]:
    """The `count` texts nearest to `target` characters, in their original order (the spare one goes)."""
    ranked = sorted(range(len(texts)), key=lambda i: (abs(len(texts[i]) - target), i))[:count]
    return [texts[i] for i in sorted(ranked)]


def arrange(qa: QA, distractors: list[str], language: str, position: int) -> tuple[list[Choice], str]:
    """A–D and E. Unanswerable: the four distractors fill A–D and E is correct. Otherwise the answer sits at its
    seeded position among the three distractors closest to it in length, and E is a fifth wrong option."""
    if qa.question_type == "unanswerable":
        texts, correct = list(distractors[:4]), "E"
    else:
        texts = closest_in_length(list(distractors), len(qa.answer), 3)
        texts.insert(position, qa.answer)
        correct = CHOICE_IDS[position]
    texts.append(CANNOT_DETERMINE[language])
    return [Choice(id=cid, text=text) for cid, text in zip(CHOICE_IDS, texts, strict=False)], correct


def code_guard(qa: QA, distractors: list[str], language: str, length_ratio: float) -> str:
    """Defects code can see before any validator (the filter's own rules, synth.rules): duplicates and a correct
    option much longer than the rest."""
    if rules.repeated_option(qa.answer, distractors, CANNOT_DETERMINE[language]):
        return "two options say the same thing (or repeat the correct answer / option E); make all four distinct"
    if rules.answerable(qa.question_type):
        longest = max(len(t) for t in distractors)
        if rules.length_problem(qa.answer, distractors, length_ratio):
            return (f"length guard: the correct answer has {len(qa.answer)} characters but the longest distractor "
                    f"only {longest}; write distractors of about {len(qa.answer)} characters, as detailed as it")
    return ""


# ------------------------------------------------------------------- per task: prompt variables in, record out

def first_date(trace_ids: list[str], traces: dict[str, Trace]) -> str:
    """The day the first of these traces appeared ('' when none is known)."""
    times = [traces[t].time for t in trace_ids if t in traces]
    return min(times).date().isoformat() if times else ""


def write_variables(qa: QA, persona: Persona, arcs: list[LifeArc], traces: dict[str, Trace],
                    section: DistractorsSettings, language: str, feedback: list[dict]) -> dict:
    """The distractor writer's prompt: the item, its evidence and traces, and the validator's earlier objections."""
    evidence = [{"date": first_date(e.digital_trace_ids, traces), "statement": e.statement} for e in qa.evidence]
    return {
        "persona": persona, "arcs": arcs, "question_type": qa.question_type, "dimension": qa.dimension,
        "question_time": qa.question_time.isoformat(timespec="minutes"), "question": qa.question,
        "answer": qa.answer, "unanswerable": qa.question_type == "unanswerable",
        "cannot_determine": CANNOT_DETERMINE[language], "evidence": evidence,
        "traces": trace_excerpts([t for t in qa.digital_trace_ids if t in traces], traces, section),
        "target_chars": len(qa.answer), "feedback": feedback,
    }


def validate_variables(qa: QA, choices: list[Choice]) -> dict:
    """The no-context validator sees the question, its time and the options: no traces, no evidence."""
    return {"question": qa.question, "question_time": qa.question_time.isoformat(timespec="minutes"),
            "choices": [c.model_dump() for c in choices]}


def judged_round(number: int, judged: Verdict) -> RefinementRound:
    return RefinementRound(round=number, too_easy=judged.too_easy, reason=judged.reason,
                           validator_choice=judged.choice)


def guarded_round(number: int, problem: str) -> RefinementRound:
    """A round the code guard failed: too easy by rule, no validator asked."""
    return RefinementRound(round=number, too_easy=True, reason=problem, validator_choice="")


def build_mcq(qa: QA, choices: list[Choice], correct: str, history: list[RefinementRound]) -> MCQ:
    return MCQ(**qa.model_dump(), choices=choices, correct_choice_id=correct, refinement=history)


# ------------------------------------------------------------------------------------------------ stage

class Refiner:
    """Writes and validates the options of one persona's questions; `refine` is the unit, one per question."""

    def __init__(self, ctx: StageContext, items: list[QA]) -> None:
        self.ctx = ctx
        self.persona = ctx.persona
        self.arcs = ctx.arcs
        self.traces = ctx.traces_by_id
        self.section: DistractorsSettings = ctx.section
        self.rounds = max(1, self.section.rounds)
        self.positions = balanced_positions([qa.id for qa in items if qa.question_type != "unanswerable"])

    async def refine(self, qa: QA) -> Records:
        history: list[RefinementRound] = []
        feedback: list[dict] = []
        choices, correct = [], "E"
        for number in range(1, self.rounds + 1):
            choices, correct, verdict = await self.attempt(qa, number, feedback)
            history.append(verdict)
            if not verdict.too_easy:
                break
            feedback.append({"round": number, "reason": verdict.reason})
        # Out of rounds: the last options stand; the filter's blind test and length check judge them again.
        return {"mcq.jsonl": [build_mcq(qa, choices, correct, history)]}

    async def attempt(self, qa: QA, number: int, feedback: list[dict]) -> tuple[list[Choice], str, RefinementRound]:
        """One round: write four distractors, arrange the options, then the code guard or the validator judges."""
        language = self.ctx.language
        written = await self.ctx.ask("distractors", "distractors_write.j2",
                                     write_variables(qa, self.persona, self.arcs, self.traces, self.section,
                                                     language, feedback), DistractorSet)
        texts = [d.text.strip() for d in written.distractors]
        choices, correct = arrange(qa, texts, language, self.positions.get(qa.id, 0))
        problem = code_guard(qa, texts, language, self.section.length_ratio)
        if problem:
            return choices, correct, guarded_round(number, problem)
        judged = await self.ctx.ask("distractors_validate", "distractors_validate.j2",
                                    validate_variables(qa, choices), Verdict)
        return choices, correct, judged_round(number, judged)


async def run(ctx: StageContext) -> None:
    items: list[QA] = ctx.read("qa.jsonl")
    refiner = Refiner(ctx, items)
    await ctx.units([(qa.id, partial(refiner.refine, qa)) for qa in items])


STAGE = Stage(
    name="distractors",
    reads=("persona.jsonl", "arcs.jsonl", "traces.jsonl", "qa.jsonl"),
    writes=("mcq.jsonl",),
    templates=("distractors_write.j2", "distractors_validate.j2"),
    tasks=("distractors", "distractors_validate"),
    body=run,
    help="Four distractors per question, regenerated while a no-context validator finds the item too easy.",
)
