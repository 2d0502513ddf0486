"""Load an evaluation set — a synth output directory or CloneMem release files — into one representation."""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from synth.core.errors import InputError

_DATE = re.compile(r"(\d{4})[-/.年](\d{1,2})[-/.月](\d{1,2})日?(?:[T\s]+(\d{1,2}):(\d{2})(?::(\d{2}))?)?")


@dataclass(frozen=True)
class EvalTrace:
    """One retrievable memory unit (a digital trace); `time` is None when its date cannot be read."""

    id: str
    medium: str
    time: dt.datetime | None
    content: str
    event_date: str = ""

    def as_dict(self) -> dict:
        """What a MemorySystem's `ingest` receives (CloneMem's field names plus an ISO `time`)."""
        return {"id": self.id, "medium": self.medium, "event_date": self.event_date,
                "time": self.time.isoformat() if self.time else None, "content": self.content}


@dataclass(frozen=True)
class EvalQuestion:
    id: str
    key: str  # unique across the whole eval set: "<persona key>/<question id>"
    persona: str
    question: str
    question_type: str
    dimension: str
    question_time: dt.datetime | None
    answer: str
    statements: tuple[str, ...]  # the ground-truth memory items (evidence statements; never background)
    evidence_sets: tuple[tuple[str, ...], ...]  # per evidence statement: its trace ids (empty sets dropped)
    background: bool = False  # the evidence is related background (an unanswerable item's): gold for recall only
    choices: tuple[tuple[str, str], ...] = ()  # (letter, text)
    correct_choice_id: str | None = None
    time_text: str = ""  # the question time as the data states it (for prompts)
    # a relation item (SubtleMemory): the accepted and known-wrong answers its free-text answer is judged against
    correct_answers: tuple[str, ...] = ()
    wrong_answers: tuple[str, ...] = ()
    formats: tuple[str, ...] = ("open", "mcq")  # the forms the item is valid in (synth's filter); data without: both

    @property
    def gold_ids(self) -> list[str]:
        """Every gold trace id once, in evidence order."""
        seen: dict[str, None] = {}
        for group in self.evidence_sets:
            for tid in group:
                seen.setdefault(tid, None)
        return list(seen)


@dataclass
class EvalPersona:
    key: str
    name: str
    language: str
    traces: list[EvalTrace]
    questions: list[EvalQuestion]


@dataclass
class EvalSet:
    source: str  # "synth" | "clonemem"
    path: Path
    personas: list[EvalPersona] = field(default_factory=list)

    @property
    def questions(self) -> list[EvalQuestion]:
        return [q for p in self.personas for q in p.questions]


def parse_time(value: object, end_of_day: bool = False) -> dt.datetime | None:
    """A naive datetime from ISO or CloneMem-style dates. The same-day rule: a bare date is 00:00 of that day for a
    trace and, with `end_of_day` (a question), 23:59:59.999999 of it, so every trace of the question's own day is
    visible to it. Unreadable → None."""
    if value is None or value == "":
        return None
    text = str(value).strip()
    try:
        parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        date_only = len(text) <= 10
    except ValueError:
        match = _DATE.search(text)
        if not match:
            return None
        y, mo, d, h, mi, s = match.groups()
        try:
            parsed = dt.datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0))
        except ValueError:
            return None
        date_only = h is None
    parsed = parsed.replace(tzinfo=None)
    if date_only and end_of_day:
        parsed = parsed.replace(hour=23, minute=59, second=59, microsecond=999999)
    return parsed


def _question(raw: dict, persona_key: str) -> EvalQuestion:
    """Map a CloneMem/synth question dict; evidence statements become evidence sets of trace ids. An unanswerable
    question's evidence (synth marks it `background: true`; a release file only by the type) is the related
    background: its traces are the gold of recall (a retriever should find what the question is about), but its
    statements are no ground-truth memory for the judges (nothing answers the question)."""
    qid = str(raw["id"])
    evidence = raw.get("evidence") or []
    background = str(raw.get("question_type")) == "unanswerable"
    statements = () if background else tuple(
        str(e.get("statement", "")) for e in evidence
        if isinstance(e, dict) and e.get("statement") and not e.get("background"))
    sets = tuple(
        tuple(dict.fromkeys(str(t) for t in e.get("digital_trace_ids") or []))
        for e in evidence if isinstance(e, dict)
    )
    sets = tuple(s for s in sets if s)
    top = tuple(dict.fromkeys(str(t) for t in raw.get("digital_trace_ids") or []))
    covered = {t for s in sets for t in s}
    if top and not sets:
        sets = (top,)  # no per-statement linkage: the question's trace list is its one evidence set
    elif any(t not in covered for t in top):
        sets = sets + (tuple(t for t in top if t not in covered),)
    formats = tuple(str(f) for f in raw.get("formats") or ("open", "mcq"))
    # an item whose multiple choice failed the filter is asked as an open question only: no choice accuracy
    choices = tuple((str(c.get("id")), str(c.get("text", ""))) for c in raw.get("choices") or []
                    if isinstance(c, dict)) if "mcq" in formats else ()
    return EvalQuestion(
        id=qid, key=f"{persona_key}/{qid}", persona=persona_key, question=str(raw.get("question", "")),
        question_type=str(raw.get("question_type") or "unknown"), dimension=str(raw.get("dimension") or "unknown"),
        question_time=parse_time(raw.get("question_time"), end_of_day=True), answer=str(raw.get("answer", "")),
        statements=statements, evidence_sets=sets, background=background, choices=choices,
        correct_choice_id=(raw.get("correct_choice_id") or None) if "mcq" in formats else None, time_text=str(raw.get("question_time") or ""),
        correct_answers=tuple(str(a) for a in raw.get("correct_answers") or []),
        wrong_answers=tuple(str(a) for a in raw.get("wrong_answers") or []), formats=formats,
    )


def _trace(raw: dict) -> EvalTrace:
    # `time` (synth) or `event_date` (CloneMem); an unreadable `time` falls back to a readable `event_date`.
    when = next((v for v in (raw.get("time"), raw.get("event_date")) if parse_time(v) is not None),
                raw.get("time") or raw.get("event_date"))
    return EvalTrace(id=str(raw["id"]), medium=str(raw.get("medium", "")), time=parse_time(when),
                     content=str(raw.get("content", "")), event_date=str(raw.get("event_date") or when or ""))


def _unique_records(path: Path, rows: list[tuple[str, object]], what: str) -> list[dict]:
    """The rows (each with where it is in the file) as dicts with a non-empty, unique `id`; else one InputError
    naming the file and the item. A duplicate would silently replace (trace) or shadow (question) the first."""
    seen: dict[str, str] = {}
    out = []
    for where, raw in rows:
        if not isinstance(raw, dict):
            raise InputError(f"{path}: {where}: a {what} must be a JSON object, not {type(raw).__name__}")
        ident = raw.get("id")
        if ident is None or str(ident).strip() == "":
            raise InputError(f"{path}: {where}/id: missing")
        ident = str(ident)
        if ident in seen:
            raise InputError(f"{path}: {where}/id: {what} id '{ident}' already used by {seen[ident]}")
        seen[ident] = where
        out.append(raw)
    return out


def _guess_language(texts: list[str]) -> str:
    sample = "".join(texts[:50])
    cjk = sum(1 for ch in sample if "\u4e00" <= ch <= "\u9fff")
    return "zh" if cjk > len(sample) * 0.1 else "en"


def _by_time(traces: list[EvalTrace]) -> list[EvalTrace]:
    # Undated traces first: with no date they cannot be shown to be in the future.
    return sorted(traces, key=lambda t: (t.time is not None, t.time or dt.datetime.min))


def _read_jsonl(path: Path) -> list[tuple[str, object]]:
    """The records of a JSONL file, each with its place ("line 7") for error messages."""
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                try:
                    rows.append((f"line {number}", json.loads(line)))
                except json.JSONDecodeError as exc:
                    raise InputError(f"{path}: line {number}: not valid JSON ({exc.msg})") from None
    return rows


def load_synth_persona(directory: Path) -> EvalPersona | None:
    """A persona dir: questions from final.jsonl (else mcq.jsonl, else qa.jsonl), traces from traces.jsonl."""
    traces_path = directory / "traces.jsonl"
    qfile = next((directory / n for n in ("final.jsonl", "mcq.jsonl", "qa.jsonl") if (directory / n).is_file()), None)
    if not traces_path.is_file() or qfile is None:
        return None
    traces = [_trace(r) for r in _unique_records(traces_path, _read_jsonl(traces_path), "trace")]
    persona_rows = _read_jsonl(directory / "persona.jsonl") if (directory / "persona.jsonl").is_file() else []
    persona = persona_rows[0][1] if persona_rows and isinstance(persona_rows[0][1], dict) else {}
    key = str(persona.get("id") or directory.name)
    language = persona.get("language") or _guess_language([t.content for t in traces])
    questions = [_question(r, key) for r in _unique_records(qfile, _read_jsonl(qfile), "question")]
    return EvalPersona(key=key, name=str(persona.get("name", "")), language=language, traces=_by_time(traces),
                       questions=questions)


def load_clonemem_file(path: Path, root: Path | None = None) -> EvalPersona:
    """One `<persona>_benchmark_<lang>.json` release file; its key keeps the size folder so keys stay unique."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: cannot read a CloneMem benchmark file ({exc})") from None
    if not isinstance(data, dict) or "context" not in data or "questions" not in data:
        raise InputError(f"{path}: not a CloneMem benchmark file (needs 'context' and 'questions')")
    rel = path.relative_to(root) if root is not None and path.is_relative_to(root) else Path(path.name)
    key = str(rel.with_suffix("")).replace("\\", "/")
    match = re.search(r"_benchmark_([a-z]{2})$", path.stem)
    for part in ("context", "questions"):
        if not isinstance(data[part], list):
            raise InputError(f"{path}: {part}: must be a list, not {type(data[part]).__name__}")
    traces = [_trace(r) for r in _unique_records(path, [(f"context[{i}]", r) for i, r in enumerate(data["context"])],
                                                 "trace")]
    language = match.group(1) if match else _guess_language([t.content for t in traces])
    questions = [_question(r, key) for r in
                 _unique_records(path, [(f"questions[{i}]", r) for i, r in enumerate(data["questions"])], "question")]
    return EvalPersona(key=key, name=str(data.get("person_name", "")), language=language,
                       traces=_by_time(traces), questions=questions)


def _spoken_layout(path: Path) -> str | None:
    match = re.search(r"_(lifedial|evermem)_[a-z]{2}$", path.stem)
    return match.group(1) if match else None


def load_spoken_file(path: Path, layout: str) -> EvalPersona:
    """A `synth export --format lifedial|evermem` file: its dialogues or group-day chats become the traces (the
    ids are synth's trace ids, so gold ids carry over), its questions map onto the CloneMem fields."""
    from synth.life.spoken import GROUP_CHAT, LIFELOG

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: cannot read a {layout} file ({exc})") from None
    parts = ("dialogues", "questions") if layout == "lifedial" else ("chats", "qa")
    if not isinstance(data, dict) or any(not isinstance(data.get(p), list) for p in parts):
        raise InputError(f"{path}: not a {layout} file (needs lists '{parts[0]}' and '{parts[1]}')")
    key = str(data.get("person_id") or path.stem)
    traces, questions = [], []
    if layout == "lifedial":
        for row in _unique_records(path, [(f"dialogues[{i}]", r) for i, r in enumerate(data["dialogues"])], "dialogue"):
            lines = [str(x) for x in row.get("lines") or []]
            stamps = [parse_time(f"{x[1:11]}T{x[13:21]}") for x in lines if x.startswith("[")]
            when = max([t for t in stamps if t is not None], default=parse_time(f"{row.get('date')}T{row.get('start')}"))
            traces.append(EvalTrace(id=str(row["id"]), medium=LIFELOG, time=when, content="\n".join(lines),
                                    event_date=when.isoformat() if when else ""))
        for raw in _unique_records(path, [(f"questions[{i}]", r) for i, r in enumerate(data["questions"])], "question"):
            options = raw.get("options") if isinstance(raw.get("options"), dict) else {}
            questions.append(_question({
                "id": raw["id"], "question": raw.get("question"), "question_type": raw.get("question_type"),
                "question_time": raw.get("query_timestamp"), "answer": raw.get("answer_text", ""),
                "digital_trace_ids": raw.get("evidence_dialogue_ids") or [],
                "choices": [{"id": k, "text": v} for k, v in options.items()], "correct_choice_id": raw.get("answer"),
            }, key))
    else:
        for row in _unique_records(path, [(f"chats[{i}]", r) for i, r in enumerate(data["chats"])], "chat"):
            messages = [m for m in row.get("messages") or [] if isinstance(m, dict)]
            day = str(row.get("date", ""))
            content = "\n".join(f"[{day}, {m.get('time')}] {m.get('speaker')}: {' '.join(str(m.get('text', '')).split())}"
                                for m in messages)
            when = max((t for m in messages if (t := parse_time(f"{day}T{m.get('time')}")) is not None), default=None)
            traces.append(EvalTrace(id=str(row["id"]), medium=GROUP_CHAT, time=when, content=content,
                                    event_date=when.isoformat() if when else day))
        for raw in _unique_records(path, [(f"qa[{i}]", r) for i, r in enumerate(data["qa"])], "question"):
            evidence = [{"statement": e.get("statement", ""), "digital_trace_ids": e.get("chat_ids") or []}
                        for e in raw.get("evidence") or [] if isinstance(e, dict)]
            questions.append(_question({
                "id": raw["id"], "question": raw.get("question"), "question_type": raw.get("question_type"),
                "question_time": raw.get("query_time"), "answer": raw.get("answer", ""), "evidence": evidence,
                "digital_trace_ids": raw.get("chat_ids") or [], "choices": raw.get("options") or [],
                "correct_choice_id": raw.get("correct"),
            }, key))
    language = str(data.get("language") or _guess_language([t.content for t in traces]))
    return EvalPersona(key=key, name=str(data.get("person_name", "")), language=language, traces=_by_time(traces),
                       questions=questions)


def load_eval_set(path: Path) -> EvalSet:
    """Read whichever layout `path` holds: a synth dataset or persona dir, CloneMem release file(s), or the
    lifedial / evermem files `synth export` writes."""
    path = Path(path)
    if path.is_file():
        layout = _spoken_layout(path)
        if layout:
            return EvalSet(layout, path, [load_spoken_file(path, layout)])
        return EvalSet("clonemem", path, [load_clonemem_file(path)])
    if not path.is_dir():
        raise InputError(f"--data: {path}: no such file or directory")
    single = load_synth_persona(path)
    if single is not None:
        return EvalSet("synth", path, [single])
    found = [(d, p) for d in sorted(path.iterdir()) if d.is_dir() and (p := load_synth_persona(d)) is not None]
    if found:
        first: dict[str, Path] = {}
        for directory, persona in found:
            if persona.key in first:  # their questions' keys would collide and one persona's results be lost
                raise InputError(f"{directory / 'persona.jsonl'}: id: persona '{persona.key}' already used by "
                                 f"{first[persona.key]}")
            first[persona.key] = directory
        return EvalSet("synth", path, [p for _, p in found])
    files = sorted(path.rglob("*_benchmark_*.json"))
    if files:
        return EvalSet("clonemem", path, [load_clonemem_file(f, path) for f in files])
    for layout in ("lifedial", "evermem"):
        files = sorted(path.rglob(f"*_{layout}_*.json"))
        if files:
            return EvalSet(layout, path, [load_spoken_file(f, layout) for f in files])
    raise InputError(f"--data: {path}: neither a synth dataset (persona dirs with traces.jsonl and final.jsonl) "
                     "nor CloneMem files (<size>/<persona>_benchmark_<lang>.json)")
