"""Spoken trace sources (group chats, lifelog dialogue): their line format, model-free checks, repair diffs, and
how a chat day or a dialogue becomes one ordinary trace (so QA, filters, export and eval need no special case)."""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections.abc import Iterable, Sequence

from synth.core.tokens import estimate_tokens
from synth.records import SPOKEN_MEDIA, ChatDay, Event, Group, LifelogDialogue, Trace, Utterance, mint_id

# each spoken source: the stage that writes it and its files
SPOKEN_FILES = {"group_chat": ("chats", ("groups.jsonl", "chats.jsonl")), "lifelog": ("lifelog", ("lifelog.jsonl",))}
GROUP_CHAT, LIFELOG = SPOKEN_MEDIA
_ID_LIKE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_WORD = re.compile(r"[\u4e00-\u9fff]|[^\W_]+", re.U)


def format_line(line: Utterance) -> str:
    """LifeDialBench's line: `[yyyy-mm-dd, HH:MM:SS] Speaker: text`."""
    return f"[{line.time:%Y-%m-%d, %H:%M:%S}] {line.speaker}: {' '.join(line.text.split())}"


def format_lines(lines: Iterable[Utterance]) -> str:
    return "\n".join(format_line(line) for line in lines)


def line_problems(lines: Sequence[Utterance], evidence_ids: Sequence[str], speaker: str,
                  earliest: dict[str, dt.datetime], low: dt.datetime, high: dt.datetime) -> list[str]:
    """Level 1 of the validation (model-free): times in order and inside [low, high]; `speaker` (the persona)
    speaks; no empty or repeated line; no id in the text; every bound evidence carried by some line, and no
    line carrying evidence before the event it comes from has happened (`earliest`: evidence id → event time)."""
    problems: list[str] = []
    for i, line in enumerate(lines):
        if not line.text.strip():
            problems.append(f"line {i + 1}: empty text")
        if _ID_LIKE.search(line.text):
            problems.append(f"line {i + 1}: an id in the text")
        if not low <= line.time <= high:
            problems.append(f"line {i + 1}: time {line.time:%H:%M:%S} outside {low:%H:%M:%S}–{high:%H:%M:%S}")
        if i and line.time < lines[i - 1].time:
            problems.append(f"line {i + 1}: time {line.time:%H:%M:%S} before the line above")
        if i and line.text.strip() == lines[i - 1].text.strip():
            problems.append(f"line {i + 1}: repeats the line above")
        for evidence_id in line.evidence_ids:
            happened = earliest.get(evidence_id)
            if happened is not None and line.time < happened:
                problems.append(f"line {i + 1}: tells of an event before it happened ({happened:%H:%M})")
    if lines and not any(line.speaker == speaker for line in lines):
        problems.append(f"{speaker} never speaks")
    carried = {e for line in lines for e in line.evidence_ids}
    missing = [e for e in evidence_ids if e not in carried]
    if missing:
        problems.append(f"{len(missing)} bound evidence not carried by any line")
    return problems


def repair_diff(before: Sequence[Utterance], after: Sequence[Utterance]) -> str:
    return "\n".join(difflib.unified_diff(format_lines(before).splitlines(), format_lines(after).splitlines(),
                                          "before", "after", lineterm="", n=0))


def words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def similarity(a: str | set[str], b: str | set[str]) -> float:
    """Jaccard overlap of the word sets (CJK by character): the repetition check's measure."""
    x = a if isinstance(a, set) else words(a)
    y = b if isinstance(b, set) else words(b)
    return len(x & y) / len(x | y) if x and y else 0.0


def most_similar_earlier(events: Sequence[Event], k: int) -> dict[str, list[str]]:
    """Per event, the `k` earlier events most similar to it (title, description, place): LifeDialBench's top-5."""
    ordered = sorted(events, key=lambda e: (e.time, e.id))
    bags = [words(f"{e.title} {e.description} {e.location}") for e in ordered]
    out: dict[str, list[str]] = {}
    for i, event in enumerate(ordered):
        scored = sorted(((similarity(bags[i], bags[j]), ordered[j].id) for j in range(i)), reverse=True)
        out[event.id] = [event_id for _, event_id in scored[:k]]
    return out


def chat_trace(day: ChatDay, group: Group, events: dict[str, Event]) -> Trace:
    """A chat day as one trace: content = its formatted lines; its time the last line's (never before its events)."""
    content = format_lines(day.utterances)
    latest = max([u.time for u in day.utterances] + [events[e].time for e in day.event_ids if e in events])
    return Trace(id=mint_id(day.id, "trace", 0), persona_id=day.persona_id, event_id=day.event_ids[0],
                 evidence_ids=list(day.evidence_ids), medium=GROUP_CHAT, time=latest, intent="group chat",
                 audience=group.kind, content=content, tokens=estimate_tokens(content))


def dialogue_trace(dialogue: LifelogDialogue) -> Trace:
    content = format_lines(dialogue.lines)
    time = max([line.time for line in dialogue.lines] + [dialogue.start])
    return Trace(id=mint_id(dialogue.id, "trace", 0), persona_id=dialogue.persona_id, event_id=dialogue.event_id,
                 evidence_ids=list(dialogue.evidence_ids), medium=LIFELOG, time=time, intent="lifelog dialogue",
                 audience=", ".join(dialogue.participants), content=content, tokens=estimate_tokens(content))


def spoken_traces(groups: Sequence[Group], chats: Sequence[ChatDay], dialogues: Sequence[LifelogDialogue],
                  events: Sequence[Event]) -> list[Trace]:
    """Every chat day and dialogue as a trace, in time order (the traces stage appends them to the written ones)."""
    by_group = {g.id: g for g in groups}
    by_event = {e.id: e for e in events}
    out = [chat_trace(day, by_group[day.group_id], by_event) for day in chats if day.utterances]
    out += [dialogue_trace(d) for d in dialogues if d.lines]
    return sorted(out, key=lambda t: (t.time, t.id))


def validation_rates(records: Sequence[ChatDay] | Sequence[LifelogDialogue]) -> dict:
    """The daily validation's figures over chat days or dialogues: the share whose first draft broke a model-free
    rule (level 1) or a judge level (2–4), the share a repair fixed, the share still flagged, repairs made."""
    n = len(records)
    if not n:
        return {"records": 0}
    failed = [r for r in records if r.check.rule_problems or r.check.judge_problems]
    return {
        "records": n,
        "rule_fail_rate": round(sum(bool(r.check.rule_problems) for r in records) / n, 4),
        "judge_fail_rate": round(sum(bool(r.check.judge_problems) for r in records) / n, 4),
        "repaired_rate": round(sum(not r.check.flagged for r in failed) / n, 4),
        "flagged_rate": round(sum(r.check.flagged for r in records) / n, 4),
        "repeated_rate": round(sum(any(p.startswith("repeats ") for p in r.check.final_problems)
                                   for r in records) / n, 4),
        "repairs": sum(len(r.check.repairs) for r in records),
    }
