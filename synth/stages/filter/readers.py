"""The filter's readers and judges: the answers each model check returns, what the no-context readers see (the
question and options, the options alone, or the question alone), and a check unit's record of them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, create_model

from synth.quality import rules
from synth.records import MCQ
from synth.stages.qa import standalone
from synth.stages.qa.standalone import OpenAnswer, OpenMatch  # noqa: F401  (re-exported: the filter asks for them)


class Sufficiency(BaseModel):
    supported: bool
    reason: str


class Uniqueness(BaseModel):
    """EverMemBench's uniqueness check: do traces other than the item's own answer the question differently?"""

    only_answer: bool  # true: none of the other traces gives a different right answer
    reason: str


class Blind(BaseModel):
    choice: Literal["A", "B", "C", "D", "E"]
    confidence: float = Field(ge=0, le=1)
    reason: str


# --------------------------------------------------------------------------------------- model filters

class SingleTrace(BaseModel):
    trace_id: str
    choice: str
    confidence: float


def inference_model(count: int) -> type[BaseModel]:
    """The inference judge's answer: which of the `count` numbered statements state the answer outright."""
    return create_model("InferenceGrounding", states_answer=(list[Literal[tuple(range(1, count + 1))]], ...),
                        reason=(str, ...))


class Checked(BaseModel):
    """A check unit's record (journaled, not written out): the model judgements of one item."""

    id: str
    supported: bool
    support_reason: str
    blind_votes: list[str]  # each blind sample's pick, mapped back to the item's own letters
    blind_confidence: float  # the first sample's
    blind_reason: str
    single_trace: list[SingleTrace] = []  # multi-point items: what a judge picked from each needed trace alone
    stating: list[str] = []  # inference items: the evidence ids the judge found stating the answer outright
    stating_reason: str = ""
    unique: bool = True  # the uniqueness judge found no other trace answering the question differently
    unique_reason: str = ""
    choices_only: str = ""  # the pick of a reader shown the options without the question ("" not asked)
    open_answer: str = ""  # the no-context reader's free-text answer ("" not asked)
    open_match: bool | None = None  # the judge found it matches the reference (None: not asked)
    open_reason: str = ""

def blind_order(count: int, sample: int) -> list[int]:
    """Sample k shows A–D rotated by k (E stays last): the same judge, a different order each time, so a pick
    that follows the content and not the position is what counts."""
    shift = sample % count
    return list(range(shift, count)) + list(range(shift))


def blind_choices(item: MCQ, sample: int) -> tuple[list[dict], dict[str, str]]:
    """The options as sample `sample` shows them, and shown letter → the item's own letter."""
    heads = [c for c in item.choices if c.id in rules.POSITIONS]
    tail = [c for c in item.choices if c.id not in rules.POSITIONS]
    shown = [heads[i] for i in blind_order(len(heads), sample)] + tail
    letters = [c.id for c in item.choices]
    return ([{"id": letters[n], "text": c.text} for n, c in enumerate(shown)],
            {letters[n]: c.id for n, c in enumerate(shown)})


def inference_statements(item: MCQ) -> list:
    """The evidence an inference item rests on (one per evidence id), as its judge numbers them; [] otherwise."""
    if item.question_type != "inference":
        return []
    return list({ref.evidence_id: ref for ref in item.evidence}.values())


# ------------------------------------------------------------------ readers that match what a guesser uses

class ChoicesOnly(BaseModel):
    """A pick among the options without the question (Balepur et al., ACL 2024): above chance, the options alone
    give the key away."""

    choice: Literal["A", "B", "C", "D", "E"]
    reason: str


def choices_only_variables(item: MCQ) -> dict:
    """The options as the item lists them, nothing else: no question, no time."""
    return {"choices": [c.model_dump() for c in item.choices]}


def open_blind_variables(item: MCQ) -> dict:
    """The open question and its time, nothing else: no options, no records."""
    return standalone.open_blind_variables(item.question, item.question_time.isoformat(timespec="minutes"))


def open_judge_variables(item: MCQ, answer: str) -> dict:
    return standalone.open_judge_variables(item.question, item.answer, answer)
