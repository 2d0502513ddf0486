"""Stage `phases` (not built yet)."""

from __future__ import annotations

from synth.llm.base import SynthError
from synth.runner import Stage, StageContext


async def run(ctx: StageContext) -> None:
    raise SynthError("stage `phases` is not built yet")


STAGE = Stage(
    name="phases",
    reads=('persona.jsonl', 'arcs.jsonl', 'major_events.jsonl'),
    writes=('phases.jsonl',),
    templates=('phases_init.j2', 'phases_generate.j2', 'phases_update.j2'),
    tasks=('phases',),
    body=run,
)
