"""The question items' records: free-text QA, multiple choice with its refinement rounds and option seeds, filter verdicts, final and rejected items, translations."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, ConfigDict

from synth.records.record import (
    Dimension,
    QuestionType,
    Record,
)


class EvidenceRef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    statement: str
    evidence_id: str
    digital_trace_ids: list[str]
    background: bool = False  # an unanswerable item's related background: it does not answer the question


ProfileCell = Literal["both_right", "style_wrong", "fact_wrong", "both_wrong"]
# EverMemBench's 2×2: (fact right, style right) per cell; exactly one option has both right
PROFILE_CELLS: dict[str, tuple[bool, bool]] = {"both_right": (True, True), "style_wrong": (True, False),
                                               "fact_wrong": (False, True), "both_wrong": (False, False)}


class ProfileOption(BaseModel):
    """One option of a profile item: its cell of the 2×2, its text, the fact it conveys in a few words, and the
    style levels its writer claims for it (checked against the member's stored levels, synth.quality.rules)."""

    model_config = ConfigDict(extra="forbid")

    cell: ProfileCell
    text: str
    fact: str
    style: dict[str, int]  # claimed level per chosen style dimension, 1–5
    choice_id: str = ""  # the letter it stands at once the distractors stage arranged the options


class Profile(BaseModel):
    """What a `profile_style` item rests on: a member of a group, the member's stored style on the dimensions the
    item tests (groups.jsonl), the levels the style-wrong options were asked to show, the four options of the 2×2,
    the chat traces where the member spoke (the style's evidence), and the model-free check's findings."""

    model_config = ConfigDict(extra="forbid")

    group_id: str
    group_kind: str
    member_id: str
    member: str
    style: dict[str, int]  # the stored levels (groups.jsonl) on the tested dimensions
    wrong_style: dict[str, int]  # what the style-wrong options were asked to show
    options: list[ProfileOption]
    style_trace_ids: list[str]
    first_problems: list[str] = []  # the model-free check on the first draft
    problems: list[str] = []  # on the kept draft, after the re-asks (non-empty: the filter rejects the item)
    rewrites: int = 0


class QA(Record):
    question_type: QuestionType
    dimension: Dimension
    arc_id: str
    question_time: dt.datetime
    question: str
    answer: str
    evidence: list[EvidenceRef]
    digital_trace_ids: list[str]
    window_end: dt.date
    temporal_scope: str = ""
    outline: str = ""
    # an unanswerable item: what the simulated life settled in its window though no trace may carry it — the
    # distractor writer and the judges keep options and question clear of it (such an option would be true)
    settled: list[str] = []
    counting_convention: str = ""  # temporal_duration: how the days are counted (synth.stages.qa.duration)
    timestamps_stripped: int = 0  # explicit timestamps the model-free rewrite took out of the question
    # the no-context reader's answers that matched the reference, one per rewrite of the question (and the last one
    # when the rewrites ran out): what the question's wording gave away (synth.stages.qa.standalone)
    open_guesses: list[str] = []
    # the QA writer's question, when the options stage rewrote it blind to the key so that every option's set answers
    # it (synth.stages.options): `question` is the rewrite, asked in both formats ("" when not rewritten)
    question_written: str = ""
    profile: Profile | None = None  # profile_style items: the member, the stored style and the 2×2 options
    # relation items (the variants stage): their set, and SubtleMemory's accepted and known-wrong references
    variant_set_id: str = ""
    correct_answers: list[str] = []
    wrong_answers: list[str] = []


class Choice(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: Literal["A", "B", "C", "D", "E"]
    text: str


class RefinementRound(BaseModel):
    model_config = ConfigDict(extra="forbid")

    round: int
    too_easy: bool  # the round failed: a model-free give-away, a blind pick of the key, or a validator's verdict
    reason: str
    validator_choice: str  # the no-context validator's pick ("" when the code guard stopped the round)
    guard: str = ""  # the model-free problem that stopped the round ("" when none)
    blind_correct: bool = False  # the validator picked the key: too easy by fact, whatever it said
    supported: bool | None = None  # the verify judge: the key right and every other option wrong (None: not asked)
    support_reason: str = ""
    key_supported: bool | None = None  # the verify judge: the key's option holds (None: not asked)
    also_true: list[str] = []  # the verify judge: the other options it found holding as well (their letters)
    question_favours: bool | None = None  # the verify judge: the question's wording favours one option (fails)


class OptionSeed(BaseModel):
    """What one A–D option was rendered from (synth.stages.options): evidence statements of this life — the key's
    own evidence, or other evidence chosen per question type — or, when the life had too few fitting ones,
    counter-seeds a model wrote as evidence statements (`invented`, never said so in a prompt)."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["key", "distractor"]
    statements: list[str]
    evidence_ids: list[str] = []  # [] for an invented seed
    invented: bool = False
    # a multi-point item's 2×2: one half of the key's points (in time), the other half another seed's
    crossed: bool = False
    choice_id: str = ""  # the letter its rendering stands at


class MCQ(QA):
    choices: list[Choice]
    correct_choice_id: Literal["A", "B", "C", "D", "E"]
    refinement: list[RefinementRound] = []
    option_seeds: list[OptionSeed] = []  # seeded items: what each A–D option was rendered from


class FilterVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    filter: str
    passed: bool
    reason: str = ""


class FinalItem(MCQ):
    blind_choice: str = ""  # the blind test's first pick (mapped back to the item's own letters)
    blind_confidence: float = 0.0
    blind_votes: list[str] = []  # every no-context pick: the refinement validator's last, then each blind sample
    verdicts: list[FilterVerdict] = []
    # the forms this item is a benchmark item in: the open question stands on its own (a no-context reader's free
    # answer did not match the reference) and/or the multiple choice passed its filters
    formats: list[Literal["open", "mcq"]] = ["open", "mcq"]
    choices_only_choice: str = ""  # the pick of a reader shown the options without the question
    open_blind_answer: str = ""  # the no-context reader's free-text answer to the question
    open_blind_match: bool | None = None  # the judge found it matches the reference (None: not asked)


class TranslatedEvidence(BaseModel):
    model_config = ConfigDict(extra="forbid")

    evidence_id: str
    statement: str


class Translation(Record):
    """One trace or final item in another language (`translations.jsonl`): the same structure under the source's
    ids — a trace's content, an item's question, answer, options (same letters, same key) and evidence statements
    (same evidence ids). Its own id is minted from (source id, language)."""

    language: Literal["en", "zh"]
    kind: Literal["trace", "item"]
    source_id: str
    content: str = ""
    question: str = ""
    answer: str = ""
    choices: list[Choice] = []
    evidence: list[TranslatedEvidence] = []


class Rejected(FinalItem):
    filter: str
    reason: str
