"""`make bench`: the `small` preset against the fake server at a fixed latency, concurrent and sequential, compared
with the critical-path lower bound the run measured on itself (its longest chain of dependent calls); then an
unchanged re-run, and the pipeline's CPU overhead per call at zero latency. The last line printed is one JSON object.

Before it, where the concurrent run's wall time beyond the critical path went: per stage (its wall time against its
critical path and against what the concurrency limit alone forces), and per kind of work on the event-loop thread
(synth.testing.loop_profile samples it during that run: loop-thread CPU and wall seconds per category — the SDK,
the HTTP transport, prompt rendering, the cache, the journal…). `--sample-detail` names the functions under each.

The fake server runs as a subprocess so its CPU time stays out of the pipeline's (its CPU is printed too: on a
2-core host it competes with the pipeline for the cores).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from synth.config import conf
from synth.llm import providers
from synth.llm.base import LLMRequest, ProviderResponse
from synth.pipeline.session import open_session, run_stages
from synth.stages import STAGES
from synth.testing.loop_profile import RETRIES, LoopProfile

ROOT = Path(__file__).resolve().parents[1]
@dataclass
class Call:
    task: str
    start: float
    end: float


@dataclass
class Tracer:
    """Wraps the openai provider so each complete() is recorded with its task and start/end times."""

    calls: list[Call] = field(default_factory=list)

    def wrap(self, make):
        tracer = self

        class Traced:
            def __init__(self, inner) -> None:
                self.inner = inner
                self.name = inner.name
                self.key_env = inner.key_env

            async def aclose(self) -> None:
                await self.inner.aclose()

            async def complete(self, request: LLMRequest, model: str) -> ProviderResponse:
                start = time.perf_counter()
                response = await self.inner.complete(request, model)
                tracer.calls.append(Call(request.task, start, time.perf_counter()))
                return response

        return lambda route, timeout_s, seed: Traced(make(route, timeout_s, seed))


class Server:
    """`python -m synth.testing.fake_server` on a free port, as a subprocess."""

    def __init__(self, latency_ms: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "synth.testing.fake_server", "--port", "0", "--latency-ms", str(latency_ms)],
            stdout=subprocess.PIPE, text=True, cwd=ROOT)
        line = self.proc.stdout.readline()
        match = re.search(r"(http://\S+)", line)
        if not match:
            self.proc.kill()
            raise RuntimeError(f"the fake server did not start: {line!r}")
        self.url = match.group(1)

    def stats(self) -> dict:
        import urllib.request

        with urllib.request.urlopen(self.url + "/_stats") as response:
            return json.loads(response.read())

    def cpu_s(self) -> float:
        """The server process's CPU seconds so far (it shares the host's cores with the pipeline)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def chat_calls(self) -> int:
        return self.stats()["by_path"].get("/v1/chat/completions", 0)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def run_once(out: Path, preset: str, base_url: str, concurrency: int | None,
             profile: LoopProfile | None = None, sources: list[str] | None = None) -> tuple[float, str | None]:
    """One `synth run` of every stage (in-process, no progress bars); returns wall seconds and any error.
    `sources` overrides the preset's trace sources (None: the preset's own)."""
    config = conf.preset_config(preset)
    if sources is not None:
        config["sources"] = sources
    session = open_session(out, [ROOT / "personas"], [], preset, "openai", "fake", base_url, concurrency,
                           None, None, config)
    error = None
    start = time.perf_counter()
    try:
        with profile or contextlib.nullcontext():
            asyncio.run(run_stages(session, STAGES.order(), show_progress=False))
    except Exception as exc:  # noqa: BLE001 - a failing stage is reported, the numbers of what ran still count
        error = f"{type(exc).__name__}: {exc}"
    finally:
        session.close()
    return time.perf_counter() - start, error


def stage_depths(persona: Path) -> dict[str, int]:
    """Dependent calls on the longest chain of each stage that ran for one persona directory, as the run itself
    counted them (the manifest's `chain_calls`, synth.core.chain): every call that waited for another's answer —
    a re-plan, a privacy check, a rewrite, a trace waiting for the traces it reads — is on it; cache hits are not."""
    depths: dict[str, int] = {}
    for stage in STAGES.order():
        path = persona / "manifests" / f"{stage}.json"
        if path.is_file():
            depths[stage] = int(json.loads(path.read_text(encoding="utf-8")).get("chain_calls") or 0)
    return depths


def critical_path_calls(out: Path) -> tuple[int, dict[str, int], Path | None]:
    """Personas run in parallel and stages in order within one: the worst persona's sum of stage depths."""
    best: tuple[int, dict[str, int], Path | None] = (0, {}, None)
    for persona in sorted(p for p in out.iterdir() if (p / "manifests").is_dir()):
        depths = stage_depths(persona)
        best = max(best, (sum(depths.values()), depths, persona), key=lambda x: x[0])
    return best


@dataclass
class StageRow:
    stage: str
    calls: int
    wall_s: float  # from the stage's manifest
    path_s: float  # its dependent-call chain × latency
    cap_s: float  # its calls × latency / concurrency: what the concurrency limit alone forces


def stage_table(persona: Path, depths: dict[str, int], latency_s: float, concurrency: int) -> list[StageRow]:
    """Per stage of the critical persona: provider calls, wall seconds and the two lower bounds on them."""
    rows = []
    for stage, depth in depths.items():
        manifest = json.loads((persona / "manifests" / f"{stage}.json").read_text(encoding="utf-8"))
        calls = int(manifest.get("provider_calls", 0))
        rows.append(StageRow(stage, calls, float(manifest.get("wall_s", 0.0)), depth * latency_s,
                             calls * latency_s / concurrency))
    return rows


def stage_lines(rows: list[StageRow], wall_s: float) -> list[str]:
    """Where the wall time beyond the critical path went, stage by stage; the last row is the time outside every
    stage's own wall (each stage's input checks and signature, the stage order between them)."""
    lines = [f"{'stage':<13}{'calls':>6}{'wall s':>9}{'path s':>9}{'cap s':>8}{'beyond s':>10}"]
    for r in rows:
        lines.append(f"{r.stage:<13}{r.calls:>6}{r.wall_s:>9.2f}{r.path_s:>9.2f}{r.cap_s:>8.2f}"
                     f"{r.wall_s - r.path_s:>10.2f}")
    between = wall_s - sum(r.wall_s for r in rows)
    lines.append(f"{'(between)':<13}{'':>6}{between:>9.2f}{0:>9.2f}{0:>8.2f}{between:>10.2f}")
    return lines


def retry_policy_ms(n: int = 20000) -> float:
    """CPU per call of the transport retry policy when the first attempt succeeds (nearly every call): the client's
    tenacity `AsyncRetrying` around a no-op awaitable, minus the bare await, in milliseconds."""
    from synth.llm.client import LLM, CallStats

    llm, stats = LLM(providers=lambda route: None, cache=None), CallStats()

    async def answer() -> int:
        return 1

    async def wrapped() -> None:
        for _ in range(n):
            async for attempt in llm._retrying(stats):
                with attempt:
                    await answer()

    async def bare() -> None:
        for _ in range(n):
            await answer()

    def cpu(work) -> float:
        start = time.process_time()
        asyncio.run(work())
        return time.process_time() - start

    return 1000 * max(0.0, cpu(wrapped) - cpu(bare)) / n


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="small")
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", type=int, default=None, help="default: the preset's")
    parser.add_argument("--sources", default="written",
                        help="trace sources, a comma list, or 'preset' for the preset's own (default: written — the "
                             "workload the throughput figure has always measured; small's group chats are one "
                             "sequential chain per group that would dominate both the run and its bound)")
    parser.add_argument("--skip-sequential", action="store_true", help="skip the concurrency-1 run (quick checks)")
    parser.add_argument("--trace", type=Path, default=None, help="write the concurrent run's calls (JSONL) here")
    parser.add_argument("--sample-ms", type=float, default=3.0,
                        help="the loop profiler's sampling interval during the concurrent run (0: off)")
    parser.add_argument("--sample-detail", action="store_true",
                        help="under each category, the innermost functions the loop thread's CPU was charged to")
    args = parser.parse_args(argv)
    sources = None if args.sources == "preset" else [x.strip() for x in args.sources.split(",") if x.strip()]
    log = lambda msg: print(msg, file=sys.stderr, flush=True)

    tracer = Tracer()
    providers.REGISTRY["openai"] = tracer.wrap(providers.REGISTRY["openai"])
    latency_s = args.latency_ms / 1000
    with tempfile.TemporaryDirectory(prefix="synth-bench-") as tmp:
        tmp_path = Path(tmp)
        with Server(args.latency_ms) as server:
            base_url = server.url + "/v1"
            profile = LoopProfile(args.sample_ms / 1000, args.sample_detail) if args.sample_ms > 0 else None
            server_cpu = server.cpu_s()
            wall_s, error = run_once(tmp_path / "concurrent", args.preset, base_url, args.concurrency, profile, sources)
            server_cpu = server.cpu_s() - server_cpu
            calls = list(tracer.calls)
            log(f"concurrent: {wall_s:.2f}s, {len(calls)} calls" + (f" (stopped: {error})" if error else ""))
            # read before the re-run: a stage it ran again from the cache would record a chain of no calls
            chain, depths, persona = critical_path_calls(tmp_path / "concurrent")
            concurrency = args.concurrency or int(conf.preset_config(args.preset)["concurrency"])
            stage_rows = stage_table(persona, depths, latency_s, concurrency) if persona else []
            before = server.chat_calls()
            rerun_s, _ = run_once(tmp_path / "concurrent", args.preset, base_url, args.concurrency, None, sources)
            rerun_calls = server.chat_calls() - before
            log(f"re-run: {rerun_s:.2f}s, {rerun_calls} calls")
            sequential_wall_s = None
            if not args.skip_sequential:
                sequential_wall_s, _ = run_once(tmp_path / "sequential", args.preset, base_url, 1, None, sources)
                log(f"sequential: {sequential_wall_s:.2f}s")
        with Server(0) as server:
            tracer.calls.clear()
            cpu = time.process_time()
            zero_wall, _ = run_once(tmp_path / "zero", args.preset, server.url + "/v1", args.concurrency, None, sources)
            cpu = time.process_time() - cpu
            log(f"zero latency: {zero_wall:.2f}s wall, {cpu:.2f}s CPU over {len(tracer.calls)} calls")
            overhead_ms = 1000 * cpu / max(1, len(tracer.calls))
    if args.trace:
        origin = min((c.start for c in calls), default=0.0)
        args.trace.write_text("".join(json.dumps({"task": c.task, "start": round(c.start - origin, 4),
                                                  "end": round(c.end - origin, 4)}) + "\n" for c in calls))
    critical_path_s = chain * latency_s
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = {
        "wall_s": round(wall_s, 3),
        "sequential_wall_s": round(sequential_wall_s, 3) if sequential_wall_s is not None else None,
        "critical_path_s": round(critical_path_s, 3),
        "ratio": round(wall_s / critical_path_s, 3) if critical_path_s else None,
        "provider_calls": len(calls),
        "overhead_ms_per_call": round(overhead_ms, 3),
        "rerun_provider_calls": rerun_calls,
        "retry_policy_ms_per_call": round(retry_policy_ms(), 4),
        "peak_rss_mb": round(peak_rss_mb, 1),
        "sources": args.sources,
    }
    if error:
        log(f"warning: the run stopped early, so these numbers cover only the stages that ran: {error}")
    log(f"critical path: {chain} dependent calls × {latency_s:g}s {depths}")
    for line in stage_lines(stage_rows, wall_s):
        log(line)
    if profile is not None:
        for line in profile.lines(wall_s):
            log(line)
        retry_ms = 1000 * profile.cpu.get(RETRIES, 0.0) / max(1, len(calls))
        log(f"transport retry policy (tenacity): {retry_ms:.3f} ms CPU per call sampled in this run, "
            f"{result['retry_policy_ms_per_call']:.3f} ms measured alone (one successful attempt)")
        log(f"fake server (another process on the same cores): {server_cpu:.2f}s CPU")
        result["loop_cpu_s"] = round(sum(profile.cpu.values()), 3)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
