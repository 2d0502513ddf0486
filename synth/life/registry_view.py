"""The part of the registry of people and places a prompt shows: whom the moment needs, then whoever was seen in the
last days, within a token budget — so no prompt grows with the length of the life."""

from __future__ import annotations

import bisect
import datetime as dt
import re
from collections.abc import Iterable, Sequence

from synth.core.tokens import estimate_tokens
from synth.records import Event, Person


def entry_tokens(person: Person) -> int:
    """What one registry line costs in a prompt (`- name (relation): description`)."""
    return estimate_tokens(f"- {person.name} ({person.relation}): {person.description}")


def name_keys(name: str) -> list[str]:
    """The strings whose presence in a text names this entry: the full name; for a Latin name each word of it of
    three letters or more (a given name alone, "Patel" for "Dr. Anika Patel"); for a Chinese name of three
    characters or more, the name without its surname."""
    name = name.strip()
    if not name:
        return []
    if name.isascii():
        return [name, *(w for w in re.findall(r"[A-Za-z][\w'-]{2,}", name) if w[0].isupper() and w != name)]
    return [name, name[1:]] if len(name) >= 3 else [name]


def names_in(people: Iterable[Person], texts: Iterable[str]) -> set[str]:
    """The ids of the entries some text names (whole words for Latin names, substrings for Chinese ones)."""
    blob = "\n".join(t for t in texts if t)
    if not blob:
        return set()
    found = set()
    for person in people:
        for key in name_keys(person.name):
            hit = (re.search(rf"(?<![\w]){re.escape(key)}(?![\w])", blob) if key.isascii() else key in blob)
            if hit:
                found.add(person.id)
                break
    return found


class Sightings:
    """When each registry entry appeared: its first day, every event it took part in (participant ids) and every
    event at its place (a place whose name the event's location holds)."""

    def __init__(self, people: Sequence[Person], events: Iterable[Event] = ()) -> None:
        days: dict[str, list[dt.date]] = {p.id: [p.first_date] for p in people if p.first_date is not None}
        places = [(p.id, p.name.strip().lower()) for p in people if p.kind == "place" and p.name.strip()]
        for event in events:
            day = event.time.date()
            for pid in event.participant_ids:
                if pid in days:
                    days[pid].append(day)
            location = event.location.lower()
            for pid, name in places:
                if name in location and pid in days:
                    days[pid].append(day)
        self.days = {pid: sorted(set(d)) for pid, d in days.items()}

    def last(self, pid: str, day: dt.date) -> dt.date | None:
        """The latest day on or before `day` the entry was seen (None: not yet)."""
        seen = self.days.get(pid, [])
        at = bisect.bisect_right(seen, day)
        return seen[at - 1] if at else None


def bounded_registry(people: Sequence[Person], day: dt.date, recent_days: int, budget: int, *,
                     needed: Iterable[str] = (), texts: Iterable[str] = (),
                     sightings: Sightings | None = None) -> list[Person]:
    """The introduced entries a prompt about `day` shows, in registry order: every one in `needed` (ids: the
    event's participants and place) or named by `texts` (its evidence, its description) — always, whatever the
    budget, since the prompt must name them right — then those seen in the last `recent_days` days, the most
    recently seen first, while their lines fit in `budget` tokens. Entries met after `day` never show."""
    sightings = sightings or Sightings(people)
    known = [p for p in people if p.origin == "introduced" and p.first_date is not None and p.first_date <= day]
    must = set(needed) | names_in(known, texts)
    chosen = {p.id for p in known if p.id in must}
    spent = sum(entry_tokens(p) for p in known if p.id in chosen)
    since = day - dt.timedelta(days=max(0, recent_days))
    recent = [(seen, p) for p in known if p.id not in chosen and (seen := sightings.last(p.id, day)) and seen >= since]
    for _, person in sorted(recent, key=lambda r: r[0], reverse=True):
        cost = entry_tokens(person)
        if spent + cost > budget:
            break
        chosen.add(person.id)
        spent += cost
    return [p for p in known if p.id in chosen]
