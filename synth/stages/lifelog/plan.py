"""The `lifelog` stage's plan: LifeDialBench's top-down refinement year → month → week → day on the real calendar,
kept to the persona's events (each node lists the events inside its range; the model picks the ones its summary
builds on by enum, and places each of a day's events on the day's agenda). Every draft goes through the model-free
parent–child checks (synth.life.lifelog_calendar) with `max_repairs` re-asks showing the problems; a node still failing is
kept and flagged, and days and weeks are compared with their most similar earlier siblings (repetition)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from functools import lru_cache, partial
from typing import Literal

from pydantic import BaseModel, Field, create_model

from synth.core.calendar import country_of
from synth.engine.stage import Records, StageContext
from synth.life.lifelog_calendar import day_calendar, periods, plan_problems, range_calendar
from synth.life.spoken import similarity
from synth.records import AgendaItem, Event, LifelogPlan, Repair, SpokenCheck, mint_id
from synth.stages.common import answer_tokens, unique_labels

KINDS = ("work", "routine", "leisure", "social", "errand", "event")
NONE = "-"  # an agenda item that is none of the day's events


@lru_cache(maxsize=None)
def node_answer(labels: tuple[str, ...]) -> type[BaseModel]:
    """A year, month or week: a summary, a few themes, and the events it builds on (an enum of its own)."""
    return create_model("PlanNode", summary=(str, Field(min_length=1)), themes=(list[str], Field(max_length=5)),
                        key_events=(list[Literal[labels]], Field(max_length=len(labels))))


@lru_cache(maxsize=None)
def day_answer(labels: tuple[str, ...], high: int) -> type[BaseModel]:
    """A day: a summary and an agenda whose items name one of the day's events or none, at a minute of the day."""
    item = create_model("AgendaLine", minute=(int, Field(ge=0, le=1439)), kind=(Literal[KINDS], ...),
                        text=(str, Field(min_length=1)), event=(Literal[(NONE, *labels)], ...))
    return create_model("PlanDay", summary=(str, Field(min_length=1)),
                        agenda=(list[item], Field(min_length=len(labels), max_length=high)))


class LifelogPlanner:
    """Builds one persona's plan level by level; each node is one unit (months and weeks run as chains: a node sees
    the summary of the one before it)."""

    def __init__(self, ctx: StageContext, events: Sequence[Event]) -> None:
        self.ctx = ctx
        self.section = ctx.section
        self.persona = ctx.persona
        self.country = country_of(ctx.persona, ctx.settings.holiday_countries, ctx.language)
        self.events = sorted(events, key=lambda e: (e.time, e.id))
        self.times = {e.id: e.time for e in self.events}
        # the life arcs are the year's event lines (LifeDialBench's): shown when the arcs stage wrote them
        self.arcs = [a.title for a in ctx.read("arcs.jsonl")] if (ctx.dir / "arcs.jsonl").is_file() else []

    def inside(self, start: dt.date, end: dt.date) -> list[Event]:
        return [e for e in self.events if start <= e.time.date() <= end]

    def event_views(self, events: Sequence[Event]) -> tuple[list[str], list[dict]]:
        labels = unique_labels([f"{e.time:%m-%d} {e.title}" for e in events])
        return labels, [{"label": label, "time": e.time.strftime("%Y-%m-%d %H:%M"), "title": e.title,
                         "location": e.location, "description": e.description} for label, e in zip(labels, events, strict=True)]

    def calendar(self, level: str, start: dt.date, end: dt.date) -> dict:
        if level == "day":
            return day_calendar(start, self.country, self.ctx.language)
        return range_calendar(start, end, self.country, self.ctx.language)

    async def node(self, level: str, start: dt.date, end: dt.date, parent: LifelogPlan | None,
                   previous: LifelogPlan | None) -> Records:
        events = self.inside(start, end)
        labels, views = self.event_views(events)
        by_label = dict(zip(labels, (e.id for e in events), strict=True))
        calendar = self.calendar(level, start, end)
        base = {"persona": self.persona.model_dump(mode="json"), "arcs": self.arcs,
                "level": level, "start": start.isoformat(), "end": end.isoformat(), "calendar": calendar,
                "parent": parent.model_dump(mode="json") if parent else None,
                "previous": previous.summary if previous else "", "events": views,
                "max_items": self.section.plan_max_items, "problems": [], "draft": ""}
        model = day_answer(tuple(labels), self.section.plan_max_items) if level == "day" else node_answer(tuple(labels))
        tokens = answer_tokens(self.ctx, 60 * self.section.plan_max_items + 200)
        node_id = mint_id(parent.id if parent else self.persona.id, "lifelog_plan", level, start.isoformat())

        def build(answer: BaseModel) -> LifelogPlan:
            agenda = [AgendaItem(minute=i.minute, kind=i.kind, text=i.text.strip(), event_id=by_label.get(i.event, ""))
                      for i in getattr(answer, "agenda", [])]
            return LifelogPlan(
                id=node_id, persona_id=self.persona.id, level=level, parent_id=parent.id if parent else "",
                start=start, end=end, summary=answer.summary.strip(),
                themes=[t.strip() for t in getattr(answer, "themes", []) if t.strip()],
                event_ids=[e.id for e in events],
                key_event_ids=list(dict.fromkeys(by_label[k] for k in getattr(answer, "key_events", []))),
                agenda=agenda, calendar=calendar, check=SpokenCheck())

        def problems_of(record: LifelogPlan) -> list[str]:
            return plan_problems(record.model_dump(mode="json"), parent.model_dump(mode="json") if parent else None,
                                 self.times, self.section.plan_event_slack_minutes)

        record = build(await self.ctx.ask("lifelog_plan", "lifelog_plan.j2", base, model, max_tokens=tokens))
        problems = problems_of(record)
        check = SpokenCheck(rule_problems=problems)
        for round_ in range(1, self.section.max_repairs + 1):
            if not problems:
                break
            fixed = build(await self.ctx.ask("lifelog_plan", "lifelog_plan.j2",
                                             {**base, "problems": problems, "draft": draft_text(record)}, model,
                                             max_tokens=tokens, sample=round_))
            check.repairs.append(Repair(round=round_, problems=problems, diff=""))
            record, problems = fixed, problems_of(fixed)
        check.flagged, check.final_problems = bool(problems), problems
        return {"lifelog_plan.jsonl": [record.model_copy(update={"check": check})]}

    def found(self, key: str) -> LifelogPlan | None:
        records = self.ctx.done_records(key, "lifelog_plan.jsonl", LifelogPlan)
        return records[0] if records else None

    async def level(self, level: str, parents: Sequence[LifelogPlan | None], days: list[dt.date]) -> list[LifelogPlan]:
        """Every node of `level` under each parent; under one parent a chain (each sees its previous sibling's
        summary), except days, which are independent."""
        made: list[LifelogPlan] = []
        for parent in parents:
            spans = periods(level, parent.start if parent else self.persona.start,
                            parent.end if parent else self.persona.end, days)
            keys = [f"plan/{level}/{start.isoformat()}" for start, _ in spans]
            if level == "day":
                await self.ctx.units([(k, partial(self.node, level, s, e, parent, None))
                                      for k, (s, e) in zip(keys, spans, strict=True)])
                made += [r for k in keys if (r := self.found(k)) is not None]
                continue
            siblings: list[LifelogPlan] = []
            for k, (s, e) in zip(keys, spans, strict=True):
                previous = siblings[-1] if siblings else None
                await self.ctx.units([(k, partial(self.node, level, s, e, parent, previous))], sequential=True)
                if (record := self.found(k)) is not None:
                    siblings.append(record)
            made += siblings
        return made


def draft_text(record: LifelogPlan) -> str:
    """A draft as the re-ask shows it: the summary, and a day's agenda one item a line."""
    lines = [record.summary]
    lines += [f"{i.minute // 60:02d}:{i.minute % 60:02d} [{i.kind}] {i.text}" for i in record.agenda]
    return "\n".join(lines)


def repetitions(nodes: Sequence[LifelogPlan], similar: int, threshold: float) -> dict[str, str]:
    """Per week or day, a problem when its summary repeats one of its `similar` most similar earlier siblings of the
    same level (LifeDialBench's top-5 repetition check, by word overlap)."""
    out: dict[str, str] = {}
    for level in ("week", "day"):
        ordered = sorted((n for n in nodes if n.level == level), key=lambda n: n.start)
        for i, node in enumerate(ordered):
            scored = sorted(((similarity(node.summary, o.summary), o) for o in ordered[:i]), key=lambda x: -x[0])
            for score, other in scored[:similar]:
                if score >= threshold:
                    out[node.id] = f"repeats the {level} of {other.start.isoformat()} (overlap {score:.2f})"
                    break
    return out


async def plan_lifelog(ctx: StageContext, events: Sequence[Event]) -> list[LifelogPlan]:
    """The plan over the days with a planned dialogue (`events`), year by year down to the day; flagged repeats."""
    planner = LifelogPlanner(ctx, events)
    days = sorted({e.time.date() for e in events})
    parents: list[LifelogPlan | None] = [None]
    nodes: list[LifelogPlan] = []
    for level in ("year", "month", "week", "day"):
        made = await planner.level(level, parents, days)
        nodes += made
        parents = list(made)
    repeated = repetitions(nodes, ctx.section.similar_events, ctx.section.repetition_threshold)
    for node in nodes:
        if node.id in repeated:
            node.check.final_problems = [*node.check.final_problems, repeated[node.id]]
            node.check.flagged = True
    return nodes
