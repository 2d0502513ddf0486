"""Stage `distractors`: free-text QA → multiple choice A–E, refined until a no-context validator finds it not too easy."""

from __future__ import annotations

import random
from typing import Literal

from pydantic import BaseModel, Field

from synth import rules
from synth.llm.cache import content_hash
from synth.models import CANNOT_DETERMINE, CHOICE_IDS, MCQ, QA, Choice, LifeArc, Persona, RefinementRound, Trace
from synth.stage import Stage, StageContext
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
        positions.update(zip(block, slots))
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
    return [Choice(id=cid, text=text) for cid, text in zip(CHOICE_IDS, texts)], correct


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


class Refiner:
    """Writes and validates the options of one persona's questions."""

    def __init__(self, ctx: StageContext) -> None:
        self.ctx = ctx
        self.persona: Persona = ctx.read("persona.jsonl")[0]
        self.arcs: list[LifeArc] = ctx.read("arcs.jsonl")
        self.traces: dict[str, Trace] = {t.id: t for t in ctx.read("traces.jsonl")}
        self.rounds = max(1, ctx.section.rounds)
        self.length_ratio = ctx.section.length_ratio

    def first_date(self, trace_ids: list[str]) -> str:
        times = [self.traces[t].time for t in trace_ids if t in self.traces]
        return min(times).date().isoformat() if times else ""

    def write_variables(self, qa: QA, feedback: list[dict]) -> dict:
        evidence = [{"date": self.first_date(e.digital_trace_ids), "statement": e.statement} for e in qa.evidence]
        return {
            "persona": self.persona, "arcs": self.arcs, "question_type": qa.question_type, "dimension": qa.dimension,
            "question_time": qa.question_time.isoformat(timespec="minutes"), "question": qa.question,
            "answer": qa.answer, "unanswerable": qa.question_type == "unanswerable",
            "cannot_determine": CANNOT_DETERMINE[self.ctx.language], "evidence": evidence,
            "traces": trace_excerpts([t for t in qa.digital_trace_ids if t in self.traces], self.traces,
                                     self.ctx.section),
            "target_chars": len(qa.answer), "feedback": feedback,
        }

    async def refine(self, qa: QA) -> MCQ:
        history: list[RefinementRound] = []
        feedback: list[dict] = []
        choices, correct = [], "E"
        for number in range(1, self.rounds + 1):
            written = await self.ctx.ask("distractors", "distractors_write.j2", self.write_variables(qa, feedback),
                                         DistractorSet)
            texts = [d.text.strip() for d in written.distractors]
            choices, correct = arrange(qa, texts, self.ctx.language, self.positions.get(qa.id, 0))
            problem = code_guard(qa, texts, self.ctx.language, self.length_ratio)
            if problem:
                verdict = RefinementRound(round=number, too_easy=True, reason=problem, validator_choice="")
            else:
                judged = await self.ctx.ask(
                    "distractors_validate", "distractors_validate.j2",
                    {"question": qa.question, "question_time": qa.question_time.isoformat(timespec="minutes"),
                     "choices": [c.model_dump() for c in choices]},
                    Verdict,
                )
                verdict = RefinementRound(round=number, too_easy=judged.too_easy, reason=judged.reason,
                                          validator_choice=judged.choice)
            history.append(verdict)
            if not verdict.too_easy:
                break
            feedback.append({"round": number, "reason": verdict.reason})
        # Out of rounds: the last options stand; the filter's blind test and length check judge them again.
        return MCQ(**qa.model_dump(), choices=choices, correct_choice_id=correct, refinement=history)


async def run(ctx: StageContext) -> None:
    refiner = Refiner(ctx)
    items = ctx.read("qa.jsonl")
    refiner.positions = balanced_positions([qa.id for qa in items if qa.question_type != "unanswerable"])

    def unit(qa: QA):
        async def work():
            return {"mcq.jsonl": [await refiner.refine(qa)]}
        return work

    await ctx.units([(qa.id, unit(qa)) for qa in items])


STAGE = Stage(
    name="distractors",
    reads=("persona.jsonl", "arcs.jsonl", "traces.jsonl", "qa.jsonl"),
    writes=("mcq.jsonl",),
    templates=("distractors_write.j2", "distractors_validate.j2"),
    tasks=("distractors", "distractors_validate"),
    body=run,
    help="Four distractors per question, regenerated while a no-context validator finds the item too easy.",
)
