"""A small structured-output case for the local-model tests: a diary entry schema with bounded integers, an enum,
a date, a nested object and length limits, and a request for it."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from synth.llm.base import GenerationSettings, LLMRequest


class Place(BaseModel):
    city: str = Field(max_length=40)
    country: str | None = Field(default=None, max_length=40)


class DiaryEntry(BaseModel):
    title: str = Field(max_length=60)
    mood: Literal["calm", "tense", "joyful"]
    energy: int = Field(ge=1, le=10)
    day_offset: int = Field(ge=-3, le=45)
    day: dt.date
    place: Place
    tags: list[Annotated[str, Field(max_length=24)]] = Field(min_length=2, max_length=4)
    note: str | None = Field(default=None, max_length=160)


SCHEMA = DiaryEntry.model_json_schema()
SYSTEM = (
    "You write short diary entries for a synthetic person, as JSON.\n"
    "Person: Maria Lopez, 34, a nurse in Valencia, Spain. Conscientious, a little anxious; hikes on weekends "
    "and started learning the cello this spring. Her sister Ana lives in Madrid."
)


def request(day: int, sample: int = 0) -> LLMRequest:
    return LLMRequest(
        task="test_diary",
        messages=[
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Write Maria's diary entry for 2024-03-{day:02d}, after a long shift."},
        ],
        json_schema=SCHEMA,
        settings=GenerationSettings(temperature=0.7, max_tokens=256),
        sample=sample,
    )
