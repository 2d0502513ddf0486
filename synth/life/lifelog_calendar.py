"""The lifelog's year → month → week → day plan (LifeDialBench's top-down refinement) without a model: which
periods of the real calendar get a plan node, how a range looks on the calendar, and the parent–child consistency
checks the `lifelog` stage runs on every draft and `synth validate` runs on the file. Checks read plain dicts (a
record's JSON), so they apply to a hand-edited or corrupted file as well."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence

from synth.core.calendar import as_date, holidays_between

LEVELS = ("year", "month", "week", "day")


def _clip(start: dt.date, end: dt.date, low: dt.date, high: dt.date) -> tuple[dt.date, dt.date] | None:
    a, b = max(start, low), min(end, high)
    return (a, b) if a <= b else None


def periods(level: str, low: dt.date, high: dt.date, days: Iterable[dt.date]) -> list[tuple[dt.date, dt.date]]:
    """The `level` periods inside [low, high] that hold one of `days` (the active days): calendar years, calendar
    months, weeks from Monday to Sunday cut at the month's edges (so each week lies in one month), single days."""
    active = sorted(d for d in set(days) if low <= d <= high)
    out: list[tuple[dt.date, dt.date]] = []
    for day in active:
        if level == "year":
            span = (dt.date(day.year, 1, 1), dt.date(day.year, 12, 31))
        elif level == "month":
            nxt = dt.date(day.year + day.month // 12, day.month % 12 + 1, 1)
            span = (day.replace(day=1), nxt - dt.timedelta(days=1))
        elif level == "week":
            monday = day - dt.timedelta(days=day.weekday())
            span = (monday, monday + dt.timedelta(days=6))
        else:
            span = (day, day)
        clipped = _clip(*span, low, high)
        if clipped and clipped not in out:
            out.append(clipped)
    return out


def day_calendar(day: dt.date, country: str, language: str) -> dict:
    """A day as the calendar shows it: weekday (Monday 0), weekend, the public holidays of the persona's country."""
    return {"date": day.isoformat(), "weekday": day.weekday(), "weekend": day.weekday() >= 5,
            "holidays": holidays_between(country, language, day, day)}


def range_calendar(start: dt.date, end: dt.date, country: str, language: str) -> dict:
    """A longer range on the calendar: its days, its rest days (weekends and public holidays) and the holidays."""
    holidays = holidays_between(country, language, start, end)
    off = {d["date"] for d in holidays}
    days = [start + dt.timedelta(days=i) for i in range((end - start).days + 1)]
    rest = [d for d in days if d.weekday() >= 5 or d.isoformat() in off]
    return {"days": len(days), "rest_days": len(rest), "holidays": holidays}


def is_rest_day(calendar: dict) -> bool:
    return bool(calendar.get("weekend")) or bool(calendar.get("holidays"))


# ------------------------------------------------------------------------------------------------ checks

def range_problems(record: dict, parent: dict | None) -> list[str]:
    """Parent–child containment: the node's range is ordered and inside its parent's, one level up."""
    level, start, end = record.get("level"), as_date(record.get("start")), as_date(record.get("end"))
    problems = [] if start <= end else [f"starts {start} after it ends {end}"]
    if level == "year":
        return problems
    if parent is None:
        return [*problems, f"a {level} without its parent"]
    if LEVELS.index(str(parent.get("level"))) != LEVELS.index(str(level)) - 1:
        problems.append(f"a {level} under a {parent.get('level')}")
    low, high = as_date(parent.get("start")), as_date(parent.get("end"))
    if start < low or end > high:
        problems.append(f"{start}–{end} is not inside its {parent.get('level')}'s {low}–{high}")
    return problems


def event_problems(record: dict, parent: dict | None, event_days: dict[str, dt.date]) -> list[str]:
    """The node's events are its parent's, dated inside its range; the events its summary builds on are its own."""
    start, end = as_date(record.get("start")), as_date(record.get("end"))
    own = [str(e) for e in record.get("event_ids") or []]
    problems = [f"event {e} is dated {event_days[e]}, outside {start}–{end}" for e in own
                if e in event_days and not start <= event_days[e] <= end]
    problems += [f"names event {e}, which does not exist" for e in own if e not in event_days]
    if parent is not None:
        theirs = set(parent.get("event_ids") or [])
        problems += [f"event {e} is not among its {parent.get('level')}'s events" for e in own if e not in theirs]
    problems += [f"its key event {e} is not among its own events" for e in record.get("key_event_ids") or []
                 if e not in own]
    return problems


def agenda_problems(record: dict, event_times: dict[str, dt.datetime], slack_minutes: int) -> list[str]:
    """A day's agenda: in time order; every event of the day on it, at the event's time (within `slack_minutes`),
    and no other event; no work item (other than a planned event) on a rest day (weekend or public holiday)."""
    items = [i for i in record.get("agenda") or [] if isinstance(i, dict)]
    own = [str(e) for e in record.get("event_ids") or []]
    problems = []
    minutes = [int(i.get("minute", 0)) for i in items]
    problems += [f"item {n + 2}: at minute {b}, before the item above ({a})"
                 for n, (a, b) in enumerate(zip(minutes, minutes[1:], strict=False)) if b < a]
    listed = {}
    for n, item in enumerate(items, 1):
        event = item.get("event_id") or ""
        if event and event not in own:
            problems.append(f"item {n}: names event {event}, not one of the day's")
        elif event:
            listed.setdefault(event, int(item.get("minute", 0)))
        if item.get("kind") == "work" and not event and is_rest_day(record.get("calendar") or {}):
            problems.append(f"item {n}: work on a rest day")
    for event in own:
        when = event_times.get(event)
        if event not in listed:
            problems.append(f"event {event} is not on the agenda")
        elif when is not None and abs(listed[event] - (when.hour * 60 + when.minute)) > slack_minutes:
            problems.append(f"event {event} is on the agenda at minute {listed[event]}, it happens at {when:%H:%M}")
    return problems


def plan_problems(record: dict, parent: dict | None, event_times: dict[str, dt.datetime], slack_minutes: int) -> list[str]:
    """Every model-free check of one plan node against its parent (and, for a day, its agenda)."""
    days = {e: t.date() for e, t in event_times.items()}
    problems = range_problems(record, parent) + event_problems(record, parent, days)
    if record.get("level") == "day":
        problems += agenda_problems(record, event_times, slack_minutes)
    return problems


def tree_problems(records: Sequence[dict], event_days: dict[str, dt.date]) -> list[tuple[dict, str]]:
    """The invariants of a whole plan file (what `synth validate` runs; they hold by construction, so a failure is
    a broken or hand-edited file): each node inside its parent and one level below it, its events its parent's and
    dated inside its range, its key events and its agenda's events its own. The agenda's quality problems (order,
    times, work on a day off) are the stage's flags, recorded on the node, not violations."""
    by_id = {r.get("id"): r for r in records}
    out = []
    for record in records:
        parent = by_id.get(record.get("parent_id")) if record.get("parent_id") else None
        if record.get("parent_id") and parent is None:
            out.append((record, f"parent_id: dangling id {record.get('parent_id')!r}"))
            continue
        own = set(record.get("event_ids") or [])
        try:
            found = range_problems(record, parent) + event_problems(record, parent, event_days)
        except ValueError as exc:  # a start or end that is not a date
            out.append((record, f"start/end: {exc}"))
            continue
        found += [f"agenda item {n}: names event {i.get('event_id')}, not one of the day's"
                  for n, i in enumerate(record.get("agenda") or [], 1)
                  if isinstance(i, dict) and i.get("event_id") and i.get("event_id") not in own]
        out += [(record, p) for p in found]
    return out
