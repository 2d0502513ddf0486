"""The eval's one event loop, on its own thread, and the backbone LLM that memory systems call at ingest.

Retrieval is synchronous (a memory system's `ingest`/`retrieve` are plain methods) while the LLM client is async and
binds its semaphore and HTTP connections to one loop. So every model call of a `synth eval` command — memory
extraction during ingest, answering and judging afterwards — runs on this single loop; synchronous code hands it
coroutines and waits for their results."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any

from pydantic import BaseModel

from synth.config import conf
from synth.config.prompts import render
from synth.llm.base import GenerationFailed, GenerationSettings, LLMRequest
from synth.llm.client import LLM, CallStats


class LoopThread:
    """An asyncio loop running on a daemon thread; `run(coro)` blocks until the coroutine is done."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="synth-eval-loop", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


class Backbone:
    """The LLM a memory system builds its memory with (the answerer's route, as the paper uses one backbone for
    memory construction and answering), through the shared client: routes, cache, retries and re-asks apply."""

    def __init__(self, llm: LLM, route: conf.Route, loop: LoopThread, temperature: float, max_tokens: int) -> None:
        self.llm = llm
        self.route = route
        self.loop = loop
        self.settings = GenerationSettings(temperature=temperature, max_tokens=max_tokens)
        self.stats = CallStats()
        self.failed = 0

    def request(self, task: str, template: str, variables: dict, model: type[BaseModel]) -> LLMRequest:
        return LLMRequest(task=task, messages=render(template, **variables), json_schema=model.model_json_schema(),
                          settings=self.settings)

    def ask_many(self, task: str, template: str, variables: list[dict], model: type[BaseModel],
                 language: str) -> list[BaseModel | None]:
        """One request per variables dict, concurrently (the client's concurrency limit applies), in order; None
        where the model gave no valid answer within its re-asks (counted in `failed`)."""

        async def one(v: dict) -> BaseModel | None:
            try:
                return await self.llm.generate(self.route, self.request(task, template, v, model), model,
                                               self.stats, language=language)
            except GenerationFailed:
                self.failed += 1
                return None

        async def all_of() -> list[BaseModel | None]:
            return list(await asyncio.gather(*(one(v) for v in variables)))

        return self.loop.run(all_of()) if variables else []

    def ask_raw(self, task: str, messages: list[dict], model: type[BaseModel], language: str) -> BaseModel:
        """One request with messages made elsewhere (a third-party library's own prompts)."""
        request = LLMRequest(task=task, messages=messages, json_schema=model.model_json_schema(),
                             settings=self.settings)
        return self.loop.run(self.llm.generate(self.route, request, model, self.stats, language=language))

    def calls(self) -> dict:
        return {"requests": self.stats.requests, "provider_calls": self.stats.provider_calls,
                "cache_hits": self.stats.cache_hits, "repairs": self.stats.repairs,
                "input_tokens": self.stats.usage.input_tokens,
                "output_tokens": self.stats.usage.output_tokens, "failed": self.failed}
