"""The records of the output layout (DESIGN.md), as pydantic models with extra fields forbidden."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from synth.config import question_types
from synth.config.personas import BigFive  # one definition: the seed's, re-exported for the records

Dimension = Literal["experience", "emotion", "opinion"]
EvidenceKind = Literal["fact", "emotion", "opinion"]
# A question type is a name in the registry (synth.config.question_types): CloneMem's eight, the extra types
# `[qa] types` may list, SubtleMemory's relation types (the variants stage), and any type registered after them
QuestionType = Annotated[str, AfterValidator(question_types.check_known)]
QUESTION_TYPES: tuple[str, ...] = question_types.names("clonemem")  # the built-ins, as the registry orders them
EXTRA_TYPES: tuple[str, ...] = question_types.names("extra")
RELATION_TYPES: tuple[str, ...] = question_types.names("relation")
RelationType = Literal[
    "relation_complementary_all", "relation_complementary_any", "relation_nuanced_temporal",
    "relation_nuanced_contextual", "relation_contradictory",
]
DIMENSIONS: tuple[str, ...] = Dimension.__args__  # type: ignore[attr-defined]
CHOICE_IDS = ("A", "B", "C", "D", "E")
CANNOT_DETERMINE = {
    "en": "Cannot be determined based on available information",
    "zh": "根据现有信息无法确定",
}

_NAMESPACE = uuid.UUID("6f1c2d1e-7a53-4c5e-9b1e-2f0d1c0a5e77")


def mint_id(parent: str, kind: str, *position: object) -> str:
    """Deterministic id from the parent id, the record kind and its position: a re-run mints the same ids."""
    return str(uuid.uuid5(_NAMESPACE, "/".join([parent, kind, *map(str, position)])))


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    persona_id: str


class Relation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    name: str
    relation: str  # how they relate to the persona: mother, partner, colleague, friend ...
    description: str


class Persona(Record):
    language: Literal["en", "zh"]
    big_five: BigFive
    start: dt.date
    end: dt.date
    scale: str
    name: str
    age: int
    gender: str
    personality: str
    family_history: str
    education: str
    occupation: str
    concerns: list[str]
    interests: list[str]
    backstory: str
    relations: list[Relation]


class EventSeed(Record):
    name: str
    title: str
    description: str
    origin: Literal["predefined", "added"]


class AnchorState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str
    description: str
    trigger: str
    cues: list[str]


class LifeArc(Record):
    dimension: Dimension
    title: str
    description: str
    anchor_states: list[AnchorState]
    seed_ids: list[str] = []


class ArcState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    arc_id: str
    anchor_index: int = Field(ge=0)


class MajorEvent(Record):
    index: int
    title: str
    description: str
    start: dt.date
    end: dt.date
    arc_states: list[ArcState]
    seed_id: str | None = None
    # "everyday": a stretch of ordinary life between major events, made by code (no title of its own); its arc
    # states are those reached before it — arcs never move outside a major event's phases
    kind: Literal["major", "everyday"] = "major"


class Snapshot(BaseModel):
    model_config = ConfigDict(extra="forbid")

    energy: int = Field(ge=0, le=10)
    stress: int = Field(ge=0, le=10)
    dominant_emotion: str
    focus: str
    arc_status: dict[str, str]


class Phase(Record):
    major_event_id: str
    index: int
    title: str
    description: str
    start: dt.date
    end: dt.date
    snapshot_before: Snapshot
    snapshot_after: Snapshot
    # each arc's anchor state at the phase's end; a change from the previous phase is lived inside this phase
    arc_states: list[ArcState] = []


class Person(Record):
    """One entry of a persona's registry of people and places (people.jsonl): the relations, then whoever a phase
    or an event introduced, with the phase (and event) and day of their first appearance."""

    kind: Literal["person", "place"]
    name: str
    relation: str  # a person: how they relate to the persona; a place: what it is
    description: str
    origin: Literal["relation", "introduced"]
    first_phase_id: str | None = None
    first_date: dt.date | None = None
    first_event_id: str | None = None  # introduced by an event's answer (synth.stages.events), not a phase's


class Event(Record):
    phase_id: str
    time: dt.datetime
    title: str
    description: str
    location: str
    participant_ids: list[str]
    redated_from: dt.datetime | None = None  # the model's time, when code moved the event to close a gap


class Evidence(Record):
    event_id: str
    kind: EvidenceKind
    statement: str
    arc_ids: list[str]
    private: bool = False  # the person keeps it to themself or someone close: no public medium may reveal it


class Trace(Record):
    event_id: str
    evidence_ids: list[str]
    medium: str
    time: dt.datetime
    intent: str
    audience: str
    content: str
    tokens: int = 0
    reasons: str = ""  # the planner's reasons for the medium (never shown to the writer)
    # privacy repairs (synth.quality.privacy): "" none; "replanned" the planner was asked again, "rerouted" code moved the
    # private evidence or the medium; plus how many times the text was rewritten because it revealed a private one
    privacy_plan: str = ""
    privacy_rewrites: int = 0
    privacy_judged: bool = False  # a judge read this public trace against its phase's private evidence
    privacy_flagged: list[str] = []  # ... and found these revealed in the text kept (after the rewrites)
    # provenance: a session of a relation-controlled variant set (variants.jsonl); "" for every other trace
    variant_set_id: str = ""


# the media of spoken traces (a chat day, a lifelog dialogue); every other medium is written
SPOKEN_MEDIA = ("group_chat", "lifelog_dialogue")
STYLE_DIMENSIONS = ("formality", "verbosity", "humour", "jargon", "emoji", "directness", "warmth", "questioning")


class GroupMember(BaseModel):
    model_config = ConfigDict(extra="forbid")

    person_id: str  # the persona's id for the persona, else a relation id
    name: str
    role: str
    style: dict[str, int]  # STYLE_DIMENSIONS → 1 (low) … 5 (high): EverMemBench's communication style
    since: dt.date | None = None  # someone introduced later (people.jsonl) speaks from this day on


class Group(Record):
    kind: Literal["family", "work", "friends"]
    members: list[GroupMember]


class Utterance(BaseModel):
    model_config = ConfigDict(extra="forbid")

    speaker: str  # a display name (the persona's, a member's or a bystander's)
    speaker_id: str = ""  # the person's id when known
    time: dt.datetime
    text: str
    evidence_ids: list[str] = []  # metadata only, never in the text


class Repair(BaseModel):
    model_config = ConfigDict(extra="forbid")

    round: int
    problems: list[str]
    diff: str  # unified diff of the formatted lines, before → after


class SpokenCheck(BaseModel):
    """A chat day's or dialogue's validation: the model-free rule problems of the first draft, the judge's levels,
    the repairs made, and whether it stayed flagged after the last allowed repair."""

    model_config = ConfigDict(extra="forbid")

    rule_problems: list[str] = []  # level 1 (model-free) on the first draft
    judge_problems: list[str] = []  # levels 2–4 on the first draft (empty when not judged)
    repairs: list[Repair] = []
    flagged: bool = False
    final_problems: list[str] = []


class ChatDay(Record):
    group_id: str
    date: dt.date
    event_ids: list[str]
    evidence_ids: list[str]
    utterances: list[Utterance]
    summary: str  # generator-only state (the rolling summaries are built from it); never exported
    open_items: list[str] = []  # generator-only: directives still open after the day
    check: SpokenCheck


class LifelogDialogue(Record):
    event_id: str
    evidence_ids: list[str]
    start: dt.datetime
    end: dt.datetime
    place: str
    participants: list[str]  # display names
    calendar: dict  # the day as the calendar shows it: date, weekday (Monday 0), weekend, holidays
    lines: list[Utterance]
    similar_event_ids: list[str] = []  # the top-5 most similar earlier events the repetition check compared with
    check: SpokenCheck
    plan_day_id: str = ""  # the lifelog plan's day this dialogue's narrative comes from (lifelog_plan.jsonl)


class AgendaItem(BaseModel):
    """One line of a day's agenda in the lifelog plan: when (minute of the day), what kind, what; an item that is
    one of the day's events names it (`event_id`, mapped back from an enum)."""

    model_config = ConfigDict(extra="forbid")

    minute: int
    kind: Literal["work", "routine", "leisure", "social", "errand", "event"]
    text: str
    event_id: str = ""


class LifelogPlan(Record):
    """One node of the lifelog's year → month → week → day plan (LifeDialBench's top-down refinement), on the real
    calendar. `event_ids` are the persona's events inside its range (code); `key_event_ids` those its summary
    builds on (the model's pick, by enum); a day carries its agenda and calendar; `check` holds the model-free
    parent–child consistency problems (and repetition) with the re-asks made."""

    level: Literal["year", "month", "week", "day"]
    parent_id: str = ""
    start: dt.date
    end: dt.date
    summary: str
    themes: list[str] = []
    event_ids: list[str]
    key_event_ids: list[str] = []
    agenda: list[AgendaItem] = []
    calendar: dict = {}  # a day: weekday (Monday 0), weekend, holidays; a longer range: its rest days and holidays
    check: SpokenCheck


class Variant(BaseModel):
    """One member of a variant set: its statement, the condition it holds under (nuanced sets), the decisive
    signal a session must let a reader recover without stating it, and its session (a trace of traces.jsonl)."""

    model_config = ConfigDict(extra="forbid")

    text: str
    condition: str = ""
    signal: str
    trace_id: str
    time: dt.datetime
    medium: str
    content: str  # the session itself (the traces stage folds a kept set's sessions into traces.jsonl)


class SessionCheck(BaseModel):
    """One variant session's checks: the model-free ones, then the judge's ("too hidden" / "too explicit")."""

    model_config = ConfigDict(extra="forbid")

    index: int  # the variant's position in its set
    rule_problems: list[str] = []  # model-free, on the last draft
    recoverable: bool = True  # the judge: a careful reader can recover the variant (not too hidden)
    implicit: bool = True  # the judge: the session does not announce it as a label (not too explicit)
    reason: str = ""
    repairs: int = 0
    first_failures: list[str] = []  # what failed on the first draft (the rates in `synth stats`)


class VariantSet(Record):
    """A relation-controlled variant set (SubtleMemory): the seed evidence, the resolution target, the variants
    with their sessions, the query with 3 accepted and 3 known-wrong answers, and every check's verdict."""

    relation: RelationType
    seed_evidence_id: str
    event_id: str  # the seed evidence's event (the sessions' event_id)
    arc_id: str
    dimension: Dimension
    target: str
    variants: list[Variant]
    query: str
    question_time: dt.datetime
    correct_answers: list[str]
    wrong_answers: list[str]
    min_gap_days: int
    sessions: list[SessionCheck]
    # model-free: keywords all in one session, recency words, reference shape, the visible-only check's rule
    query_problems: list[str] = []
    visible_answer: str = ""  # the no-context answerer's answer (visible-only check)
    visible_label: str = ""  # the judge's label of it: CORRECT rejects the set
    visible_reason: str = ""
    kept: bool
    reason: str = ""  # why not kept ("" when kept)


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
    counting_convention: str = ""  # temporal_duration: how the days are counted (synth.stages.qa.duration)
    timestamps_stripped: int = 0  # explicit timestamps the model-free rewrite took out of the question
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


class StageManifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    stage: str
    persona_id: str
    status: Literal["complete", "failed", "budget"]
    signature: str
    input_hashes: dict[str, str]
    template_hashes: dict[str, str]
    settings: dict
    provider: str
    model: str
    records: dict[str, int]
    requests: int
    cache_hits: int
    provider_calls: int
    repairs: int
    retries: int
    failures: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cache_saving_usd: float
    cost_usd: float
    started_at: str
    finished_at: str
    wall_s: float
    trace_tokens: int | None = None
    synth_version: str | None = None  # the synth that wrote it (None: a manifest from before versions were kept)


# File name → record model: the output layout of one persona directory.
REVIEW_FILE = "review_verdicts.jsonl"  # written by `synth review --import`; human rejections survive a re-run
FILES: dict[str, type[Record]] = {
    "persona.jsonl": Persona,
    "seeds.jsonl": EventSeed,
    "arcs.jsonl": LifeArc,
    "major_events.jsonl": MajorEvent,
    "phases.jsonl": Phase,
    "phase_people.jsonl": Person,  # the registry as the phases left it (the events stage adds its own newcomers)
    "people.jsonl": Person,
    "events.jsonl": Event,
    "evidence.jsonl": Evidence,
    "groups.jsonl": Group,
    "chats.jsonl": ChatDay,
    "lifelog.jsonl": LifelogDialogue,
    "lifelog_plan.jsonl": LifelogPlan,
    "variants.jsonl": VariantSet,
    "traces.jsonl": Trace,
    "qa.jsonl": QA,
    "mcq.jsonl": MCQ,
    "final.jsonl": FinalItem,
    "rejected.jsonl": Rejected,
    "translations.jsonl": Translation,
}
