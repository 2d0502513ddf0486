"""`synth export --format longmemeval`: each final item as a LongMemEval instance whose haystack is the persona's
traces up to the question time (the online protocol), per persona and combined, plus the `_oracle` variant that
holds only the evidence sessions (docs/formats/longmemeval.md)."""

from __future__ import annotations

import json
from pathlib import Path

from synth.core.bench_formats import ABS_SUFFIX, ANSWER_PREFIX, SYNTH_KEY, lme_date, lme_type
from synth.core.errors import InputError
from synth.core.jsonl import staged_dir
from synth.records import FinalItem
from synth.release.sessions import (
    PersonaData,
    Session,
    evidence_turns,
    gold_trace_ids,
    load_personas,
    synth_item_fields,
)


def _turns(session: Session, marked: set[int] | None) -> list[dict]:
    """The session's turns; in an evidence session (`marked` not None) every turn says `has_answer`, true or false,
    as LongMemEval's own retrieval code expects of its evidence sessions."""
    return [{"role": "user" if turn.own else "assistant", "content": turn.line,
             **({"has_answer": i in marked} if marked is not None else {})} for i, turn in enumerate(session.turns)]


def instance(data: PersonaData, item: FinalItem, oracle: bool = False) -> dict:
    """One LongMemEval instance: only traces dated at or before the question time, oldest first (the oracle: only
    those of them that carry the evidence)."""
    gold = gold_trace_ids(item)
    wanted = set(gold)
    visible = [s for s in data.sessions if s.trace.time <= item.question_time]
    haystack = [s for s in visible if s.trace.id in wanted] if oracle else visible
    shown = {s.trace.id for s in haystack}
    unanswerable = item.question_type == "unanswerable"

    def sid(trace_id: str) -> str:
        return ANSWER_PREFIX + trace_id if trace_id in wanted else trace_id

    return {
        "question_id": item.id + (ABS_SUFFIX if unanswerable else ""),
        "question_type": lme_type(item.question_type),
        "question": item.question,
        "answer": item.answer,
        "question_date": lme_date(item.question_time),
        "haystack_session_ids": [sid(s.trace.id) for s in haystack],
        "haystack_dates": [lme_date(s.trace.time) for s in haystack],
        "haystack_sessions": [_turns(s, set(evidence_turns(s, item)) if s.trace.id in wanted else None)
                              for s in haystack],
        "answer_session_ids": [sid(t) for t in gold if t in shown],
        SYNTH_KEY: {
            **synth_item_fields(item, data.persona),
            "haystack_media": [s.trace.medium for s in haystack],
            # the evidence as synth groups it (a statement and its traces); unanswerable items: their background
            "evidence": [{"statement": e.statement, "evidence_id": e.evidence_id,
                          "session_ids": [sid(t) for t in e.digital_trace_ids],
                          "background": e.background or unanswerable} for e in item.evidence],
            "digital_trace_ids": [sid(t) for t in item.digital_trace_ids],
        },
    }


def persona_instances(data: PersonaData, oracle: bool = False) -> list[dict]:
    return [instance(data, item, oracle) for item in data.items]


def _write(path: Path, instances: list[dict]) -> None:
    path.write_text(json.dumps(instances, ensure_ascii=False), encoding="utf-8")


def export_longmemeval(out: Path) -> list[Path]:
    """export/longmemeval/<persona>.json and <persona>_oracle.json per persona with final.jsonl, all.json and
    all_oracle.json for every persona together; the folder is replaced only once it is complete."""
    personas = load_personas(out)
    if not personas:
        raise InputError(f"{out}: no persona with final.jsonl to export — run `synth filter` first")
    target = out / "export" / "longmemeval"
    names: list[str] = []
    with staged_dir(target, ".longmemeval.") as staging:
        combined: dict[bool, list[dict]] = {False: [], True: []}
        for data in personas:
            for oracle in (False, True):
                found = persona_instances(data, oracle)
                combined[oracle] += found
                names.append(f"{data.persona.id}{'_oracle' if oracle else ''}.json")
                _write(staging / names[-1], found)
        for oracle in (False, True):
            names.append(f"all{'_oracle' if oracle else ''}.json")
            _write(staging / names[-1], combined[oracle])
    return [target / name for name in names]
