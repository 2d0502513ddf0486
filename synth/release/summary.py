"""What a run made, in a few lines: per persona its traces, items generated → final, the top rejection reasons
and the cost; when nothing survived, one plain sentence saying why and what to do. Printed at the end of
`synth run` and first by `synth stats`."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from synth.config.conf import model_table
from synth.core.jsonl import read_dicts
from synth.core.tokens import estimate_tokens
from synth.release.view import persona_dirs

TOP_REASONS = 3


def _rows(path: Path) -> list[dict]:
    return read_dicts(path) if path.is_file() else []


def _cost(directory: Path) -> tuple[int, float]:
    calls, usd = 0, 0.0
    for manifest in sorted((directory / "manifests").glob("*.json")):
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        calls += int(data.get("provider_calls", 0) or 0)
        usd += float(data.get("cost_usd", 0.0) or 0.0)
    return calls, usd


def persona_summary(directory: Path) -> dict:
    """One persona's figures, read leniently from its files (any of them may be missing)."""
    persona = _rows(directory / "persona.jsonl")
    traces = _rows(directory / "traces.jsonl")
    final = _rows(directory / "final.jsonl")
    rejected = _rows(directory / "rejected.jsonl")
    filtered = (directory / "final.jsonl").is_file() or (directory / "rejected.jsonl").is_file()
    calls, usd = _cost(directory)
    reasons = Counter(str(r.get("filter", "?")) for r in rejected)
    return {
        "persona": directory.name,
        "name": str(persona[0].get("name", "")) if persona else "",
        "traces": len(traces),
        "trace_tokens": sum(int(t.get("tokens") or estimate_tokens(str(t.get("content", "")))) for t in traces),
        # before the filter has run, the items the qa stage wrote (a run stopped after `synth distractors`
        # said "0 generated … no question was generated" of sixteen written items)
        "generated": len(final) + len(rejected) if filtered else len(_rows(directory / "qa.jsonl")),
        "filtered": filtered,
        "final": len(final),
        "top_rejections": reasons.most_common(TOP_REASONS),
        "calls": calls,
        "cost_usd": round(usd, 4),
        "calls_per_final": round(calls / len(final), 1) if final else None,
    }


def run_summary(out: Path) -> list[dict]:
    return [persona_summary(d) for d in persona_dirs(out)]


def recorded_run(out: Path) -> tuple[str, bool]:
    """The provider a dataset was made with, and whether that was the bundled default local model."""
    try:
        recorded = json.loads((out / "dataset.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return "", False
    provider, model = str(recorded.get("provider") or ""), recorded.get("model")
    return provider, provider == "local" and (not model or model == model_table()["providers"]["local"]["default_model"])


def summary_lines(rows: list[dict], provider: str = "", default_local: bool = False) -> list[str]:
    """The summary as plain lines (no markup), one per persona, then the plain-words line if nothing survived."""
    lines = []
    for row in rows:
        reasons = ", ".join(f"{name} {n}" for name, n in row["top_rejections"]) or "none"
        per_item = f", {row['calls_per_final']} calls per final item" if row["calls_per_final"] else ""
        items = (f"items {row['generated']} generated → {row['final']} final; rejected by {reasons}"
                 if row["filtered"] else f"items {row['generated']} generated, not filtered yet")
        lines.append(
            f"{row['persona']} ({row['name'] or 'unnamed'}): {row['traces']} traces ({row['trace_tokens']:,} tokens); "
            f"{items}; {row['calls']} calls, ${row['cost_usd']:.4f}{per_item}")
    if rows and not any(row["final"] for row in rows) and any(row["filtered"] for row in rows):
        lines.append(nothing_survived(rows, provider, default_local))
    return lines


def nothing_survived(rows: list[dict], provider: str, default_local: bool) -> str:
    generated = sum(row["generated"] for row in rows)
    if not generated:
        why = "no question was generated (the plans found no feasible item, or the qa stage has not run)"
    else:
        reasons = Counter()
        for row in rows:
            reasons.update(dict(row["top_rejections"]))
        top, count = reasons.most_common(1)[0]
        why = f"all {generated} generated items were rejected, most by the '{top}' filter ({count})"
    if default_local:
        return (f"no final item: {why}. The bundled 270M model is a smoke test of the pipeline, not a question "
                "writer: for real items run with a capable model, e.g. `make dataset PROVIDER=anthropic` "
                "(ANTHROPIC_API_KEY) or `synth run --provider openai --base-url http://HOST:PORT/v1 --model NAME`.")
    if provider == "fake":
        return f"no final item: {why}. The fake provider's verdicts are random: it tests plumbing, not items."
    return f"no final item: {why}. `synth stats` shows every rejection; `rejected.jsonl` has each item's reason."
