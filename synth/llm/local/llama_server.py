"""`python -m synth.llm.local.llama_server ARGS…`: llama-cpp-python's OpenAI-compatible server, loaded safely.

It takes exactly `python -m llama_cpp.server`'s arguments. Before the server starts, llama.cpp's model defaults are
set to load without extra buffer types (no AMX weight repacking, which segfaults on Q4_K_M; see synth.llm.local.native)
and the model gets the same one-time crash probe as the in-process `local` provider, so a host where llama.cpp
crashes gets one line and exit code 2 instead of a server that dies on its first request.
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

from synth.core.errors import InputError


def _arg(argv: list[str], name: str) -> str | None:
    for i, token in enumerate(argv):
        if token == name and i + 1 < len(argv):
            return argv[i + 1]
        if token.startswith(name + "="):
            return token.split("=", 1)[1]
    return None


def main(argv: list[str]) -> int:
    from synth.llm.local.native import ensure_model_runs, install_safe_defaults

    model = _arg(argv, "--model") or os.environ.get("MODEL")
    try:
        if model:
            threads = int(_arg(argv, "--n_threads") or os.cpu_count() or 1)
            ensure_model_runs(Path(model), threads)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    install_safe_defaults()
    sys.argv = ["llama_cpp.server", *argv]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
