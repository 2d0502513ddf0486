"""Stage `lifelog`: ambient lifelog dialogue (LifeDialBench). Each event's narrative (start, end, place,
participants, the day on the calendar) becomes one continuous dialogue, timestamped to the second, carrying the
event's evidence by enum; model-free checks hold each dialogue to its event (parent–child consistency) and against
the dialogues of the five most similar earlier events (repetition)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from functools import lru_cache, partial
from typing import Literal

from pydantic import BaseModel, Field, create_model

from synth.config.settings import LifelogSettings
from synth.core.calendar import country_of, holidays_between
from synth.engine.stage import Records, Stage, StageContext
from synth.life.spoken import format_lines, line_problems, most_similar_earlier, repair_diff, similarity
from synth.records import Event, Evidence, LifelogDialogue, LifelogPlan, Repair, SpokenCheck, Utterance, mint_id
from synth.stages.common import SpokenContext, answer_tokens, unique_labels
from synth.stages.lifelog.plan import draft_text, plan_lifelog


@lru_cache(maxsize=None)
def dialogue_answer(speakers: tuple[str, ...], evidence: int, seconds: int, low: int, high: int) -> type[BaseModel]:
    """A dialogue: speakers and evidence are enums, each line's time a bounded second after the event's start."""
    line = create_model(
        "DialogueLine",
        speaker=(Literal[speakers], ...),
        second=(int, Field(ge=0, le=seconds)),
        text=(str, ...),
        evidence=(list[Literal[tuple(range(1, evidence + 1))]], Field(max_length=evidence)),
    )
    return create_model("Dialogue", lines=(list[line], Field(min_length=low, max_length=high)))


def speakers_of(persona_name: str, participants: Sequence[str], bystander: str) -> list[str]:
    """The persona, the event's participants, and one bystander (ambient talk has strangers in it)."""
    return unique_labels([persona_name, *participants, bystander])


def lines_of(answer: BaseModel, start: dt.datetime, ids: dict[str, str], evidence: Sequence[Evidence]) -> list[Utterance]:
    return [Utterance(speaker=line.speaker, speaker_id=ids.get(line.speaker, ""),
                      time=start + dt.timedelta(seconds=line.second), text=line.text.strip(),
                      evidence_ids=list(dict.fromkeys(evidence[i - 1].id for i in line.evidence)))
            for line in answer.lines]


def repetitions(dialogues: Sequence[LifelogDialogue], similar: dict[str, list[str]], threshold: float) -> dict[str, list[str]]:
    """Per dialogue, a problem for each of its event's most similar earlier events whose dialogue it repeats."""
    text = {d.event_id: format_lines(d.lines).split("\n") for d in dialogues}
    bodies = {k: " ".join(line.split(": ", 1)[-1] for line in v) for k, v in text.items()}
    out: dict[str, list[str]] = {}
    for dialogue in dialogues:
        for other in similar.get(dialogue.event_id, []):
            if other in bodies and similarity(bodies[dialogue.event_id], bodies[other]) >= threshold:
                out.setdefault(dialogue.id, []).append(f"repeats the dialogue of event {other}")
    return out


class DialogueWriter(SpokenContext):
    """What the units share (one unit per event), and each event's most similar earlier events."""

    section: LifelogSettings

    def __init__(self, ctx: StageContext) -> None:
        super().__init__(ctx)
        self.similar = most_similar_earlier(ctx.events, self.section.similar_events)
        self.titles = {e.id: e.title for e in ctx.events}
        self.plan_days: dict[dt.date, list[LifelogPlan]] = {}  # a day → its plan nodes: month, week, day

    def follow(self, nodes: list[LifelogPlan]) -> None:
        """The plan the dialogues follow: each planned day with the week and month above it."""
        by_id = {n.id: n for n in nodes}
        for day in (n for n in nodes if n.level == "day"):
            week = by_id.get(day.parent_id)
            month = by_id.get(week.parent_id) if week else None
            self.plan_days[day.start] = [n for n in (month, week, day) if n is not None]

    def plan_view(self, day: dt.date) -> dict | None:
        nodes = {n.level: n for n in self.plan_days.get(day, [])}
        if "day" not in nodes:
            return None
        return {"month": nodes["month"].summary if "month" in nodes else "",
                "week": nodes["week"].summary if "week" in nodes else "", "day": draft_text(nodes["day"])}

    def calendar(self, day: dt.date) -> dict:
        """The day as the real calendar shows it: its weekday (the templates name it), whether it is a weekend, and
        the public holidays of the persona's country on it (synth.core.calendar, the `holidays` package)."""
        country = country_of(self.ctx.persona, self.ctx.settings.holiday_countries, self.ctx.language)
        return {"date": day.isoformat(), "weekday": day.weekday(), "weekend": day.weekday() >= 5,
                "holidays": holidays_between(country, self.ctx.language, day, day)}

    async def event(self, event: Event) -> Records:
        evidence = self.evidence.get(event.id, [])
        if not evidence:
            return {"lifelog.jsonl": []}
        section = self.section
        participants = [self.names.get(p, p) for p in event.participant_ids]
        speakers = speakers_of(self.persona.name, participants, section.bystander[self.ctx.language])
        ids = {self.persona.name: self.persona.id, **{self.names[p]: p for p in event.participant_ids if p in self.names}}
        seconds = section.minutes * 60
        start, end = event.time, event.time + dt.timedelta(seconds=seconds)
        model = dialogue_answer(tuple(speakers), len(evidence), seconds, section.min_lines, section.max_lines)
        calendar = self.calendar(event.time.date())
        base = {"persona": self.persona_view, "event": {**event.model_dump(mode="json"), "participants": participants},
                "start": start.isoformat(timespec="seconds"), "end": end.isoformat(timespec="seconds"),
                "calendar": calendar, "speakers": speakers, "evidence": [e.statement for e in evidence],
                "similar": [self.titles[i] for i in self.similar.get(event.id, [])],
                "min_lines": section.min_lines, "max_lines": section.max_lines, "problems": [], "previous": "",
                "plan": self.plan_view(event.time.date())}
        tokens = answer_tokens(self.ctx, 60 * section.max_lines + 200)
        answer = await self.ctx.ask("lifelog", "lifelog_dialogue.j2", base, model, max_tokens=tokens)
        lines = lines_of(answer, start, ids, evidence)
        evidence_ids = [e.id for e in evidence]
        problems = line_problems(lines, evidence_ids, self.persona.name, {}, start, end)
        check = SpokenCheck(rule_problems=problems)
        for round_ in range(1, section.max_repairs + 1):
            if not problems:
                break
            answer = await self.ctx.ask("lifelog", "lifelog_dialogue.j2",
                                        {**base, "problems": problems, "previous": format_lines(lines)}, model,
                                        max_tokens=tokens, sample=round_)
            fixed = lines_of(answer, start, ids, evidence)
            check.repairs.append(Repair(round=round_, problems=problems, diff=repair_diff(lines, fixed)))
            lines = fixed
            problems = line_problems(lines, evidence_ids, self.persona.name, {}, start, end)
        check.flagged, check.final_problems = bool(problems), problems
        return {"lifelog.jsonl": [LifelogDialogue(
            id=mint_id(event.id, "lifelog", 0), persona_id=self.persona.id, event_id=event.id,
            evidence_ids=evidence_ids, start=start, end=end, place=event.location, participants=participants,
            calendar=calendar, lines=lines,
            similar_event_ids=self.similar.get(event.id, []), check=check,
            plan_day_id=next((n.id for n in self.plan_days.get(event.time.date(), []) if n.level == "day"), ""))]}


async def run(ctx: StageContext) -> dict[str, list]:
    if "lifelog" not in ctx.settings.sources:
        return {"lifelog.jsonl": [], "lifelog_plan.jsonl": []}
    writer = DialogueWriter(ctx)
    planned = sorted((e for e in ctx.events if writer.evidence.get(e.id)), key=lambda e: (e.time, e.id))
    if ctx.section.max_events:
        planned = planned[:ctx.section.max_events]
    plan = await plan_lifelog(ctx, planned) if ctx.section.plan else []
    writer.follow(plan)
    keys = [event.id for event in planned]
    await ctx.units([(event.id, partial(writer.event, event)) for event in planned])
    dialogues = [LifelogDialogue.model_validate(r) for key in keys for r in (ctx.done(key) or {}).get("lifelog.jsonl", [])]
    repeated = repetitions(dialogues, writer.similar, ctx.section.repetition_threshold)
    for dialogue in dialogues:
        found = repeated.get(dialogue.id, [])
        if found:  # the repetition level: counted and flagged, not repaired (the earlier dialogue is final)
            dialogue.check.final_problems = [*dialogue.check.final_problems, *found]
            dialogue.check.flagged = True
    return {"lifelog.jsonl": dialogues, "lifelog_plan.jsonl": plan}


STAGE = Stage(
    name="lifelog",
    reads=("persona.jsonl", "people.jsonl", "events.jsonl", "evidence.jsonl"),
    writes=("lifelog.jsonl", "lifelog_plan.jsonl"),
    templates=("lifelog_plan.j2", "lifelog_dialogue.j2"),
    tasks=("lifelog_plan", "lifelog"),
    optional_reads=("arcs.jsonl",),  # the plan's year shows the life arcs as its event lines
    body=run,
    help="lifelog_plan.jsonl, lifelog.jsonl: the year → month → week → day plan on the calendar, then one continuous "
         "ambient dialogue per event (when sources include lifelog)",
    config_keys=("sources",),
)
