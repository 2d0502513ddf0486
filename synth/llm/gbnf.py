"""JSON schema → GBNF grammar for llama.cpp (in-process, and llama-cpp-python's server through the openai adapter).

JSON schema -> GBNF. llama-cpp-python's own converter ignores integer minimum/maximum, lets strings carry raw
control characters, accepts dates like 2024-02-31 and nests every bounded repetition; this one is small and
covers what pydantic emits: $defs/$ref, anyOf/oneOf (nullable), allOf, enum, const, type lists, objects,
arrays with min/max items and prefixItems, strings with min/max length and date/time/date-time/uuid formats,
integers with bounds, numbers, booleans and null. Not enforced: `pattern`, other string formats, number
bounds other than a non-negative minimum, uniqueItems, additionalProperties on objects that declare properties
(every declared property is emitted, in order, and nothing else).
"""

from __future__ import annotations

import json
import math
from typing import Any

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
    "time": (
        '([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{3})?'
        ' ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])?'
    ),
    "date-string": r'"\"" date "\"" space',
    "time-string": r'"\"" time "\"" space',
    "date-time-string": r'"\"" date "T" time "\"" space',
    "uuid-string": (
        r'"\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\"" space'
    ),
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


def _implied_type(schema: dict) -> str | None:
    """The type a schema without one has by its keywords: an object's, an array's, or none."""
    if "properties" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    return None


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
            return self.ref(schema)
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
            return self.all_of(schema, name)
        return self.typed(schema, name)

    def ref(self, schema: dict) -> str:
        """The rule of a $ref target (its sibling keywords merged in), built once and shared by every use."""
        ref = schema["$ref"]
        if ref not in self.refs:
            rule = self.reserve(ref.rsplit("/", 1)[-1] or "ref")
            self.refs[ref] = rule  # registered before the visit, so recursive models terminate
            target = self.resolve(ref)
            extra = {k: v for k, v in schema.items() if k != "$ref"}
            merged = {**target, **extra} if extra and "$ref" not in target else target
            self.rules[rule] = self.visit(merged, rule + "-body")
        return self.refs[ref]

    def all_of(self, schema: dict, name: str) -> str:
        """One part with the schema's other keywords, or an object with every part's properties."""
        parts = schema["allOf"]
        if len(parts) == 1:
            return self.visit({**parts[0], **{k: v for k, v in schema.items() if k != "allOf"}}, name)
        merged: dict = {"type": "object", "properties": {}, "required": []}
        for part in parts:
            part = self.resolve(part["$ref"]) if "$ref" in part else part
            merged["properties"].update(part.get("properties", {}))
            merged["required"] += part.get("required", [])
        return self.visit(merged, name)

    def typed(self, schema: dict, name: str) -> str:
        """A schema by its `type`: a list of types is their alternatives, a missing one is read off the keywords."""
        kind = schema.get("type")
        if isinstance(kind, list):
            alts = [self.visit({**schema, "type": t}, f"{name}-{t}") for t in kind]
            return self.add(name, " | ".join(alts))
        if kind is None:
            kind = _implied_type(schema)
            if kind is None:
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
            return self.number(schema, name)
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
                key = self.visit(schema.get("propertyNames", {"type": "string"}), f"{name}-key")
                kv = self.add(f"{name}-kv", f'{key} ":" space {value}')
                return self.add(name, f'"{{" space {self.repeat(kv, schema, "Properties")} "}}" space')
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
        return self.add(name, f'"[" space {self.repeat(item, schema, "Items")} "]" space')

    @staticmethod
    def repeat(item: str, schema: dict, what: str) -> str:
        """`item` separated by commas, between minItems/maxItems (or min/maxProperties) times."""
        lo, hi = int(schema.get(f"min{what}", 0)), schema.get(f"max{what}")
        if hi is not None and int(hi) <= 0:
            return ""
        more = f"{{{max(lo - 1, 0)},{'' if hi is None else int(hi) - 1}}}"
        seq = item if more == "{0,0}" else f'{item} ("," space {item}){more}'
        return seq if lo > 0 else f"({seq})?"

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

    def number(self, schema: dict, name: str) -> str:
        if schema.get("minimum", -1) >= 0 or schema.get("exclusiveMinimum", -1) >= 0:
            self.base("space")
            return self.add(name, _BASE_RULES["number"].removeprefix('"-"? '))
        return self.base("number")

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


def string_slots(schema: dict, root: dict | None = None, depth: int = 0) -> int:
    """How many free strings an answer to `schema` can hold (arrays count maxItems, or 3 when unbounded)."""
    root = root if root is not None else schema
    if depth > 8:
        return 1
    while "$ref" in schema:
        node: Any = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = node
    if "enum" in schema or "const" in schema:
        return 0
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return max(string_slots(s, root, depth + 1) for s in schema[key])
    kind = schema.get("type")
    if kind == "string" and "format" not in schema:
        return 1
    if kind == "array":
        return int(schema.get("maxItems", 3)) * string_slots(schema.get("items", {}), root, depth + 1)
    if kind == "object" or "properties" in schema:
        return sum(string_slots(s, root, depth + 1) for s in schema.get("properties", {}).values())
    return 0


def string_cap(schema: dict, max_tokens: int, chars_per_token: float = 3.0) -> int:
    """A per-string character cap that lets a whole answer fit in `max_tokens` (a weak model fills every cap)."""
    return max(24, int(chars_per_token * max_tokens) // max(1, string_slots(schema)))
