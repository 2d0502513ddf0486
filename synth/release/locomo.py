"""`synth export --format locomo`: each persona as one LoCoMo sample — every trace a dated session of turns, the
final items as QA with the dialogue ids of their evidence turns, event and session summaries from synth's events
(docs/formats/locomo.md)."""

from __future__ import annotations

import json
from pathlib import Path

from synth.core.bench_formats import ADVERSARIAL, SYNTH_KEY, locomo_category, locomo_date, locomo_day
from synth.core.errors import InputError
from synth.core.jsonl import staged_dir
from synth.records import CANNOT_DETERMINE, FinalItem
from synth.release.sessions import PersonaData, evidence_turns, gold_trace_ids, load_personas, synth_item_fields

OTHERS = "Others"  # speaker_b: everyone who is not the persona (their own names stay on their turns)


def _conversation(data: PersonaData) -> dict:
    conversation: dict = {"speaker_a": data.persona.name, "speaker_b": OTHERS}
    for n, session in enumerate(data.sessions, 1):
        conversation[f"session_{n}_date_time"] = locomo_date(session.trace.time)
        conversation[f"session_{n}"] = [{"speaker": turn.speaker, "dia_id": f"D{n}:{i}", "text": turn.text}
                                        for i, turn in enumerate(session.turns, 1)]
    return conversation


def _dia_ids(data: PersonaData, item: FinalItem, trace_ids: list[str], number: dict[str, int]) -> list[str]:
    out = []
    for trace_id in trace_ids:
        n = number.get(trace_id)
        if n is not None:
            out += [f"D{n}:{i + 1}" for i in evidence_turns(data.sessions[n - 1], item)]
    return list(dict.fromkeys(out))


def _adversarial_answer(item: FinalItem, language: str) -> str:
    """A plausible wrong answer, as LoCoMo's adversarial questions carry: the first wrong option that is not the
    "cannot be determined" one."""
    abstain = CANNOT_DETERMINE.get(language, "")
    return next((c.text for c in item.choices if c.id != item.correct_choice_id and c.text != abstain), item.answer)


def qa_entry(data: PersonaData, item: FinalItem, number: dict[str, int]) -> dict:
    category = locomo_category(item.question_type)
    entry: dict = {"question": item.question, "answer": item.answer,
                   "evidence": _dia_ids(data, item, gold_trace_ids(item), number), "category": category}
    if category == ADVERSARIAL:
        entry["adversarial_answer"] = _adversarial_answer(item, data.persona.language)
    unanswerable = item.question_type == "unanswerable"
    entry[SYNTH_KEY] = {
        **synth_item_fields(item, data.persona),
        "evidence": [{"statement": e.statement, "evidence_id": e.evidence_id,
                      "dia_ids": _dia_ids(data, item, list(e.digital_trace_ids), number),
                      "background": e.background or unanswerable} for e in item.evidence],
        "digital_trace_ids": _dia_ids(data, item, list(item.digital_trace_ids), number),
    }
    return entry


def _summaries(data: PersonaData) -> tuple[dict, dict]:
    """event_summary: per session, the persona's events since the session before (LoCoMo's events between
    sessions); session_summary: the event each session's trace was written about."""
    events = sorted(data.events.values(), key=lambda e: (e.time, e.id))
    event_summary, session_summary = {}, {}
    start = 0
    for n, session in enumerate(data.sessions, 1):
        happened = []
        while start < len(events) and events[start].time <= session.trace.time:
            happened.append(events[start].description or events[start].title)
            start += 1
        event_summary[f"events_session_{n}"] = {data.persona.name: happened, OTHERS: [],
                                                "date": locomo_day(session.trace.time)}
        event = data.events.get(session.trace.event_id)
        session_summary[f"session_{n}_summary"] = f"{event.title}. {event.description}" if event else ""
    return event_summary, session_summary


def sample(data: PersonaData) -> dict:
    number = {s.trace.id: n for n, s in enumerate(data.sessions, 1)}
    event_summary, session_summary = _summaries(data)
    return {
        "sample_id": data.persona.id,
        "conversation": _conversation(data),
        "qa": [qa_entry(data, item, number) for item in data.items],
        "event_summary": event_summary,
        "session_summary": session_summary,
        # what a reader needs to rebuild each trace exactly: its id, medium and, for a spoken one, each line's time
        SYNTH_KEY: {"persona_id": data.persona.id, "language": data.persona.language, "sessions": {
            f"session_{n}": {"trace_id": s.trace.id, "medium": s.trace.medium,
                             "times": [t.time.isoformat(timespec="seconds") if t.time else None for t in s.turns]}
            for n, s in enumerate(data.sessions, 1)}},
    }


def export_locomo(out: Path) -> list[Path]:
    """export/locomo/<persona>.json (a list of one sample, as LoCoMo ships its file) per persona with final.jsonl,
    and all.json with every persona's sample; the folder is replaced only once it is complete."""
    personas = load_personas(out)
    if not personas:
        raise InputError(f"{out}: no persona with final.jsonl to export — run `synth filter` first")
    target = out / "export" / "locomo"
    names: list[str] = []
    with staged_dir(target, ".locomo.") as staging:
        samples = []
        for data in personas:
            samples.append(sample(data))
            names.append(f"{data.persona.id}.json")
            (staging / names[-1]).write_text(json.dumps([samples[-1]], ensure_ascii=False), encoding="utf-8")
        names.append("all.json")
        (staging / "all.json").write_text(json.dumps(samples, ensure_ascii=False), encoding="utf-8")
    return [target / name for name in names]
