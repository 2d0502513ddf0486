"""Human review: a stratified sample sheet of final items, and importing its verdicts back into the dataset."""

from __future__ import annotations

import csv
import json
import random
from collections import defaultdict
from pathlib import Path

from synth.core.errors import InputError
from synth.core.jsonl import read_records, write_atomic
from synth.records import REVIEW_FILE, FinalItem, Rejected, Trace
from synth.release.browse import question_link
from synth.release.view import persona_dirs

COLUMNS = ("persona_id", "id", "question_type", "dimension", "question_time", "question", "options",
           "correct_choice_id", "answer", "evidence", "traces", "link", "verdict", "note")
ACCEPT = {"ok", "accept", "accepted", "pass", "good", "yes", "y", "keep"}
REJECT = {"reject", "rejected", "bad", "fail", "no", "n", "drop"}


def stratified(items: list[FinalItem], n: int, seed: int) -> list[FinalItem]:
    """Round-robin over (type, dimension) strata, each shuffled by the seed, so rare strata are seen too."""
    rng = random.Random(seed)
    strata: dict[tuple[str, str], list[FinalItem]] = defaultdict(list)
    for item in items:
        strata[(item.question_type, item.dimension)].append(item)
    queues = [rng.sample(group, len(group)) for _, group in sorted(strata.items())]
    picked: list[FinalItem] = []
    while len(picked) < n and any(queues):
        for queue in queues:
            if queue and len(picked) < n:
                picked.append(queue.pop())
    return picked


def _row(item: FinalItem, traces: dict[str, Trace], out: Path) -> dict:
    evidence = "\n".join(f"- {e.statement} [{', '.join(e.digital_trace_ids)}]" for e in item.evidence)
    shown = "\n\n".join(
        f"[{t.id}] {t.medium} · {t.time.isoformat(timespec='minutes')}\n{t.content}"
        for t in (traces[i] for i in item.digital_trace_ids if i in traces)
    )
    return {
        "persona_id": item.persona_id, "id": item.id, "question_type": item.question_type,
        "dimension": item.dimension, "question_time": item.question_time.isoformat(timespec="minutes"),
        "question": item.question, "options": "\n".join(f"{c.id}. {c.text}" for c in item.choices),
        "correct_choice_id": item.correct_choice_id, "answer": item.answer, "evidence": evidence, "traces": shown,
        "link": question_link(out, item.persona_id, item.id), "verdict": "", "note": "",
    }


def write_review(out: Path, n: int, seed: int = 0) -> Path:
    """out/review/sheet.csv: one row per sampled item; reviewers fill `verdict` (ok / reject) and `note`. `link` opens
    the item in `synth browse`'s site (its traces highlighted on the persona's timeline)."""
    items: list[FinalItem] = []
    traces: dict[str, Trace] = {}
    for directory in persona_dirs(out):
        if (directory / "final.jsonl").is_file():
            items += read_records(directory / "final.jsonl", FinalItem)
            traces.update((t.id, t) for t in read_records(directory / "traces.jsonl", Trace))
    if not items:
        raise InputError(f"{out}: no final.jsonl with items to review — run `synth filter` first")
    path = out / "review" / "sheet.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(_row(item, traces, out) for item in stratified(items, n, seed))
    return path


def _read_sheet(file: Path) -> list[dict]:
    if not file.is_file():
        raise InputError(f"{file}: no such review sheet")
    if file.suffix == ".jsonl":
        return [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]
    with file.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _verdict(row: dict, file: Path) -> str | None:
    value = str(row.get("verdict") or "").strip().lower()
    if not value:
        return None
    if value in ACCEPT:
        return "ok"
    if value in REJECT:
        return "reject"
    raise InputError(f"{file}: item {row.get('id')}: verdict {value!r} is neither ok nor reject")


def import_review(out: Path, file: Path) -> str:
    """Record every filled-in verdict in <persona>/review_verdicts.jsonl (the filter stage re-applies them on a
    re-run); rejected items move from final.jsonl to rejected.jsonl with filter `human_review`."""
    by_persona: dict[str, list[dict]] = defaultdict(list)
    for row in _read_sheet(file):
        verdict = _verdict(row, file)
        if verdict is not None:
            by_persona[row["persona_id"]].append({"id": row["id"], "verdict": verdict,
                                                  "reason": str(row.get("note") or "").strip()})
    recorded = moved = 0
    for persona_id, verdicts in by_persona.items():
        directory = out / persona_id
        if not (directory / "final.jsonl").is_file():
            raise InputError(f"{file}: persona {persona_id} has no final.jsonl under {out}")
        with (directory / REVIEW_FILE).open("a", encoding="utf-8") as handle:
            for v in verdicts:
                handle.write(json.dumps(v, ensure_ascii=False) + "\n")
        recorded += len(verdicts)
        moved += _apply(directory, {v["id"]: v["reason"] for v in verdicts if v["verdict"] == "reject"})
    return f"recorded {recorded} verdict(s); {moved} item(s) left final.jsonl for rejected.jsonl (filter human_review)"


def _apply(directory: Path, rejects: dict[str, str]) -> int:
    final = read_records(directory / "final.jsonl", FinalItem)
    gone = [i for i in final if i.id in rejects]
    if not gone:
        return 0
    rejected_path = directory / "rejected.jsonl"
    rejected = read_records(rejected_path, Rejected) if rejected_path.is_file() else []
    for item in gone:
        reason = rejects[item.id] or "rejected by a reviewer"
        rejected.append(Rejected(**item.model_dump(), filter="human_review", reason=reason))
    write_atomic(rejected_path, rejected)
    write_atomic(directory / "final.jsonl", [i for i in final if i.id not in rejects])
    return len(gone)
