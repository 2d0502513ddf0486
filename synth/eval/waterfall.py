"""SubtleMemory's report of relation items: accuracy per relation type under the judge with accepted and
known-wrong answers, and the diagnostic waterfall oracle → perfect retrieval → the system's own retrieval.

S_O: items answered correctly with the gold sessions (oracle); S_P ⊆ S_O: still correct with what the system stored
from them (perfect retrieval); S_D ⊆ S_P: still correct with its own retrieval (default). P_preserve = |S_P| / |S_O|
(information survived memory formation) and P_retrieve = |S_D| / |S_P| (preserved information was retrieved)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from synth.eval.scoring import WATERFALL


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def stage_block(rows: Sequence[dict]) -> dict:
    """One group of relation rows: accuracy per setting, the nested sets' sizes and the two conditional rates."""
    right = {s: {r["key"] for r in rows if r["relation"][s]["label"] == "CORRECT"} for s in WATERFALL}
    oracle = right["oracle"]
    preserved = oracle & right["perfect"]
    retrieved = preserved & right["default"]
    return {"n": len(rows), "accuracy": {s: _rate(len(right[s]), len(rows)) for s in WATERFALL},
            "oracle_correct": len(oracle), "preserved": len(preserved), "retrieved": len(retrieved),
            "p_preserve": _rate(len(preserved), len(oracle)), "p_retrieve": _rate(len(retrieved), len(preserved))}


def relation_report(rows: Sequence[dict]) -> dict | None:
    """The waterfall over every relation item and per relation type; None when the run scored none."""
    related = [r for r in rows if r.get("relation")]
    if not related:
        return None
    types = sorted({r["relation"]["type"] for r in related})
    return {"overall": stage_block(related),
            "by_relation": {t: stage_block([r for r in related if r["relation"]["type"] == t]) for t in types}}


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def relation_table(report: dict) -> Table:
    table = Table(title="relation items (judged against accepted and known-wrong answers): oracle → perfect "
                        "retrieval → own retrieval")
    for col in ("relation", "n", "oracle", "perfect", "own", "P_preserve", "P_retrieve"):
        table.add_column(col, justify="left" if col == "relation" else "right", no_wrap=col != "relation")
    rows = [*report["by_relation"].items(), ("all", report["overall"])]
    for name, block in rows:
        acc = block["accuracy"]
        table.add_row(name.removeprefix("relation_"), str(block["n"]), _pct(acc["oracle"]), _pct(acc["perfect"]),
                      _pct(acc["default"]), _pct(block["p_preserve"]), _pct(block["p_retrieve"]))
    return table
