"""The `local` provider: llama.cpp in this process (llama-cpp-python) on a GGUF file.

Every answer is decoded under a GBNF grammar compiled from the request's JSON schema, so even a tiny base model
returns JSON of the right shape: the keys, enums, integer bounds, list lengths and dates of the schema. The model
is loaded once per process and path, and calls to one model run one at a time on its own worker thread
(llama.cpp is not re-entrant), so the event loop stays free while it computes.

The default model, `gemma3-270m`, ships as a pip package that assembles its GGUF into a cache directory on first
use; it is small and weak (smoke-quality text).

Beside it: local_gguf (which GGUF file a model name means), local_models (the loaded-model registry),
local_sampler (the grammar-checked sampler) and local_log (llama.cpp's log tail).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import warnings
from typing import Any

from synth.core.errors import InputError
from synth.llm.base import FatalProviderError, LLMRequest, ProviderResponse, Usage
from synth.llm.gbnf import int_range_rule, schema_to_gbnf  # noqa: F401  (re-exported for callers and tests)
from synth.llm.local.gguf import (
    DEFAULT_ALIAS,
    _assemble_package,  # noqa: F401  (tests reach it as local._assemble_package)
    resolve_model_path,
)
from synth.llm.local.log import LLAMA_LOG
from synth.llm.local.models import DEFAULT_REGISTRY, LoadedModel, ModelRegistry
from synth.llm.local.sampler import GrammarCheckedSampler as _GrammarCheckedSampler  # noqa: F401  (as tests know it)

DEFAULT_N_CTX = 8192
REPEAT_PENALTY = 1.1  # without it the 270M model loops inside long strings until max_tokens cuts the JSON
DEFAULT_MODEL_WARNING = (
    "the default local model (Gemma 3 270M) makes smoke-quality text; point --model at a real instruct GGUF, "
    "or use --provider openai --base-url …, or set ANTHROPIC_API_KEY / OPENAI_API_KEY"
)


class LocalModelWarning(UserWarning):
    """Emitted when the default (smoke-quality) local model is used."""


def neutral_prompt(messages: list[dict[str, str]]) -> str:
    """A plain, template-free prompt for base models (and GGUFs without a chat template)."""
    heads = {"system": "### Instructions", "user": "### Request", "assistant": "### Answer (JSON)"}
    parts = [f"{heads.get(m['role'], '### ' + m['role'].title())}\n{m['content'].strip()}\n" for m in messages]
    parts.append(heads["assistant"] + "\n")
    return "\n".join(parts)


def _render(loaded: LoadedModel, messages: list[dict[str, str]]) -> tuple[list[int], list[str]]:
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


def _grammar(loaded: LoadedModel, schema: dict, max_string_chars: int | None) -> Any:
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
                detail = " ".join(line.strip() for line in LLAMA_LOG.last(2))
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
    $SYNTH_LOCAL_N_THREADS, else the CPU count. The model loads on the first call (or `load()`), once per registry
    (the process's `DEFAULT_REGISTRY` unless one is given) and path (and n_ctx)."""

    name = "local"
    key_env = None
    in_process = True  # no transport timeout (synth.llm.client): calls queue for the model, bounded by max_tokens

    def __init__(self, model: str, n_ctx: int | None = None, n_threads: int | None = None,
                 registry: ModelRegistry | None = None) -> None:
        self.model = model
        self.registry = registry or DEFAULT_REGISTRY
        self.path = resolve_model_path(model)
        self.n_ctx = n_ctx or _env_int("SYNTH_LOCAL_N_CTX") or DEFAULT_N_CTX
        self.n_threads = n_threads or _env_int("SYNTH_LOCAL_N_THREADS") or os.cpu_count() or 1
        self.max_string_chars = _env_int("SYNTH_LOCAL_MAX_STRING_CHARS")
        try:
            import llama_cpp  # noqa: F401
        except ImportError as exc:
            raise InputError(f"--provider local needs the local extra: pip install -e '.[local]' ({exc})") from None
        from synth.llm.local.native import ensure_model_runs

        ensure_model_runs(self.path, self.n_threads)  # a native crash is one line here, before anything is written
        if model == DEFAULT_ALIAS:
            # Python's default filter shows it once per calling line, so once per process through provider_factory
            warnings.warn(DEFAULT_MODEL_WARNING, LocalModelWarning, stacklevel=2)

    def load(self) -> LoadedModel:
        """Load (or fetch the already loaded) model from the registry; blocking."""
        return self.registry.load(self.path, self.n_ctx, self.n_threads)

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
