"""A persona's traces as dialogue sessions for the LongMemEval and LoCoMo exports: a written trace is one turn of
the person's own; a group-chat day or lifelog dialogue is one turn per utterance (its speaker, time and evidence),
so an item's evidence can be pinned to the turns that carry it."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from synth.core.jsonl import read_records
from synth.life.spoken import format_line, format_lines
from synth.records import SPOKEN_MEDIA, ChatDay, Event, FinalItem, LifelogDialogue, Persona, Trace, mint_id
from synth.release.view import persona_dirs


@dataclass(frozen=True)
class Turn:
    speaker: str
    own: bool  # the persona speaks (LongMemEval's user side)
    time: dt.datetime | None  # a spoken line's own time; None for a written trace
    text: str  # the utterance (a written trace: its whole content)
    line: str  # the text as the trace holds it (`[date, time] Speaker: text` for a spoken line)
    evidence_ids: tuple[str, ...]


@dataclass(frozen=True)
class Session:
    trace: Trace
    turns: tuple[Turn, ...]

    @property
    def spoken(self) -> bool:
        return any(t.time is not None for t in self.turns)


@dataclass
class PersonaData:
    persona: Persona
    sessions: list[Session]  # in time order (ties keep traces.jsonl's order, as `synth eval` feeds them)
    items: list[FinalItem]
    events: dict[str, Event]


def _read(directory: Path, name: str, model) -> list:
    return read_records(directory / name, model) if (directory / name).is_file() else []


def _utterances(directory: Path) -> dict[str, list]:
    """Trace id → the utterances of the chat day or dialogue it was made from (synth.life.spoken's ids)."""
    out = {mint_id(d.id, "trace", 0): d.utterances for d in _read(directory, "chats.jsonl", ChatDay)}
    out.update({mint_id(d.id, "trace", 0): d.lines for d in _read(directory, "lifelog.jsonl", LifelogDialogue)})
    return out


def build_sessions(persona: Persona, traces: list[Trace], utterances: dict[str, list]) -> list[Session]:
    sessions = []
    for trace in sorted(traces, key=lambda t: t.time):
        lines = utterances.get(trace.id) if trace.medium in SPOKEN_MEDIA else None
        # turn by turn only when the lines rebuild the trace exactly (a reader joins them back into it)
        if lines and format_lines(lines) == trace.content:
            turns = tuple(Turn(u.speaker, u.speaker_id == persona.id or u.speaker == persona.name, u.time,
                               " ".join(u.text.split()), format_line(u), tuple(u.evidence_ids)) for u in lines)
        else:
            turns = (Turn(persona.name, True, None, trace.content, trace.content, tuple(trace.evidence_ids)),)
        sessions.append(Session(trace, turns))
    return sessions


def load_persona(directory: Path) -> PersonaData | None:
    """A persona directory with final.jsonl, in the source language; None without final.jsonl."""
    if not (directory / "final.jsonl").is_file():
        return None
    persona = read_records(directory / "persona.jsonl", Persona)[0]
    traces = _read(directory, "traces.jsonl", Trace)
    return PersonaData(persona, build_sessions(persona, traces, _utterances(directory)),
                       read_records(directory / "final.jsonl", FinalItem),
                       {e.id: e for e in _read(directory, "events.jsonl", Event)})


def load_personas(out: Path) -> list[PersonaData]:
    return [data for d in persona_dirs(out) if (data := load_persona(d)) is not None]


def gold_trace_ids(item: FinalItem) -> list[str]:
    """Every trace the item's evidence names (its statements', then its own list), once."""
    return list(dict.fromkeys([t for e in item.evidence for t in e.digital_trace_ids] + list(item.digital_trace_ids)))


def evidence_turns(session: Session, item: FinalItem) -> list[int]:
    """The turns of `session` that carry the item's evidence: those whose evidence ids are the item's; when no turn
    names one (the trace, not a line, is linked), every turn — so the evidence always lands on marked turns."""
    wanted = {e.evidence_id for e in item.evidence}
    hits = [i for i, turn in enumerate(session.turns) if wanted & set(turn.evidence_ids)]
    return hits or list(range(len(session.turns)))


def synth_item_fields(item: FinalItem, persona: Persona) -> dict:
    """synth's own fields of an item, kept beside a format's fields (what the format has no place for)."""
    return {"id": item.id, "persona_id": persona.id, "persona_name": persona.name, "language": persona.language,
            "question_type": item.question_type, "dimension": item.dimension,
            "question_time": item.question_time.isoformat(timespec="seconds"),
            "choices": [{"id": c.id, "text": c.text} for c in item.choices], "correct_choice_id": item.correct_choice_id}
