"""Stage `distractors` (not built yet)."""

from __future__ import annotations

from synth.llm.base import SynthError
from synth.runner import Stage, StageContext


async def run(ctx: StageContext) -> None:
    raise SynthError("stage `distractors` is not built yet")


STAGE = Stage(
    name="distractors",
    reads=('persona.jsonl', 'qa.jsonl'),
    writes=('mcq.jsonl',),
    templates=('distractors_write.j2', 'distractors_validate.j2'),
    tasks=('distractors', 'distractors_validate'),
    body=run,
)
