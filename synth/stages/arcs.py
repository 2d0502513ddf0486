"""Stage `arcs` (not built yet)."""

from __future__ import annotations

from synth.llm.base import SynthError
from synth.runner import Stage, StageContext


async def run(ctx: StageContext) -> None:
    raise SynthError("stage `arcs` is not built yet")


STAGE = Stage(
    name="arcs",
    reads=('persona.jsonl',),
    writes=('seeds.jsonl', 'arcs.jsonl', 'major_events.jsonl'),
    templates=('arcs_seeds.j2', 'arcs_plan.j2', 'arcs_major_events.j2'),
    tasks=('arcs',),
    body=run,
)
