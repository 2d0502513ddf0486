"""llama.cpp on any x86-64 CPU: models load without extra buffer types (no AMX repacking, which segfaults on
Q4_K_M), and a native crash in the one-time probe is one line with exit code 2, nothing written.

The checks do not depend on the CPU they run on: the load setting is read back from the loaded model and from
llama.cpp's own load log (no weights in a *_REPACK or AMX buffer), and the crash is simulated in the child."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from kit import PERSONAS, REPO, run_synth, synth_env

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (the optional extra: pip install -e '.[local]')")

from synth.core.errors import InputError  # noqa: E402
from synth.llm.local import native  # noqa: E402
from synth.llm.local.provider import LocalProvider, resolve_model_path  # noqa: E402

pytestmark = pytest.mark.local


@pytest.fixture(scope="module")
def model_path() -> Path:
    return resolve_model_path("gemma3-270m")


def test_the_local_provider_loads_without_extra_buffer_types(model_path, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SYNTH_PROBE_DIR", str(tmp_path / "probes"))
    provider = LocalProvider("gemma3-270m", n_ctx=512)
    loaded = provider.load()
    assert loaded.llm.model_params.use_extra_bufts is False
    assert native.safe_defaults_active()


def test_llama_cpp_log_shows_no_weights_in_an_extra_buffer(model_path) -> None:
    """A fresh process loading the model as synth does: llama.cpp logs every buffer it puts weights in."""
    code = (
        "import sys, llama_cpp; from synth.llm.local.native import install_safe_defaults; install_safe_defaults(); "
        f"llama_cpp.Llama(model_path={str(model_path)!r}, n_ctx=256, verbose=True)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    buffers = [line for line in result.stderr.splitlines() if "model buffer size" in line]
    assert buffers, result.stderr[-2000:]  # the log names where the weights went
    assert not [line for line in buffers if "REPACK" in line or "AMX" in line], buffers


def test_the_probe_runs_once_and_is_remembered(model_path, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SYNTH_PROBE_DIR", str(tmp_path / "probes"))
    native.ensure_model_runs(model_path, 2)
    markers = list((tmp_path / "probes").glob("*.ok"))
    assert len(markers) == 1 and '"ok": true' in markers[0].read_text()

    def no_child(*args, **kwargs):
        raise AssertionError("the probe ran again")

    monkeypatch.setattr(native.subprocess, "run", no_child)
    native.ensure_model_runs(model_path, 2)  # remembered: no child process


def test_a_crash_in_the_probe_is_one_line_naming_model_signal_cause_and_remedy(model_path, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SYNTH_PROBE_DIR", str(tmp_path / "probes"))
    monkeypatch.setenv("SYNTH_PROBE_SIMULATE_SIGNAL", "SIGSEGV")
    with pytest.raises(InputError) as caught:
        native.ensure_model_runs(model_path, 2)
    message = str(caught.value)
    assert str(model_path) in message and "SIGSEGV" in message and "AMX" in message
    assert "make install-local-portable" in message
    assert not list((tmp_path / "probes").glob("*.ok"))  # a crash is not remembered as a pass


def test_synth_run_with_a_crashing_model_exits_2_with_one_line_and_writes_nothing(tmp_path) -> None:
    out = tmp_path / "out"
    env = synth_env(SYNTH_PROBE_DIR=str(tmp_path / "probes"), SYNTH_PROBE_SIMULATE_SIGNAL="SIGSEGV")
    result = run_synth("run", "--preset", "tiny", "--provider", "local", "--out", str(out), "--personas",
                       str(PERSONAS), env=env)
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "crashed with SIGSEGV" in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_the_server_launcher_refuses_a_crashing_model_with_one_line(model_path, tmp_path) -> None:
    env = {**os.environ, "SYNTH_PROBE_DIR": str(tmp_path / "probes"), "SYNTH_PROBE_SIMULATE_SIGNAL": "SIGABRT"}
    result = subprocess.run([sys.executable, "-m", "synth.llm.local.llama_server", "--model", str(model_path),
                             "--port", "1"], capture_output=True, text=True, timeout=120, env=env, cwd=REPO)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "crashed with SIGABRT" in lines[0], result.stderr
