"""Stage `persona` (not built yet)."""

from __future__ import annotations

from synth.llm.base import SynthError
from synth.runner import Stage, StageContext


async def run(ctx: StageContext) -> None:
    raise SynthError("stage `persona` is not built yet")


STAGE = Stage(
    name="persona",
    reads=(),
    writes=('persona.jsonl',),
    templates=('persona_enrich.j2',),
    tasks=('persona',),
    body=run,
)
