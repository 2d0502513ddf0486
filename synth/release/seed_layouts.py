"""Export the spoken sources in their seeds' own layouts: `lifedial` (LifeDialBench: dialogue lines and questions
with a query timestamp) and `evermem` (EverMemBench: groups, daily group chats and QA). A layout holds the final
items whose every evidence statement is carried by one of its traces (with only those traces), so a reader of that
layout alone can answer them; the generator-only state (rolling summaries, open items, validation) is never
written."""

from __future__ import annotations

from pathlib import Path

from synth.core.errors import InputError
from synth.core.jsonl import read_records, write_json_atomic
from synth.life.spoken import format_line
from synth.records import ChatDay, FinalItem, Group, LifelogDialogue, Persona, mint_id
from synth.release.view import persona_dirs

LAYOUTS = ("lifedial", "evermem")


def _read(directory: Path, name: str, model) -> list:
    return read_records(directory / name, model) if (directory / name).is_file() else []


def answerable_from(items: list[FinalItem], ids: set[str]) -> list[FinalItem]:
    """The items a reader of the layout alone can answer, seen through it: every evidence statement keeps the
    traces of it that are among `ids` (a statement carried by a diary and a group chat keeps the chat), and an
    item is left out when one of its statements has none there (or it has no statement)."""
    out = []
    for item in items:
        evidence = [e.model_copy(update={"digital_trace_ids": [t for t in e.digital_trace_ids if t in ids]})
                    for e in item.evidence]
        if not evidence or not all(e.digital_trace_ids for e in evidence):
            continue
        kept = list(dict.fromkeys([t for t in item.digital_trace_ids if t in ids]
                                  + [t for e in evidence for t in e.digital_trace_ids]))
        out.append(item.model_copy(update={"evidence": evidence, "digital_trace_ids": kept}))
    return out


def _time(value) -> str:
    return value.isoformat(timespec="seconds")


def lifedial_file(persona: Persona, dialogues: list[LifelogDialogue], items: list[FinalItem]) -> dict:
    rows = [{"id": mint_id(d.id, "trace", 0), "event_id": d.event_id, "date": d.start.date().isoformat(),
             "start": f"{d.start:%H:%M:%S}", "end": f"{d.end:%H:%M:%S}", "place": d.place,
             "participants": d.participants, "lines": [format_line(line) for line in d.lines]}
            for d in sorted(dialogues, key=lambda d: (d.start, d.id)) if d.lines]
    questions = [{"id": i.id, "question": i.question, "question_type": i.question_type,
                  "query_timestamp": _time(i.question_time), "options": {c.id: c.text for c in i.choices},
                  "answer": i.correct_choice_id, "answer_text": i.answer,
                  "evidence_dialogue_ids": list(i.digital_trace_ids)}
                 for i in answerable_from(items, {r["id"] for r in rows})]
    return {"person_name": persona.name, "person_id": persona.id, "language": persona.language,
            "dialogues": rows, "questions": questions}


def evermem_file(persona: Persona, groups: list[Group], chats: list[ChatDay], items: list[FinalItem]) -> dict:
    rows = [{"id": mint_id(c.id, "trace", 0), "group_id": c.group_id, "date": c.date.isoformat(),
             "messages": [{"speaker": u.speaker, "time": f"{u.time:%H:%M:%S}", "text": u.text} for u in c.utterances]}
            for c in sorted(chats, key=lambda c: (c.date, c.group_id)) if c.utterances]
    qa = [{"id": i.id, "question": i.question, "question_type": i.question_type, "query_time": _time(i.question_time),
           "answer": i.answer, "options": [{"id": c.id, "text": c.text} for c in i.choices],
           "correct": i.correct_choice_id,
           "evidence": [{"statement": e.statement, "chat_ids": list(e.digital_trace_ids)} for e in i.evidence],
           "chat_ids": list(i.digital_trace_ids)}
          for i in answerable_from(items, {r["id"] for r in rows})]
    return {"person_name": persona.name, "person_id": persona.id, "language": persona.language,
            "groups": [{"id": g.id, "kind": g.kind,
                        "members": [{"name": m.name, "role": m.role, "style": m.style} for m in g.members]}
                       for g in groups],
            "chats": rows, "qa": qa}


def export_spoken(out: Path, layout: str) -> list[Path]:
    """Write export/<layout>/<persona>_<layout>_<lang>.json for each persona with the layout's source."""
    paths = []
    for directory in persona_dirs(out):
        persona = read_records(directory / "persona.jsonl", Persona)[0]
        items = _read(directory, "final.jsonl", FinalItem)
        if layout == "lifedial":
            dialogues = _read(directory, "lifelog.jsonl", LifelogDialogue)
            if not dialogues:
                continue
            data = lifedial_file(persona, dialogues, items)
        else:
            chats = _read(directory, "chats.jsonl", ChatDay)
            if not chats:
                continue
            data = evermem_file(persona, _read(directory, "groups.jsonl", Group), chats, items)
        path = out / "export" / layout / f"{persona.id}_{layout}_{persona.language}.json"
        write_json_atomic(path, data)
        paths.append(path)
    if not paths:
        # A layout without its source would be a folder of nothing; a persona with the source and no kept item
        # is written (an empty question list its reader loads as such).
        source = "lifelog.jsonl" if layout == "lifedial" else "chats.jsonl"
        raise InputError(f"{out}: no persona has {source} (its run's `sources` did not include "
                         f"{'lifelog' if layout == 'lifedial' else 'group_chat'}); nothing exported")
    return paths
