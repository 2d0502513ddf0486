"""The key-blind renderer: one call per option seed gets the question and that seed alone, in a seeded order that
does not depend on which seed is true, and writes it as this person's answer; code maps the renderings back to
their seeds."""

from __future__ import annotations

import re
import statistics
from functools import lru_cache

from pydantic import BaseModel, Field, create_model

from synth.llm.cache import content_hash
from synth.quality.label_check import key_units
from synth.records import QA, OptionSeed, Trace

BAND = (0.75, 1.25)  # each option's length, as a share of the reference answer's (the prompt and the guard agree)
NARROW = 0.1  # after a round lost to length, every option is asked for the last round's median length, this share either way
COPY_MIN_CHARS = {"en": 40, "zh": 15}  # a sentence this long found verbatim in a trace is copied, not written


class Rendered(BaseModel):
    """One statement set written as this person's answer; `cannot_answer`: the set cannot answer the question as
    asked (the renderer sees one set, never which is true, nor the other three)."""

    answer: str = Field(min_length=1)
    cannot_answer: bool = False


class Neutral(BaseModel):
    """The question rewritten so that every statement set answers it equally well (key-blind)."""

    question: str = Field(min_length=1)


class CounterSeed(BaseModel):
    statements: list[str] = Field(min_length=1)


class CounterSeeds(BaseModel):
    seeds: list[CounterSeed] = Field(min_length=1, max_length=5)  # three, and two spares (`seeds.SPARE`)


@lru_cache(maxsize=None)
def counter_seeds_model(need: int, size: int) -> type[CounterSeeds]:
    """The counter-seeds answer for exactly `need` sets of exactly `size` statements: fewer sets would leave the item
    short of four options, a shorter set would be the one option the renderer has to pad (or the thin one a reader
    passes over)."""
    sized = create_model("CounterSeed", __base__=CounterSeed,
                         statements=(list[str], Field(min_length=size, max_length=size)))
    return create_model("CounterSeeds", __base__=CounterSeeds,
                        seeds=(list[sized], Field(min_length=need, max_length=need)))


def seed_key(seed: OptionSeed) -> str:
    """A seed's identity for ordering: its statements only (never its role, never whether it was invented)."""
    return content_hash(seed.statements)


def shuffled(qa: QA, seeds: list[OptionSeed], round_number: int) -> list[OptionSeed]:
    """The seeds in the order the renderer sees them: drawn from the item, the round and each seed's statements,
    so the order (and with it the whole prompt) is the same whichever seed is the true one."""
    return sorted(seeds, key=lambda s: content_hash([qa.id, round_number, seed_key(s)]))


def band(qa: QA, cap: int) -> tuple[int, int]:
    """The length band every option is asked for (characters): around the reference answer's length, at most `cap`
    (`[distractors] option_chars`): an option says one point, while a reference answer may run a whole chain, and a
    long option is the records' list a reader recognises as the key."""
    target = min(len(qa.answer), cap)
    return max(1, int(target * BAND[0])), max(2, int(round(target * BAND[1])))


def band_after(qa: QA, cap: int, feedback: list[dict]) -> tuple[int, int]:
    """The band of this round: `band`, narrowed to NARROW either way of the median length of the last round's four
    options when a round was lost to length (its feedback carries `chars`, `length_target`). Every renderer gets the
    same band, so it says nothing of which set is true; a wide band let the true set, which holds the most, be
    written at its top (the key was the longest option in nearly half of a measured pass)."""
    lo, hi = band(qa, cap)
    chars = next((f["chars"] for f in reversed(feedback) if f.get("chars")), 0)
    if not chars:
        return lo, hi
    narrow = max(lo, int(chars * (1 - NARROW))), min(hi, round(chars * (1 + NARROW)))
    return narrow if narrow[0] < narrow[1] else (lo, hi)


LENGTH_CUES = ("key_too_long", "key_longest", "reader_length")  # the kinds of a round lost to length


def length_target(kinds: list[str], texts: list[str]) -> int:
    """The median length of a round's A–D option texts when the round was lost to length (one of LENGTH_CUES), else
    0: the next round's common target (`band_after`)."""
    if not texts or not any(k in LENGTH_CUES for k in kinds):
        return 0
    return int(statistics.median(len(t) for t in texts))


def render_variables(qa: QA, persona, seed: OptionSeed, feedback: list[dict], cap: int) -> dict:
    """One renderer prompt: the person, the question and one seed's statements — nothing about whether it is true,
    whether it came from the records or was written, what the other sets say, or what the reference answer says.
    One call per set: a renderer writing all four to one question recombined what the sets share, and capable
    readers picked the key as the rendered answers' hub ("studio with B, counsellor with D")."""
    lo, hi = band_after(qa, cap, feedback)
    # no arcs: their anchor states tell which answer fits where the life is going, so a renderer that saw them
    # could write the true set as the one that fits (a writer noted an option ruled out by an arc's direction)
    return {"persona": persona, "arcs": [], "question_type": qa.question_type,
            "question_time": qa.question_time.isoformat(timespec="minutes"), "question": qa.question,
            "statements": seed.statements, "min_chars": lo, "max_chars": hi, "feedback": feedback}


def question_variables(qa: QA, persona, ordered: list[OptionSeed]) -> dict:
    """The question editor's prompt: the question and every seed's statements in the drawn order (`shuffled`) —
    nothing saying which set is true or which was written, nor the reference answer. Capable no-context readers
    picked the key as the one option that fits the question: it was written from the key, so its premise, its
    parts and its words are the key's. Rewritten over all four sets, it asks what they share."""
    return {"persona": persona, "question_type": qa.question_type,
            "question_time": qa.question_time.isoformat(timespec="minutes"), "question": qa.question,
            "sets": [seed.statements for seed in ordered]}


def mapped(ordered: list[OptionSeed], rendered: list[Rendered]) -> list[tuple[OptionSeed, str]]:
    """Each seed with its rendering, in the drawn order."""
    return [(seed, one.answer.strip()) for seed, one in zip(ordered, rendered, strict=True)]


def unanswering(ordered: list[OptionSeed], rendered: list[Rendered]) -> list[OptionSeed]:
    """The distractor seeds the renderer found unable to answer the question as asked (a set about investor calls
    for "who checked on you"; one without numbers for "what numbers did you give"): a reader without the records
    sets their options aside by the question's premise alone. The key's own set is never replaced."""
    return [seed for seed, one in zip(ordered, rendered, strict=True) if one.cannot_answer and seed.role == "distractor"]


_SENTENCE = re.compile(r"[^.!?。！？;；\n]+")


def copied_sentence(texts: list[str], traces: list[Trace], language: str) -> str:
    """The first option sentence found word for word in a trace ('' when none): the options are answers written
    from statements, not excerpts of the records a reader might recognise."""
    floor = COPY_MIN_CHARS.get(language, 40)
    bodies = [t.content for t in traces]
    for text in texts:
        for sentence in _SENTENCE.findall(text):
            sentence = sentence.strip()
            if len(sentence) >= floor and any(sentence in body for body in bodies):
                return sentence
    return ""


def counter_seed_variables(qa: QA, persona, arcs, examples: list[str], real: list[OptionSeed], need: int,
                           size: int, occasions: int = 1) -> dict:
    """The counter-seed writer sees the question, statements of the person's records from other moments (their form
    only), the real seeds chosen so far (not to repeat them), and how many seeds of how many statements to write —
    never the key: sets written around the true one orbit it (dates one day either side of its date, its details
    swapped one at a time), which a reader finds as the options' centre. One that happens to be true is caught by
    the verify judge. `occasions`: how many events the key's statements come from, each set spanning as many (its form,
    as `size` is: a set of one scene beside a key of two occasions was the one option a reader passed over)."""
    return {"persona": persona, "arcs": arcs, "question_type": qa.question_type, "question": qa.question,
            "question_time": qa.question_time.isoformat(timespec="minutes"), "examples": examples,
            "others": [s.statements for s in real], "need": need, "size": size,
            "occasions": min(occasions, size)}


EXAMPLE_TOUCH = 2  # a form example sharing this many content units with the question is about its matter


def form_examples(evidence, seen: dict, qa: QA, used: set[str], count: int, name: str = "") -> list[str]:
    """The `count` latest statements of the person's records seen by the question time that the item and its seeds
    do not use, from other arcs and events than the item's and sharing fewer than EXAMPLE_TOUCH content units with
    the question (the person's `name` aside), oldest first: what a statement of this life looks like, with nothing
    of the answer (an option writer found the answer among examples taken from the item's own arc, and another, in
    an example from another arc, the very bedtime a question asked for)."""
    own = {ref.evidence_id for ref in qa.evidence} | used
    events = {e.event_id for e in evidence if e.id in own}
    asked = key_units(qa.question) - key_units(name)
    before = [e for e in evidence if e.id not in own and e.id in seen and seen[e.id] <= qa.question_time
              and qa.arc_id not in e.arc_ids and e.event_id not in events
              and len(key_units(e.statement) & asked) < EXAMPLE_TOUCH]
    before.sort(key=lambda e: (seen[e.id], e.id))
    return [e.statement for e in before[-count:]]


def invented(written: CounterSeeds, need: int, size: int) -> list[OptionSeed]:
    return [OptionSeed(role="distractor", statements=s.statements[:size], invented=True)
            for s in written.seeds[:need]]
