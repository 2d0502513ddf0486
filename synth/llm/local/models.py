"""The llama.cpp models a process has loaded: one per GGUF path and context size, each with its own worker thread."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synth.core.errors import InputError
from synth.llm.local.log import LLAMA_LOG
from synth.llm.local.sampler import llama_class


@dataclass
class LoadedModel:
    llm: Any
    path: Path
    n_ctx: int
    executor: ThreadPoolExecutor  # one thread: llama.cpp is not re-entrant, so a model's calls run one at a time
    lock: threading.Lock = field(default_factory=threading.Lock)
    formatter: Any = None  # a Jinja2ChatFormatter when the GGUF carries a chat template
    grammars: dict[str, Any] = field(default_factory=dict)
    load_s: float = 0.0


class ModelRegistry:
    """Loaded models by (path, n_ctx): a model is loaded once and shared by every provider given this registry.
    Providers use `DEFAULT_REGISTRY` (one load per process) unless handed another, as a test may."""

    def __init__(self) -> None:
        self._models: dict[tuple[str, int], LoadedModel] = {}
        self._lock = threading.Lock()

    def load(self, path: Path, n_ctx: int, n_threads: int) -> LoadedModel:
        """The model at `path` with an `n_ctx` context, loaded now if this registry has not loaded it yet; blocking."""
        key = (str(path), n_ctx)
        with self._lock:
            if key not in self._models:
                self._models[key] = _load(path, n_ctx, n_threads)
            return self._models[key]


DEFAULT_REGISTRY = ModelRegistry()


def _load(path: Path, n_ctx: int, n_threads: int) -> LoadedModel:
    try:
        import llama_cpp
    except ImportError as exc:
        raise InputError(f"--provider local needs the local extra: pip install -e '.[local]' ({exc})") from None
    LLAMA_LOG.capture(llama_cpp)
    from synth.llm.local.native import install_safe_defaults

    install_safe_defaults()  # no AMX weight repacking: it segfaults on Q4_K_M (see synth.llm.local.native)
    started = time.perf_counter()
    LLAMA_LOG.clear()
    try:
        llm = llama_class(llama_cpp)(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_threads_batch=n_threads,
            verbose=False,
        )
    except (ValueError, RuntimeError, OSError) as exc:
        detail = " ".join(line.strip() for line in LLAMA_LOG.last(3) if line.strip()) or str(exc)
        raise InputError(f"--model: {path}: llama.cpp cannot load this file as a GGUF model ({detail})") from None
    loaded = LoadedModel(
        llm=llm,
        path=path,
        n_ctx=n_ctx,
        executor=ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"llama-{path.stem}"),
        load_s=time.perf_counter() - started,
    )
    template = llm.metadata.get("tokenizer.chat_template")
    if template:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        def token_text(token_id: int) -> str:
            return llm._model.token_get_text(token_id) if token_id != -1 else ""

        try:
            loaded.formatter = Jinja2ChatFormatter(
                template=template, eos_token=token_text(llm.token_eos()), bos_token=token_text(llm.token_bos())
            )
        except Exception:  # a template jinja cannot parse: use the neutral format
            loaded.formatter = None
    return loaded
