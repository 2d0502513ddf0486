"""Stage `events` (not built yet)."""

from __future__ import annotations

from synth.llm.base import SynthError
from synth.runner import Stage, StageContext


async def run(ctx: StageContext) -> None:
    raise SynthError("stage `events` is not built yet")


STAGE = Stage(
    name="events",
    reads=('persona.jsonl', 'arcs.jsonl', 'major_events.jsonl', 'phases.jsonl'),
    writes=('events.jsonl', 'evidence.jsonl'),
    templates=('events_generate.j2',),
    tasks=('events',),
    body=run,
)
