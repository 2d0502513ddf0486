"""Writing an event's planned traces: one call per trace, or one call for all of them (`[traces] write_together`),
then each trace through the privacy checks, a leaking one re-written alone with what it gave away named as hidden."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, Field, create_model

from synth.core import chain
from synth.core.calendar import MEANT_WORDS, MEANT_ZH
from synth.core.text import clipped
from synth.core.tokens import estimate_tokens
from synth.llm.base import Reask
from synth.records import Event, Evidence, Trace, mint_id
from synth.stages.common import answer_tokens, medium_band

# what one trace of a joint answer shows the writer: the rest of the variables is the event's, shown once
TRACE_FIELDS = ("medium", "intent", "audience", "key_information", "carried", "time", "min_words", "max_words", "voice")


@lru_cache(maxsize=None)
def privacy_verdict(statements: int) -> type[BaseModel]:
    """The privacy judge's answer: which of the numbered private statements the public text gives away."""
    return create_model("PrivacyVerdict",
                        revealed=(list[Literal[tuple(range(1, statements + 1))]], Field(max_length=statements)),
                        reason=(str, ...))


class TraceText(BaseModel):
    # minLength reaches a grammar-bound local model (it once wrote "content": ""); the check below refuses blank text
    content: str = Field(min_length=20)


@lru_cache(maxsize=None)
def texts_answer(count: int) -> type[BaseModel]:
    """A joint answer: exactly `count` trace texts, in the order of the plans."""
    return create_model("TraceTexts", traces=(list[TraceText], Field(min_length=count, max_length=count)))


def has_content(answer: TraceText) -> None:
    """A trace with no text carries no evidence and breaks every downstream check: ask again (a repair), never keep
    it. The schema's minLength binds a grammar; this refuses text that is only whitespace."""
    if not answer.content.strip():
        raise Reask("empty_trace", "content: empty")


def have_content(answer: BaseModel) -> None:
    """`has_content` for each text of a joint answer; the error names the trace."""
    for k, text in enumerate(answer.traces):
        if not text.content.strip():
            raise Reask("empty_trace", f"traces[{k}].content: empty", number=str(k + 1))


def trace_time(event: Event, delay_hours: float, max_delay: int) -> dt.datetime:
    """When a trace is written: `delay_hours` (a fraction too) after its event, at most `max_delay`, to the minute."""
    return event.time + dt.timedelta(minutes=round(min(delay_hours, max_delay) * 60))


# what a trace tells of the day after its event ("the replies came the next morning", 第二天一早), and the hour of that
# day it tells of at the earliest (morning unless it names a later part of the day)
NEXT_DAY = re.compile(r"\b(?:next|following)\s+(morning|day|afternoon|evening|night)\b|\bthe\s+day\s+after\b"
                      r"|(?:第二天|次日|隔天|翌日|转天)(一早|早上|早晨|上午|中午|下午|傍晚|晚上|夜里)?", re.IGNORECASE)
DAY_PART = {"afternoon": 13, "evening": 18, "night": 20, "中午": 12, "下午": 13, "傍晚": 18, "晚上": 19, "夜里": 21}
# an intention before it in the same sentence ("plans to call her the next day", 打算第二天去) is not yet told
INTENDED = re.compile(rf"\b(?:{MEANT_WORDS}|decides? to|decided to|promises? to|promised to)\b|{MEANT_ZH}|决定",
                      re.IGNORECASE)
# an earlier time named before it in the same sentence: the day after *that*, retold ("过年那天……第二天一早就走了");
# not "that night" or 当晚, which may well be the event's own
RETOLD = re.compile(r"\blast\s+(?:week|month|year|time|summer|winter|spring|autumn|christmas)\b|\bago\b"
                    r"|\bback\s+(?:then|in)\b|过年|除夕|上次|上回|去年|上个月|上周|上礼拜|那年|小时候|以前", re.IGNORECASE)
# what it is for or due by ("reagents for the next day", 为第二天): a day to come, not one told
PURPOSE = re.compile(r"\b(?:for|by|until|before)\s+(?:the\s+)?$|(?:为|给)$", re.IGNORECASE)
# a holiday or a stretch whose day two it names (元旦第二天, 开学第二天): an ordinal, not the day after the event
ORDINAL = re.compile(r"(?:元旦|春节|过年|新年|节日|假期|放假|长假|开学|入职|上班|开工|复工|住院|出差|节后|年后|婚后|军训)的?$")


def told_delay(event: Event, key_information: str, delay_hours: float, max_delay: int) -> float:
    """The plan's delay, moved on to the day after the event when its key information tells what happened then:
    a capable planner timed a message thread 00:42 after an evening event while its key information held the
    replies "the next morning" (the plan prompt says a trace is written after all it tells). Not moved past
    `max_delay`, nor for what the person only means to do then, nor for the day after another day the sentence
    names (a retold quarrel: "过年那天……第二天一早就走了"), nor for day two of a holiday ("元旦第二天"), nor for
    what something is for ("reagents for the next day"): capable writers got an evening post, a bedtime message and
    an evening diary, each planned for that night, timed for the next morning."""
    latest = 0.0
    for found in NEXT_DAY.finditer(key_information):
        sentence = re.split(r"[.!?;。！？；\n]", key_information[:found.start()])[-1]
        if any(p.search(sentence) for p in (INTENDED, RETOLD, ORDINAL, PURPOSE)):
            continue
        hour = DAY_PART.get((found.group(1) or found.group(2) or "").lower(), 8)
        then = dt.datetime.combine(event.time.date() + dt.timedelta(days=1), dt.time(hour))
        latest = max(latest, (then - event.time).total_seconds() / 3600)
    return min(max(delay_hours, latest), max(delay_hours, max_delay))


def voice_reference(written: list[Trace], medium: str, before: dt.datetime, count: int, chars: int) -> list[dict]:
    """The person's latest `count` traces of `medium` written before `before`, oldest first, each cut to `chars`
    after a whole sentence: the writer's voice reference (a capable writer was shown a diary stopping mid-quote,
    "可我好像从来没被问过，“以后”里")."""
    same = sorted((t for t in written if t.medium == medium and t.time < before), key=lambda t: (t.time, t.id))
    return [{"time": t.time.isoformat(timespec="minutes"), "content": clipped(t.content, chars)}
            for t in same[len(same) - count:]] if count > 0 else []


def write_variables(context: dict, plan: BaseModel, carried: list[Evidence], time: dt.datetime,
                    words: tuple[int, int], voice: list[dict] | None = None, medium: str | None = None,
                    added: frozenset[str] = frozenset()) -> dict:
    """What the writer sees: the plan without its `reasons` (a planner's meta-comment is not the person's voice),
    `voice`: the person's earlier traces of the same medium, if any, and `medium` when code re-routed the plan's.
    `hidden` (a rewrite): the private statements an earlier draft of this public trace gave away. Each carried
    evidence says whether code `added` it to a plan that did not list it (its intent does not mention it)."""
    return {**context, "people": context.get("writer_people", context.get("people", [])),
            "medium": medium or plan.medium, "intent": plan.intent, "audience": plan.audience,
            "key_information": plan.key_information,
            "carried": [{**e.model_dump(mode="json"), "added": e.id in added} for e in carried],
            "time": time.isoformat(timespec="minutes"), "min_words": words[0], "max_words": words[1],
            "voice": voice or [], "hidden": []}


def joint_variables(each: list[dict]) -> dict:
    """What the writer of several traces sees: the event's variables once, then per trace (in plan order) its own
    fields (`TRACE_FIELDS`: medium, plan, evidence, time, length band, voice reference)."""
    shared = {k: v for k, v in each[0].items() if k not in TRACE_FIELDS and k != "hidden"}
    return {**shared, "traces": [{k: v[k] for k in TRACE_FIELDS} for v in each]}


def build_trace(answer: TraceText, plan: BaseModel, event: Event, carried: list[Evidence], k: int,
                time: dt.datetime, persona_id: str, medium: str | None = None) -> Trace:
    """The `k`-th trace of `event`, written from `plan` (in `medium` when code re-routed it) and carrying
    `carried`."""
    content = answer.content.strip()
    return Trace(
        id=mint_id(event.id, "trace", k), persona_id=persona_id, event_id=event.id,
        evidence_ids=[e.id for e in carried], medium=medium or plan.medium, time=time, intent=plan.intent.strip(),
        audience=plan.audience.strip(), content=content, tokens=estimate_tokens(content),
        reasons=plan.reasons.strip(),
    )


@dataclass(frozen=True)
class Draft:
    """One trace ready to be written: its plan, medium, evidence, index, time, prompt variables and answer room."""

    plan: BaseModel
    medium: str
    carried: list[Evidence]
    k: int
    time: dt.datetime
    variables: dict
    tokens: int


class TraceWriting:
    """The writing half of the traces stage's `TraceWriter` (which sets ctx, persona, board, voice, privacy,
    rule, privacy_repairs, privacy_judge, judge_statements and write_together)."""

    async def draft(self, context: dict, event: Event, plan: BaseModel, medium: str, carried: list[Evidence],
                    k: int, added: frozenset[str], max_delay: int) -> Draft:
        """A trace's write variables, once the earlier traces its voice reference reads are written."""
        time = trace_time(event, plan.delay_hours, max_delay)
        read = await self.board.reference(event.id, medium, time) if self.board is not None else []
        voice = voice_reference(read, medium, time, *self.voice)
        words = medium_band(self.ctx.section, medium, self.ctx.language)
        return Draft(plan, medium, carried, k, time,
                     write_variables(context, plan, carried, time, words, voice, medium, added),
                     answer_tokens(self.ctx, 3 * words[1] + 200))

    async def write_all(self, context: dict, event: Event,
                        routed: list[tuple[BaseModel, str, list[Evidence], int, frozenset[str]]],
                        max_delay: int) -> list[Trace]:
        """The event's traces: with more than one and `write_together`, one call writes them all (the event's
        context sent once, not once a trace); otherwise one call each. Either way each goes through `settle`."""
        if not (self.write_together and len(routed) > 1):
            async def alone(plan, medium, carried, k, added) -> Trace:
                return await self.settle(await self.draft(context, event, plan, medium, carried, k, added, max_delay),
                                         event)
            return await chain.gather(*(alone(*item) for item in routed))
        drafts = await chain.gather(*(self.draft(context, event, *item, max_delay) for item in routed))
        answer = await self.ctx.ask("traces", "traces_write_all.j2", joint_variables([d.variables for d in drafts]),
                                    texts_answer(len(drafts)), check=have_content,
                                    max_tokens=answer_tokens(self.ctx, sum(d.tokens for d in drafts)))
        return await chain.gather(*(self.settle(d, event, text) for d, text in zip(drafts, answer.traces,
                                                                                    strict=True)))

    async def settle(self, draft: Draft, event: Event, first: TraceText | None = None) -> Trace:
        """One trace, from `first` (its text in a joint answer) or its own call; a public one that gives away a
        private statement (its phase's or a recent one: synth.quality.privacy) is written again alone with those
        statements named as hidden, at most `privacy_repairs` times — what is left is kept and reported by
        `synth validate` and `synth stats`."""
        variables, trace, rewrites, flagged = draft.variables, None, 0, []
        for round_ in range(self.privacy_repairs + 1):
            answer = first if round_ == 0 and first is not None else await self.ctx.ask(
                "traces", "traces_write.j2", variables, TraceText, check=has_content, max_tokens=draft.tokens,
                sample=round_)
            trace = build_trace(answer, draft.plan, event, draft.carried, draft.k, draft.time, self.persona.id,
                                draft.medium)
            leaks = [leak.evidence_id for leak in self.privacy.leaks(trace)]
            flagged = [] if leaks else await self.judged(trace, round_)
            if not (leaks or flagged) or round_ == self.privacy_repairs:
                break
            rewrites += 1
            variables = {**variables, "hidden": [self.privacy.evidence[i].statement for i in leaks or flagged]}
        done = trace.model_copy(update={"privacy_rewrites": rewrites, "privacy_flagged": flagged,
                                        "privacy_judged": self.judges(trace)})
        if self.board is not None:
            self.board.wrote(done)
        return done

    def judges(self, trace: Trace) -> bool:
        return (self.privacy_judge and trace.medium in self.rule.public_media
                and bool(self.privacy.exposed(trace)))

    async def judged(self, trace: Trace, sample: int) -> list[str]:
        """The private evidence the judge finds given away in a public trace (`PrivacyIndex.exposed`, at most
        `privacy_judge_statements` of it: the trace's phase first, then the newest; none asked when the judge is
        off, the medium is private or nothing before it is hidden)."""
        if not self.judges(trace):
            return []
        exposed = self.privacy.exposed(trace)[:self.judge_statements]
        # what the trace is meant to tell (its own public evidence) is no leak where it touches a private statement:
        # a capable writer was asked twice to rewrite a post whose required evidence ("slept under five hours every
        # night this week") overlapped a private one ("lay awake until two that night")
        allowed = [self.privacy.evidence[i].statement for i in trace.evidence_ids
                   if i in self.privacy.evidence and not self.privacy.evidence[i].private]
        verdict = await self.ctx.ask("traces_privacy", "traces_privacy.j2",
                                     {"medium": trace.medium, "content": trace.content, "allowed": allowed,
                                      "statements": [statement for _, statement in exposed]},
                                     privacy_verdict(len(exposed)), sample=sample,
                                     max_tokens=answer_tokens(self.ctx, 200))
        return [exposed[i - 1][0] for i in dict.fromkeys(verdict.revealed)]
