"""The pipeline's stages in order; each module defines one `STAGE` (see synth.runner.Stage)."""

from __future__ import annotations

from synth.runner import Stage
from synth.stages import arcs, distractors, events, filter, persona, phases, qa, traces

STAGES: dict[str, Stage] = {
    module.STAGE.name: module.STAGE
    for module in (persona, arcs, phases, events, traces, qa, distractors, filter)
}
