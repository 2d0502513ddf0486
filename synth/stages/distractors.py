"""Stage `distractors`: free-text QA → multiple choice A–E whose wrong options are alternatives, not perturbations:
refined until no give-away rule, no-context validator or verify judge finds fault."""

from __future__ import annotations

import random
from functools import partial
from typing import Literal

from pydantic import BaseModel, Field

from synth.config.settings import DistractorsSettings, McqSettings, PromptsSettings
from synth.core.tokens import estimate_tokens
from synth.engine.stage import Records, Stage, StageContext
from synth.llm.cache import content_hash
from synth.quality import rules
from synth.records import (
    CANNOT_DETERMINE,
    CHOICE_IDS,
    MCQ,
    QA,
    Choice,
    LifeArc,
    OptionSeed,
    Persona,
    RefinementRound,
    Trace,
)
from synth.stages.common import RelatedTraces, answer_tokens, statements_of, trace_excerpts
from synth.stages.options import Seeder, SeedState, arrange_seeded, asked, render_feedback, ruled_in, seeds


class Distractor(BaseModel):
    text: str = Field(min_length=1)
    why_wrong: str


class DistractorSet(BaseModel):
    distractors: list[Distractor] = Field(min_length=4, max_length=4)


class Verdict(BaseModel):
    choice: Literal["A", "B", "C", "D", "E"]
    needs_memory: bool  # false: surface cues are enough to pick the right option
    reason: str


class OptionNote(BaseModel):
    option: Literal["A", "B", "C", "D", "E"]
    problem: str


class Support(BaseModel):
    """The verify judge: with the evidence and traces, is the key right and every other option wrong?"""

    key_supported: bool
    others_ruled_out: bool
    question_favours_option: bool  # the question's wording (a premise, a leading yes/no, a detail) favours one option
    notes: list[OptionNote] = Field(max_length=5)  # each option that breaks the rule, and why
    reason: str


def balanced_positions(qa_ids: list[str], salt: str = "position") -> dict[str, int]:
    """Where each correct answer goes among A–D: every item's position is uniform over A–D, yet the persona's
    items are balanced (each block of four, in a seeded order, uses every position once), so the position
    distribution stays within a point or two of 25% instead of drifting as independent draws do on small sets.
    Deterministic: keyed on the QA ids (and `salt`, so other balanced draws are independent of this one)."""
    order = sorted(qa_ids, key=lambda qa_id: content_hash([salt, qa_id]))
    positions: dict[str, int] = {}
    for start in range(0, len(order), 4):
        block = order[start : start + 4]
        slots = [0, 1, 2, 3]
        random.Random(content_hash([f"{salt}s", block])).shuffle(slots)
        positions.update(zip(block, slots, strict=False))  # the last block may be short
    return positions


def closest_in_length(texts: list[str], target: int, count: int) -> list[str]:
    """The `count` texts nearest to `target` characters, in their original order (the spare one goes)."""
    ranked = sorted(range(len(texts)), key=lambda i: (abs(len(texts[i]) - target), i))[:count]
    return [texts[i] for i in sorted(ranked)]


def arrange(qa: QA, distractors: list[str], language: str, position: int) -> tuple[list[Choice], str]:
    """A–D and E. Unanswerable: the four distractors fill A–D and E is correct. Otherwise the answer sits at its
    seeded position among the three distractors closest to it in length, and E is a fifth wrong option."""
    if not rules.answerable(qa.question_type):
        texts, correct = list(distractors[:4]), "E"
    else:
        texts = closest_in_length(list(distractors), len(qa.answer), 3)
        texts.insert(position, qa.answer)
        correct = CHOICE_IDS[position]
    texts.append(CANNOT_DETERMINE[language])
    return [Choice(id=cid, text=text) for cid, text in zip(CHOICE_IDS, texts, strict=False)], correct


def arrange_profile(qa: QA, language: str, position: int) -> tuple[list[Choice], str, QA]:
    """A profile item's options are its 2×2 (written with the item, not by the distractor writer): the both-right
    option at its seeded position, the other three cells in an order drawn from the item's id, E last. The letters
    are recorded on the item's profile, so the filter and `synth validate` can check each cell where it stands."""
    assert qa.profile is not None
    others = sorted((o for o in qa.profile.options if o.cell != "both_right"),
                    key=lambda o: content_hash([qa.id, o.cell]))
    key = next(o for o in qa.profile.options if o.cell == "both_right")
    ordered = [*others[:position], key, *others[position:]]
    letters = {o.cell: cid for o, cid in zip(ordered, CHOICE_IDS, strict=False)}
    choices = [Choice(id=cid, text=o.text) for o, cid in zip(ordered, CHOICE_IDS, strict=False)]
    choices.append(Choice(id="E", text=CANNOT_DETERMINE[language]))
    options = [o.model_copy(update={"choice_id": letters[o.cell]}) for o in qa.profile.options]
    placed = qa.model_copy(update={"profile": qa.profile.model_copy(update={"options": options})})
    return choices, CHOICE_IDS[position], placed


def relation_round(qa: QA, answer: str) -> QA:
    """A relation item as a round arranges it: its answer is that round's accepted reference."""
    return qa.model_copy(update={"answer": answer})


def options_of(choices: list[Choice]) -> dict[str, str]:
    return {c.id: c.text for c in choices}


def code_guard(qa: QA, choices: list[Choice], correct: str, language: str, mcq: McqSettings,
               may_be_longest: bool) -> list[tuple[str, str]]:
    """Model-free give-aways of this arrangement (synth.quality.rules, the filter's own rules): repeated options, a key much
    longer than the rest, a key that is their clear centroid, invented answers unlike option E — and a key that is
    the longest option, unless this item is one of the quarter allowed to be (`may_be_longest`): a key that is
    never the longest would be a give-away of its own."""
    found = rules.giveaways(options_of(choices), correct, qa.question_type, CANNOT_DETERMINE[language],
                            mcq.length_ratio, mcq.centrality_margin)
    return [(kind, text) for kind, text in found if not (kind == "key_longest" and may_be_longest)]


# ------------------------------------------------------------------- per task: prompt variables in, record out

def first_date(trace_ids: list[str], traces: dict[str, Trace]) -> str:
    """The day the first of these traces appeared ('' when none is known)."""
    times = [traces[t].time for t in trace_ids if t in traces]
    return min(times).date().isoformat() if times else ""


def option_chars(qa: QA, language: str) -> int:
    """How long each option should be: the answer's length; for unanswerable items, option E's."""
    return len(CANNOT_DETERMINE[language]) if not rules.answerable(qa.question_type) else len(qa.answer)


def write_tokens(qa: QA, language: str) -> int:
    """Room for four options of the target length and their reasons (the answer's length sets the budget)."""
    per_option = estimate_tokens("x" * option_chars(qa, language)) if language == "en" else option_chars(qa, language)
    return 4 * (int(per_option * 1.5) + 80) + 120


def write_variables(qa: QA, persona: Persona, arcs: list[LifeArc], traces: dict[str, Trace],
                    prompts: PromptsSettings, language: str, feedback: list[dict]) -> dict:
    """The distractor writer's prompt: the item, its evidence and traces, and what failed in earlier rounds."""
    evidence = [{"date": first_date(e.digital_trace_ids, traces), "statement": e.statement} for e in qa.evidence]
    return {
        "persona": persona, "arcs": arcs, "question_type": qa.question_type, "dimension": qa.dimension,
        "question_time": qa.question_time.isoformat(timespec="minutes"), "question": qa.question,
        "answer": qa.answer, "unanswerable": not rules.answerable(qa.question_type),
        "cannot_determine": CANNOT_DETERMINE[language], "evidence": evidence,
        "traces": trace_excerpts([t for t in qa.digital_trace_ids if t in traces], traces, prompts,
                                 statements_of(qa.evidence)),
        "target_chars": option_chars(qa, language), "feedback": feedback, "settled": qa.settled,
    }


def validate_variables(qa: QA, choices: list[Choice]) -> dict:
    """The no-context validator sees the question, its time and the options: no traces, no evidence."""
    return {"question": qa.question, "question_time": qa.question_time.isoformat(timespec="minutes"),
            "choices": [c.model_dump() for c in choices]}


def verify_variables(qa: QA, choices: list[Choice], correct: str, traces: dict[str, Trace], shown: list[str],
                     prompts: PromptsSettings) -> dict:
    """The verify judge sees everything the item rests on: the options, the key, the evidence and the traces
    (an unanswerable item's: the persona's traces most related to the question, up to the question time)."""
    evidence = [{"date": first_date(e.digital_trace_ids, traces), "statement": e.statement} for e in qa.evidence]
    return {"question": qa.question, "question_time": qa.question_time.isoformat(timespec="minutes"),
            "choices": [c.model_dump() for c in choices], "correct": correct,
            "unanswerable": not rules.answerable(qa.question_type), "evidence": evidence,
            "traces": trace_excerpts(shown, traces, prompts, statements_of(qa.evidence) or [qa.question]),
            "style_of": qa.profile.member if qa.profile is not None else "", "settled": qa.settled}


def guarded_round(number: int, found: list[tuple[str, str]]) -> RefinementRound:
    """A round the code guard failed: too easy by rule, no model asked."""
    kinds = ",".join(kind for kind, _ in found)
    return RefinementRound(round=number, too_easy=True, reason="; ".join(text for _, text in found),
                           validator_choice="", guard=kinds)


def judged_round(number: int, judged: Verdict, correct: str) -> RefinementRound:
    """The validator's verdict compared with the key: a blind pick of the key is too easy by fact."""
    picked = judged.choice == correct
    return RefinementRound(round=number, too_easy=not judged.needs_memory or picked, reason=judged.reason,
                           validator_choice=judged.choice, blind_correct=picked)


def verified_round(judged: RefinementRound, support: Support, correct: str) -> RefinementRound:
    """The verify judge's verdict on a round the validator passed: a key without support, another option that
    holds, or a question whose wording favours one option fails it."""
    ok = support.key_supported and support.others_ruled_out
    favours = support.question_favours_option
    notes = "; ".join(f"{n.option}: {n.problem}" for n in support.notes)
    return judged.model_copy(update={"supported": ok, "too_easy": judged.too_easy or not ok or favours,
                                     "key_supported": support.key_supported, "question_favours": favours,
                                     "also_true": [] if support.others_ruled_out else sorted(
                                         {n.option for n in support.notes if n.option not in (correct, "E")}),
                                     "support_reason": support.reason + (f" ({notes})" if notes else "")})


def feedback_entry(verdict: RefinementRound) -> dict:
    """What the writer is told about a failed round: the give-away kinds (worded by the template), the
    validator's reason, and the verify judge's objections."""
    return {"round": verdict.round, "kinds": [k for k in verdict.guard.split(",") if k],
            "reason": verdict.reason if not verdict.guard else "", "blind_correct": verdict.blind_correct,
            "unsupported": verdict.support_reason if verdict.supported is False else ""}


def build_mcq(qa: QA, choices: list[Choice], correct: str, history: list[RefinementRound],
              placed: list[OptionSeed] | None = None) -> MCQ:
    return MCQ(**qa.model_dump(), choices=choices, correct_choice_id=correct, refinement=history,
               option_seeds=placed or [])


# ------------------------------------------------------------------------------------------------ stage

class Refiner:
    """Writes, checks and validates the options of one persona's questions; `refine` is the unit, one per question.

    A round: write four distractors → arrange → model-free give-aways (synth.quality.rules) → the no-context validator
    (its pick compared with the key) → the verify judge (key right, every other option wrong). The first round
    that passes all stands; a failed round's reasons go back to the writer."""

    def __init__(self, ctx: StageContext, items: list[QA]) -> None:
        self.ctx = ctx
        self.persona = ctx.persona
        self.arcs = ctx.arcs
        self.traces = ctx.traces_by_id
        self.section: DistractorsSettings = ctx.section
        self.rounds = max(1, self.section.rounds)
        self.prompts, self.mcq = ctx.settings.prompts, ctx.settings.mcq  # shared with qa and filter
        answerable = [qa.id for qa in items if rules.answerable(qa.question_type)]
        self.positions = balanced_positions(answerable)
        # a balanced quarter of the items may keep the key as the longest option (chance level, not zero)
        self.may_be_longest = {qa_id for qa_id, slot in balanced_positions(answerable, "longest").items() if slot == 0}
        self._related: RelatedTraces | None = None
        self._seeder: Seeder | None = None

    @property
    def seeder(self) -> Seeder:
        if self._seeder is None:
            self._seeder = Seeder(self.ctx)
        return self._seeder

    def shown_traces(self, qa: QA) -> list[str]:
        if qa.profile is not None:  # the style's evidence too: the chat days where the member spoke
            return [t for t in dict.fromkeys([*qa.digital_trace_ids, *qa.profile.style_trace_ids]) if t in self.traces]
        if rules.answerable(qa.question_type):
            return [t for t in qa.digital_trace_ids if t in self.traces]
        if self._related is None:
            self._related = RelatedTraces(self.ctx.traces)
        return self._related.before(qa.question, qa.question_time, self.mcq.related_traces)

    async def refine(self, qa: QA) -> Records:
        if qa.profile is not None:  # its options are the 2×2 written with it: judged once, never rewritten
            choices, correct, qa = arrange_profile(qa, self.ctx.language, self.positions.get(qa.id, 0))
            verdict = await self.judge(qa, choices, correct, 1)
            return {"mcq.jsonl": [build_mcq(qa, choices, correct, [verdict])]}
        if seeds.seeded(qa):
            return await self.refine_seeded(qa)
        history: list[RefinementRound] = []
        feedback: list[dict] = []
        choices, correct = [], "E"
        rounds, order = self.rounds, []
        if qa.variant_set_id:  # its accepted answers, those no give-away rule flags first: one per round
            order = self.relation_order(qa)
            rounds = min(rounds, len(order))
        for number in range(1, rounds + 1):
            choices, correct, verdict = await self.attempt(qa, number, feedback, order)
            history.append(verdict)
            if not verdict.too_easy:
                break
            feedback.append(feedback_entry(verdict))
        # Out of rounds: the last options stand; the filter judges them again (and rejects what still fails).
        if qa.variant_set_id:
            qa = relation_round(qa, order[len(history) - 1])
        return {"mcq.jsonl": [build_mcq(qa, choices, correct, history)]}

    async def refine_seeded(self, qa: QA) -> Records:
        """Options from this life, rendered blind to the key: each round chooses the seeds (without those a judge
        found also true, and all three after a round whose validator found the key: `[distractors] redraw`), renders
        all four afresh (the key's text is never kept from a failed round) and judges them as any arrangement. The
        free-text answer stays the QA writer's; the key is the true seed's rendering."""
        history: list[RefinementRound] = []
        feedback: list[dict] = []
        state = SeedState()
        choices, correct, placed = [], "E", []
        for number in range(1, self.rounds + 1):
            rendered = await self.seeder.options(qa, state, number, feedback)
            choices, correct, placed = arrange_seeded(rendered, self.positions.get(qa.id, 0), self.ctx.language)
            copied = self.seeder.copied([c.text for c in choices[:4]])
            verdict = (guarded_round(number, [("copied_sentence", f"an option copies a trace: {copied!r}")])
                       if copied else await self.judge(asked(qa, state), choices, correct, number))
            history.append(verdict)
            if not verdict.too_easy:
                break
            feedback.append(render_feedback(verdict, [c.text for c in choices[:4]]))
            if verdict.question_favours:  # the next round rewrites the question again, over its own sets
                state.question = ""
            key = next(seed for seed in placed if seed.role == "key")
            for seed in ruled_in(verdict, placed, state):
                state.drop(seed, key)
            if verdict.blind_correct and self.section.redraw:  # the reader found the key among these sets: new ones
                for seed in placed:
                    if seed.role == "distractor":
                        state.drop(seed, key)
        final = asked(qa, state)
        if final is not qa:  # the key-blind rewrite stands for both formats; the QA writer's question is kept
            final = final.model_copy(update={"question_written": qa.question})
        return {"mcq.jsonl": [build_mcq(final, choices, correct, history, placed)]}

    def relation_order(self, qa: QA) -> list[str]:
        """A relation item's accepted answers in the order its rounds try them: those whose arrangement among the
        known-wrong ones passes the model-free guard first (stable), so a model call is spent on a fair one."""
        language = self.ctx.language

        def flagged(answer: str) -> bool:
            choices, correct = arrange(qa.model_copy(update={"answer": answer}), list(qa.wrong_answers), language,
                                       self.positions.get(qa.id, 0))
            return bool(code_guard(qa, choices, correct, language, self.mcq, qa.id in self.may_be_longest))

        return sorted(qa.correct_answers, key=flagged)

    async def attempt(self, qa: QA, number: int, feedback: list[dict],
                      order: list[str] | None = None) -> tuple[list[Choice], str, RefinementRound]:
        language = self.ctx.language
        if qa.variant_set_id and order:
            # A relation item's options are its references (SubtleMemory): round k puts the k-th accepted answer of
            # `order` among the three known-wrong ones — nothing to write; the same guard, validator and verify
            # judge decide.
            qa = relation_round(qa, order[number - 1])
            texts = list(qa.wrong_answers)
        else:
            written = await self.ctx.ask("distractors", "distractors_write.j2",
                                         write_variables(qa, self.persona, self.arcs, self.traces, self.prompts,
                                                         language, feedback), DistractorSet,
                                         max_tokens=answer_tokens(self.ctx, write_tokens(qa, language)))
            texts = [d.text.strip() for d in written.distractors]
        choices, correct = arrange(qa, texts, language, self.positions.get(qa.id, 0))
        return choices, correct, await self.judge(qa, choices, correct, number)

    async def judge(self, qa: QA, choices: list[Choice], correct: str, number: int) -> RefinementRound:
        """One arrangement through the model-free guard, the no-context validator and the verify judge."""
        language = self.ctx.language
        found = code_guard(qa, choices, correct, language, self.mcq, qa.id in self.may_be_longest)
        if found:
            return guarded_round(number, found)
        judged = judged_round(number, await self.ctx.ask("distractors_validate", "distractors_validate.j2",
                                                         validate_variables(qa, choices), Verdict), correct)
        if judged.too_easy or not self.section.verify:
            return judged
        support = await self.ctx.ask("distractors_verify", "distractors_verify.j2",
                                     verify_variables(qa, choices, correct, self.traces, self.shown_traces(qa),
                                                      self.prompts), Support)
        return verified_round(judged, support, correct)


async def run(ctx: StageContext) -> None:
    items: list[QA] = ctx.qa
    refiner = Refiner(ctx, items)
    await ctx.units([(qa.id, partial(refiner.refine, qa)) for qa in items])


STAGE = Stage(
    name="distractors",
    reads=("persona.jsonl", "arcs.jsonl", "events.jsonl", "evidence.jsonl", "traces.jsonl", "qa.jsonl"),
    writes=("mcq.jsonl",),
    templates=("distractors_question.j2", "distractors_render.j2", "distractors_seeds.j2", "distractors_write.j2",
               "distractors_validate.j2", "distractors_verify.j2"),
    tasks=("distractors_question", "distractors_render", "distractors_seeds", "distractors", "distractors_validate",
           "distractors_verify"),
    judges=("distractors_validate", "distractors_verify"),
    config_keys=("prompts", "mcq"),  # the shared trace excerpts and option shape
    body=run,
    help="mcq.jsonl: options from the person's own life (seeds chosen per question type, rendered blind to the key; "
         "unanswerable items: four invented answers), re-rendered while a give-away rule, the no-context validator "
         "or the verify judge finds fault.",
)
