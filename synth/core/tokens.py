"""A provider-neutral token estimate, used for budgets, prompt sizing and reported figures."""

from __future__ import annotations

import re

_CJK = re.compile("[\u4e00-\u9fff]")


def estimate_tokens(text: str) -> int:
    """A provider-neutral token estimate: about 4 characters per token, one per CJK character."""
    cjk = len(_CJK.findall(text)) if not text.isascii() else 0
    return max(1, cjk + (len(text) - cjk) // 4)
