"""The fake server's state, shared by every handler thread: its configuration, counters, ids, files and batches,
with the answer bodies, fault draws and batch endpoints mixed in from their own modules."""

from __future__ import annotations

import itertools
import random
import threading
from collections import Counter
from typing import Any

from synth.testing.fake_batches import Batch, Batches, StoredFile
from synth.testing.fake_faults import BAD_BODY_KINDS, TRANSPORT_FAULT_KINDS, FaultDraws, fault_kinds
from synth.testing.fake_wire import WireFormats


class Backend(FaultDraws, WireFormats, Batches):
    """Configuration, counters and in-memory state shared by every handler thread."""

    def __init__(self, latency_ms: float, seed: int, fault_rate: float, faults: Any, bad_body_rate: float,
                 bad_bodies: Any, timeout_sleep_s: float, batch_delay_s: float) -> None:
        self.latency_s = latency_ms / 1000.0
        self.seed = seed
        self.fault_rate = fault_rate
        self.faults = fault_kinds(faults, TRANSPORT_FAULT_KINDS, "fault")
        self.bad_body_rate = bad_body_rate
        self.bad_bodies = fault_kinds(bad_bodies, BAD_BODY_KINDS, "bad-body")
        self.timeout_sleep_s = timeout_sleep_s
        self.batch_delay_s = batch_delay_s
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.files: dict[str, StoredFile] = {}
        self.batches: dict[str, Batch] = {}
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.rng = random.Random(self.seed)
            self.requests = 0
            self.by_path: Counter[str] = Counter()
            self.by_fault: Counter[str] = Counter()
            self.cached_systems: set[str] = set()

    def stats(self) -> dict:
        with self.lock:
            faults = sum(n for k, n in self.by_fault.items() if k in TRANSPORT_FAULT_KINDS)
            return {"requests": self.requests, "by_path": dict(self.by_path), "faults": faults,
                    "bad_bodies": sum(self.by_fault.values()) - faults, "by_fault": dict(self.by_fault)}

    def count(self, route: str) -> None:
        with self.lock:
            self.requests += 1
            self.by_path[route] += 1

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self.ids):08d}"
