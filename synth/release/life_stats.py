"""How lived the generated life looks, model-free: traces per month, the gaps between traces, the everyday share,
phrasing variety (distinct-2, repeated openings), the cast's growth and the media mix per language."""

from __future__ import annotations

import datetime as dt
import re
import statistics
from collections import Counter
from collections.abc import Sequence

from synth.life.gaps import all_gaps
from synth.records import Event, MajorEvent, Person, Persona, Phase, Trace

_WORD = re.compile(r"[\u4e00-\u9fff]|[^\W_]+", re.UNICODE)


def tokens(text: str) -> list[str]:
    """Words in English, single characters in Chinese (lowercased): the unit of distinct-n and openings."""
    return [t.lower() for t in _WORD.findall(text)]


def distinct_2(texts: Sequence[str]) -> float:
    """Distinct bigrams over all bigrams of the texts (each text's own bigrams; 1.0 means no bigram repeats)."""
    grams: list[tuple[str, str]] = []
    for text in texts:
        words = tokens(text)
        grams += list(zip(words, words[1:], strict=False))
    return len(set(grams)) / len(grams) if grams else 0.0


def repeated_openings(texts: Sequence[str], n: int = 5) -> float:
    """The share of texts whose first `n` words (characters in Chinese) are another text's first `n` too."""
    heads = [tuple(tokens(t)[:n]) for t in texts]
    counts = Counter(h for h in heads if len(h) == n)
    return sum(1 for h in heads if counts.get(h, 0) > 1) / len(heads) if heads else 0.0


def month_counts(times: Sequence[dt.datetime], start: dt.date, end: dt.date) -> list[int]:
    """Traces in each calendar month the timeline touches (months without a trace count as 0)."""
    per = Counter((t.year, t.month) for t in times)
    out, year, month = [], start.year, start.month
    while (year, month) <= (end.year, end.month):
        out.append(per.get((year, month), 0))
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return out


def gaps(times: Sequence[dt.datetime], start: dt.date, end: dt.date) -> list[int]:
    """Days without a trace between consecutive trace days, the timeline's start and end included as edges."""
    return [g.days for g in all_gaps((t.date() for t in times), start, end)]


def everyday_share(traces: Sequence[Trace], events: Sequence[Event], phases: Sequence[Phase],
                   majors: Sequence[MajorEvent]) -> float:
    kind = {m.id: m.kind for m in majors}
    phase_kind = {p.id: kind.get(p.major_event_id, "major") for p in phases}
    event_kind = {e.id: phase_kind.get(e.phase_id, "major") for e in events}
    return sum(1 for t in traces if event_kind.get(t.event_id) == "everyday") / len(traces) if traces else 0.0


def persona_life(persona: Persona, traces: Sequence[Trace], events: Sequence[Event], phases: Sequence[Phase],
                 majors: Sequence[MajorEvent], people: Sequence[Person], max_gap_days: int) -> dict:
    times = [t.time for t in traces]
    months = month_counts(times, persona.start, persona.end)
    holes = gaps(times, persona.start, persona.end)
    texts = [t.content for t in traces]
    introduced = [p for p in people if p.kind == "person" and p.origin == "introduced"]
    return {
        "language": persona.language,
        "traces_per_month_min": min(months) if months else 0,
        "traces_per_month_median": statistics.median(months) if months else 0,
        "gap_days_max": max(holes) if holes else 0,
        "gap_days_median": statistics.median(holes) if holes else 0,
        "gaps_over_limit": sum(1 for g in holes if g > max_gap_days),
        "max_gap_days": max_gap_days,
        # events code moved (inside their phases) to close a gap the model's days left (synth.life.gaps)
        "redated_share": round(sum(e.redated_from is not None for e in events) / len(events), 4) if events else 0.0,
        "everyday_share": round(everyday_share(traces, events, phases, majors), 4),
        "distinct_2": round(distinct_2(texts), 4),
        "repeated_openings": round(repeated_openings(texts), 4),
        "cast_start": len(persona.relations),
        "cast_end": len(persona.relations) + len(introduced),
        "places": sum(1 for p in people if p.kind == "place"),
    }


def media_mix(by_language: dict[str, Counter], targets: dict[str, dict[str, float]]) -> dict[str, dict]:
    """Per language: each medium of the configured mix, its share of the traces written in that mix next to its
    target share; a medium outside the mix (the spoken sources: group chats, lifelog dialogue) gets its share of
    all traces and no target, so the spoken traces do not make the written media look under their targets."""
    out: dict[str, dict] = {}
    for language, counts in sorted(by_language.items()):
        weights = {k: float(v) for k, v in (targets.get(language) or {}).items() if float(v) > 0}
        norm = sum(weights.values()) or 1.0
        mixed = sum(n for m, n in counts.items() if m in weights) or 1
        total = sum(counts.values()) or 1
        out[language] = {m: {"share": round(counts.get(m, 0) / mixed, 4), "target": round(weights[m] / norm, 4)}
                         for m in sorted(weights)}
        out[language].update({m: {"share": round(n / total, 4), "target": None}
                              for m, n in sorted(counts.items()) if m not in weights})
    return out
