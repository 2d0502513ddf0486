"""`synth run` against the fake server, and comparing its dataset with a clean run: the flags of each wire, the
shared server seed, a config file per text, and the dataset's comparable content (its fixtures are in conftest)."""

from __future__ import annotations

import json
from pathlib import Path

from kit import PERSONAS

from synth.records import FILES
from synth.testing.fake_server import FakeServer

# The fake server's seed drives both its answers and its fault draws: every server here shares it, so runs compare.
# Seed 7 makes the 25% fault rate of a `tiny` run draw every fault kind (deterministic: the draws are sequential).
SEED = 7


def tiny(out: Path, *extra: str) -> list[str]:
    return ["run", "--preset", "tiny", "--out", str(out), "--personas", str(PERSONAS), *extra]


def openai_args(server: FakeServer) -> list[str]:
    return ["--provider", "openai", "--base-url", server.openai_base_url, "--model", "fake-model"]


def anthropic_args(server: FakeServer) -> list[str]:
    return ["--provider", "anthropic", "--base-url", server.anthropic_base_url]


ANTHROPIC_ENV = {"ANTHROPIC_API_KEY": "sk-ant-test-key"}


def config_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / f"config-{abs(hash(text))}.toml"
    path.write_text(text)
    return path


def outputs(out: Path) -> dict[str, list[str]]:
    """Every output JSONL of every persona, its lines sorted: the comparable content of a dataset."""
    found = {}
    for path in sorted(out.glob("*/*.jsonl")):
        if path.name in FILES:
            found[f"{path.parent.name}/{path.name}"] = sorted(path.read_text(encoding="utf-8").splitlines())
    return found


def manifests(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("*/manifests/*.json"))]


def assert_same_dataset(got: Path, want: Path) -> None:
    mine, theirs = outputs(got), outputs(want)
    assert sorted(mine) == sorted(theirs), "different files"
    assert len(theirs) >= 10, f"the reference run is incomplete: {sorted(theirs)}"
    for name in theirs:
        assert mine[name] == theirs[name], f"{name} differs from the clean run"
# Short timeouts and enough attempts for a run under injected faults to finish in seconds.
FAST = "timeout_s = 1\nmax_attempts = 8\n"
