"""Input tokens per call by task, in the first, middle and last tenth of one persona's timeline: whether the prompts
grow with the length of the life (flat is the goal).

It runs the dry run's fake pipeline (no model called) for one persona and preset — by default the 500k persona
p04_samuel under `clonemem` — and reads the rendered prompts. A task's calls are put in timeline order by the day
their prompt is about (the latest date it shows, which for the phases, events and traces prompts is the end of the
phase at hand), then cut into tenths. Prints one table and, last, one JSON object.

    python benchmarks/prompt_growth.py [--preset clonemem] [--persona p04_samuel] [--check]

`--check` exits 1 when a trace task's median in some tenth is over --median-limit or its p95 over --p95-limit.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

from rich.console import Console

from synth.config import conf
from synth.core.tokens import estimate_tokens
from synth.pipeline.dryrun import fake_requests

ROOT = Path(__file__).resolve().parents[1]
DATE = re.compile(r"\b(20\d\d|19\d\d)-(\d\d)-(\d\d)\b")
TENTHS = {"first": 0, "middle": 4, "last": 9}


def prompt_day(text: str) -> str:
    """The latest ISO date a prompt shows ("" if none)."""
    return max((m.group(0) for m in DATE.finditer(text)), default="")


def percentile(values: list[int], share: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))] if ordered else 0


def growth(requests) -> dict[str, dict[str, dict[str, int]]]:
    """Per task and tenth (first, middle, last): calls, median and p95 input tokens."""
    by_task: dict[str, list[tuple[str, int, int]]] = {}
    for order, request in enumerate(requests):
        text = " ".join(m["content"] for m in request.messages)
        task = f"{request.task}:{request.json_schema.get('title', '')}" if request.json_schema else request.task
        by_task.setdefault(task, []).append((prompt_day(text), order, estimate_tokens(text)))
    out: dict[str, dict[str, dict[str, int]]] = {}
    for task, calls in sorted(by_task.items()):
        calls.sort()
        n = len(calls)
        rows = {}
        for label, tenth in TENTHS.items():
            part = [tokens for _, _, tokens in calls[n * tenth // 10:max(n * tenth // 10 + 1, n * (tenth + 1) // 10)]]
            rows[label] = {"calls": len(part), "median": int(statistics.median(part)) if part else 0,
                           "p95": percentile(part, 0.95)}
        out[task] = rows
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="clonemem")
    parser.add_argument("--persona", default="p04_samuel")
    parser.add_argument("--personas", type=Path, default=ROOT / "personas")
    parser.add_argument("--config", type=Path, default=None)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--median-limit", type=int, default=6000)
    parser.add_argument("--p95-limit", type=int, default=9000)
    args = parser.parse_args()
    real = conf.resolve_route("openai", "gpt-4o-mini", None)  # only routes the tasks; nothing is priced here
    requests, _, _, error, _, _ = fake_requests(args.preset, [args.personas], [args.persona], args.config, real)
    table = growth(requests)
    console = Console(width=200)
    console.print(f"input tokens per call — preset {args.preset}, persona {args.persona} (fake run, no model called)")
    console.print(f"{'task':<36}" + "".join(f"{label + ' med/p95':>22}" for label in TENTHS) + f"{'calls':>8}")
    for task, rows in table.items():
        cells = "".join(f"{rows[label]['median']:>13,} /{rows[label]['p95']:>7,}" for label in TENTHS)
        total = sum(1 for r in requests if task.startswith(f"{r.task}:") or task == r.task)
        console.print(f"{task[:36]:<36}{cells}{total:>8,}", highlight=False)
    if error:
        console.print(f"warning: the fake run stopped early: {error}", markup=False)
    over = [f"{task} {label}" for task, rows in table.items() if task.startswith("traces") and task != "traces_privacy"
            for label, row in rows.items() if row["median"] > args.median_limit or row["p95"] > args.p95_limit]
    print(json.dumps({"preset": args.preset, "persona": args.persona, "tasks": table, "over_limit": over}))
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
