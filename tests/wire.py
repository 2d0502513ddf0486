"""The model wire in tests: a batch of schema'd requests, a route to the fake server, providers made per route as
`LLM.provider` makes them, and a batch submitted by a run that then dies."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import BaseModel, Field

from synth.config.conf import Route
from synth.llm.base import GenerationSettings, LLMRequest
from synth.llm.batch import BatchDispatcher
from synth.llm.cache import ResponseCache
from synth.llm.providers import REGISTRY
from synth.testing.fake_server import FakeServer


class Answer(BaseModel):
    title: str
    mood: int = Field(ge=1, le=5)
    tags: list[str] = Field(min_length=1, max_length=3)


def requests(n: int) -> list[LLMRequest]:
    system = {"role": "system", "content": "You are writing about one persona. " * 20}
    return [
        LLMRequest(task="events", messages=[system, {"role": "user", "content": f"Write event number {i}."}],
                   json_schema=Answer.model_json_schema(), settings=GenerationSettings(temperature=0.5, max_tokens=256),
                   schema_name="events")
        for i in range(n)
    ]


def make_route(server: FakeServer, provider: str) -> Route:
    base = server.anthropic_base_url if provider == "anthropic" else server.openai_base_url
    return Route(provider=provider, model="fake", base_url=base)


def providers():
    """A fresh provider per (provider, base URL), as LLM.provider caches them."""
    made: dict = {}

    def get(route: Route):
        key = (route.provider, route.base_url)
        if key not in made:
            made[key] = REGISTRY[route.provider](route, 30.0, 0)
        return made[key]

    get.made = made
    return get


async def close(get) -> None:
    """Close the HTTP clients inside their event loop (else they complain when collected after it closed)."""
    for provider in get.made.values():
        if hasattr(provider, "aclose"):
            await provider.aclose()
        elif hasattr(provider, "client"):
            await provider.client.close()


def submit_then_die(out: Path, route: Route, reqs: list[LLMRequest]) -> None:
    """A run that submits `reqs` as one batch and dies before the batch ends (asyncio.run cancels what is left)."""

    async def first_run() -> None:
        cache = ResponseCache(out / "cache.sqlite")
        get = providers()
        dispatcher = BatchDispatcher(out, cache, get, window_s=0.05, poll_s=0.05)
        waiting = [asyncio.create_task(dispatcher.complete(route, r)) for r in reqs]
        while not dispatcher.pending():
            await asyncio.sleep(0.02)
        assert not any(task.done() for task in waiting)  # killed before the batch ended
        cache.close()
        await close(get)

    asyncio.run(first_run())
