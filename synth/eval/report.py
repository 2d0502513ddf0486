"""The report of a run: summary.json's counts and bootstrap intervals per grouping, and the terminal tables."""

from __future__ import annotations

from collections.abc import Collection

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table

from synth.eval.data import EvalQuestion, EvalSet
from synth.eval.metrics import METRICS, aggregate
from synth.eval.waterfall import relation_report, relation_table


def summarize_rows(rows: list[dict], eval_set: EvalSet, questions: list[EvalQuestion], settings: dict,
                   run: dict, failed: Collection[dict] = ()) -> dict:
    resamples, seed = int(settings["bootstrap_resamples"]), int(settings["bootstrap_seed"])
    groups = {}
    # by_language: one persona released in en and zh (`synth run --languages en,zh`) scored side by side
    for grouping in ("question_type", "dimension", "language"):
        values = sorted({r.get(grouping, "") for r in rows})
        groups[f"by_{grouping}"] = {v: aggregate([r for r in rows if r.get(grouping, "") == v], resamples, seed)
                                    for v in values}
    summary = {"settings": run, "counts": _counts(rows, eval_set, questions, groups, failed),
               "overall": aggregate(rows, resamples, seed), **groups}
    relations = relation_report(rows)
    if relations is not None:  # SubtleMemory's relation items: per relation type, and the waterfall
        summary["relations"] = relations
    return summary


def _future_evidence(eval_set: EvalSet, questions: list[EvalQuestion]) -> int:
    """Questions whose gold traces include one dated after the question time (a causality flaw in the data)."""
    times = {p.key: {t.id: t.time for t in p.traces} for p in eval_set.personas}
    return sum(1 for q in questions if q.question_time and any(
        (when := times[q.persona].get(t)) is not None and when > q.question_time for t in q.gold_ids))


def _counts(rows: list[dict], eval_set: EvalSet, questions: list[EvalQuestion], groups: dict,
            failed: Collection[dict]) -> dict:
    def per(grouping: str) -> dict[str, int]:
        return {k: sum(1 for r in rows if r.get(grouping, "") == k) for k in groups[f"by_{grouping}"]}

    def dropped(kind: str) -> int:
        return sum(len((r.get("dropped_ids") or {}).get(kind, [])) for r in rows)

    asked = {q.persona for q in questions}
    scored = {r.get("key") for r in rows}
    return {
        "personas": len(asked),
        "questions": len(questions),
        "scored": len(rows),
        "failed": len(questions) - len(rows),
        # why, for the questions this invocation tried: the memory system raised or returned no list of ids, or
        # the answerer/judge model gave no valid reply within its attempts
        "failed_by_cause": {cause: sum(1 for f in failed if f.get("cause") == cause) for cause in ("system", "model")},
        "recall_excluded_no_gold_traces": sum(1 for r in rows if r.get("recall") is None),
        # unanswerable questions scored on their related background's traces (no answer to find, but a topic)
        "recall_on_background": sum(1 for q in questions if q.background and q.evidence_sets and q.key in scored),
        "multiple_choice": sum(1 for r in rows if r.get("correct") is not None),
        "questions_with_future_evidence": _future_evidence(eval_set, questions),
        # ids the system returned that it was never given, dropped before recall and answering
        "retrieved_ids_dropped": {"unknown": dropped("unknown"), "future": dropped("future"),
                                  "questions": sum(1 for r in rows if any((r.get("dropped_ids") or {}).values()))},
        # the online protocol cannot order these: such a question sees every trace, such a trace every question
        "questions_without_time": sum(1 for q in questions if q.question_time is None),
        "traces_without_date": sum(1 for p in eval_set.personas if p.key in asked for t in p.traces if t.time is None),
        "by_question_type": per("question_type"),
        "by_dimension": per("dimension"),
        "by_language": per("language"),
    }


def _fmt(cell: dict) -> str:
    if cell["mean"] is None:
        return "—"
    return f"{cell['mean']:.3f} [{cell['ci_low']:.3f}, {cell['ci_high']:.3f}]"


def group_tables(summary: dict, group: str, width: int) -> list[Table]:
    """The metrics of one grouping (by_question_type or by_dimension) as tables no wider than `width`: a row per
    metric, a column per group (mean only; summary.json has the intervals), split into as many tables as needed."""
    label = group.removeprefix("by_")
    label_width = max(cell_len(text) for text in (label, "n", *METRICS))
    names = list(summary[group])
    chunks: list[list[str]] = []
    used = width  # start a new table at the first name
    for name in names:
        column = max(cell_len(name), 4) + 3  # the text, one space either side, a border
        if not chunks or used + column > width:
            chunks.append([])
            used = 1 + label_width + 3
        chunks[-1].append(name)
        used += column
    tables = []
    for number, chunk in enumerate(chunks, 1):
        part = f" ({number}/{len(chunks)})" if len(chunks) > 1 else ""
        table = Table(title=group.replace("_", " ") + part)
        table.add_column(label, no_wrap=True)
        for name in chunk:
            table.add_column(name, justify="right", overflow="fold")  # a name wider than the screen wraps, uncut
        table.add_row("n", *(str(summary["counts"][group].get(name, 0)) for name in chunk))
        for metric in METRICS:
            table.add_row(metric, *("—" if summary[group][name][metric]["mean"] is None
                                    else f"{summary[group][name][metric]['mean']:.2f}" for name in chunk))
        tables.append(table)
    return tables


def print_summary(summary: dict, console: Console) -> None:
    run = summary["settings"]
    # Not the table's title: a long --data path would be folded into the table's width.
    console.print(f"synth eval — {run['system']} k={run['k']} ({run['protocol']}) on {run['data']}", highlight=False)
    overall = Table(title="overall")
    overall.add_column("metric", no_wrap=True)
    overall.add_column("mean [95% CI]", justify="right", no_wrap=True)
    overall.add_column("n", justify="right", no_wrap=True)
    for metric in METRICS:
        overall.add_row(metric, _fmt(summary["overall"][metric]), str(summary["overall"][metric]["n"]))
    console.print(overall)
    groups = ["by_question_type", "by_dimension"] + (["by_language"] if len(summary.get("by_language", {})) > 1 else [])
    for group in groups:
        for table in group_tables(summary, group, console.width):
            console.print(table)
    if summary.get("relations"):
        console.print(relation_table(summary["relations"]))
    c = summary["counts"]
    lines = [f"{c['scored']}/{c['questions']} question(s) scored, {c['failed']} failed; "
             f"{c['recall_excluded_no_gold_traces']} without gold traces left out of recall "
             f"({c['recall_on_background']} unanswerable scored on their background traces); "
             f"{c['questions_with_future_evidence']} with gold traces after the question time"]
    dropped = c["retrieved_ids_dropped"]
    if dropped["unknown"] or dropped["future"]:
        lines.append(f"dropped before scoring: {dropped['unknown']} retrieved id(s) the system was never given and "
                     f"{dropped['future']} dated after the question time ({dropped['questions']} question(s))")
    if run["protocol"] == "online" and (c["questions_without_time"] or c["traces_without_date"]):
        lines.append(f"not ordered in time: {c['questions_without_time']} question(s) without a readable "
                     f"question_time (they see every trace), {c['traces_without_date']} trace(s) without a "
                     "readable date (every question sees them)")
    for line in lines:
        console.print(line, highlight=False)
