"""The spoken sources' test world: p01_maya's persona with two relations, hand-made events and evidence, a
config with group chats and lifelog on, and runs of a stage (or of every stage) on the kit's scripted model."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from kit import Scripted, run_stage

from synth.core.jsonl import read_records, write_atomic
from synth.records import FILES, BigFive, Event, Evidence, Person, Persona, Relation
from synth.stages import STAGES

PID = "p01_maya"
ALL = 'sources = ["written", "group_chat", "lifelog"]\n'
SHORT = ALL + "[chats]\nmin_utterances = 1\n[lifelog]\nmin_lines = 1\n"  # scripted answers are short
DAY = dt.date(2022, 1, 5)
LINE = re.compile(r"^\[\d{4}-\d\d-\d\d, \d\d:\d\d:\d\d\] [^:]+: ")


def persona(relations=(("r1", "Sam", "partner"), ("r2", "Lee", "colleague"))) -> Persona:
    return Persona(
        id=PID, persona_id=PID, language="en",
        big_five=BigFive(openness=.9, conscientiousness=.1, extraversion=.5, agreeableness=1.0, neuroticism=.5),
        start=dt.date(2022, 1, 1), end=dt.date(2022, 2, 11), scale="100k", name="Maya", age=34, gender="f",
        personality="p", family_history="f", education="e", occupation="o", concerns=["c"], interests=["i"],
        backstory="b", relations=[Relation(id=i, name=n, relation=r, description="d") for i, n, r in relations],
    )


def event(k: int, when: dt.datetime, participants: list[str], title: str = "Plumber visit") -> Event:
    return Event(id=f"e{k}", persona_id=PID, phase_id="ph", time=when, title=title,
                 description=f"{title}: the sink is fixed", location="home", participant_ids=participants)


def evidence(event_id: str, n: int = 2) -> list[Evidence]:
    return [Evidence(id=f"{event_id}-v{j}", persona_id=PID, event_id=event_id, kind="fact",
                     statement=f"statement {j} of {event_id}", arc_ids=["a1"]) for j in range(n)]


def registry(p: Persona, introduced: tuple[tuple[str, str, str, dt.date], ...] = ()) -> list[Person]:
    """people.jsonl: the relations, then people introduced later (id, name, relation, first day)."""
    return [*(Person(id=r.id, persona_id=PID, kind="person", name=r.name, relation=r.relation, description="d",
                     origin="relation") for r in p.relations),
            *(Person(id=i, persona_id=PID, kind="person", name=n, relation=r, description="d", origin="introduced",
                     first_phase_id="ph", first_date=day) for i, n, r, day in introduced)]


def setup(out: Path, events: list[Event], config: str, introduced=()) -> Path:
    directory = out / PID
    directory.mkdir(parents=True)
    write_atomic(directory / "persona.jsonl", [persona()])
    write_atomic(directory / "people.jsonl", registry(persona(), introduced))
    write_atomic(directory / "events.jsonl", events)
    write_atomic(directory / "evidence.jsonl", [v for e in events for v in evidence(e.id)])
    (out / "config.toml").write_text(config)
    return directory


def run(out: Path, stage: str, replies: dict | None = None) -> Scripted:
    """One stage over a directory `setup` wrote, with its config; the scripted model answers (`replies` per task)."""
    return run_stage(out, stage, config=out / "config.toml", replies=replies)


def load(directory: Path, name: str) -> list:
    return read_records(directory / name, FILES[name])


def utter(speaker: str, minute: int, text: str, ev: list[int]) -> dict:
    return {"speaker": speaker, "minute": minute, "text": text, "evidence": ev}


def fake_run(out: Path, preset: str, config: str | None, seed: int = 0) -> Scripted:
    """Every stage for p01_maya on the fake (answers drawn with `seed`); the config, when given, is written to
    <out>.toml beside the dataset. Returns the model (its `seen` requests)."""
    path = None
    if config is not None:
        path = out.parent / f"{out.name}.toml"
        path.write_text(config)
    return run_stage(out, STAGES.order(), config=path, preset=preset, fake_seed=seed)
