"""Where the event loop's time goes: a sampling profiler for the loop thread, switched on by the bench only.

Every `interval_s` a helper thread reads the loop thread's stack and its CPU clock, and charges the CPU used since
the last sample (and the wall time) to what the loop is doing now: the category of the innermost frame a rule in
`RULES` names. Nothing in the pipeline knows about it, so a run without it pays nothing.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Self

HTTP = "HTTP transport (aiohttp; httpx, httpcore, h11, anyio under the SDKs)"
SDK = "provider SDK (request build, response parse)"
JINJA = "prompt rendering (Jinja)"
CLIENT = "client bookkeeping (budget, limiter)"
RETRIES = "transport retry policy (tenacity)"
STAGE_IO = "stage setup + teardown (inputs, signatures, manifests)"
BODIES = "stage bodies (context, records, dumps)"
IDLE = "idle: waiting for answers"
OTHER = "asyncio scheduling + other"

# (path fragment, function name or None, category), tried on each frame from the innermost outwards. Frames no rule
# names (json, pydantic, hashlib, asyncio internals) are transparent: their time goes to the caller's category.
RULES: tuple[tuple[str, str | None, str], ...] = (
    ("/selectors.py", "select", IDLE),
    ("/synth/llm/cache.py", "cache_key", "cache keys (canonical JSON + sha256)"),
    ("/synth/llm/cache.py", "content_hash", "cache keys (canonical JSON + sha256)"),
    ("/synth/llm/cache.py", "canonical", "cache keys (canonical JSON + sha256)"),
    ("/synth/llm/cache.py", None, "response cache (SQLite)"),
    ("/synth/core/jsonl.py", "write_atomic", "output files (atomic write + fsync)"),
    ("/synth/core/jsonl.py", "write_json_atomic", "output files (atomic write + fsync)"),
    ("/synth/core/jsonl.py", "iter_records", "reading + validating inputs"),
    ("/synth/core/jsonl.py", None, "journal (dump + append)"),
    ("/synth/core/tokens.py", "estimate_tokens", "token estimates"),
    ("/synth/config/prompts.py", None, JINJA),
    ("/jinja2/", None, JINJA),
    (".j2", None, JINJA),
    ("/rich/", None, "progress (rich)"),
    ("/synth/pipeline/session.py", "_refresh", "progress (rich)"),
    ("/synth/llm/client.py", "generate", "answer parsing + schema validation (pydantic)"),
    ("/synth/llm/client.py", "extract_json", "answer parsing + schema validation (pydantic)"),
    ("/synth/llm/client.py", "_retrying", RETRIES),
    ("/tenacity/", None, RETRIES),
    ("/synth/llm/client.py", None, CLIENT),
    ("/synth/llm/limits.py", None, CLIENT),
    ("/openai/", None, SDK),
    ("/anthropic/", None, SDK),
    ("/synth/llm/providers.py", None, SDK),
    ("/synth/llm/http.py", None, HTTP),
    ("/aiohttp/", None, HTTP),
    ("/yarl/", None, HTTP),
    ("/multidict/", None, HTTP),
    ("/httpx", None, HTTP),
    ("/httpcore", None, HTTP),
    ("/h11/", None, HTTP),
    ("/anyio/", None, HTTP),
    ("/synth/engine/runner.py", None, STAGE_IO),
    ("/synth/quality/validate/", None, STAGE_IO),
    ("/synth/engine/stage.py", None, BODIES),
    ("/synth/stages/", None, BODIES),
    ("/synth/", None, "other synth code"),
    ("/benchmarks/", None, "bench instrumentation"),
)


class LoopProfile:
    """Use as a context manager on the thread that will run the event loop (`with LoopProfile(): asyncio.run(…)`)."""

    def __init__(self, interval_s: float = 0.003, detail: bool = False) -> None:
        self.interval_s = interval_s
        self.detail = detail  # also keep CPU per innermost function within each category
        self.cpu: dict[str, float] = {}
        self.wall: dict[str, float] = {}
        self.leaves: dict[tuple[str, str], float] = {}  # (category, innermost file:function) -> CPU seconds
        self.samples = 0
        self._kinds: dict[object, str | None] = {}  # code object -> category (None: transparent)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._switch = sys.getswitchinterval()

    def _kind(self, code) -> str | None:
        if code not in self._kinds:
            path = code.co_filename.replace("\\", "/")
            self._kinds[code] = next((kind for part, name, kind in RULES
                                      if part in path and (name is None or name == code.co_name)), None)
        return self._kinds[code]

    def classify(self, frame: FrameType | None) -> str:
        while frame is not None:
            kind = self._kind(frame.f_code)
            if kind is not None:
                return kind
            frame = frame.f_back
        return OTHER

    def _sample(self, target: int, clock: int, last: tuple[float, float]) -> tuple[float, float]:
        frame = sys._current_frames().get(target)
        kind = self.classify(frame)
        cpu, wall = time.clock_gettime(clock), time.perf_counter()
        self.cpu[kind] = self.cpu.get(kind, 0.0) + cpu - last[0]
        self.wall[kind] = self.wall.get(kind, 0.0) + wall - last[1]
        if self.detail and frame is not None:
            where = (kind, f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}")
            self.leaves[where] = self.leaves.get(where, 0.0) + cpu - last[0]
        self.samples += 1
        return cpu, wall

    def _run(self, target: int) -> None:
        clock = time.pthread_getcpuclockid(target)
        last = (time.clock_gettime(clock), time.perf_counter())
        while not self._stop.wait(self.interval_s):
            last = self._sample(target, clock, last)

    def lines(self, wall_s: float) -> list[str]:
        """The breakdown: loop-thread CPU and wall seconds per category, the most CPU first."""
        total = sum(self.cpu.values())
        out = [f"loop thread: {total:.2f}s CPU in {wall_s:.2f}s wall ({self.samples} samples every "
               f"{self.interval_s * 1000:g} ms)", f"{'cpu s':>8}{'wall s':>9}  category"]
        for kind in sorted(self.wall, key=lambda k: (-self.cpu[k], -self.wall[k])):
            out.append(f"{self.cpu[kind]:>8.2f}{self.wall[kind]:>9.2f}  {kind}")
            leaves = sorted(((cpu, leaf) for (k, leaf), cpu in self.leaves.items() if k == kind), reverse=True)
            out.extend(f"{cpu:>8.2f}{'':>9}    {leaf}" for cpu, leaf in leaves[:6] if cpu >= 0.005)
        return out

    def __enter__(self) -> Self:
        # The sampler needs the GIL to read the stack; the loop thread gives it up at its next system call, or once
        # the switch interval (5 ms) has passed. Left at 5 ms, samples would land on system calls and charge them
        # the Python work that came before; this short interval lands a sample within ~0.1 ms of when it was due.
        self._switch = sys.getswitchinterval()
        sys.setswitchinterval(min(self._switch, self.interval_s / 30))
        self._thread = threading.Thread(target=self._run, args=(threading.get_ident(),), name="loop-profile",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        sys.setswitchinterval(self._switch)
