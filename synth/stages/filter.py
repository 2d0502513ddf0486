"""Stage `filter` (not built yet)."""

from __future__ import annotations

from synth.llm.base import SynthError
from synth.runner import Stage, StageContext


async def run(ctx: StageContext) -> None:
    raise SynthError("stage `filter` is not built yet")


STAGE = Stage(
    name="filter",
    reads=('persona.jsonl', 'mcq.jsonl', 'traces.jsonl'),
    writes=('final.jsonl', 'rejected.jsonl'),
    templates=('filter_sufficiency.j2', 'filter_blind.j2'),
    tasks=('filter_sufficiency', 'filter_blind'),
    body=run,
)
