"""Batch mode: requests that arrive close together go to the provider's batch API as one half-price batch.

`BatchDispatcher.complete(route, request)` keeps a provider's `complete` contract, so the client can swap it in.
Requests are grouped per provider/base URL/model; a group is sent when no new request came for `window_s` or
when it holds `max_requests`. The batch id and the custom_id → cache-key map are written to
<out>/batches/<batch_id>.json before polling starts, so a restarted run finds the batch, fetches its results into
the response cache and asks the provider for nothing it already paid for.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synth.config.conf import Route
from synth.core.jsonl import write_json_atomic
from synth.llm.base import FatalProviderError, LLMRequest, Provider, ProviderResponse, TransportError, Usage
from synth.llm.cache import ResponseCache, cache_key
from synth.llm.providers import AnthropicProvider, _preview, _status_error

BATCHED = ("anthropic", "openai")  # providers with a batch API; the rest are called directly
OPENAI_ENDPOINT = "/v1/chat/completions"
_OPENAI_DONE = {"completed", "failed", "expired", "cancelled"}


@dataclass
class _Item:
    custom_id: str
    key: str
    request: LLMRequest
    future: asyncio.Future


@dataclass
class _Group:
    route: Route
    items: dict[str, _Item] = field(default_factory=dict)  # by cache key: identical requests share one slot
    timer: asyncio.TimerHandle | None = None


def parse_chat_completion(body: dict) -> ProviderResponse:
    """A chat completion body (as the OpenAI Batch API returns it) as a ProviderResponse."""
    choices = body.get("choices") or []
    if not choices:
        raise TransportError("openai batch: response without choices")
    message = choices[0].get("message") or {}
    usage = body.get("usage") or {}
    details = usage.get("prompt_tokens_details") or {}
    return ProviderResponse(
        text=message.get("content") or "",
        usage=Usage(
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
            cached_input_tokens=int(details.get("cached_tokens") or 0),
        ),
        refusal=message.get("refusal"),
    )


class BatchDispatcher:
    """Collects requests into batches, submits, persists, polls and resolves; resumes persisted batches."""

    def __init__(self, out: Path, cache: ResponseCache | None, providers: Callable[[Route], Provider],
                 window_s: float = 0.5, max_requests: int = 10_000, poll_s: float = 15.0) -> None:
        self.directory = out / "batches"
        self.cache = cache
        self._providers = providers
        self.window_s = window_s
        self.max_requests = max_requests
        self.poll_s = poll_s
        self._groups: dict[tuple, _Group] = {}
        self._tasks: set[asyncio.Task] = set()
        self._resumed: asyncio.Task | None = None
        self._serial = 0
        self.submitted: list[str] = []  # batch ids this dispatcher created

    # ------------------------------------------------------------------ the provider contract

    async def complete(self, route: Route, request: LLMRequest) -> ProviderResponse:
        if route.provider not in BATCHED:
            return await self._providers(route).complete(request, route.model)
        await self.resume()
        key = cache_key(route.provider, route.model, request)
        # A batch from an interrupted run may have answered this request already.
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            return hit
        return await asyncio.shield(self._enqueue(route, request, key))

    def _enqueue(self, route: Route, request: LLMRequest, key: str) -> asyncio.Future:
        group_key = (route.provider, route.base_url, route.model)
        group = self._groups.setdefault(group_key, _Group(route))
        if key in group.items:
            return group.items[key].future
        self._serial += 1
        item = _Item(f"req-{self._serial}", key, request, asyncio.get_running_loop().create_future())
        group.items[key] = item
        if group.timer is not None:
            group.timer.cancel()
        if len(group.items) >= self.max_requests:
            self._flush(group_key)
        else:
            group.timer = asyncio.get_running_loop().call_later(self.window_s, self._flush, group_key)
        return item.future

    def _flush(self, group_key: tuple) -> None:
        group = self._groups.pop(group_key, None)
        if group is None or not group.items:
            return
        if group.timer is not None:
            group.timer.cancel()
        task = asyncio.get_running_loop().create_task(self._run(group.route, list(group.items.values())))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ one batch, start to end

    async def _run(self, route: Route, items: list[_Item]) -> None:
        try:
            provider = self._providers(route)
            batch_id = await (self._submit_anthropic if route.provider == "anthropic" else self._submit_openai)(
                provider, route, items)
            self.submitted.append(batch_id)
            record = self._persist(batch_id, route, items)
            results = await self._collect(provider, route.provider, batch_id)
            self._finish(record, results)
        except Exception as exc:  # noqa: BLE001 - every waiter learns why its batch failed
            error = exc if isinstance(exc, (TransportError, FatalProviderError)) else TransportError(
                f"{route.provider} batch: {exc}")
            for item in items:
                if not item.future.done():
                    item.future.set_exception(error)
            return
        for item in items:
            if item.future.done():
                continue
            outcome = results.get(item.custom_id, TransportError(
                f"{route.provider} batch: no readable result for {item.custom_id}"))
            if isinstance(outcome, Exception):
                item.future.set_exception(outcome)
            else:
                item.future.set_result(outcome)

    async def _submit_anthropic(self, provider: Any, route: Route, items: list[_Item]) -> str:
        requests = [{"custom_id": i.custom_id, "params": AnthropicProvider.params(i.request, route.model)} for i in items]
        batch = await _sdk(route.provider, provider.client.messages.batches.create(requests=requests))
        return batch.id

    async def _submit_openai(self, provider: Any, route: Route, items: list[_Item]) -> str:
        lines = [
            json.dumps({"custom_id": i.custom_id, "method": "POST", "url": OPENAI_ENDPOINT,
                        "body": provider._body(i.request, route.model, "json_schema")}, ensure_ascii=False)
            for i in items
        ]
        data = ("\n".join(lines) + "\n").encode("utf-8")
        stored = await _sdk(route.provider, provider.sdk.files.create(file=("batch.jsonl", data), purpose="batch"))
        batch = await _sdk(route.provider, provider.sdk.batches.create(
            input_file_id=stored.id, endpoint=OPENAI_ENDPOINT, completion_window="24h"))
        return batch.id

    def _persist(self, batch_id: str, route: Route, items: list[_Item]) -> dict:
        record = {
            "batch_id": batch_id, "status": "pending", "provider": route.provider, "model": route.model,
            "base_url": route.base_url, "created_at": time.time(),
            "items": {i.custom_id: {"key": i.key, "task": i.request.task} for i in items},
        }
        self.directory.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.directory / f"{batch_id}.json", record)
        return record

    def _finish(self, record: dict, results: dict[str, ProviderResponse | Exception]) -> None:
        """Store every answer in the response cache, then mark the batch file done."""
        if self.cache is not None:
            for custom_id, meta in record["items"].items():
                outcome = results.get(custom_id)
                if isinstance(outcome, ProviderResponse):
                    self.cache.put(meta["key"], meta["task"], outcome)
        # Errored: an error result, or none that could be read (a line that was not JSON); asked again later.
        record = {**record, "status": "done",
                  "errored": sorted(c for c in record["items"] if not isinstance(results.get(c), ProviderResponse))}
        write_json_atomic(self.directory / f"{record['batch_id']}.json", record)

    async def _collect(self, provider: Any, kind: str, batch_id: str) -> dict[str, ProviderResponse | Exception]:
        if kind == "anthropic":
            return await self._collect_anthropic(provider.client, batch_id)
        return await self._collect_openai(provider.sdk, batch_id)

    async def _collect_anthropic(self, client: Any, batch_id: str) -> dict[str, ProviderResponse | Exception]:
        while (batch := await _sdk("anthropic", client.messages.batches.retrieve(batch_id))).processing_status != "ended":
            await asyncio.sleep(self.poll_s)
        # Read as text, line by line: the SDK's own decoder stops at the first line that is not JSON.
        decoder = await _sdk("anthropic", client.messages.batches.results(batch.id))
        text = await _sdk("anthropic", decoder.http_response.aread())
        out: dict[str, ProviderResponse | Exception] = {}
        for custom_id, entry in result_lines(text):
            result = entry.get("result") if isinstance(entry.get("result"), dict) else {}
            if result.get("type") == "succeeded":
                try:
                    out[custom_id] = AnthropicProvider.parse(result.get("message") or {})
                except TransportError as exc:
                    out[custom_id] = exc
            else:
                error = result.get("error")
                detail = error.get("error") if isinstance(error, dict) else error
                out[custom_id] = TransportError(f"anthropic batch item {result.get('type')}: {detail or ''}".strip())
        return out

    async def _collect_openai(self, client: Any, batch_id: str) -> dict[str, ProviderResponse | Exception]:
        while (batch := await _sdk("openai", client.batches.retrieve(batch_id))).status not in _OPENAI_DONE:
            await asyncio.sleep(self.poll_s)
        out: dict[str, ProviderResponse | Exception] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            content = await _sdk("openai", client.files.content(file_id))
            for custom_id, line in result_lines(content.content):
                out[custom_id] = _openai_line(line)[1]
        if not out and batch.status != "completed":
            raise TransportError(f"openai batch {batch_id} ended {batch.status}")
        return out

    # ------------------------------------------------------------------ restart

    async def resume(self) -> int:
        """Fetch the results of batches a previous run left pending into the cache (once); returns how many."""
        if self._resumed is None:
            self._resumed = asyncio.get_running_loop().create_task(self._resume_all())
        return await asyncio.shield(self._resumed)

    def pending(self) -> list[dict]:
        if not self.directory.is_dir():
            return []
        records = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(self.directory.glob("*.json"))]
        return [r for r in records if r.get("status") == "pending"]

    async def _resume_all(self) -> int:
        records = self.pending()
        await asyncio.gather(*(self._resume_one(r) for r in records))
        return len(records)

    async def _resume_one(self, record: dict) -> None:
        route = Route(provider=record["provider"], model=record["model"], base_url=record.get("base_url"))
        provider = self._providers(route)
        try:
            results = await self._collect(provider, route.provider, record["batch_id"])
        except (TransportError, FatalProviderError) as exc:
            # Lost or failed at the provider: its requests are simply asked again, and the file stops waiting.
            write_json_atomic(self.directory / f"{record['batch_id']}.json", {**record, "status": "lost", "reason": str(exc)})
            return
        self._finish(record, results)


def result_lines(data: bytes | str) -> list[tuple[str, dict]]:
    """(custom_id, line) of each JSON object line of a batch's results. A line that is not JSON (a gateway cut
    the file, or served a page instead) is skipped: its request gets no result and is asked again."""
    if isinstance(data, bytes):
        data = data.decode("utf-8", errors="replace")
    lines = []
    for text in data.splitlines():
        try:
            line = json.loads(text) if text.strip() else None
        except ValueError:
            continue
        if isinstance(line, dict) and isinstance(line.get("custom_id"), str):
            lines.append((line["custom_id"], line))
    return lines


def _openai_line(line: dict) -> tuple[str, ProviderResponse | Exception]:
    custom_id = line.get("custom_id", "")
    response = line.get("response") or {}
    if line.get("error") or response.get("status_code", 200) >= 400 or not response.get("body"):
        detail = line.get("error") or response.get("body") or "no body"
        return custom_id, TransportError(f"openai batch item failed: {str(detail)[:300]}",
                                         status=response.get("status_code"))
    try:
        return custom_id, parse_chat_completion(response["body"])
    except TransportError as exc:
        return custom_id, exc


async def _sdk(provider: str, call: Any) -> Any:
    """Await an SDK call, mapping its transport and status errors to TransportError (the client retries them)."""
    try:
        answer = await call
    except (TransportError, FatalProviderError):
        raise
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise TransportError(f"{provider} batch API: HTTP 200 whose body is not JSON") from None
    except Exception as exc:  # noqa: BLE001 - both SDKs: status errors are classified, the rest is transport
        if getattr(exc, "status_code", None) is not None:
            raise _status_error(exc, provider) from None
        raise TransportError(f"{provider} batch API: {type(exc).__name__}") from None
    if isinstance(answer, str):  # the SDKs hand back the raw text of a body whose content type is not JSON
        raise TransportError(f"{provider} batch API: HTTP 200 whose body is not JSON: {_preview(answer)}")
    return answer
