"""The records' common ground: question types and dimensions, the id minting, and the base `Record`."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict

from synth.config import question_types

Dimension = Literal["experience", "emotion", "opinion"]
EvidenceKind = Literal["fact", "emotion", "opinion"]
# A question type is a name in the registry (synth.config.question_types): CloneMem's eight, the extra types
# `[qa] types` may list, SubtleMemory's relation types (the variants stage), and any type registered after them
QuestionType = Annotated[str, AfterValidator(question_types.check_known)]
QUESTION_TYPES: tuple[str, ...] = question_types.names("clonemem")  # the built-ins, as the registry orders them
EXTRA_TYPES: tuple[str, ...] = question_types.names("extra")
RELATION_TYPES: tuple[str, ...] = question_types.names("relation")
RelationType = Literal[
    "relation_complementary_all", "relation_complementary_any", "relation_nuanced_temporal",
    "relation_nuanced_contextual", "relation_contradictory",
]
DIMENSIONS: tuple[str, ...] = Dimension.__args__  # type: ignore[attr-defined]
CHOICE_IDS = ("A", "B", "C", "D", "E")
CANNOT_DETERMINE = {
    "en": "Cannot be determined based on available information",
    "zh": "根据现有信息无法确定",
}

_NAMESPACE = uuid.UUID("6f1c2d1e-7a53-4c5e-9b1e-2f0d1c0a5e77")


def mint_id(parent: str, kind: str, *position: object) -> str:
    """Deterministic id from the parent id, the record kind and its position: a re-run mints the same ids."""
    return str(uuid.uuid5(_NAMESPACE, "/".join([parent, kind, *map(str, position)])))


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    persona_id: str
