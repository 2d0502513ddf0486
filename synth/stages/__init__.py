"""The pipeline's stages in order; each module defines one `STAGE` (see synth.engine.stage.Stage)."""

from __future__ import annotations

from synth.engine.stage import StageRegistry
from synth.stages import (
    arcs,
    chats,
    distractors,
    events,
    filter,
    lifelog,
    persona,
    phases,
    qa,
    traces,
    translate,
    variants,
)

STAGES = StageRegistry(
    (module.STAGE.name, module.STAGE)
    for module in (persona, arcs, phases, events, chats, lifelog, variants, traces, qa, distractors, filter, translate)
)
