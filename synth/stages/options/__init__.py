"""Options from the person's own life: seeds chosen by code (seeds.py), rendered blind to the key (render.py);
`Seeder` runs both for the distractors stage and keeps what a failed round ruled out."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from synth.core.tokens import estimate_tokens
from synth.engine.stage import StageContext
from synth.records import CANNOT_DETERMINE, CHOICE_IDS, QA, Choice, OptionSeed, RefinementRound
from synth.stages.common import answer_tokens, first_seen
from synth.stages.options import render, seeds

__all__ = ["Seeder", "SeedState", "arrange_seeded", "asked", "reader_cues", "render", "render_feedback", "ruled_in",
           "seeds"]


REPLACEMENTS = 2  # times a round chooses and renders again when the renderer finds sets unable to answer


STATEMENT_TOKENS = 60  # the least room per written statement


def statement_tokens(statements: list[str]) -> int:
    """Room per counter-seed statement: half again the longest of the statements it must match (the key's, whose
    size is not shown, and the form examples), at least STATEMENT_TOKENS. A flat 60 left a Chinese counter-seed
    writer, asked for as many names, times and amounts as the examples, writing shorter statements than they were
    — and readers picked the key of a crossed item as the option with the most details."""
    return max([STATEMENT_TOKENS, *(estimate_tokens(s) * 3 // 2 for s in statements)])


@dataclass
class SeedState:
    """What one item's rounds have learnt: evidence left out (a judge found it also true, or the renderer found it
    unable to answer), counter-seeds written so far, whether the 2×2 still applies."""

    excluded: set[str] = field(default_factory=set)
    written: list[OptionSeed] = field(default_factory=list)
    crossing: bool = True  # off once a judge found a crossed option also true (a half alone answers the question)
    question: str = ""  # the question rewritten over the first round's four sets, blind to the key ("" until then)

    def drop(self, seed: OptionSeed, key: OptionSeed) -> None:
        """Leave `seed` out of the next choice: its evidence (not the key's, which a crossed seed shares), or, for
        a written one, the counter-seed it came from."""
        self.excluded.update(i for i in seed.evidence_ids if i not in key.evidence_ids)
        self.written = [w for w in self.written if not set(w.statements) & set(seed.statements)]


def arrange_seeded(rendered: list[tuple[OptionSeed, str]], position: int,
                   language: str) -> tuple[list[Choice], str, list[OptionSeed]]:
    """A–D: the key's rendering at its seeded position, the distractors' in the renderer's order; E last. Each seed
    records the letter its rendering stands at."""
    key = next(pair for pair in rendered if pair[0].role == "key")
    ordered = [pair for pair in rendered if pair[0].role != "key"]
    ordered.insert(position, key)
    choices = [Choice(id=cid, text=text) for cid, (_, text) in zip(CHOICE_IDS, ordered, strict=False)]
    choices.append(Choice(id="E", text=CANNOT_DETERMINE[language]))
    placed = [seed.model_copy(update={"choice_id": cid}) for cid, (seed, _) in zip(CHOICE_IDS, ordered, strict=False)]
    return choices, CHOICE_IDS[position], placed


def asked(qa: QA, state: SeedState) -> QA:
    """The item as its options are written and judged: with the key-blind rewrite of its question, once made. The QA
    writer's question is kept on the item (`question_written`)."""
    if not state.question or state.question == qa.question:
        return qa
    return qa.model_copy(update={"question": state.question})


def render_feedback(verdict: RefinementRound, texts: list[str] | tuple[str, ...] = ()) -> dict:
    """What the renderer is told about a failed round, blind to the key: the give-away kinds (worded by the
    template as advice for all four options) — the model-free guard's, and the kinds of cue the no-context reader
    named (`reader_cues`) — whether the question's wording favoured one option, whether an option strayed from its
    statements; after a round lost to length, the median length of its A–D `texts` (`chars`, the next round's
    common target: `render.band_after`). Never the reader's own words (they describe the option it picked, which is the key's content when
    the pick was right), never which option was right, never whether the reader's pick was."""
    kinds = [k for k in verdict.guard.split(",") if k]
    if not verdict.guard and verdict.reason:
        kinds += reader_cues(verdict.reason)
    return {"round": verdict.round, "kinds": kinds, "reason": "",
            "favours": bool(verdict.question_favours),
            "unfaithful": verdict.key_supported is False,
            "chars": render.length_target(kinds, list(texts))}


# The kinds of cue a no-context reader names, recognised in its reason (en and zh) and passed on as a kind only.
_CUES = {
    "reader_premise": ("premise", "fits the question", "does not fit", "doesn't fit", "only one", "only option",
                       "前提", "不符合问题", "只有"),
    "reader_length": ("longest", "longer", "length", "most detailed", "more detail", "最长", "更长", "更详细"),
    "reader_names": ("name", "same people", "person", "人名", "同一个人"),
    "reader_form": ("list", "record", "voice", "wording", "phrasing", "口吻", "措辞", "像记录"),
    "reader_plausible": ("plausib", "realistic", "likely", "dramatic", "stronger", "合理", "更可能", "戏剧"),
}


def reader_cues(reason: str) -> list[str]:
    """The kinds of cue a no-context reader's reason names (length, names, form, plausibility; else "other"): the
    renderer hears these, never the reader's words, which can name the key's content."""
    text = reason.lower()
    return [kind for kind, words in _CUES.items() if any(w in text for w in words)] or ["reader_other"]


def ruled_in(verdict: RefinementRound, placed: list[OptionSeed], state: SeedState) -> list[OptionSeed]:
    """The distractor seeds the verify judge found also true (its notes name their letters): the next round
    chooses without them. A crossed one found true means half the key answers the question: the next round has
    no 2×2 (`state.crossing`), and keeps the seed it crossed."""
    found = [s for s in placed if s.role == "distractor" and s.choice_id in verdict.also_true]
    if any(s.crossed for s in found):
        state.crossing = False
    return [s for s in found if not s.crossed]


class Seeder:
    """Chooses, completes and renders one persona's option seeds."""

    def __init__(self, ctx: StageContext) -> None:
        self.ctx = ctx
        self.evidence = ctx.evidence
        self.seen = first_seen(ctx.traces)
        self.events = {e.id: e for e in ctx.events}
        self.traces = ctx.traces_by_id
        self.by_id = by_id = {e.id: e for e in self.evidence}
        self.people = lambda seed: seeds.seed_people(seed, by_id, self.events)

    async def choose(self, qa: QA, state: SeedState) -> list[OptionSeed]:
        """The key's seed and three distractor seeds: real ones first, counter-seeds written for the rest. A
        multi-point item of one matter (`SeedRule.crossed`) whose key spans records takes one seed of its arc (or a
        counter-seed) and crosses it with the key (`seeds.cross`). With `[distractors] balance` the three are the
        triple, among up to eight fitting real seeds and SPARE more counter-seeds than needed, that leaves the key's
        set least central (`seeds.balanced`)."""
        balance = self.ctx.section.balance
        key, real = seeds.select(qa, self.evidence, self.seen, self.events, state.excluded,
                                 seeds.CANDIDATES if balance else seeds.DISTRACTORS)
        # a real seed that shares nothing with the question cannot answer it: the one option that fits the question's
        # premise would be the key (a capable reader picks it without the records); a counter-seed written for the
        # question takes its place
        real = seeds.fitting(real, qa.question, self.ctx.persona.name, key)
        at = seeds.cut(qa, self.seen) if state.crossing and seeds.SEED_RULES[qa.question_type].crossed else 0
        if at:  # the other half of the 2×2 is of the same matter: a seed of the item's arc, else a counter-seed
            arcs = {e.id: e.arc_ids for e in self.evidence}
            real = [s for s in real if len(s.statements) == len(key.statements)
                    and all(qa.arc_id in arcs.get(i, ()) for i in s.evidence_ids)][:1]
        else:  # three that leave the key's set no more central than the most central other (`seeds.balanced`)
            real = seeds.balanced(key, real, self.people)
        need = (1 if at else seeds.DISTRACTORS) - len(real) - len(state.written)
        spare = seeds.SPARE if balance and not at else 0
        for attempt in range(2):  # a set restating a key statement is written once more (then kept: four options)
            if need <= 0:
                break
            fresh = await self.counter_seeds(qa, key, real, state, need + spare, attempt)
            # a written set restating one of the key's statements puts that half of the key in a third option (or
            # the key in two): it is left out and written again
            copies = seeds.restating(fresh, key) if attempt == 0 else []
            state.written += [seed for seed in fresh if seed not in copies]
            need -= len(fresh) - len(copies)
        if spare:  # the spares let the off-centre choice apply to written sets too
            picked = seeds.balanced(key, [*real, *state.written], self.people)
            real, state.written = [s for s in picked if not s.invented], [s for s in picked if s.invented]
        if at:
            return seeds.cross(seeds.key_seed(qa, self.seen), [*real, *state.written][0], at)
        return [key, *real, *state.written][: seeds.DISTRACTORS + 1]

    async def counter_seeds(self, qa: QA, key: OptionSeed, real: list[OptionSeed], state: SeedState, need: int,
                            attempt: int) -> list[OptionSeed]:
        """`need` counter-seeds of the key's size, written for the question without the key (the chosen sets
        shown, not to be repeated)."""
        size = max(1, min(len(key.statements), seeds.GROUP_MAX))
        examples = render.form_examples(self.evidence, self.seen, qa, {i for s in real for i in s.evidence_ids}, 4,
                                        self.ctx.persona.name)
        written = await self.ctx.ask(
            "distractors_seeds", "distractors_seeds.j2",
            render.counter_seed_variables(qa, self.ctx.persona, self.ctx.arcs, examples, [*real, *state.written],
                                          need, size, seeds.occasions(key, self.by_id)),
            render.counter_seeds_model(need, size),
            max_tokens=answer_tokens(self.ctx, need * size * statement_tokens([*key.statements, *examples]) + 120),
            sample=attempt)
        return render.invented(written, need, size)

    async def options(self, qa: QA, state: SeedState, number: int,
                      feedback: list[dict]) -> list[tuple[OptionSeed, str]]:
        """One round's options: seeds chosen and rendered; when the renderer finds a distractor's set unable to
        answer the question, that seed is left out and the round chooses and renders again, up to REPLACEMENTS
        times (the replacements can be unfit too: a capable renderer found a walk question's first replacements
        without the walk it asks about; counter-seeds, written for the question, fill in once real seeds run out).
        The first round (and a round after the verify judge found the question favouring one option) first
        rewrites the question over its four sets, blind to the key (`[distractors] neutral_question`)."""
        chosen = await self.choose(qa, state)  # seeds are chosen (and written) for the QA writer's question
        if self.ctx.section.neutral_question and not state.question:
            state.question = await self.neutral(qa, chosen, number)
        shown = asked(qa, state)
        rendered, unfit = await self.render(shown, chosen, number, feedback)
        for again in range(1, REPLACEMENTS + 1):
            if not unfit:
                break
            key = next(seed for seed, _ in rendered if seed.role == "key")
            for seed in unfit:
                state.drop(seed, key)
            rendered, unfit = await self.render(shown, await self.choose(qa, state), number, feedback, again)
        return rendered

    async def neutral(self, qa: QA, chosen: list[OptionSeed], number: int) -> str:
        """The question rewritten so that each of the four sets answers it equally well: one call that sees the
        sets in the drawn order, never which is true (`render.question_variables`)."""
        variables = render.question_variables(qa, self.ctx.persona, render.shuffled(qa, chosen, number))
        edited = await self.ctx.ask("distractors_question", "distractors_question.j2", variables, render.Neutral,
                                    max_tokens=answer_tokens(self.ctx, 400))
        return edited.question.strip() or qa.question

    async def render(self, qa: QA, chosen: list[OptionSeed], number: int, feedback: list[dict],
                     again: int = 0) -> tuple[list[tuple[OptionSeed, str]], list[OptionSeed]]:
        """One call per seed, in the drawn order, each blind to the others; `again`: the rendering's number within
        the round (a replacement renders every set anew, the key's too, as a fresh draw)."""
        ordered = render.shuffled(qa, chosen, number)
        cap = self.ctx.section.option_chars[self.ctx.language]
        lo, hi = render.band_after(qa, cap, feedback)
        room = hi + 60 if self.ctx.language == "zh" else hi // 3 + 60
        rendered = await asyncio.gather(*(
            self.ctx.ask("distractors_render", "distractors_render.j2",
                         render.render_variables(qa, self.ctx.persona, seed, feedback, cap), render.Rendered,
                         max_tokens=answer_tokens(self.ctx, room + 40), sample=again)
            for seed in ordered))
        return render.mapped(ordered, rendered), render.unanswering(ordered, rendered)

    def copied(self, texts: list[str]) -> str:
        """Checked against every trace of the persona: a distractor copied from its own seed's records is as
        recognisable as a copied key."""
        return render.copied_sentence(texts, list(self.traces.values()), self.ctx.language)
