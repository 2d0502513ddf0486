"""`mem0`: the real `mem0ai` library (optional extra `synth[mem0]`) as a memory system, run fully offline.

mem0's own pipeline does the work — its extraction prompt, its hash de-duplication, its vector store (Qdrant in
process memory), its search — with two parts swapped for ours: its LLM calls go through synth's client (the
answerer's route, cache, retries and re-asks; mem0's JSON reply is checked against a schema), and its embedder is the
eval's (the bundled offline e5, or --embed-model). Each trace is added as one user message with its time and medium,
the trace id and time in the memory's metadata; a memory found maps back to its trace."""

from __future__ import annotations

import datetime as dt
import logging
import os
import uuid
from pathlib import Path

from pydantic import BaseModel, Field

from synth.core.errors import InputError


class _Mem0Memory(BaseModel):
    id: str
    text: str
    attributed_to: str = ""
    linked_memory_ids: list[str] = Field(default_factory=list)


class Mem0Extraction(BaseModel):
    """The reply mem0's additive extraction prompt asks for."""

    memory: list[_Mem0Memory]


class _Llm:
    """mem0's LLM interface (`generate_response`) over the eval's backbone; returns the JSON text mem0 parses."""

    def __init__(self, backbone, language: str) -> None:
        self.backbone = backbone
        self.language = language

    def generate_response(self, messages, response_format=None, tools=None, tool_choice="auto", **kwargs) -> str:
        if tools:
            raise InputError("mem0 asked for tool calls (graph memory), which synth's adapter does not serve")
        reply = self.backbone.ask_raw("eval_mem0", list(messages), Mem0Extraction, self.language)
        return reply.model_dump_json()


class _Embedder:
    """mem0's embedder interface (`embed`, `embed_batch`) over the eval's embedder."""

    def __init__(self, embedder) -> None:
        self.embedder = embedder

    def embed(self, text, memory_action=None):
        if memory_action == "search":
            return self.embedder.query(text).tolist()
        return self.embedder.passages([text])[0].tolist()

    def embed_batch(self, texts, memory_action="add"):
        return [v.tolist() for v in self.embedder.passages(list(texts))]


def _import_mem0():
    # mem0 reads these at import: no telemetry (no network), its state under synth's cache, not ~/.mem0
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    os.environ.setdefault("MEM0_DIR", str(Path.home() / ".cache" / "synth" / "mem0"))
    try:
        import mem0.memory.main as mem0_main
        import mem0.memory.telemetry as mem0_telemetry
        from qdrant_client import QdrantClient
    except ImportError:
        raise InputError("--system mem0 needs the mem0ai library: pip install 'synth[mem0]'") from None
    # If mem0 was imported before us, the environment came too late: switch its telemetry off where it is read.
    mem0_telemetry.MEM0_TELEMETRY = False
    mem0_main.MEM0_TELEMETRY = False
    # It warns on every add that spaCy and fastembed are absent (it falls back to plain text and to semantic search
    # only, as the README says); keep its errors, not that.
    logging.getLogger("mem0").setLevel(logging.ERROR)
    return mem0_main.Memory, QdrantClient


class Mem0System:
    def __init__(self, embedder_factory, backbone, settings: dict) -> None:
        if backbone is None or embedder_factory is None:
            raise InputError("--system mem0 needs the answerer's route (its LLM) and an embedder")
        Memory, QdrantClient = _import_mem0()
        self.embedder = embedder_factory()
        dims = len(self.embedder.query("dimension probe"))
        self.user = f"persona-{uuid.uuid4().hex[:8]}"
        config = {
            "vector_store": {"provider": "qdrant", "config": {"client": QdrantClient(location=":memory:"),
                                                              "collection_name": "synth", "embedding_model_dims": dims}},
            # placeholders: both are replaced below before any call, so no key or server is ever used
            "llm": {"provider": "openai", "config": {"api_key": "unused", "model": "unused"}},
            "embedder": {"provider": "openai", "config": {"api_key": "unused", "embedding_dims": dims}},
            "history_db_path": ":memory:",
        }
        self.memory = Memory.from_config(config)
        self.backbone = backbone
        self.memory.llm = _Llm(backbone, "en")
        self.memory.embedding_model = _Embedder(self.embedder)
        self.top_k = int(settings.get("mem0_top_k", 30))
        self.pending: list[dict] = []
        self._last: list[str] = []

    def set_persona(self, name: str, language: str) -> None:
        self.memory.llm.language = language

    def ingest(self, trace: dict) -> None:
        self.pending.append(trace)

    def prepare(self) -> None:
        """mem0 adds one message at a time (each extraction sees the memories so far), so traces go in in order."""
        traces, self.pending = self.pending, []
        for trace in traces:
            when = trace.get("event_date") or trace.get("time") or ""
            self.memory.add([{"role": "user", "content": f"[{when} · {trace.get('medium', '')}] "
                                                         f"{trace.get('content', '')}"}],
                            user_id=self.user, metadata={"trace_id": trace["id"], "trace_time": when})

    def retrieve(self, question: str, k: int, question_time: dt.datetime | None) -> list[str]:
        found = self.memory.search(question, top_k=self.top_k, filters={"user_id": self.user})
        results = found.get("results", []) if isinstance(found, dict) else list(found or [])
        ranked: dict[str, None] = {}
        self._last = []
        for item in results:
            trace_id = (item.get("metadata") or {}).get("trace_id")
            if trace_id and (trace_id in ranked or len(ranked) < k):
                ranked.setdefault(trace_id, None)
                self._last.append(str(item.get("memory", "")))
        return list(ranked)

    def notes(self) -> list[str]:
        return [m for m in self._last if m]
