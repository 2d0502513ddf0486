"""Text cut for a prompt: at a sentence end, never mid-word."""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"[.!?](?=\s)|[。！？]")
_CLAUSE = re.compile(r"[.!?;,](?=\s)|[。！？；，]")


def clipped(text: str, limit: int) -> str:
    """`text` within `limit` characters, cut after its last sentence end (else clause end, else its last space,
    else anywhere) and marked with an ellipsis: a fact cut mid-word ("by 2:40 p.m. s") leaves the planner unable to
    tell what was settled, and one cut mid-sentence ("during her 'offline' block,…") half-says it."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    sentences = [m.end() for m in _SENTENCE_END.finditer(head) if m.start() > limit // 3]
    clauses = [m.end() for m in _CLAUSE.finditer(head) if m.start() > limit // 2]
    spaces = [m.start() for m in re.finditer(r"\s", head) if m.start() > limit // 2]
    cut = (sentences or clauses or spaces or [len(head)])[-1]
    return head[:cut].rstrip() + "…"
