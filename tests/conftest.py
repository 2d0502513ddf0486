"""Shared fixtures: the fake HTTP server, a hand-built valid dataset, and one `tiny` fake-provider run per session
(helpers to import live in kit.py and handmade.py, never here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from clean_runs import ANTHROPIC_ENV, SEED, anthropic_args, openai_args, tiny
from handmade import build_dataset
from kit import PERSONAS, invoke, run_synth

from synth.testing.fake_server import FakeServer


def pytest_collection_modifyitems(items) -> None:
    """A test that uses the session's `synth run` (tiny_dataset, directly or through another fixture) is an
    end-to-end test: marked slow, so `make test-unit` (-m 'not local and not slow') leaves it to `make test`."""
    for item in items:
        if "tiny_dataset" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def fake_server():
    """A clean fake server (no faults) for one test; build your own FakeServer(...) for fault injection."""
    with FakeServer() as server:
        yield server


TINY_SEEDS = range(4, 16)  # the fake seeds tried in turn for a tiny run that keeps an item


@pytest.fixture(scope="session")
def tiny_dataset(tmp_path_factory) -> Path:
    """One `synth run --preset tiny --provider fake` for the whole session; treat it as read-only (copy to edit).
    The fake's random judges keep about a third of tiny's one or two items, and every prompt edit reshuffles its
    answers: the tests downstream need a kept item (to click, export and compare), so the first of TINY_SEEDS whose
    run keeps one is used. Twelve misses in a row mean the filters reject everything, which is a bug to look at."""
    return tiny_run_with_item(tmp_path_factory.mktemp("tiny"), TINY_SEEDS)


def tiny_run_with_item(root: Path, seeds, *args: str, files: tuple[str, ...] = ("final.jsonl",)) -> Path:
    """The first of `seeds` whose `synth run --preset tiny --provider fake` (with `args`) wrote an item to one of
    `files` of a persona: its output directory under `root`."""
    for seed in seeds:
        out = root / f"seed{seed}" / "data"
        result = run_synth("run", "--preset", "tiny", "--provider", "fake", "--out", str(out), "--personas",
                           str(PERSONAS), *args, "--seed", str(seed))
        assert result.returncode == 0, f"tiny fake run failed ({result.returncode}):\n{result.stderr[-3000:]}"
        if any(p.read_text().strip() for name in files for p in out.glob(f"*/{name}")):
            return out
    raise AssertionError(f"no tiny fake run with a seed in {list(seeds)} wrote an item to {files}")


@pytest.fixture
def handmade_dataset(tmp_path) -> Path:
    return build_dataset(tmp_path / "hand")


# One clean `tiny` run per wire against a server of the shared seed: a faulty run must give the same dataset.
@pytest.fixture(scope="module")
def clean_server():
    with FakeServer(seed=SEED) as server:
        yield server


@pytest.fixture(scope="module")
def clean_openai(clean_server, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("clean-openai") / "data"
    result = invoke(*tiny(out, *openai_args(clean_server)))
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def clean_anthropic(clean_server, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("clean-anthropic") / "data"
    result = invoke(*tiny(out, *anthropic_args(clean_server)), env=ANTHROPIC_ENV)
    assert result.exit_code == 0, result.output
    return out
