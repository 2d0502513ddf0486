"""The fake provider: a deterministic, schema-driven test double that proves plumbing, never model quality."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import random
from typing import Any

from synth.core.tokens import _CJK, estimate_tokens
from synth.llm.base import LLMRequest, ProviderResponse, Usage

_WORDS_EN = [
    "morning", "walk", "coffee", "office", "project", "deadline", "sister", "letter", "rain", "train", "market",
    "garden", "friend", "dinner", "phone", "call", "budget", "plan", "doubt", "hope", "worry", "trip", "river",
    "book", "class", "meeting", "promise", "apology", "window", "kitchen", "bicycle", "photo", "weekend", "evening",
    "report", "interview", "doctor", "music", "song", "park", "bench", "ticket", "recipe", "neighbour", "storm",
    "summer", "winter", "lamp", "notebook",
]
_WORDS_ZH = list("早晨散步咖啡办公室项目截止姐姐信雨火车市场花园朋友晚饭电话预算计划怀疑希望担心旅行河书课会议")


def _resolve(schema: dict, root: dict) -> dict:
    while "$ref" in schema:
        ref = schema["$ref"]
        node: Any = root
        for part in ref.lstrip("#/").split("/"):
            node = node[part]
        schema = {**node, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def content_words_from_env() -> int:
    """SYNTH_FAKE_CONTENT_WORDS=N makes `content` fields N words long: realistic trace sizes for memory benchmarks
    (read once, when a fake provider or server is made)."""
    try:
        return int(os.environ.get("SYNTH_FAKE_CONTENT_WORDS", "0"))
    except ValueError:
        return 0


def _text(rng: random.Random, name: str, min_len: int, max_len: int | None, zh: bool, content_words: int = 0,
          keep: tuple[str, ...] = ()) -> str:
    words = _WORDS_ZH if zh else _WORDS_EN
    long = content_words if name == "content" else 0
    n = rng.randint(long, long + long // 4) if long else rng.randint(4, 12)
    sep = "" if zh else " "
    body = sep.join(rng.choice(words) for _ in range(n))
    out = f"{name}: {body}" if name else body
    if keep:  # the names the request says a valid answer keeps, first (a length cap cuts the random tail)
        out = sep.join([*keep, out]) if zh else " ".join([*keep, out])
    while len(out) < min_len:
        out += sep + rng.choice(words)
    if max_len is not None:
        out = out[:max_len]
    return out


def instance(schema: dict, rng: random.Random, root: dict | None = None, name: str = "", zh: bool = False,
             words: int = 0, keep: tuple[str, ...] = ()) -> Any:
    """Build a value valid against `schema` (the subset pydantic emits: refs, enums, bounds, formats)."""
    root = root if root is not None else schema
    schema = _resolve(schema, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [o for o in schema[key] if _resolve(o, root).get("type") != "null"] or schema[key]
            return instance(rng.choice(options), rng, root, name, zh, words, keep)
    if "allOf" in schema:
        merged: dict = {}
        for part in schema["allOf"]:
            merged.update(_resolve(part, root))
        return instance(merged, rng, root, name, zh, words, keep)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {k: instance(v, rng, root, k, zh, words, keep) for k, v in props.items()}
    if kind == "array":
        return _array(schema, rng, root, name, zh, words, keep)
    return _scalar(kind, schema, rng, name, zh, words, keep)


def _array(schema: dict, rng: random.Random, root: dict, name: str, zh: bool, words: int,
           keep: tuple[str, ...] = ()) -> list:
    lo = schema.get("minItems", 1)
    hi = schema.get("maxItems", max(lo, 3))
    count = rng.randint(lo, max(lo, min(hi, lo + 3)))
    items = schema.get("items", {"type": "string"})
    values = [instance(items, rng, root, name, zh, words, keep) for _ in range(count)]
    if schema.get("uniqueItems"):
        unique = []
        for v in values:
            if v not in unique:
                unique.append(v)
        values = unique
    return values


def _scalar(kind: str | None, schema: dict, rng: random.Random, name: str, zh: bool, words: int,
            keep: tuple[str, ...] = ()) -> Any:
    if kind == "integer":
        lo = schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1 if "exclusiveMinimum" in schema else 0)
        hi = schema.get("maximum", schema.get("exclusiveMaximum", lo + 101) - 1 if "exclusiveMaximum" in schema else lo + 100)
        return rng.randint(int(lo), int(max(lo, hi)))
    if kind == "number":
        lo = float(schema.get("minimum", 0.0))
        hi = float(schema.get("maximum", lo + 1.0))
        return round(rng.uniform(lo, hi), 3)
    if kind == "boolean":
        return rng.random() < 0.75
    if kind == "null":
        return None
    fmt = schema.get("format")
    if fmt == "date":
        return (dt.date(2022, 1, 1) + dt.timedelta(days=rng.randint(0, 700))).isoformat()
    if fmt == "date-time":
        return (dt.datetime(2022, 1, 1, 9) + dt.timedelta(hours=rng.randint(0, 16000))).isoformat()
    return _text(rng, name, schema.get("minLength", 0), schema.get("maxLength"), zh, words, keep)


def seeded_rng(*parts: Any) -> random.Random:
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def respond(schema: dict | None, messages: list[dict], seed: int = 0, sample: int = 0,
            content_words: int | None = None, keep: tuple[str, ...] = ()) -> str:
    """The fake answer to a request as JSON text; the same request, seed and sample give the same answer.
    `content_words` sizes `content` fields (None: $SYNTH_FAKE_CONTENT_WORDS); every text field starts with the
    strings of `keep` (the request's names a valid answer keeps), so the code's model-free checks pass."""
    words = content_words_from_env() if content_words is None else content_words
    if not schema:
        return json.dumps({"answer": "fake"})
    # A prompt with a system prefix answers in the language the prefix asks for (every zh template's prefix asks for
    # 简体中文): a translation into English quotes Chinese in its task and names, but asks for English.
    if len(messages) > 1 and messages[0].get("role") == "system":
        zh = "简体中文" in str(messages[0].get("content", ""))
    else:
        text = " ".join(str(m.get("content", "")) for m in messages)
        zh = not text.isascii() and len(_CJK.findall(text)) > 20
    rng = seeded_rng(schema, messages, seed, sample)
    return json.dumps(instance(schema, rng, zh=zh, words=words, keep=keep), ensure_ascii=False)


class FakeProvider:
    """In-process fake: `fake` in manifests; its answers come from the request's schema and a seed."""

    name = "fake"
    key_env: str | None = None

    def __init__(self, seed: int = 0, content_words: int | None = None, **_: Any) -> None:
        self.seed = seed
        # words of a `content` field (realistic trace sizes); the dry run sets it on its own provider
        self.content_words = content_words_from_env() if content_words is None else content_words
        self.script: list[str] = []  # queued raw replies, consumed first (scripted tests)
        self.seen: list[LLMRequest] = []

    async def complete(self, request: LLMRequest, model: str) -> ProviderResponse:
        self.seen.append(request)
        if self.script:
            text = self.script.pop(0)
        else:
            text = respond(request.json_schema, request.messages, self.seed, request.sample, self.content_words,
                           request.keep)
        prompt = " ".join(m["content"] for m in request.messages)
        return ProviderResponse(text=text, usage=Usage(input_tokens=estimate_tokens(prompt), output_tokens=estimate_tokens(text)))
