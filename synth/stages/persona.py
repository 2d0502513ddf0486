"""Stage `persona`: enrich a Big Five seed into a profile with persistent social relations (CloneMem stage I)."""

from __future__ import annotations

import datetime as dt
from functools import lru_cache

from pydantic import BaseModel, Field, create_model

from synth.config.personas import PersonaSeed
from synth.engine.stage import Records, Stage, StageContext
from synth.records import Persona, Relation, mint_id
from synth.stages.common import unique_labels


class RelationDraft(BaseModel):
    name: str = Field(pattern=r"\S")  # a relation is named: prompts offer it by name ("the sister" has none)
    relation: str
    description: str


RELATIONS_SPAN = 3  # the profile lists min_relations to min_relations + RELATIONS_SPAN people


@lru_cache(maxsize=None)
def persona_answer(min_relations: int) -> type[BaseModel]:
    """The enrichment answer; the relations count is bounded so the minimum always holds."""
    return create_model(
        "PersonaEnrichment",
        name=(str, ...),
        age=(int, Field(ge=16, le=90)),
        gender=(str, ...),
        personality=(str, ...),
        family_history=(str, ...),
        education=(str, ...),
        occupation=(str, ...),
        concerns=(list[str], Field(min_length=2, max_length=5)),
        interests=(list[str], Field(min_length=2, max_length=5)),
        backstory=(str, ...),
        relations=(list[RelationDraft], Field(min_length=min_relations, max_length=min_relations + RELATIONS_SPAN)),
    )


def timeline(seed: PersonaSeed, timeline_days: int) -> tuple[dt.date, dt.date]:
    """The persona's timeline, both ends inclusive; `timeline_days` > 0 overrides the seed's length."""
    if timeline_days > 0:
        return seed.start, seed.start + dt.timedelta(days=timeline_days - 1)
    return seed.start, seed.end


def persona_variables(seed: PersonaSeed, start: dt.date, end: dt.date, min_relations: int) -> dict:
    """What persona_enrich.j2 is rendered with."""
    return {"big_five": seed.big_five.model_dump(), "note": seed.note, "start": start.isoformat(),
            "end": end.isoformat(), "min_relations": min_relations,
            "max_relations": min_relations + RELATIONS_SPAN}


def build_persona(seed: PersonaSeed, start: dt.date, end: dt.date, answer: BaseModel) -> Persona:
    """The seed and the model's enrichment as one profile; relation names made unique, relation ids minted."""
    names = unique_labels([r.name for r in answer.relations])
    relations = [
        Relation(id=mint_id(seed.id, "relation", i), name=name, relation=r.relation.strip(),
                 description=r.description.strip())
        for i, (name, r) in enumerate(zip(names, answer.relations, strict=True))
    ]
    return Persona(
        id=seed.id, persona_id=seed.id, language=seed.language, big_five=seed.big_five,
        start=start, end=end, scale=seed.scale, country=seed.country, name=answer.name.strip(), age=answer.age,
        gender=answer.gender.strip(), personality=answer.personality, family_history=answer.family_history,
        education=answer.education, occupation=answer.occupation, concerns=list(answer.concerns),
        interests=list(answer.interests), backstory=answer.backstory, relations=relations,
    )


class PersonaRun:
    """One run of the stage: the seed's timeline and the relations minimum, and its single unit."""

    def __init__(self, ctx: StageContext):
        self.ctx = ctx
        self.seed = ctx.seed
        self.min_relations = ctx.section.min_relations
        self.start, self.end = timeline(ctx.seed, ctx.settings.timeline_days)

    async def enrich(self) -> Records:
        answer = await self.ctx.ask("persona", "persona_enrich.j2",
                                    persona_variables(self.seed, self.start, self.end, self.min_relations),
                                    persona_answer(self.min_relations))
        return {"persona.jsonl": [build_persona(self.seed, self.start, self.end, answer)]}

    async def run(self) -> None:
        await self.ctx.units([(f"persona/{self.seed.id}", self.enrich)])


async def run(ctx: StageContext) -> None:
    await PersonaRun(ctx).run()


STAGE = Stage(
    name="persona",
    reads=(),
    writes=("persona.jsonl",),
    templates=("persona_enrich.j2",),
    tasks=("persona",),
    body=run,
    help="persona.jsonl: enrich the Big Five seed into a profile with relations",
)
