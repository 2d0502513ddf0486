"""An open question that stands on its own: before an item leaves the qa stage, a no-context reader answers its
question and a judge compares that with the reference; a match sends the question back to its writer with what the
reader guessed, at most `[qa] standalone_rewrites` times."""

from __future__ import annotations

from pydantic import BaseModel

from synth.config import question_types
from synth.engine.stage import StageContext
from synth.llm.base import GenerationFailed, Reask
from synth.quality.rules import explicit_dates
from synth.records import QA


class OpenAnswer(BaseModel):
    """The no-context reader's best free-text answer to the open question."""

    answer: str


class OpenMatch(BaseModel):
    """The judge: does the reader's free answer say what the reference says (its key points)?"""

    matches: bool
    reason: str


def open_blind_variables(question: str, question_time: str) -> dict:
    """The open question and its time, nothing else: no options, no records."""
    return {"question": question, "question_time": question_time}


def open_judge_variables(question: str, reference: str, candidate: str) -> dict:
    return {"question": question, "reference": reference, "candidate": candidate}


async def guessed(ctx: StageContext, question: str, answer: str, question_time: str,
                  sample: int) -> dict | None:
    """What a no-context reader answered when the judge found it says what `answer` says (None: it did not)."""
    read = await ctx.ask("qa_open_blind", "filter_open_blind.j2", open_blind_variables(question, question_time),
                         OpenAnswer, sample=sample)
    match = await ctx.ask("qa_open_judge", "filter_open_judge.j2",
                          open_judge_variables(question, answer, read.answer), OpenMatch, sample=sample)
    if not match.matches:
        return None
    return {"question": question, "answer": read.answer, "reason": match.reason}


async def standing(ctx: StageContext, rounds: int, written: BaseModel, question_type: str, variables: dict,
                   model: type[BaseModel]) -> tuple[BaseModel, list[str]]:
    """`written` (a question and answer, from `qa_write.j2` with `variables`) checked by a no-context reader and,
    while the reader's answer matches, written again showing every earlier question and what it gave away
    (`guessed`), at most `rounds` times. Returns the last writing and the reader's matching answers (one per
    rewrite, and a last one when the rounds ran out on a guessable question). Unanswerable types are not checked:
    their reference says the records are silent."""
    if rounds <= 0 or not question_types.answerable(question_type):
        return written, []
    guesses: list[dict] = []
    for round_ in range(rounds + 1):
        found = await guessed(ctx, written.question.strip(), written.answer.strip(), variables["question_time"],
                              round_)
        if found is None:
            break
        guesses.append(found)
        if round_ == rounds:
            break
        written = await write(ctx, {**variables, "guessed": guesses}, model, sample=round_ + 1)
    return written, [g["answer"] for g in guesses]


def with_guesses(qa: QA, guesses: list[str]) -> QA:
    return qa.model_copy(update={"open_guesses": guesses}) if guesses else qa


DATED = "question: names"  # how `undated`'s re-ask starts (a question still dated is kept; the filter rejects it)


def undated(answer: BaseModel) -> None:
    """A question names no year, month, date or weekday (the prompt's rule, which the filter enforces): re-asked with
    what it named. A capable writer asked about "一月" in three of sixteen questions, each then rejected."""
    found = explicit_dates(answer.question)
    if found:  # the words as written (a zh prompt holds no English label)
        raise Reask("dated_question", f"{DATED} “{found[0]}”; a question names no year, month, date or weekday",
                    date=f"“{found[0]}”")


async def write(ctx: StageContext, variables: dict, model: type[BaseModel], sample: int = 0) -> BaseModel:
    """One `qa_write.j2` answer, re-asked while its question is dated (`undated`); when the re-asks run out, the
    last answer without the check (kept: the filter names the date in `rejected.jsonl`)."""
    try:
        return await ctx.ask("qa_write", "qa_write.j2", variables, model, check=undated, sample=sample)
    except GenerationFailed as exc:
        if DATED not in str(exc):
            raise
        return await ctx.ask("qa_write", "qa_write.j2", variables, model, sample=sample)
