"""`memory`: the paper's Flat retriever *with* memory — at ingest an LLM writes short first-person memories from each
trace (prompts/eval_memory_extract.j2); retrieval ranks memories and traces together and maps them to trace ids."""

from __future__ import annotations

import datetime as dt
import functools

from pydantic import BaseModel, Field, create_model

from synth.core.errors import InputError


@functools.lru_cache(maxsize=8)
def memories_model(most: int) -> type[BaseModel]:
    """{"memories": [short first-person statements]}, at most `most` of them."""
    return create_model(f"ExtractedMemories{most}",
                        memories=(list[str], Field(min_length=0, max_length=most)))


class ExtractedMemorySystem:
    """Units = each trace's own text plus the memories extracted from it; a unit found maps to its trace. Memories
    are extracted in one concurrent batch per `prepare` (the traces ingested since the last question)."""

    def __init__(self, index, backbone, settings: dict) -> None:
        if backbone is None:
            raise InputError("--system memory needs an LLM to extract memories (the answerer's route)")
        self.index = index
        self.backbone = backbone
        self.most = int(settings.get("memory_max_per_trace", 5))
        self.memory_chars = int(settings.get("memory_trace_chars", 4000))
        self.name, self.language = "", "en"
        self.owner: list[str] = []  # unit → trace id
        self.text: list[str | None] = []  # unit → memory text (None: the trace itself)
        self.pending: list[dict] = []
        self._last: list[int] = []

    def set_persona(self, name: str, language: str) -> None:
        self.name, self.language = name, language

    def ingest(self, trace: dict) -> None:
        self.pending.append(trace)

    def prepare(self) -> None:
        if not self.pending:
            return
        traces, self.pending = self.pending, []
        variables = [{"language": self.language, "name": self.name, "most": self.most,
                      "time": t.get("event_date") or t.get("time") or "", "medium": t.get("medium", ""),
                      "content": (t.get("content") or "")[:self.memory_chars]} for t in traces]
        extracted = self.backbone.ask_many("eval_memory_extract", "eval_memory_extract.j2", variables,
                                           memories_model(self.most), self.language)
        texts: list[str] = []
        for trace, out in zip(traces, extracted, strict=True):
            texts.append(f"{trace.get('medium', '')} {trace.get('content', '')}")
            self.owner.append(trace["id"])
            self.text.append(None)
            for memory in dict.fromkeys(m.strip() for m in (out.memories if out else []) if m.strip()):
                texts.append(memory)
                self.owner.append(trace["id"])
                self.text.append(memory)
        self.index.add(texts)
        self.index.prepare()

    def retrieve(self, question: str, k: int, question_time: dt.datetime | None) -> list[str]:
        self.prepare()
        ranked: dict[str, None] = {}
        used: list[int] = []
        # Several units can share a trace: look deeper than k so k distinct traces come back when they exist.
        for unit in self.index.search(question, k * (self.most + 1)):
            if len(ranked) >= k and self.owner[unit] not in ranked:
                continue
            ranked.setdefault(self.owner[unit], None)
            used.append(unit)
        self._last = used
        return list(ranked)[:k]

    def readback(self, trace_ids: list[str]) -> list[str]:
        """The memories extracted from these traces (SubtleMemory's perfect retrieval: read back by provenance)."""
        self.prepare()
        wanted = set(trace_ids)
        return [text for owner, text in zip(self.owner, self.text, strict=True) if owner in wanted and text is not None]

    def notes(self) -> list[str]:
        """The extracted memories among the units that were found (the answerer sees them beside the traces)."""
        return [self.text[u] for u in self._last if self.text[u] is not None]
