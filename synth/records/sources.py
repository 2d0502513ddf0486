"""The spoken sources' and the variants' records: group chats, lifelog dialogues and their plan, relation-controlled variant sets."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, ConfigDict

from synth.records.record import (
    Dimension,
    Record,
    RelationType,
)

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
