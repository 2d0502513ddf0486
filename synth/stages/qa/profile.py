"""EverMemBench's profile question family for the `qa` stage: how does someone usually talk in one of the persona's
group chats? Code picks the member, the style dimensions the item tests (the member's most marked ones in
groups.jsonl) and the line whose fact the options convey; the model writes the question and four options, one per
cell of the 2×2 (fact right/wrong × style right/wrong), each with the style levels it claims; a model-free check
(synth.quality.rules.profile_problems) holds the claims to the stored levels and the cells."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field, create_model

from synth.config import question_types
from synth.engine.stage import Records, StageContext
from synth.life.spoken import format_line
from synth.quality import rules
from synth.records import (
    PROFILE_CELLS,
    QA,
    STYLE_DIMENSIONS,
    ChatDay,
    EvidenceRef,
    Group,
    GroupMember,
    LifeArc,
    Profile,
    ProfileOption,
    Utterance,
    mint_id,
)
from synth.stages.qa.duration import _rank, arc_for, seeded_time

if TYPE_CHECKING:
    from synth.stages.qa import Planner

PROFILE = "profile_style"


@dataclass(frozen=True)
class ProfileAnchor:
    """One profile item's footing: a member of a group, the line of theirs whose fact the options convey (its
    evidence and the chat day's trace), and their lines up to that day (the style's evidence)."""

    group: Group
    member: GroupMember
    line: Utterance
    evidence_id: str
    trace_id: str
    lines: tuple[Utterance, ...]
    style_trace_ids: tuple[str, ...]


def chat_trace_id(day: ChatDay) -> str:
    return mint_id(day.id, "trace", 0)  # synth.life.spoken.chat_trace mints it so


def speaks(line: Utterance, member: GroupMember) -> bool:
    return line.speaker_id == member.person_id if line.speaker_id else line.speaker == member.name


def profile_anchors(groups: Sequence[Group], chats: Sequence[ChatDay], trace_ids: set[str], count: int,
                    min_days: int, max_lines: int) -> list[ProfileAnchor]:
    """Up to `count` anchors, one per (group, member) who spoke on at least `min_days` chat days: the member's
    newest line carrying evidence, with their lines up to that day (the newest `max_lines`). A fixed
    pseudo-random order (the ids' hash) spreads them over groups and members, deterministically."""
    anchors = []
    for group in groups:
        days = sorted((d for d in chats if d.group_id == group.id and chat_trace_id(d) in trace_ids),
                      key=lambda d: d.date)
        for member in group.members:
            spoken = [(d, [u for u in d.utterances if speaks(u, member)]) for d in days]
            spoken = [(d, lines) for d, lines in spoken if lines]
            carrying = [(d, u) for d, lines in spoken for u in lines if u.evidence_ids]
            if len(spoken) < min_days or not carrying:
                continue
            day, line = carrying[-1]
            before = [(d, u) for d, lines in spoken if d.date <= day.date for u in lines]
            anchors.append(ProfileAnchor(
                group=group, member=member, line=line, evidence_id=line.evidence_ids[0], trace_id=chat_trace_id(day),
                lines=tuple(u for _, u in before[-max_lines:]),
                style_trace_ids=tuple(dict.fromkeys(chat_trace_id(d) for d, _ in before))))
    anchors.sort(key=lambda a: _rank(a.group.id, a.member.person_id))
    return anchors[:count]


def marked_dimensions(style: dict[str, int], count: int) -> tuple[str, ...]:
    """The member's most marked dimensions (farthest from the middle level 3; ties in STYLE_DIMENSIONS order)."""
    ranked = sorted(STYLE_DIMENSIONS, key=lambda d: (-abs(style.get(d, 3) - 3), STYLE_DIMENSIONS.index(d)))
    return tuple(ranked[:count])


def wrong_level(level: int) -> int:
    """The level a style-wrong option shows: the mirror image (1 ↔ 5, 2 ↔ 4), and 5 for the middle — always at
    least rules.STYLE_GAP away."""
    return 6 - level if level != 3 else 5


@lru_cache(maxsize=None)
def draft_model(dimensions: tuple[str, ...], max_chars: int) -> type[BaseModel]:
    """The question and one option per cell of the 2×2, each with the style levels it claims (1–5)."""
    claim = create_model("StyleClaim", **{d: (int, Field(ge=1, le=5)) for d in dimensions})
    option = create_model("ProfileOptionDraft", text=(str, Field(min_length=1, max_length=max_chars)),
                          fact=(str, Field(min_length=1)), style=(claim, ...))
    return create_model("ProfileDraft", question=(str, Field(min_length=1)),
                        **{cell: (option, ...) for cell in PROFILE_CELLS})


def build_profile(anchor: ProfileAnchor, dimensions: tuple[str, ...], answer: BaseModel) -> Profile:
    style = {d: anchor.member.style[d] for d in dimensions}
    options = [ProfileOption(cell=cell, text=getattr(answer, cell).text.strip(), fact=getattr(answer, cell).fact.strip(),
                             style=getattr(answer, cell).style.model_dump())
               for cell in PROFILE_CELLS]
    return Profile(group_id=anchor.group.id, group_kind=anchor.group.kind, member_id=anchor.member.person_id,
                   member=anchor.member.name, style=style, wrong_style={d: wrong_level(v) for d, v in style.items()},
                   options=options, style_trace_ids=list(anchor.style_trace_ids))


def build_item(anchor: ProfileAnchor, arc: LifeArc, statement: str, question: str, asked: dt.datetime,
               profile: Profile, persona_id: str) -> QA:
    key = next(o for o in profile.options if o.cell == "both_right")
    return QA(
        id=mint_id(persona_id, "qa", PROFILE, anchor.group.id, anchor.member.person_id), persona_id=persona_id,
        question_type=PROFILE, dimension=arc.dimension, arc_id=arc.id, question_time=asked, question=question.strip(),
        answer=key.text,
        evidence=[EvidenceRef(statement=statement, evidence_id=anchor.evidence_id, digital_trace_ids=[anchor.trace_id])],
        digital_trace_ids=[anchor.trace_id], window_end=asked.date(), profile=profile,
    )


class ProfileWriter:
    """The units of the profile items: one per anchor, a draft and at most `profile_rewrites` re-asks that show
    the model-free check's problems."""

    def __init__(self, ctx: StageContext, common: dict, arcs: dict[str, LifeArc], last_day: dt.date,
                 hours: tuple[int, int]) -> None:
        self.ctx, self.common, self.arcs, self.last_day, self.hours = ctx, common, arcs, last_day, hours
        self.section = ctx.section
        self.evidence = {e.id: e for e in ctx.evidence}
        self.traces = ctx.traces_by_id

    def asked(self, anchor: ProfileAnchor) -> dt.datetime:
        return seeded_time(self.traces[anchor.trace_id].time, (PROFILE, anchor.group.id, anchor.member.person_id),
                           self.section.max_question_delay_days, self.hours, self.last_day)

    async def write(self, anchor: ProfileAnchor) -> Records:
        section = self.section
        dimensions = marked_dimensions(anchor.member.style, section.profile_dimensions)
        cap = section.max_answer_chars[self.ctx.language]
        model = draft_model(dimensions, cap)
        asked = self.asked(anchor)
        statement = self.evidence[anchor.evidence_id].statement
        variables = {
            **self.common, "group_kind": anchor.group.kind, "member": anchor.member.name,
            "is_self": anchor.member.role == "self", "role": anchor.member.role,
            "dimensions": [{"name": d, "level": anchor.member.style[d], "wrong": wrong_level(anchor.member.style[d])}
                           for d in dimensions],
            "lines": [format_line(u) for u in anchor.lines], "anchor": format_line(anchor.line),
            "statement": statement, "question_time": asked.isoformat(timespec="minutes"), "max_answer_chars": cap,
            "problems": [],
        }
        answer = await self.ctx.ask("qa_write", "qa_profile.j2", variables, model)
        profile = build_profile(anchor, dimensions, answer)
        first = rules.profile_problems(profile.model_dump())
        problems, rewrites = first, 0
        while problems and rewrites < section.profile_rewrites:
            rewrites += 1
            answer = await self.ctx.ask("qa_write", "qa_profile.j2", {**variables, "problems": problems}, model,
                                        sample=rewrites)
            profile = build_profile(anchor, dimensions, answer)
            problems = rules.profile_problems(profile.model_dump())
        profile = profile.model_copy(update={"first_problems": first, "problems": problems, "rewrites": rewrites})
        item = build_item(anchor, arc_for(self.evidence[anchor.evidence_id].arc_ids, self.arcs), statement, answer.question, asked, profile,
                          self.ctx.persona.id)
        return {"qa.jsonl": [item]}


def spoken_records(ctx: StageContext) -> tuple[list[Group], list[ChatDay]]:
    """groups.jsonl and chats.jsonl when the chats stage wrote them (the qa stage reads them optionally)."""
    if not all((ctx.dir / name).is_file() for name in ("groups.jsonl", "chats.jsonl")):
        return [], []
    return ctx.read("groups.jsonl"), ctx.read("chats.jsonl")


async def profile_items(ctx: StageContext, planner: Planner) -> list[QA]:
    """The stage's profile items (when `profile_style` is among `[qa] types` and the persona has group chats)."""
    section = ctx.section
    if PROFILE not in section.types or section.target_per_type <= 0:
        return []
    groups, chats = spoken_records(ctx)
    anchors = profile_anchors(groups, chats, set(ctx.traces_by_id), section.target_per_type,
                              section.profile_min_days, section.profile_lines)
    writer = ProfileWriter(ctx, planner.common, planner.arc_by_id, planner.last_day, planner.hours)
    keys = [f"profile/{a.group.id}/{a.member.person_id}" for a in anchors]
    await ctx.units([(key, partial(writer.write, a)) for key, a in zip(keys, anchors, strict=True)])
    return [qa for key in keys for qa in ctx.done_records(key, "qa.jsonl", QA) or []]


question_types.attach(PROFILE, make=profile_items)
