"""llama.cpp's C-side log, captured into a short tail for error messages instead of flooding stderr."""

from __future__ import annotations

import collections
import contextlib
import ctypes
import os
from typing import Any


class LlamaLog:
    """The last lines llama.cpp logged. llama.cpp has one log hook per process, so there is one: `LLAMA_LOG`."""

    def __init__(self, lines: int = 40) -> None:
        self._tail: collections.deque[str] = collections.deque(maxlen=lines)
        self._callback: Any = None  # kept referenced: the C side holds only a pointer to it

    def capture(self, llama_cpp: Any) -> None:
        """Route llama.cpp's log into the tail (once; not with $SYNTH_LOCAL_VERBOSE, which leaves it on stderr)."""
        if self._callback is not None or os.environ.get("SYNTH_LOCAL_VERBOSE"):
            return
        tail = self._tail

        @llama_cpp.llama_log_callback
        def callback(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
            with contextlib.suppress(Exception):  # never raise into C
                tail.append(text.decode("utf-8", "replace"))

        self._callback = callback
        llama_cpp.llama_log_set(callback, ctypes.c_void_p(0))

    def clear(self) -> None:
        self._tail.clear()

    def last(self, lines: int) -> list[str]:
        return list(self._tail)[-lines:]


LLAMA_LOG = LlamaLog()
