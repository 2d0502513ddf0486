"""Stage `chats`: the persona's group chats (EverMemBench). Groups come from the relations (family, work team,
friends) with roles and an 8-dimension communication style per member; each group gets one chat day per active
day (a day with an event a member takes part in), written with the day's evidence bound by enum and the group's
generator-only rolling summaries as state, then validated at four levels with a bounded repair loop."""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from collections.abc import Sequence
from functools import lru_cache, partial
from typing import Literal

from pydantic import BaseModel, Field, create_model

from synth.config.personas import BigFive
from synth.config.settings import ChatsSettings
from synth.core.calendar import country_of, holidays_between
from synth.engine.stage import Records, Stage, StageContext
from synth.life.spoken import format_lines, line_problems, repair_diff
from synth.records import (
    STYLE_DIMENSIONS,
    ChatDay,
    Event,
    Evidence,
    Group,
    GroupMember,
    Person,
    Persona,
    Repair,
    SpokenCheck,
    Utterance,
    mint_id,
)
from synth.stages.common import SpokenContext, answer_tokens, relation_holds, unique_labels

KINDS = ("family", "work", "friends")


# ------------------------------------------------------------------------------------------------ groups

def relation_kind(relation: str, section: ChatsSettings) -> str:
    text = relation.lower()
    if relation_holds(relation, section.work_words):
        return "work"
    if any(word in text for word in section.family_words):
        return "family"
    return "friends"


def _level(x: float) -> int:
    return 1 + round(4 * min(1.0, max(0.0, x)))


def persona_style(big_five: BigFive, kind: str) -> dict[str, int]:
    """The persona's own style from her Big Five; a work group is a notch more formal, with fewer emoji."""
    b = big_five
    style = {"formality": _level(b.conscientiousness), "verbosity": _level(b.extraversion),
             "humour": _level((b.extraversion + b.openness) / 2), "jargon": _level(b.openness * 0.7),
             "emoji": _level(b.extraversion * 0.8), "directness": _level(1 - b.agreeableness * 0.6),
             "warmth": _level(b.agreeableness), "questioning": _level((b.openness + b.neuroticism) / 2)}
    return work_adjusted(style, kind)


def member_style(group_id: str, person_id: str, kind: str) -> dict[str, int]:
    """A member's style: a deterministic draw per member and group (a re-run draws the same)."""
    rng = random.Random(int.from_bytes(hashlib.sha256(f"{group_id}/{person_id}".encode()).digest()[:8], "big"))
    return work_adjusted({name: rng.randint(1, 5) for name in STYLE_DIMENSIONS}, kind)


def work_adjusted(style: dict[str, int], kind: str) -> dict[str, int]:
    if kind != "work":
        return style
    return {**style, "formality": min(5, style["formality"] + 1), "emoji": max(1, style["emoji"] - 1),
            "jargon": min(5, style["jargon"] + 1)}


def build_groups(persona: Persona, section: ChatsSettings, people: Sequence[Person] = ()) -> list[Group]:
    """One group per kind that has at least one person in it, the persona first; roles are the relations. The
    people are the registry's (relations, then those introduced later, who join from their first day); without a
    registry, the persona's relations."""
    by_kind: dict[str, list] = {kind: [] for kind in KINDS}
    for relation in [p for p in people if p.kind == "person"] or persona.relations:
        by_kind[relation_kind(relation.relation, section)].append(relation)
    groups = []
    for kind in KINDS:
        if not by_kind[kind]:
            continue
        group_id = mint_id(persona.id, "group", kind)
        names = unique_labels([persona.name] + [r.name for r in by_kind[kind]])
        members = [GroupMember(person_id=persona.id, name=names[0], role="self",
                               style=persona_style(persona.big_five, kind))]
        members += [GroupMember(person_id=r.id, name=name, role=r.relation.strip() or kind,
                                style=member_style(group_id, r.id, kind), since=getattr(r, "first_date", None))
                    for r, name in zip(by_kind[kind], names[1:], strict=True)]
        groups.append(Group(id=group_id, persona_id=persona.id, kind=kind, members=members))
    return groups


def active_days(group: Group, events: Sequence[Event], evidence: dict[str, list[Evidence]],
                limit: int) -> list[tuple[dt.date, list[Event]]]:
    """The days a member of `group` takes part in an event that has evidence, oldest first (the first `limit`)."""
    ids = {m.person_id for m in group.members}
    days: dict[dt.date, list[Event]] = {}
    for event in sorted(events, key=lambda e: (e.time, e.id)):
        if ids & set(event.participant_ids) and evidence.get(event.id):
            days.setdefault(event.time.date(), []).append(event)
    out = sorted(days.items())
    return out[:limit] if limit else out


def rolling_state(previous: Sequence[ChatDay], date: dt.date, section: ChatsSettings) -> dict:
    """The generator-only state a chat day sees: the week's day summaries, the earlier months' summaries, and the
    directives still open — all from days before `date` (never exported)."""
    week = [{"date": d.date.isoformat(), "summary": d.summary} for d in previous
            if (date - d.date).days <= 7][-section.summary_days:] if section.summary_days else []
    months: dict[str, list[str]] = {}
    for d in previous:
        if (d.date.year, d.date.month) != (date.year, date.month):
            months.setdefault(f"{d.date:%Y-%m}", []).append(d.summary)
    monthly = [{"month": m, "summary": " ".join(s)[:600]} for m, s in sorted(months.items())]
    monthly = monthly[-section.monthly_summaries:] if section.monthly_summaries else []
    open_items = previous[-1].open_items if previous else []
    return {"week": week, "months": monthly, "open_items": open_items}


# ------------------------------------------------------------------------------------------------ answers

@lru_cache(maxsize=None)
def day_answer(speakers: tuple[str, ...], evidence: int, low: int, high: int) -> type[BaseModel]:
    """A chat day: speakers and evidence are enums, the time is a bounded minute of the day."""
    line = create_model(
        "ChatLine",
        speaker=(Literal[speakers], ...),
        minute=(int, Field(ge=0, le=1439)),
        text=(str, Field(min_length=2)),  # a constrained local model wrote blank lines: a line says something
        evidence=(list[Literal[tuple(range(1, evidence + 1))]], Field(max_length=evidence)),
    )
    return create_model("ChatDayDraft", utterances=(list[line], Field(min_length=low, max_length=high)),
                        summary=(str, ...), open_items=(list[str], Field(max_length=5)))


class ChatVerdict(BaseModel):
    """Levels 2–4 of the daily validation, as one judge answer."""

    completion_ok: bool  # every bound evidence is conveyed, the day reads finished
    logic_ok: bool  # nothing contradicts the rolling summaries or the open items
    style_ok: bool  # each member sounds like their role and style
    problems: str


def lines_of(answer: BaseModel, date: dt.date, group: Group, evidence: Sequence[Evidence]) -> list[Utterance]:
    """The answer's utterances as records; a line with no text is left out (the bundled local model wrote one: a
    chat line says something, and evidence it claimed to carry is then unbound, which the line rules send to
    repair)."""
    ids = {m.name: m.person_id for m in group.members}
    midnight = dt.datetime.combine(date, dt.time())
    return [Utterance(speaker=u.speaker, speaker_id=ids.get(u.speaker, ""),
                      time=midnight + dt.timedelta(minutes=u.minute), text=u.text.strip(),
                      evidence_ids=list(dict.fromkeys(evidence[i - 1].id for i in u.evidence)))
            for u in answer.utterances if u.text.strip()]


def verdict_problems(verdict: ChatVerdict) -> list[str]:
    levels = (("completion", verdict.completion_ok), ("logic", verdict.logic_ok), ("style", verdict.style_ok))
    failed = [name for name, ok in levels if not ok]
    return [f"{name}: {verdict.problems.strip()}" for name in failed]


def annotated(lines: Sequence[Utterance], evidence: Sequence[Evidence]) -> list[dict]:
    """The lines as the repair prompt shows them: formatted, with the evidence numbers each carries."""
    number = {e.id: i + 1 for i, e in enumerate(evidence)}
    return [{"line": format_lines([u]), "evidence": [number[e] for e in u.evidence_ids if e in number]}
            for u in lines]


# ------------------------------------------------------------------------------------------------ stage

class ChatWriter(SpokenContext):
    """What the units share; a unit writes one group's chat days in order (the rolling state is a chain)."""

    section: ChatsSettings

    @property
    def country(self) -> str:
        return country_of(self.ctx.persona, self.ctx.settings.holiday_countries, self.ctx.language)

    def event_view(self, event: Event) -> dict:
        return {"time": event.time.strftime("%H:%M"), "title": event.title, "description": event.description,
                "location": event.location, "participants": [self.names.get(p, p) for p in event.participant_ids]}

    async def group(self, group: Group) -> Records:
        days: list[ChatDay] = []
        for index, (date, events) in enumerate(active_days(group, self.ctx.events, self.evidence,
                                                             self.section.max_days_per_group)):
            days.append(await self.day(group, index, date, events, rolling_state(days, date, self.section)))
        return {"chats.jsonl": days}

    async def day(self, group: Group, index: int, date: dt.date, events: list[Event], state: dict) -> ChatDay:
        evidence = [e for event in events for e in self.evidence[event.id]]
        speakers = tuple(m.name for m in group.members if m.since is None or m.since <= date)
        model = day_answer(speakers, len(evidence), self.section.min_utterances, self.section.max_utterances)
        present = group.model_copy(update={"members": [m for m in group.members if m.name in speakers]})
        base = {"persona": self.persona_view, "group": present.model_dump(mode="json"), "date": date.isoformat(),
                "weekday": date.weekday(), "holidays": holidays_between(self.country, self.ctx.language, date, date),
                "events": [self.event_view(e) for e in events],
                "evidence": [e.statement for e in evidence], "state": state,
                "min_utterances": self.section.min_utterances, "max_utterances": self.section.max_utterances}
        tokens = answer_tokens(self.ctx, 60 * self.section.max_utterances + 200)
        answer = await self.ctx.ask("chats", "chats_day.j2", base, model, max_tokens=tokens)
        lines = lines_of(answer, date, group, evidence)
        earliest = {e.id: event.time for event in events for e in self.evidence[event.id]}
        day_start = dt.datetime.combine(date, dt.time())
        day_end = dt.datetime.combine(date, dt.time(23, 59, 59))

        async def problems_of(lines: list[Utterance]) -> list[str]:
            if not self.section.judge:
                return []
            verdict = await self.ctx.ask("chats_validate", "chats_validate.j2",
                                         {**base, "lines": format_lines(lines)}, ChatVerdict)
            return verdict_problems(verdict)

        rules = line_problems(lines, [e.id for e in evidence], self.persona.name, earliest, day_start, day_end)
        judged = await problems_of(lines)
        check = SpokenCheck(rule_problems=rules, judge_problems=judged)
        problems = rules + judged
        for round_ in range(1, self.section.max_repairs + 1):
            if not problems:
                break
            repaired = await self.ctx.ask("chats", "chats_repair.j2",
                                          {**base, "lines": annotated(lines, evidence), "problems": problems},
                                          model, max_tokens=tokens, sample=round_)
            fixed = lines_of(repaired, date, group, evidence)
            check.repairs.append(Repair(round=round_, problems=problems, diff=repair_diff(lines, fixed)))
            lines, answer = fixed, repaired
            rules = line_problems(lines, [e.id for e in evidence], self.persona.name, earliest, day_start, day_end)
            problems = rules + await problems_of(lines)
        check.flagged = bool(problems)
        check.final_problems = problems
        return ChatDay(id=mint_id(group.id, "chat", date.isoformat()), persona_id=self.persona.id, group_id=group.id,
                       date=date, event_ids=[e.id for e in events], evidence_ids=[e.id for e in evidence],
                       utterances=lines, summary=answer.summary.strip(),
                       open_items=[s.strip() for s in answer.open_items if s.strip()], check=check)


async def run(ctx: StageContext) -> dict[str, list] | None:
    if "group_chat" not in ctx.settings.sources:
        return {"groups.jsonl": [], "chats.jsonl": []}
    groups = build_groups(ctx.persona, ctx.section, ctx.people)
    writer = ChatWriter(ctx)
    talking = [g for g in groups if active_days(g, ctx.events, writer.evidence, 1)]
    if ctx.section.max_groups:
        talking = talking[:ctx.section.max_groups]
    await ctx.units([(group.id, partial(writer.group, group)) for group in talking])
    return {"groups.jsonl": groups, **{k: v for k, v in ctx.collected().items() if k == "chats.jsonl"}}


STAGE = Stage(
    name="chats",
    reads=("persona.jsonl", "people.jsonl", "events.jsonl", "evidence.jsonl"),
    writes=("groups.jsonl", "chats.jsonl"),
    templates=("chats_day.j2", "chats_validate.j2", "chats_repair.j2"),
    tasks=("chats", "chats_validate"),
    body=run,
    help="groups.jsonl, chats.jsonl: group chats per group and active day, validated and repaired "
         "(when sources include group_chat)",
    config_keys=("sources",),
    judges=("chats_validate",),
)
