"""`synth eval --data` over LongMemEval and LoCoMo files too: detect the format (or take `--data-format`), check
the fields, and map sessions to traces and QA to questions, so every system is scored with the same metrics.

A session is the retrieval unit in both (LongMemEval's session-level recall; LoCoMo's session mode), its text
the turns joined by newlines. LongMemEval: each instance is its own persona (its own haystack, asked at its
`question_date`); gold = `answer_session_ids`. LoCoMo: a sample is a persona; it has no question time, so every
question sees the whole conversation; gold = the sessions of the `evidence` dialogue ids. A file synth exported
carries a `synth` block (its types, options, evidence grouping, trace ids, media), used when present."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

from synth.core.bench_formats import (
    ABS_SUFFIX,
    ADVERSARIAL,
    LME_FIELDS,
    LOCOMO_CATEGORIES,
    SESSION_KEY,
    SYNTH_KEY,
    parse_lme_date,
    parse_locomo_date,
)
from synth.core.errors import InputError
from synth.eval.data import EvalPersona, EvalSet, EvalTrace, _by_time, _guess_language, _question, load_eval_set
from synth.life.spoken import format_line
from synth.records import Utterance

DATA_FORMATS = ("synth", "clonemem", "lifedial", "evermem", "longmemeval", "locomo")
FOREIGN = ("longmemeval", "locomo")
_DIA = re.compile(r"D(\d+):(\d+)")
NOT_MENTIONED = "Not mentioned in the conversation"  # LoCoMo's expected reply to an adversarial question


def load_data(path: Path, data_format: str | None = None) -> EvalSet:
    """Whatever `path` holds: a LongMemEval or LoCoMo file (detected from its fields, or as `data_format` says),
    else any layout synth.eval.data reads."""
    path = Path(path)
    if data_format is not None and data_format not in DATA_FORMATS:
        raise InputError(f"--data-format: unknown format '{data_format}' (choose {', '.join(DATA_FORMATS)})")
    if path.is_file() and (data_format is None or data_format in FOREIGN):
        data = _read(path) if path.suffix == ".json" or data_format in FOREIGN else None
        found = data_format or (detect(data) if data is not None else None)
        if found == "longmemeval":
            return EvalSet("longmemeval", path, load_longmemeval(path, data))
        if found == "locomo":
            return EvalSet("locomo", path, load_locomo(path, data))
    if data_format in FOREIGN:
        raise InputError(f"--data: {path}: a {data_format} file is one JSON file, not a folder")
    loaded = load_eval_set(path)
    if data_format is not None and loaded.source != data_format:
        raise InputError(f"--data-format: {path} holds {loaded.source} data, not {data_format}")
    return loaded


def _read(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not valid JSON ({getattr(exc, 'msg', exc)})") from None


def detect(data) -> str | None:
    """longmemeval, locomo, or None (another layout) from the top-level shape and field names. An empty list holds
    no question in either format and reads as an empty LongMemEval file."""
    first = data[0] if isinstance(data, list) and data else data
    if isinstance(data, list) and not data:
        return "longmemeval"
    if isinstance(first, dict) and ("haystack_sessions" in first or "question_id" in first):
        return "longmemeval"
    if isinstance(first, dict) and "conversation" in first:
        return "locomo"
    return None


def _block(raw: dict) -> dict:
    extra = raw.get(SYNTH_KEY)
    return extra if isinstance(extra, dict) else {}


def _text(value) -> bool:
    return isinstance(value, str)


def _iso(value: str) -> bool:
    try:
        dt.datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------------------------------------- LongMemEval


def load_longmemeval(path: Path, data) -> list[EvalPersona]:
    rows = data if isinstance(data, list) else [data]
    personas, seen = [], {}
    for i, raw in enumerate(rows):
        persona = _lme_instance(path, f"[{i}]", raw)
        if persona.key in seen:
            raise InputError(f"{path}: [{i}].question_id: '{persona.key}' already used by {seen[persona.key]}")
        seen[persona.key] = f"[{i}]"
        personas.append(persona)
    return personas


def _lme_instance(path: Path, where: str, raw) -> EvalPersona:
    def bad(field: str, why: str) -> InputError:
        return InputError(f"{path}: {where}.{field}: {why}")

    if not isinstance(raw, dict):
        raise InputError(f"{path}: {where}: a LongMemEval instance must be a JSON object, not {type(raw).__name__}")
    for name in LME_FIELDS:
        if name not in raw:
            raise bad(name, "missing")
    for name in ("question_id", "question_type", "question"):
        if not _text(raw[name]) or not raw[name].strip():
            raise bad(name, "must be non-empty text")
    if not isinstance(raw["answer"], (str, int, float)):
        raise bad("answer", f"must be text or a number, not {type(raw['answer']).__name__}")
    asked = parse_lme_date(raw["question_date"])
    if asked is None:
        raise bad("question_date", f"{raw['question_date']!r} is not a date like '2023/05/30 (Tue) 23:40'")
    traces = _lme_traces(raw, bad)
    extra = _block(raw)
    by_id = dict(zip(raw["haystack_session_ids"], raw["haystack_sessions"], strict=True))
    answer_ids = [str(s) for s in raw["answer_session_ids"]]
    if isinstance(extra.get("evidence"), list):
        evidence = [{"statement": e.get("statement", ""), "digital_trace_ids": e.get("session_ids") or [],
                     "background": bool(e.get("background"))} for e in extra["evidence"] if isinstance(e, dict)]
    else:
        # the has_answer turns of each evidence session are what the judges get as its statement
        evidence = [{"statement": " ".join(t["content"] for t in by_id.get(s, []) if t.get("has_answer")),
                     "digital_trace_ids": [s]} for s in answer_ids]
    abstains = raw["question_id"].endswith(ABS_SUFFIX)
    question = _question({
        "id": extra.get("id") or raw["question_id"], "question": raw["question"], "answer": str(raw["answer"]),
        "question_type": extra.get("question_type") or ("unanswerable" if abstains else raw["question_type"]),
        "dimension": extra.get("dimension"), "question_time": asked.isoformat(), "evidence": evidence,
        "digital_trace_ids": extra.get("digital_trace_ids") or [], "choices": extra.get("choices") or [],
        "correct_choice_id": extra.get("correct_choice_id"),
    }, raw["question_id"])
    language = extra.get("language") or _guess_language([raw["question"], *(t.content for t in traces)])
    return EvalPersona(key=raw["question_id"], name=str(extra.get("persona_name") or ""), language=language,
                       traces=_by_time(traces), questions=[question])


def _lme_traces(raw: dict, bad) -> list[EvalTrace]:
    """The haystack's sessions as traces (checked: parallel lists, dated, turns with role and content)."""
    ids, dates, sessions = raw["haystack_session_ids"], raw["haystack_dates"], raw["haystack_sessions"]
    for name, value in (("haystack_session_ids", ids), ("haystack_dates", dates), ("haystack_sessions", sessions),
                        ("answer_session_ids", raw["answer_session_ids"])):
        if not isinstance(value, list):
            raise bad(name, f"must be a list, not {type(value).__name__}")
    if not len(ids) == len(dates) == len(sessions):
        raise bad("haystack_dates", f"{len(ids)} session ids, {len(dates)} dates and {len(sessions)} sessions")
    traces, seen = [], set()
    media = _block(raw).get("haystack_media")
    media = media if isinstance(media, list) else []
    for j, (sid, date, turns) in enumerate(zip(ids, dates, sessions, strict=True)):
        if not _text(sid) or not sid or sid in seen:
            raise bad(f"haystack_session_ids[{j}]", "missing or repeated session id")
        seen.add(sid)
        when = parse_lme_date(date)
        if when is None:
            raise bad(f"haystack_dates[{j}]", f"{date!r} is not a date like '2023/05/30 (Tue) 23:40'")
        if not isinstance(turns, list):
            raise bad(f"haystack_sessions[{j}]", "must be a list of turns")
        for k, turn in enumerate(turns):
            if not isinstance(turn, dict) or not _text(turn.get("content")) or not _text(turn.get("role")):
                raise bad(f"haystack_sessions[{j}][{k}]", "a turn needs text 'role' and 'content'")
        medium = str(media[j]) if j < len(media) else ""
        traces.append(EvalTrace(id=sid, medium=medium, time=when, content="\n".join(t["content"] for t in turns),
                                event_date=date))
    return traces


# ------------------------------------------------------------------------------------------------------ LoCoMo


def load_locomo(path: Path, data) -> list[EvalPersona]:
    rows = data if isinstance(data, list) else [data]
    personas, seen = [], {}
    for i, raw in enumerate(rows):
        persona = _locomo_sample(path, f"[{i}]", raw, i)
        if persona.key in seen:
            raise InputError(f"{path}: [{i}].sample_id: '{persona.key}' already used by {seen[persona.key]}")
        seen[persona.key] = f"[{i}]"
        personas.append(persona)
    return personas


def _session_text(turns: list[dict], times: list | None, medium_known: bool) -> str:
    """A session's text: synth's spoken lines rebuilt exactly from speaker, time and text; synth's written trace
    is its one turn's text; a LoCoMo session is `speaker: text` per turn."""
    if times and any(times):
        return "\n".join(format_line(Utterance(speaker=t["speaker"], time=dt.datetime.fromisoformat(when),
                                               text=t["text"])) for t, when in zip(turns, times, strict=True))
    if medium_known:
        return "\n".join(t["text"] for t in turns)
    return "\n".join(f"{t['speaker']}: {t['text']}" for t in turns)


def _locomo_traces(conversation: dict, numbers: list[int], extra: dict, bad) -> tuple[list[EvalTrace], dict]:
    """The sessions as traces (checked: lists of turns with speaker, dia_id and text), and session N → trace id."""
    known = extra.get("sessions") if isinstance(extra.get("sessions"), dict) else {}
    traces, trace_of = [], {}
    for n in numbers:
        turns = conversation[f"session_{n}"]
        if not isinstance(turns, list):
            raise bad(f"conversation.session_{n}", "must be a list of turns")
        for k, turn in enumerate(turns):
            if not isinstance(turn, dict) or not all(_text(turn.get(f)) for f in ("speaker", "dia_id", "text")):
                raise bad(f"conversation.session_{n}[{k}]", "a turn needs text 'speaker', 'dia_id' and 'text'")
        mine = known.get(f"session_{n}") if isinstance(known.get(f"session_{n}"), dict) else {}
        times = mine.get("times") if isinstance(mine.get("times"), list) and len(mine["times"]) == len(turns) else None
        if times and not all(t is None or (_text(t) and _iso(t)) for t in times):
            raise bad(f"synth.sessions.session_{n}.times", "each time must be ISO (2024-03-05T09:12:00) or null")
        trace_of[n] = str(mine.get("trace_id") or f"session_{n}")
        date = conversation.get(f"session_{n}_date_time")
        traces.append(EvalTrace(id=trace_of[n], medium=str(mine.get("medium") or ""), time=parse_locomo_date(date),
                                content=_session_text(turns, times, bool(mine)), event_date=str(date or "")))
    return traces, trace_of


def _locomo_sample(path: Path, where: str, raw, index: int) -> EvalPersona:
    def bad(field: str, why: str) -> InputError:
        return InputError(f"{path}: {where}.{field}: {why}")

    if not isinstance(raw, dict):
        raise InputError(f"{path}: {where}: a LoCoMo sample must be a JSON object, not {type(raw).__name__}")
    conversation, qa = raw.get("conversation"), raw.get("qa")
    if not isinstance(conversation, dict):
        raise bad("conversation", "missing or not an object")
    if not isinstance(qa, list):
        raise bad("qa", "missing or not a list")
    for name in ("speaker_a", "speaker_b"):
        if not _text(conversation.get(name)):
            raise bad(f"conversation.{name}", "missing or not text")
    numbers = sorted(int(m.group(1)) for key in conversation if (m := SESSION_KEY.match(key)))
    traces, trace_of = _locomo_traces(conversation, numbers, _block(raw), bad)

    def sessions_of(dia_ids: list) -> list[str]:
        found = [trace_of[int(m.group(1))] for d in dia_ids for m in _DIA.finditer(str(d)) if int(m.group(1)) in trace_of]
        return list(dict.fromkeys(found))

    turn_text = {t["dia_id"]: t["text"] for n in numbers for t in conversation[f"session_{n}"]}
    key = str(raw.get("sample_id") or f"sample_{index}")
    questions = []
    for i, entry in enumerate(qa):
        questions.append(_locomo_question(entry, f"qa[{i}]", i, key, bad, sessions_of, turn_text))
    language = _block(raw).get("language") or _guess_language([t.content for t in traces])
    return EvalPersona(key=key, name=conversation["speaker_a"], language=language, traces=_by_time(traces),
                       questions=questions)


def _locomo_question(entry, where: str, i: int, key: str, bad, sessions_of, turn_text: dict):
    if not isinstance(entry, dict):
        raise bad(where, "a QA entry must be an object")
    if not _text(entry.get("question")) or not entry["question"].strip():
        raise bad(f"{where}.question", "missing or not text")
    category = entry.get("category")
    if isinstance(category, bool) or category not in LOCOMO_CATEGORIES:
        raise bad(f"{where}.category", f"{category!r} is not one of {sorted(LOCOMO_CATEGORIES)}")
    evidence = entry.get("evidence", [])
    if not isinstance(evidence, list) or not all(_text(e) for e in evidence):
        raise bad(f"{where}.evidence", "must be a list of dialogue ids like 'D1:3'")
    answer = entry.get("answer")
    if category != ADVERSARIAL and not isinstance(answer, (str, int, float)):
        raise bad(f"{where}.answer", "missing or not text")
    extra = _block(entry)
    if isinstance(extra.get("evidence"), list):
        groups = [{"statement": e.get("statement", ""), "digital_trace_ids": sessions_of(e.get("dia_ids") or []),
                   "background": bool(e.get("background"))} for e in extra["evidence"] if isinstance(e, dict)]
        top = sessions_of(extra.get("digital_trace_ids") or [])
    else:
        groups = [{"statement": turn_text.get(d, ""), "digital_trace_ids": sessions_of([d])} for d in evidence]
        top = []
    qtype = extra.get("question_type") or ("unanswerable" if category == ADVERSARIAL else LOCOMO_CATEGORIES[category])
    return _question({
        "id": extra.get("id") or f"q{i}", "question": entry["question"],
        "answer": str(answer) if answer is not None else NOT_MENTIONED, "question_type": qtype,
        "dimension": extra.get("dimension"), "question_time": None, "evidence": groups, "digital_trace_ids": top,
        "choices": extra.get("choices") or [], "correct_choice_id": extra.get("correct_choice_id"),
    }, key)
