"""Stage `traces` (not built yet)."""

from __future__ import annotations

from synth.llm.base import SynthError
from synth.runner import Stage, StageContext


async def run(ctx: StageContext) -> None:
    raise SynthError("stage `traces` is not built yet")


STAGE = Stage(
    name="traces",
    reads=('persona.jsonl', 'arcs.jsonl', 'phases.jsonl', 'events.jsonl', 'evidence.jsonl'),
    writes=('traces.jsonl',),
    templates=('traces_plan.j2', 'traces_write.j2'),
    tasks=('traces',),
    body=run,
)
