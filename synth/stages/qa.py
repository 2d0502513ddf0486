"""Stage `qa` (not built yet)."""

from __future__ import annotations

from synth.llm.base import SynthError
from synth.runner import Stage, StageContext


async def run(ctx: StageContext) -> None:
    raise SynthError("stage `qa` is not built yet")


STAGE = Stage(
    name="qa",
    reads=('persona.jsonl', 'arcs.jsonl', 'events.jsonl', 'evidence.jsonl', 'traces.jsonl'),
    writes=('qa.jsonl',),
    templates=('qa_plan.j2', 'qa_write.j2'),
    tasks=('qa',),
    body=run,
)
