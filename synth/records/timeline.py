"""The life's records: the persona and relations, seeds, arcs, major events, phases and snapshots, the registry of people and places, events, evidence and traces."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from synth.config.personas import BigFive  # one definition: the seed's, re-exported for the records
from synth.records.record import (
    Dimension,
    EvidenceKind,
    Record,
)


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
    country: str = ""  # whose public holidays the dated prompts show ("" : the language's default)
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
