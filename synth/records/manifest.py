"""The manifest a stage writes beside its outputs: inputs, templates, settings, counts, calls, tokens, cost."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class StageManifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    stage: str
    persona_id: str
    status: Literal["complete", "failed", "budget"]
    signature: str
    input_hashes: dict[str, str]
    template_hashes: dict[str, str]
    settings: dict
    provider: str
    model: str
    records: dict[str, int]
    requests: int
    cache_hits: int
    provider_calls: int
    repairs: int
    retries: int
    failures: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cache_saving_usd: float
    cost_usd: float
    started_at: str
    finished_at: str
    wall_s: float
    # provider calls on the stage's longest dependent chain (synth.core.chain; None: a manifest from before it)
    chain_calls: int | None = None
    trace_tokens: int | None = None
    synth_version: str | None = None  # the synth that wrote it (None: a manifest from before versions were kept)


# File name → record model: the output layout of one persona directory.
