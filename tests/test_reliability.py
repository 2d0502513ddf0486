"""Reliability (issue 6): provider faults, bad bodies, kill -9, one writer, bad input, budgets and secrets.

Every run goes through the fake HTTP server with the real provider SDKs (or the `fake` provider for input checks);
its answers depend only on the request content, so a run that survives faults must equal a clean run exactly."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from clean_runs import (
    ANTHROPIC_ENV,
    FAST,
    SEED,
    anthropic_args,
    assert_same_dataset,
    config_file,
    manifests,
    openai_args,
    outputs,
    tiny,
)
from handmade import GOOD
from kit import PERSONAS, REPO, invoke, read_jsonl, run_synth, synth_cmd, synth_env

from synth.core.jsonl import Journal
from synth.testing.fake_server import FAULT_KINDS, FakeServer

pytestmark = pytest.mark.slow  # `synth` subprocesses running whole pipelines

SENTINEL = "SENTINEL-d41d8cd98f00b204"
# ------------------------------------------------------------------------------------------------- helpers

def assert_no_duplicates(out: Path) -> None:
    for name, lines in outputs(out).items():
        ids = [json.loads(line)["id"] for line in lines]
        assert len(ids) == len(set(ids)), f"{name}: duplicate ids"


def assert_one_error_line(result, needle: str) -> None:
    text = result.output
    assert "Traceback" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, text
    assert needle in errors[0], f"{needle!r} not in {errors[0]!r}"


def assert_nothing_written(out: Path) -> None:
    assert not out.exists() or not any(out.iterdir()), f"written: {sorted(p.name for p in out.rglob('*'))}"


# ------------------------------------------------------------------------------------ 1. transport faults



@pytest.fixture
def no_vendor_rate_limits(monkeypatch):
    """The fake server is not the vendor's API: drop the model rows' rpm/tpm, else each injected 429 empties the
    claude model's token bucket and halves its rate, and a `tiny` run crawls for minutes (this test is about data,
    not the limiter, which tests/test_limits.py covers)."""
    from synth.config import conf

    original = conf.model_table

    def without_limits() -> dict:
        table = original()
        for row in table.get("models", {}).values():
            row.pop("rpm", None)
            row.pop("tpm", None)
        return table

    monkeypatch.setattr(conf, "model_table", without_limits)


@pytest.mark.slow
@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_transport_faults_change_nothing(wire, tmp_path, request, no_vendor_rate_limits):
    """25% of calls fail with every fault kind (429 ± Retry-After, 500, 502, 503, 529, timeout, drop): same data."""
    clean = request.getfixturevalue(f"clean_{wire}")
    with FakeServer(fault_rate=0.25, faults=FAULT_KINDS, timeout_sleep_s=2.5, seed=SEED) as server:
        args = openai_args(server) if wire == "openai" else anthropic_args(server)
        out = tmp_path / "faulty"
        result = invoke(*tiny(out, *args, "--config", str(config_file(tmp_path, FAST))),
                        env=ANTHROPIC_ENV if wire == "anthropic" else None)
        stats = server.stats()
    assert result.exit_code == 0, result.output
    assert set(stats["by_fault"]) == set(FAULT_KINDS), stats
    assert stats["faults"] >= 0.25 * (stats["requests"] - stats["faults"]), stats
    assert sum(m["retries"] for m in manifests(out)) == stats["faults"]  # each fault cost one retry, nothing more
    assert_same_dataset(out, clean)


def test_persistent_outage_fails_cleanly_and_resumes(clean_openai, tmp_path):
    """Every call a 503 until the attempts run out: one error line, non-zero exit, no traceback; then it resumes."""
    out = tmp_path / "outage"
    config = config_file(tmp_path, "max_attempts = 2\ntimeout_s = 1\n")
    with FakeServer(fault_rate=1.0, faults="503", seed=SEED) as server:
        result = invoke(*tiny(out, *openai_args(server), "--config", str(config)))
    assert result.exit_code not in (0, None) and result.exit_code != 2, result.output
    assert "Traceback" not in result.output and "ExceptionGroup" not in result.output, result.output[-2000:]
    with FakeServer(seed=SEED) as server:
        again = invoke(*tiny(out, *openai_args(server)))
    assert again.exit_code == 0, again.output
    assert_same_dataset(out, clean_openai)


# ---------------------------------------------------------------------------------------- 2. bad bodies

def test_bad_bodies_are_reasked_within_the_repair_budget(tmp_path):
    out = tmp_path / "bad"
    with FakeServer(bad_body_rate=0.15, seed=SEED) as server:
        result = invoke(*tiny(out, *openai_args(server), "--config", str(config_file(tmp_path, "max_repairs = 6\n"))))
        stats = server.stats()
    assert result.exit_code == 0, result.output
    assert stats["bad_bodies"] >= 3, stats
    assert sum(m["repairs"] for m in manifests(out)) >= stats["bad_bodies"]
    assert all(m["failures"] == 0 and m["status"] == "complete" for m in manifests(out))


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_every_bad_body_kind_is_reasked(wire, tmp_path):
    """Each kind alone (truncated, not JSON, schema-invalid, empty, refusal), through both wire formats."""
    for kind in ("truncated", "notjson", "invalid", "empty", "refusal"):
        out = tmp_path / kind
        with FakeServer(bad_body_rate=0.5, bad_bodies=kind, seed=SEED) as server:
            args = openai_args(server) if wire == "openai" else anthropic_args(server)
            result = invoke("persona", "--preset", "tiny", "--out", str(out), "--personas", str(PERSONAS), *args,
                            "--config", str(config_file(tmp_path, "max_repairs = 8\n")),
                            env=ANTHROPIC_ENV if wire == "anthropic" else None)
            stats = server.stats()
        assert result.exit_code == 0, f"{kind}: {result.output}"
        assert stats["by_fault"].get(kind, 0) >= 1, (kind, stats)
        assert sum(m["repairs"] for m in manifests(out)) >= stats["by_fault"][kind], kind


def _upstream(out: Path, server: FakeServer, stages: list[str]) -> None:
    for stage in stages:
        result = invoke(stage, "--preset", "tiny", "--out", str(out), "--personas", str(PERSONAS),
                        *openai_args(server))
        assert result.exit_code == 0, f"{stage}: {result.output}"


def test_beyond_the_repair_budget_items_fail_and_only_they_are_retried(clean_openai, clean_server, tmp_path):
    """With one attempt per request and 5% of the bodies spoiled, some trace units fail: they land in
    failures/traces.jsonl with the reason, the stage exits non-zero with "n failed of m", and the next run asks
    only for what failed (fewer calls than the stage's clean run) and ends with the clean run's records."""
    out = tmp_path / "fail"
    _upstream(out, clean_server, ["persona", "arcs", "phases", "events"])
    persona = next(p.parent for p in out.glob("*/persona.jsonl"))
    before = {p.name: p.read_bytes() for p in (persona / "manifests").glob("*.json")}
    no_repairs = config_file(tmp_path, "max_repairs = 0\n")
    # 5%, not 15%: the traces stage now writes in time-ordered waves (the voice reference), and in that request
    # order seed 7's draws at 15% spoil a call of every unit, leaving nothing that succeeds
    with FakeServer(bad_body_rate=0.05, seed=SEED) as server:
        result = invoke("traces", "--preset", "tiny", "--out", str(out), "--personas", str(PERSONAS),
                        *openai_args(server), "--config", str(no_repairs), "--concurrency", "1")
    assert result.exit_code == 1, result.output
    summary = [line for line in result.output.splitlines() if "failed of" in line]
    assert len(summary) == 1, result.output
    failures = read_jsonl(persona / "failures" / "traces.jsonl")
    failed = int(summary[0].split(" failed of ")[0].rsplit(" ", 1)[-1])
    total = int(summary[0].split(" failed of ")[1].split()[0])
    assert failed == len(failures) and 0 < failed < total  # deterministic: one request at a time, seeded draws
    assert all(f["reason"] and f["unit"] for f in failures)
    assert not (persona / "traces.jsonl").exists()

    with FakeServer(seed=SEED) as server:
        again = invoke(*tiny(out, *openai_args(server)))
        stats = server.stats()
    assert again.exit_code == 0, again.output
    assert {p.name: p.read_bytes() for p in (persona / "manifests").glob("*.json") if p.name in before} == before
    clean_traces = json.loads((next(clean_openai.glob("*/manifests/traces.json"))).read_text())
    retried = json.loads((persona / "manifests" / "traces.json").read_text())
    assert retried["provider_calls"] < clean_traces["provider_calls"], (retried, clean_traces)
    downstream = sum(json.loads(p.read_text())["provider_calls"]
                     for p in (persona / "manifests").glob("*.json") if p.name not in before)
    assert stats["requests"] == downstream
    assert not (persona / "failures" / "traces.jsonl").exists()
    assert_same_dataset(out, clean_openai)


# ---------------------------------------------------------------------------------------------- 3. kill -9

def test_journal_drops_a_half_written_line(tmp_path):
    path = tmp_path / "w.journal.jsonl"
    journal = Journal(path, "sig")
    journal.record("u1", {"events.jsonl": [{"id": "a"}]})
    journal.record("u2", {"events.jsonl": [{"id": "b"}]})
    journal.close()
    with path.open("a") as handle:
        handle.write('{"unit": "u3", "records": {"events.jsonl": [{"id": "c"')  # killed mid-write
    warnings: list[str] = []
    reopened = Journal(path, "sig", warn=warnings.append)
    assert sorted(reopened.done) == ["u1", "u2"]
    assert len(warnings) == 1 and "half-written" in warnings[0]
    reopened.record("u3", {"events.jsonl": [{"id": "c"}]})
    reopened.close()
    assert sorted(Journal(path, "sig", warn=warnings.append).done) == ["u1", "u2", "u3"]
    assert len(warnings) == 1  # the rewrite left no broken line behind
    assert Journal(path, "other-signature").done == {}  # another stage signature starts afresh


def _final_lines_parse(out: Path) -> None:
    """No truncated line in any final file (the journal under .work/ may have one: that is its job)."""
    for path in out.glob("*/*.jsonl"):
        text = path.read_text(encoding="utf-8")
        assert text == "" or text.endswith("\n"), f"{path}: last line cut off"
        for number, line in enumerate(text.splitlines(), 1):
            try:
                json.loads(line)
            except json.JSONDecodeError:
                pytest.fail(f"{path}: line {number} is truncated")


@pytest.mark.slow
def test_kill_nine_at_random_moments_loses_nothing(tmp_path):
    with FakeServer(latency_ms=120, seed=SEED) as server:
        args = tiny(tmp_path / "ref", *openai_args(server), "--concurrency", "1")
        started = time.monotonic()
        ref = run_synth(*args)
        duration = time.monotonic() - started
        assert ref.returncode == 0, ref.stderr[-2000:]
        out = tmp_path / "killed"
        rng = random.Random(20240606)
        kills: list[float] = []  # seconds after start of each kill that landed while the run was working
        for _ in range(10):
            proc = subprocess.Popen(synth_cmd(*tiny(out, *openai_args(server), "--concurrency", "1")), cwd=REPO,
                                    env=synth_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            moment = rng.uniform(0.3, 2.0)
            time.sleep(moment)
            if proc.poll() is not None:
                break  # it finished before this kill: the rest of the work is done
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            kills.append(round(moment, 2))
            _final_lines_parse(out)
        resumed = run_synth(*tiny(out, *openai_args(server), "--concurrency", "1"))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "Traceback" not in resumed.stderr
    assert len(kills) >= 4, f"only {kills} kills landed mid-run (an uninterrupted run took {duration:.1f}s)"
    _final_lines_parse(out)
    assert_no_duplicates(out)
    assert_same_dataset(out, tmp_path / "ref")


# -------------------------------------------------------------------------------------------- 4. one writer

def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


@pytest.mark.slow
def test_second_writer_is_refused_at_once(tmp_path):
    out = tmp_path / "locked"
    with FakeServer(latency_ms=400, seed=SEED) as server:
        first = subprocess.Popen(synth_cmd(*tiny(out, *openai_args(server), "--concurrency", "1")), cwd=REPO,
                                 env=synth_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 20
            while not (out / ".lock").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert (out / ".lock").exists() and first.poll() is None
            started = time.monotonic()
            second = invoke(*tiny(out, "--provider", "fake"))
            waited = time.monotonic() - started
        finally:
            os.kill(first.pid, signal.SIGKILL)
            first.wait()
    assert second.exit_code == 2, second.output
    assert waited < 5
    assert_one_error_line(second, f"another synth run (pid {first.pid})")
    # the killed first writer left its lock behind: a dead owner does not block
    assert (out / ".lock").exists()
    with FakeServer(seed=SEED) as server:
        third = invoke(*tiny(out, *openai_args(server)))
    assert third.exit_code == 0, third.output
    assert not (out / ".lock").exists()


def test_stale_lock_of_a_dead_process_is_taken_over(tmp_path):
    out = tmp_path / "stale"
    out.mkdir()
    (out / ".lock").write_text(json.dumps({"pid": _dead_pid(), "host": socket.gethostname()}))
    result = invoke(*tiny(out, "--provider", "fake"))
    assert "another synth run" not in result.output
    assert result.exit_code == 0, result.output


def test_live_lock_blocks_in_process(tmp_path):
    out = tmp_path / "live"
    out.mkdir()
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        (out / ".lock").write_text(json.dumps({"pid": sleeper.pid, "host": socket.gethostname()}))
        result = invoke(*tiny(out, "--provider", "fake"))
    finally:
        sleeper.kill()
        sleeper.wait()
    assert result.exit_code == 2
    assert_one_error_line(result, "another synth run")
    assert sorted(p.name for p in out.iterdir()) == [".lock"]


# ------------------------------------------------------------------------------------------- 5. bad input

GOOD_PERSONA = GOOD.format(id="p_bad")

PERSONA_CASES = {
    "not-toml": ("id = [\n", "not valid TOML"),
    "empty": ("", "bad.toml"),
    "missing-trait": (GOOD_PERSONA.replace("neuroticism = 0.5\n", ""), "neuroticism"),
    "out-of-range": (GOOD_PERSONA.replace("openness = 0.5", "openness = 1.5"), "openness"),
    "unknown-language": (GOOD_PERSONA.replace('language = "en"', 'language = "fr"'), "language"),
    "end-before-start": (GOOD_PERSONA.replace("years = 1", "end = 2021-06-01"), "end"),
    "unsafe-id": (GOOD_PERSONA.replace('id = "p_bad"', 'id = "../x"'), "id"),
}


@pytest.mark.parametrize("case", sorted(PERSONA_CASES))
def test_bad_persona_file(case, tmp_path):
    text, needle = PERSONA_CASES[case]
    seed = tmp_path / "bad.toml"
    seed.write_text(text)
    out = tmp_path / "out"
    result = invoke("run", "--preset", "tiny", "--provider", "fake", "--out", str(out), "--personas", str(seed))
    assert result.exit_code == 2, result.output
    assert_one_error_line(result, needle)
    assert "bad.toml" in result.output
    assert_nothing_written(out)


@pytest.mark.parametrize("flags, needle", [
    (["--preset", "huge", "--provider", "fake"], "--preset"),
    (["--preset", "tiny", "--provider", "nope"], "--provider"),
    (["--preset", "tiny", "--provider", "openai", "--model", "no-such-model"], "--model"),
    (["--preset", "tiny", "--provider", "anthropic", "--model", "gpt-4o-mini"], "--model"),
    (["--preset", "tiny", "--provider", "anthropic"], "ANTHROPIC_API_KEY"),
    (["--preset", "tiny", "--provider", "openai"], "OPENAI_API_KEY"),
])
def test_bad_flags(flags, needle, tmp_path):
    out = tmp_path / "out"
    result = invoke("run", "--out", str(out), "--personas", str(PERSONAS), *flags)
    assert result.exit_code == 2, result.output
    assert_one_error_line(result, needle)
    assert_nothing_written(out)


def test_missing_upstream_stage(tmp_path):
    out = tmp_path / "empty"
    result = invoke("traces", "--preset", "tiny", "--provider", "fake", "--out", str(out), "--personas", str(PERSONAS))
    assert result.exit_code == 2, result.output
    assert_one_error_line(result, "run `synth")
    assert "events.jsonl" in result.output or "persona.jsonl" in result.output
    assert not list(out.glob("*/*.jsonl")), "a stage wrote output although its input is missing"


def test_missing_upstream_stage_writes_nothing(tmp_path):
    out = tmp_path / "empty"
    result = invoke("traces", "--preset", "tiny", "--provider", "fake", "--out", str(out), "--personas", str(PERSONAS))
    assert result.exit_code == 2, result.output
    assert_nothing_written(out)


def _copy(dataset: Path, to: Path) -> tuple[Path, Path]:
    shutil.copytree(dataset, to, ignore=shutil.ignore_patterns(".lock"))
    return to, next(p.parent for p in to.glob("*/persona.jsonl"))


def _state(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*")
            if p.is_file() and p.name not in ("cache.sqlite", "dataset.json")}


def test_hand_edited_jsonl_with_a_broken_line(tiny_dataset, tmp_path):
    out, persona = _copy(tiny_dataset, tmp_path / "edited")
    lines = (persona / "events.jsonl").read_text().splitlines()
    lines[1] = lines[1][:40]
    (persona / "events.jsonl").write_text("\n".join(lines) + "\n")
    before = _state(out)
    result = invoke("traces", "--preset", "tiny", "--provider", "fake", "--out", str(out), "--personas", str(PERSONAS))
    assert result.exit_code == 2, result.output
    assert_one_error_line(result, "events.jsonl: line 2")
    assert _state(out) == before


def test_hand_edited_jsonl_with_a_dangling_id(tiny_dataset, tmp_path):
    out, persona = _copy(tiny_dataset, tmp_path / "dangling")
    events = read_jsonl(persona / "events.jsonl")
    events[0]["phase_id"] = "no-such-phase"
    (persona / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    before = _state(out)
    result = invoke("traces", "--preset", "tiny", "--provider", "fake", "--out", str(out), "--personas", str(PERSONAS))
    assert result.exit_code == 2, result.output
    assert_one_error_line(result, "no-such-phase")
    assert _state(out) == before


def _prompts_copy(tmp_path: Path, edit) -> Path:
    from synth.config.prompts import prompts_dir
    from synth.stages import STAGES

    copy = tmp_path / "prompts"
    shutil.copytree(prompts_dir(), copy)
    first = STAGES["persona"].templates[0]
    path = copy / first
    path.write_text(edit(path.read_text()))
    return copy


@pytest.mark.parametrize("edit, needle", [
    (lambda text: text + "\n{% if language %}unclosed\n", "template syntax error"),
    (lambda text: text.replace("=== TASK ===", "=== TASK ===\n{{ no_such_variable }}", 1)
     if "=== TASK ===" in text else text + "\n{{ no_such_variable }}\n", "no_such_variable"),
])
def test_broken_prompt_template(edit, needle, tmp_path):
    prompts = _prompts_copy(tmp_path, edit)
    out = tmp_path / "out"
    result = invoke(*tiny(out, "--provider", "fake"), env={"SYNTH_PROMPTS_DIR": str(prompts)})
    assert result.exit_code == 2, result.output
    assert_one_error_line(result, needle)
    assert "persona_enrich.j2" in result.output or "prompts/" in result.output
    assert not list(out.glob("*/*.jsonl"))


# ------------------------------------------------------------------------------------------------ 6. budget

def _tokens(out: Path) -> int:
    return sum(m["input_tokens"] + m["output_tokens"] for m in manifests(out))


def _cost(out: Path) -> float:
    return sum(m["cost_usd"] for m in manifests(out))


def test_max_tokens_stops_before_exceeding_and_resumes(clean_openai, tmp_path):
    limit = _tokens(clean_openai) // 2
    out = tmp_path / "tokens"
    with FakeServer(seed=SEED) as server:
        stopped = invoke(*tiny(out, *openai_args(server), "--max-tokens", str(limit)))
        assert stopped.exit_code == 3, stopped.output
        assert "stopped by the budget after" in stopped.output
        assert 0 < _tokens(out) <= limit
        resumed = invoke(*tiny(out, *openai_args(server)))
    assert resumed.exit_code == 0, resumed.output
    assert_same_dataset(out, clean_openai)


def test_budget_usd_stops_before_exceeding_and_resumes(clean_openai, tmp_path):
    """A priced model (gpt-4o-mini's price row) reached through OPENAI_BASE_URL at the fake server."""
    with FakeServer(seed=SEED) as server:
        env = {"OPENAI_BASE_URL": server.openai_base_url}
        priced = tmp_path / "priced"
        full = invoke(*tiny(priced, "--provider", "openai", "--model", "gpt-4o-mini"), env=env)
        assert full.exit_code == 0, full.output
        cost = _cost(priced)
        assert cost > 0
        out = tmp_path / "usd"
        stopped = invoke(*tiny(out, "--provider", "openai", "--model", "gpt-4o-mini", "--budget-usd",
                               f"{cost / 2:.6f}"), env=env)
        assert stopped.exit_code == 3, stopped.output
        assert "stopped by the budget after" in stopped.output
        assert 0 < _cost(out) <= cost / 2
        resumed = invoke(*tiny(out, "--provider", "openai", "--model", "gpt-4o-mini", "--budget-usd",
                               f"{cost * 3:.6f}"), env=env)
    assert resumed.exit_code == 0, resumed.output
    assert_same_dataset(out, priced)
    assert_same_dataset(out, clean_openai)


# ----------------------------------------------------------------------------------------------- 7. secrets

def _scan(out: Path, *texts: str) -> list[str]:
    leaks = [str(p) for p in out.rglob("*") if p.is_file() and SENTINEL.encode() in p.read_bytes()]
    return leaks + [f"output {i}" for i, t in enumerate(texts) if SENTINEL in t]


def test_keys_never_reach_files_or_messages(tmp_path):
    anthropic_key, openai_key = f"sk-ant-{SENTINEL}", f"sk-{SENTINEL}"
    env = synth_env(ANTHROPIC_API_KEY=anthropic_key, OPENAI_API_KEY=openai_key)
    with FakeServer(seed=SEED) as server:
        good = run_synth(*tiny(tmp_path / "a", *anthropic_args(server)), env=env)
        assert good.returncode == 0, good.stderr[-2000:]
        texts = [good.stdout, good.stderr]
        good_openai = run_synth(*tiny(tmp_path / "o", "--provider", "openai", "--base-url", server.openai_base_url,
                                      "--model", "fake-model"), env=env)
        assert good_openai.returncode == 0, good_openai.stderr[-2000:]
        texts += [good_openai.stdout, good_openai.stderr]
        status = run_synth("status", "--out", str(tmp_path / "a"), "--personas", str(PERSONAS), env=env)
        texts += [status.stdout, status.stderr]
    with FakeServer(fault_rate=1.0, faults="500", seed=SEED) as broken:  # errors on every call: the error path
        config = config_file(tmp_path, "max_attempts = 2\ntimeout_s = 1\n")
        bad = run_synth(*tiny(tmp_path / "b", *anthropic_args(broken), "--config", str(config)), env=env)
        assert bad.returncode != 0
        texts += [bad.stdout, bad.stderr]
    assert (tmp_path / "a" / "cache.sqlite").is_file()
    assert _scan(tmp_path, *texts) == []
