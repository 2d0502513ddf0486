"""The longest stretch without a trace, enforced on dates: the events stage re-dates events inside their phases so
no stretch of days without one is longer than the limit (leaving room for the traces' delay), and `synth validate`
reports every stretch of days without a trace still longer than `max_gap_days` — except while the person travels
(a major event of a seed in `[events] travel_seeds`), when a quiet record is what a real one looks like."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from synth.core.calendar import days_needed
from synth.records import Event, EventSeed, MajorEvent, Phase

Span = tuple[dt.date, dt.date]

# A weekday (or the weekend) named in an event's text pins its weekday (`synth.core.calendar.days_needed`): such an
# event moves only by whole weeks, so a "Saturday" in its description stays a Saturday.


# A calendar date or a dated occasion named in an event's text pins its day: such an event never moves ("25 December",
# "May 3rd", "2023-05-03", "5月3日"; the occasions are `[events] date_words` and the holidays library's names).
_MONTH = (r"(january|february|march|april|may|june|july|august|september|october|november|december"
          r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\b\.?")
_DATE = re.compile(rf"\b\d{{1,2}}(st|nd|rd|th)?\s+(of\s+)?{_MONTH}|\b{_MONTH}\s+\d{{1,2}}(st|nd|rd|th)?\b"
                   r"|\b\d{4}-\d{2}-\d{2}\b|\d{1,2}月\d{1,2}[日号]", re.IGNORECASE)


def text_pin(text: str) -> str:
    """What a text pins of its event's timing: "day" when it names a calendar date, "weekday" when it names a
    weekday or the weekend, else ""."""
    return "day" if _DATE.search(text) else "weekday" if days_needed(text) else ""


def names_weekday(event: Event, extra: str = "") -> bool:
    return bool(days_needed(f"{_text(event)} {extra}"))


def _text(event: Event) -> str:
    return f"{event.title} {event.description}"


class DayPins:
    """Which events keep their day whatever the gaps: their text names a calendar date or one of `words` (dated
    occasions: festivals, holidays; matched case-insensitively, whole words in English)."""

    def __init__(self, words: Iterable[str] = (), said: dict[str, str] | None = None) -> None:
        self.words = tuple(sorted({w.strip().lower() for w in words if w.strip()}, key=len, reverse=True))
        # event id → its evidence's statements: a statement naming "2022年3月4日" or "Saturday" pins the event as
        # its own text would (moved, the event's timestamp and its evidence's date would disagree)
        self.said = dict(said or {})
        latin = [re.escape(w) for w in self.words if w.isascii()]
        other = [re.escape(w) for w in self.words if not w.isascii()]
        parts = ([rf"\b({'|'.join(latin)})\b"] if latin else []) + ([f"({'|'.join(other)})"] if other else [])
        self._words = re.compile("|".join(parts), re.IGNORECASE) if parts else None

    @classmethod
    def of(cls, words: Iterable[str], holidays: Iterable[dict]) -> DayPins:
        """`words` and the names of `holidays` ({date, name}, `synth.core.calendar.holidays_between`); the library's
        "(observed)" / "（补假）" / "休息日（由 … 调休）" days repeat a name without the brackets, or name none."""
        return cls([*words, *(h["name"] for h in holidays if not any(b in h["name"] for b in "(（"))])

    def with_evidence(self, evidence: Iterable) -> DayPins:
        """These pins, reading each event's evidence statements too."""
        said: dict[str, list[str]] = {}
        for item in evidence:
            said.setdefault(item.event_id, []).append(item.statement)
        return DayPins(self.words, {k: " ".join(v) for k, v in said.items()})

    def extra(self, event: Event) -> str:
        return self.said.get(event.id, "")

    def __call__(self, event: Event) -> bool:
        text = f"{_text(event)} {self.extra(event)}"
        return bool(_DATE.search(text) or (self._words is not None and self._words.search(text)))


def _day_for(event: Event, lo: dt.date, hi: dt.date, want: dt.date, up: bool,
             pins: DayPins | None = None) -> dt.date | None:
    """The day to move `event` to inside [lo, hi]: `want` (clamped), or, for an event whose text names a weekday,
    the day of its own weekday that moves it least while reaching `want` (at or after it when moving later, at or
    before it when moving earlier), else the one closest to `want`; None when no day of its weekday is in range,
    and for an event whose text names a date or an occasion (`pins`)."""
    if lo > hi or (pins is not None and pins(event)):
        return None
    if not names_weekday(event, pins.extra(event) if pins is not None else ""):
        return min(max(want, lo), hi)
    day = event.time.date()
    same = [d for d in (day + dt.timedelta(weeks=k) for k in range(-60, 61)) if lo <= d <= hi and d != day]
    if not same:
        return None
    reaching = [d for d in same if (d >= want if up else d <= want)]
    if reaching:
        return min(reaching) if up else max(reaching)
    return max(same) if up else min(same)


def travel_spans(majors: Iterable[MajorEvent], seeds: Iterable[EventSeed], travel: Iterable[str]) -> list[Span]:
    """The days of the major events whose seed is a travel seed (by name)."""
    names = set(travel)
    travelling = {s.id for s in seeds if s.name in names}
    return sorted((m.start, m.end) for m in majors if m.seed_id in travelling)


def _overlaps(lo: dt.date, hi: dt.date, spans: Sequence[Span]) -> bool:
    return any(a <= hi and lo <= b for a, b in spans)


@dataclass(frozen=True)
class Gap:
    after: dt.date  # the last day with a trace (the day before the timeline for a gap at its start)
    before: dt.date  # the next day with one (the day after the timeline for a gap at its end)

    @property
    def days(self) -> int:
        return (self.before - self.after).days - 1


def all_gaps(days: Iterable[dt.date], start: dt.date, end: dt.date) -> list[Gap]:
    """The stretches between consecutive days of `days` inside [start, end], the timeline's edges included."""
    marks = sorted({d for d in days if start <= d <= end})
    edges = [start - dt.timedelta(days=1), *marks, end + dt.timedelta(days=1)]
    return [Gap(a, b) for a, b in zip(edges, edges[1:], strict=False)]


def open_gaps(days: Iterable[dt.date], start: dt.date, end: dt.date, limit: int,
              travel: Sequence[Span] = ()) -> list[Gap]:
    """The stretches of more than `limit` days inside [start, end] with none of `days`, unless they overlap a
    travel span; the timeline's edges count as days with a record."""
    return [g for g in all_gaps(days, start, end) if g.days > limit
            and not _overlaps(g.after + dt.timedelta(days=1), g.before - dt.timedelta(days=1), travel)]


def close_gaps(events: Sequence[Event], phases: dict[str, Phase], start: dt.date, end: dt.date, limit: int,
               travel: Sequence[Span] = (), pins: DayPins | None = None) -> list[Event]:
    """Events re-dated (the day only; the time of day is kept) so no stretch of more than `limit` days is without
    an event, where that is possible by moving an event inside its own phase and keeping the time order. Walking
    forward, an event after too long a stretch moves back to the stretch's last allowed day, or its phase's first
    day if that comes later; if the stretch is still too long, the event before it moves later as far as its phase
    and the stretch behind it allow, or, when the model put several events on that day, they spread into the
    stretch (`_spread`). At the end, the last events move later the same way. Stretches overlapping
    travel are left as they are, and so is an event whose text names a date or an occasion (`pins`). A moved event
    records its model-given time in `redated_from`. Returns the events in time order."""
    out: list[Event] = []
    ordered = sorted(events, key=lambda e: (e.time, e.id))
    for n, event in enumerate(ordered):
        previous = out[-1].time.date() if out else start - dt.timedelta(days=1)
        day, phase = event.time.date(), phases.get(event.phase_id)
        if (phase is None or (day - previous).days - 1 <= limit
                or _overlaps(previous + dt.timedelta(days=1), day - dt.timedelta(days=1), travel)):
            out.append(event)
            continue
        # the last event never moves back so far that the stretch to the timeline's end opens (none comes after it)
        floor = end - dt.timedelta(days=limit) if n == len(ordered) - 1 else phase.start
        target = _day_for(event, max(phase.start, floor, previous + dt.timedelta(days=1)), day - dt.timedelta(days=1),
                          previous + dt.timedelta(days=limit + 1), up=False, pins=pins)
        event = _moved(event, target) if target is not None and target < day else event
        if out and (event.time.date() - previous).days - 1 > limit:
            _forward(out, phases, start, event.time.date(), limit, pins)
        out.append(event)
    if out and (end - out[-1].time.date()).days > limit and not _overlaps(out[-1].time.date(), end, travel):
        _forward(out, phases, start, end + dt.timedelta(days=1), limit, pins)
    return out


def _forward(out: list[Event], phases: dict[str, Phase], start: dt.date, before: dt.date, limit: int,
             pins: DayPins | None) -> None:
    """Close the stretch before `before` from behind: spread the events the model put on the stretch's first day
    (`_spread`), or, with one event there, move it later (`_later`)."""
    if not _spread(out, phases, before, limit, pins):
        _later(out, phases, start, before, limit, pins)


def _spread(out: list[Event], phases: dict[str, Phase], before: dt.date, limit: int, pins: DayPins | None) -> bool:
    """A burst of events before too long a stretch (a model puts a phase's events on its first day or days: the
    trailing events of `out` on consecutive days, at least two) spreads into it: the last m of them move to every
    `limit + 1` days after the latest day left to the others (no further than the stretch needs), in their order,
    each inside its phase and before `before` (a weekday its text names is kept as `_day_for` keeps it), m the
    fewest that close the stretch, or as many as can move. One whose text pins its day (`pins`) stays, as does the
    first. False when there is no burst or none of it can move."""
    k = 1
    while k < len(out) and (out[-k].time.date() - out[-1 - k].time.date()).days <= 1:
        k += 1
    if k < 2:
        return False
    burst = out[-k:]
    stay = [e for e in burst if pins is not None and pins(e)]
    cluster, best = stay + [e for e in burst if e not in stay], None
    needed = before - dt.timedelta(days=limit + 1)  # the last moved event need go no further
    for m in range(1, k):
        anchor = max(e.time.date() for e in cluster[:k - m])
        placed, previous = [], anchor
        for i, event in enumerate(cluster[k - m:], 1):
            phase = phases.get(event.phase_id)
            hi = min(phase.end, before - dt.timedelta(days=1)) if phase else previous
            want = min(anchor + dt.timedelta(days=i * (limit + 1)), needed)
            target = _day_for(event, max(previous + dt.timedelta(days=1), event.time.date()), hi, want, up=True,
                              pins=pins)
            if target is None:
                break
            placed.append(_moved(event, target) if target != event.time.date() else event)
            previous = target
        if len(placed) < m:
            break
        best = placed
        if (before - previous).days - 1 <= limit:
            break
    if best is None:
        return False
    out[len(out) - k:] = sorted(cluster[:k - len(best)], key=lambda e: (e.time, e.id)) + best
    return True


def _later(out: list[Event], phases: dict[str, Phase], start: dt.date, before: dt.date, limit: int,
           pins: DayPins | None) -> None:
    """Move the last event of `out` later, just enough to leave at most `limit` days before `before` (the next
    event's day, or the day after the timeline) if it can: never past its phase's end, the day before `before`, or
    what the stretch behind it allows."""
    last, phase = out[-1], phases.get(out[-1].phase_id)
    if phase is None:
        return
    behind = out[-2].time.date() if len(out) > 1 else start - dt.timedelta(days=1)
    needed = before - dt.timedelta(days=limit + 1)  # just enough to close the stretch
    if needed <= last.time.date():
        return
    cap = min(phase.end, before - dt.timedelta(days=1), behind + dt.timedelta(days=limit + 1))
    target = _day_for(last, last.time.date() + dt.timedelta(days=1), cap, needed, up=True, pins=pins)
    if target is not None and target > last.time.date():
        out[-1] = _moved(last, target)


def _moved(event: Event, day: dt.date) -> Event:
    return event.model_copy(update={"time": dt.datetime.combine(day, event.time.time()),
                                    "redated_from": event.redated_from or event.time})
