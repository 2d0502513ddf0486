"""Guards around llama.cpp's native code: a load setting that is safe on every x86-64 CPU, and a crash probe.

llama.cpp repacks weights into "extra buffer types" at load time; on Intel CPUs with AMX (Sapphire Rapids and
later, most cloud Xeons) its AMX buffer crashes on Q4_K_M models (upstream llama.cpp issue #20824): `decode`
segfaults on the first request, in-process and in `llama_cpp.server` alike. Loading with the model parameter
`use_extra_bufts = false` avoids that path on every CPU; `install_safe_defaults()` makes every `llama_cpp.Llama`
of this process load that way (ours and the server's). `SYNTH_LLAMA_EXTRA_BUFTS=1` turns repacking back on.

A crash in native code kills the process with a signal and no Python error. So before a model file is first used
(per file and llama.cpp build, remembered in a marker), `ensure_model_runs` makes one tiny generation in a child
process; if the child dies, the run stops with one line naming the model, the signal, the likely cause and the
remedy (exit code 2), before anything is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from synth.core.errors import InputError

PROBE_TIMEOUT_S = 600
_installed = False


def extra_bufts_enabled() -> bool:
    return os.environ.get("SYNTH_LLAMA_EXTRA_BUFTS", "") in ("1", "true", "yes")


def install_safe_defaults() -> bool:
    """Make llama_cpp's model defaults load without extra buffer types (no AMX repacking). Idempotent; returns
    whether the bindings have the field (older ones predate AMX support and need nothing)."""
    global _installed
    import llama_cpp
    import llama_cpp.llama_cpp as low

    if not any(name == "use_extra_bufts" for name, *_ in low.llama_model_params._fields_):
        return False
    if _installed or extra_bufts_enabled():
        return True
    original = low.llama_model_default_params

    def safe_default_params() -> Any:
        params = original()
        params.use_extra_bufts = False
        return params

    safe_default_params.synth_safe = True  # type: ignore[attr-defined]
    low.llama_model_default_params = safe_default_params  # what llama_cpp.Llama calls when it loads a model
    llama_cpp.llama_model_default_params = safe_default_params
    _installed = True
    return True


def safe_defaults_active() -> bool:
    """True when a model loaded now in this process gets `use_extra_bufts = false`."""
    import llama_cpp.llama_cpp as low

    return bool(low.llama_model_default_params().use_extra_bufts) is False


# ------------------------------------------------------------------------------------------ the crash probe

def _build_id() -> str:
    """The llama.cpp build: the bindings' version and the shared libraries' sizes and times."""
    import llama_cpp

    lib = Path(llama_cpp.__file__).parent / "lib"
    parts = [getattr(llama_cpp, "__version__", "?")]
    for path in sorted(lib.glob("*.so*")) + sorted(lib.glob("*.dylib")) + sorted(lib.glob("*.dll")):
        stat = path.stat()
        parts.append(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}")
    return "|".join(parts)


def _marker(path: Path) -> Path:
    stat = path.stat()
    key = json.dumps([str(path), stat.st_size, stat.st_mtime_ns, _build_id(), extra_bufts_enabled()])
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    root = os.environ.get("SYNTH_PROBE_DIR") or os.path.join(
        os.environ.get("SYNTH_LOCAL_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "synth"), "probes")
    return Path(root) / f"{path.stem}-{digest}.ok"


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def ensure_model_runs(path: Path, n_threads: int) -> None:
    """One tiny generation in a child process, once per model file and llama.cpp build; a crash is an InputError."""
    marker = _marker(path)
    if marker.is_file():
        return
    with path.open("rb") as handle:
        if handle.read(4) != b"GGUF":  # not worth a child process: llama.cpp would refuse it at load
            raise InputError(f"--model: {path}: llama.cpp cannot load this file as a GGUF model (no GGUF header)")
    cmd = [sys.executable, "-m", "synth.llm.local.native", str(path), str(n_threads)]
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                                stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise InputError(f"--model {path}: a 4-token test generation did not finish in {PROBE_TIMEOUT_S}s "
                         "(llama.cpp hangs on this host)") from None
    if result.returncode < 0:
        raise InputError(
            f"--model {path}: llama.cpp crashed with {_signal_name(result.returncode)} in a test generation "
            "(likely cause: its CPU backend on this processor, e.g. AMX weight repacking on Intel Xeons, llama.cpp "
            "issue #20824); remedy: `make install-local-portable` (llama-cpp-python rebuilt without AMX), or "
            "--provider openai --base-url URL / an API key")
    if result.returncode != 0:
        last = next((line for line in reversed(result.stderr.splitlines()) if line.strip()), "no message")
        raise InputError(f"--model {path}: llama.cpp failed a test generation (exit {result.returncode}: {last})")
    marker.parent.mkdir(parents=True, exist_ok=True)
    tmp = marker.with_name(f"{marker.name}.{os.getpid()}.part")
    tmp.write_text(result.stdout.strip() + "\n")
    os.replace(tmp, marker)


def _probe(path: str, n_threads: int) -> None:
    """The child: load with the safe setting and generate four tokens."""
    simulate = os.environ.get("SYNTH_PROBE_SIMULATE_SIGNAL")  # tests: simulate a native crash
    if simulate:
        os.kill(os.getpid(), getattr(signal, simulate))
    import llama_cpp

    install_safe_defaults()
    llm = llama_cpp.Llama(model_path=path, n_ctx=256, n_threads=n_threads, n_threads_batch=n_threads, verbose=False)
    out = llm.create_completion("1, 2, 3,", max_tokens=4, temperature=0.0)
    print(json.dumps({"ok": True, "text": out["choices"][0]["text"], "safe": safe_defaults_active()}))


if __name__ == "__main__":
    _probe(sys.argv[1], int(sys.argv[2]))
