"""The fake server's batch endpoints: uploaded files, OpenAI and Anthropic batch objects, their results and
a status timeline that completes after a set delay."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from synth.testing.fake_wire import iso_time


@dataclass
class StoredFile:
    id: str
    data: bytes
    filename: str
    purpose: str
    created_at: int

    def view(self) -> dict:
        return {"id": self.id, "object": "file", "bytes": len(self.data), "created_at": self.created_at,
                "filename": self.filename, "purpose": self.purpose, "status": "processed",
                "expires_at": None, "status_details": None}


@dataclass
class Batch:
    id: str
    created_at: float  # wall clock, for the wire
    started: float  # monotonic, for the status timeline
    total: int
    failed: int = 0
    request: dict = field(default_factory=dict)
    output_file_id: str = ""  # OpenAI
    results: bytes = b""  # Anthropic: the results JSONL


class Batches:
    """Files and batches kept in memory, mixed into the server's backend, which holds `files`, `batches`,
    `batch_delay_s`, `new_id`, the bad-body draw and the answer bodies a batch line gets."""

    files: dict[str, StoredFile]
    batches: dict[str, Batch]
    batch_delay_s: float
    new_id: Callable[[str], str]
    draw_bad: Callable[[], str | None]
    chat_completion: Callable[[dict, str | None], dict]
    message: Callable[[dict, str | None], dict]
    embeddings: Callable[[dict], dict]

    def store_file(self, data: bytes, filename: str, purpose: str) -> StoredFile:
        stored = StoredFile(self.new_id("file-fake"), data, filename, purpose, int(time.time()))
        self.files[stored.id] = stored
        return stored

    def progress(self, batch: Batch) -> float:
        """How far along the batch is: <0.5 validating, <1 in progress, 1 done."""
        if self.batch_delay_s <= 0:
            return 1.0
        return min(1.0, (time.monotonic() - batch.started) / self.batch_delay_s)

    def openai_batch_create(self, body: dict) -> Batch:
        source = self.files[body["input_file_id"]]
        batch = Batch(self.new_id("batch_fake"), time.time(), time.monotonic(), 0, request=body)
        lines = []
        for raw in source.data.decode().splitlines():
            if not raw.strip():
                continue
            item = json.loads(raw)
            url = item.get("url", body.get("endpoint", ""))
            response: dict | None = None
            error = None
            if url.endswith("/chat/completions"):
                response = self.chat_completion(item.get("body") or {}, self.draw_bad())
            elif url.endswith("/embeddings"):
                response = self.embeddings(item.get("body") or {})
            else:
                error = {"code": "invalid_url", "message": f"the fake server does not batch {url}"}
                batch.failed += 1
            batch.total += 1
            wrapped = {"status_code": 200, "request_id": self.new_id("req_fake"), "body": response} if response else None
            lines.append({"id": self.new_id("batch_req_fake"), "custom_id": item.get("custom_id"),
                          "response": wrapped, "error": error})
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        batch.output_file_id = self.store_file(text.encode(), f"{batch.id}_output.jsonl", "batch_output").id
        self.batches[batch.id] = batch
        return batch

    def openai_batch_view(self, batch: Batch) -> dict:
        phase = self.progress(batch)
        status = "validating" if phase < 0.5 else "in_progress" if phase < 1.0 else "completed"
        done = status == "completed"
        created = int(batch.created_at)
        return {
            "id": batch.id, "object": "batch", "endpoint": batch.request.get("endpoint", "/v1/chat/completions"),
            "errors": None, "input_file_id": batch.request["input_file_id"],
            "completion_window": batch.request.get("completion_window", "24h"), "status": status,
            "output_file_id": batch.output_file_id if done else None, "error_file_id": None, "created_at": created,
            "in_progress_at": created if status != "validating" else None, "expires_at": created + 86400,
            "finalizing_at": None, "completed_at": int(time.time()) if done else None, "failed_at": None,
            "expired_at": None, "cancelling_at": None, "cancelled_at": None,
            "request_counts": {"total": batch.total, "completed": batch.total - batch.failed if done else 0,
                               "failed": batch.failed if done else 0},
            "metadata": batch.request.get("metadata"),
        }

    def anthropic_batch_create(self, body: dict) -> Batch:
        requests = body["requests"]
        batch = Batch(self.new_id("msgbatch_fake"), time.time(), time.monotonic(), len(requests), request=body)
        lines = [{"custom_id": r["custom_id"],
                  "result": {"type": "succeeded", "message": self.message(r.get("params") or {}, self.draw_bad())}}
                 for r in requests]
        batch.results = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
        self.batches[batch.id] = batch
        return batch

    def anthropic_batch_view(self, batch: Batch, base_url: str) -> dict:
        ended = self.progress(batch) >= 1.0
        return {
            "id": batch.id, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
            "request_counts": {"processing": 0 if ended else batch.total, "succeeded": batch.total if ended else 0,
                               "errored": 0, "canceled": 0, "expired": 0},
            "created_at": iso_time(batch.created_at), "expires_at": iso_time(batch.created_at + 86400),
            "ended_at": iso_time(time.time()) if ended else None, "archived_at": None, "cancel_initiated_at": None,
            "results_url": f"{base_url}/v1/messages/batches/{batch.id}/results" if ended else None,
        }

