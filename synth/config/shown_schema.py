"""The JSON schema as a non-English prompt shows it: no English annotations, enum codes as native labels, mapped back.

A model writing in Chinese sees the answer schema too (as the response format, or pasted into the prompt). Its
`title`s and `description`s are English prose for developers and its enum codes (`fact`, `wechat_chat`) are data
ids, so for a language with a label table (synth/config/labels.toml) the schema loses the annotations, its
`$ref`s are inlined (a definition's name is an English word too), and every enum code with a native label is
offered as that label; `decode` maps the labels of an answer back to the codes, so the data keeps its ids.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from synth.config.prompts import labels

# schema keys whose value is a map of names to schemas (the names are field names: kept)
_NAMED = ("properties", "patternProperties", "$defs", "definitions")
_ONE = ("items", "additionalProperties", "not", "contains")
_MANY = ("anyOf", "allOf", "oneOf", "prefixItems")
_ANNOTATIONS = ("title", "description", "examples")
# groups of labels.toml that are not enum codes
_NOT_CODES = ("pronoun",)


@lru_cache(maxsize=8)
def code_labels(language: str) -> dict[str, str]:
    """Every enum code the label table names in `language` → its native label (empty for English)."""
    out: dict[str, str] = {}
    for group, entries in labels().get(language, {}).items():
        if group in _NOT_CODES or not isinstance(entries, dict):
            continue
        for code, text in entries.items():
            out.setdefault(code, str(text))
    return out


class _Relabeller:
    """Walks a JSON schema, inlining $refs, dropping annotations and showing each enum code by its native label."""

    def __init__(self, schema: dict, table: dict[str, str]) -> None:
        self.defs = {**schema.get("$defs", {}), **schema.get("definitions", {})}
        self.table = table
        self.decode: dict[str, str] = {}

    def walk(self, node: Any, depth: int = 0) -> Any:
        if not isinstance(node, dict) or depth > 50:
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.rsplit("/", 1)[-1] in self.defs:
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return self.walk({**self.defs[ref.rsplit("/", 1)[-1]], **rest}, depth + 1)
        return {key: self.shown(key, value, depth) for key, value in node.items()
                if key not in _ANNOTATIONS and key not in ("$defs", "definitions")}

    def shown(self, key: str, value: Any, depth: int) -> Any:
        if key in _NAMED and isinstance(value, dict):
            return {name: self.walk(sub, depth + 1) for name, sub in value.items()}
        if key in _ONE:
            return self.walk(value, depth + 1)
        if key in _MANY and isinstance(value, list):
            return [self.walk(sub, depth + 1) for sub in value]
        if key == "enum" and isinstance(value, list):
            return [self.relabel(v, value) for v in value]
        if key == "const":
            return self.relabel(value, [value])
        return value

    def relabel(self, value: Any, siblings: list) -> Any:
        text = self.table.get(value) if isinstance(value, str) else None
        # a label two codes of one enum share, or one that is itself another code there, would not map back
        if text is None or text in siblings or sum(self.table.get(s) == text for s in siblings if isinstance(s, str)) > 1:
            return value
        self.decode[text] = value
        return text


def native_schema(schema: dict, language: str) -> tuple[dict, dict[str, str]]:
    """(the schema as a `language` prompt shows it, native label → code for the enums it relabelled). A language
    without a label table gets the schema unchanged and an empty map."""
    table = code_labels(language)
    if not table:
        return schema, {}
    walker = _Relabeller(schema, table)
    shown = walker.walk(schema)
    return shown, walker.decode


def decode_answer(data: Any, decode: dict[str, str]) -> Any:
    """An answer with every native label of `decode` (a string value equal to one) replaced by its code."""
    if not decode:
        return data
    if isinstance(data, dict):
        return {k: decode_answer(v, decode) for k, v in data.items()}
    if isinstance(data, list):
        return [decode_answer(v, decode) for v in data]
    if isinstance(data, str):
        return decode.get(data, data)
    return data
