"""Option seeds chosen by code: the key's seed is the item's evidence; each distractor's is other evidence of the
same life, chosen per question type (SEED_RULES) so that it is true of this person but not the answer here."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import combinations

from synth.llm.cache import content_hash
from synth.quality.label_check import key_units
from synth.quality.rules import overlap_centrality
from synth.records import QA, Event, Evidence, OptionSeed

GROUP_MAX = 8  # a distractor seed holds as many statements as the key's, up to this many (a renderer noted a true
# set of 6 against seeds of 4: the sizes alone marked it)
DISTRACTORS = 3  # the A–D options besides the key (option E is fixed text)


@dataclass(frozen=True)
class Candidate:
    """One evidence statement of the persona, with what the rules compare: its arcs, first sighting, people."""

    evidence: Evidence
    seen: dt.datetime
    people: frozenset[str]


@dataclass(frozen=True)
class ItemView:
    """The item as the rules see it: its arc, its evidence ids and window, the people of its events."""

    arc_id: str
    evidence_ids: frozenset[str]
    event_ids: frozenset[str]
    start: dt.datetime  # the first sighting of its evidence
    end: dt.datetime  # the last sighting of its evidence
    asked: dt.datetime
    people: frozenset[str]
    window_days: float = field(default=0.0)


Rule = Callable[[ItemView, Candidate], bool]


def _same_arc(item: ItemView, c: Candidate) -> bool:
    return item.arc_id in c.evidence.arc_ids


def _other_arc(item: ItemView, c: Candidate) -> bool:
    return item.arc_id not in c.evidence.arc_ids


def _in_window(item: ItemView, c: Candidate) -> bool:
    """Within the item's span, widened by a week (or half the span) each side: a one-day item has a window too."""
    slack = dt.timedelta(days=max(7.0, item.window_days))
    return item.start - slack <= c.seen <= item.end + slack


def _outside_window(item: ItemView, c: Candidate) -> bool:
    return not (item.start <= c.seen <= item.end)


def _before_effect(item: ItemView, c: Candidate) -> bool:
    return c.seen < item.end


def _same_people(item: ItemView, c: Candidate) -> bool:
    return bool(item.people & c.people)


def _any(item: ItemView, c: Candidate) -> bool:
    return True


@dataclass(frozen=True)
class SeedRule:
    """One question type's seed selection: tiers of predicates tried in order (a candidate goes to its first
    matching tier), and the sentence docs/options.md shows for it."""

    says: str
    tiers: tuple[tuple[Rule, ...], ...]
    crossed: bool = False  # a multi-point item of one matter: its options are the 2×2 of the key and one seed (cross)


def _tiers(*tiers: tuple[Rule, ...], anywhere: bool = True) -> tuple[tuple[Rule, ...], ...]:
    """The tiers, then (`anywhere`) any other evidence of this life before the question as a last resort. A type
    whose options must stay on the item's arc or people has no last resort: a seed from another matter does not
    answer its question (a capable renderer got a money saga's options from a heart scare), and a counter-seed
    written for the question takes its place."""
    return (*tiers, (_any,)) if anywhere else tiers


# Keyed by question type: one place, so a question-type registry can take each row as its own spec's field.
# A type absent here keeps its own options (unanswerable: invented answers, E right; temporal_duration: numbers;
# profile_style: the 2×2; relation_*: the variant set's references).
SEED_RULES: dict[str, SeedRule] = {
    "factual": SeedRule("the same people in other events (then the same arc, other events)",
                        _tiers((_same_people,), (_same_arc,), anywhere=False)),
    "written_spoken": SeedRule("the same people in other events (then the same arc, other events)",
                               _tiers((_same_people,), (_same_arc,), anywhere=False)),
    "comparison": SeedRule("the same arc at another time, crossed with the key",
                           _tiers((_same_arc, _outside_window), (_same_arc,), anywhere=False), crossed=True),
    "trajectory": SeedRule("the same arc at another time, crossed with the key",
                           _tiers((_same_arc, _outside_window), (_same_arc,), anywhere=False), crossed=True),
    "inference": SeedRule("other arcs in the same window", _tiers((_other_arc, _in_window), (_other_arc,))),
    "pattern": SeedRule("other arcs in the same window", _tiers((_other_arc, _in_window), (_other_arc,))),
    # not crossed: a crossed cause reads as two half-stories beside the key's one cause for both changes (a capable
    # reader picked the key of both crossed causal items by that)
    "causal": SeedRule("real events before the effect that did not cause it (same arc first, then others)",
                       _tiers((_same_arc, _before_effect), (_before_effect,))),
    "counterfactual": SeedRule("a real consequence from another arc", _tiers((_other_arc,), (_same_arc,))),
}


def seeded(qa: QA) -> bool:
    """Whether this item's options come from seeds (its type has a row in SEED_RULES)."""
    return qa.question_type in SEED_RULES and not qa.variant_set_id and qa.profile is None


def key_seed(qa: QA, seen: dict[str, dt.datetime] | None = None) -> OptionSeed:
    """The key's seed: the item's evidence (with `seen`, in the order its records were first seen)."""
    refs = [r for r in qa.evidence if not r.background]
    if seen is not None:
        refs.sort(key=lambda r: seen.get(r.evidence_id, qa.question_time))
    return OptionSeed(role="key", statements=[r.statement for r in refs], evidence_ids=[r.evidence_id for r in refs])


def cut(qa: QA, seen: dict[str, dt.datetime]) -> int:
    """Where the key's points (in the order their records were first seen) split into an earlier and a later set
    of records that share none: the number of statements before the split nearest the middle; 0 when one record
    carries them all (nothing to cross) or the key is longer than a seed can be."""
    refs = [r for r in qa.evidence if not r.background]
    if not 2 <= len(refs) <= GROUP_MAX:
        return 0
    refs.sort(key=lambda r: seen.get(r.evidence_id, qa.question_time))
    records = [set(r.digital_trace_ids) for r in refs]
    bounds = [i for i in range(1, len(refs)) if not set().union(*records[i:]) & set().union(*records[:i])]
    return min(bounds, key=lambda i: (abs(2 * i - len(refs)), i)) if bounds else 0


def cross(key: OptionSeed, other: OptionSeed, at: int) -> list[OptionSeed]:
    """A multi-point item's four options as a 2×2: the key; the key's earlier points (the first `at` statements)
    with `other`'s later ones; `other`'s earlier with the key's later; `other` whole. Each half stands in exactly
    two options, so one record of the key leaves two options standing (a capable judge answered comparison and
    trajectory items from their newest record alone: the distractors differed in every point), and no option
    shares more with the others than the rest do."""
    def pairs(seed: OptionSeed) -> list[tuple[str, str]]:
        ids = seed.evidence_ids if len(seed.evidence_ids) == len(seed.statements) else [""] * len(seed.statements)
        return list(zip(seed.statements, ids, strict=True))

    def mix(early: OptionSeed, late: OptionSeed) -> OptionSeed:
        parts = pairs(early)[:at] + pairs(late)[at:]
        return OptionSeed(role="distractor", statements=[s for s, _ in parts], evidence_ids=[i for _, i in parts if i],
                          invented=other.invented, crossed=True)

    return [key, mix(key, other), mix(other, key), other]


def item_view(qa: QA, seen: dict[str, dt.datetime], events: dict[str, Event],
              evidence: dict[str, Evidence]) -> ItemView:
    ids = [r.evidence_id for r in qa.evidence if not r.background]
    times = [seen[i] for i in ids if i in seen] or [qa.question_time]
    event_ids = frozenset(evidence[i].event_id for i in ids if i in evidence)
    people = frozenset(p for e in event_ids if e in events for p in events[e].participant_ids)
    return ItemView(arc_id=qa.arc_id, evidence_ids=frozenset(ids), event_ids=event_ids, start=min(times),
                    end=max(times), asked=qa.question_time, people=people,
                    window_days=(max(times) - min(times)).days / 2)


def candidates(qa: QA, item: ItemView, pool: Iterable[Evidence], seen: dict[str, dt.datetime],
               events: dict[str, Event]) -> list[Candidate]:
    """Evidence a distractor may rest on: seen by the question time, of another event than the item's own
    (another event of this life, not a detail of the answer's)."""
    out = []
    for e in pool:
        when = seen.get(e.id)
        if when is None or when > item.asked or e.id in item.evidence_ids or e.event_id in item.event_ids:
            continue
        people = frozenset(events[e.event_id].participant_ids) if e.event_id in events else frozenset()
        out.append(Candidate(e, when, people))
    return out


def ranked(qa: QA, item: ItemView, found: list[Candidate]) -> list[Candidate]:
    """Candidates by the type's tiers (first matching tier first), within a tier in an order drawn from the item."""
    rule = SEED_RULES[qa.question_type]

    def tier(c: Candidate) -> int | None:
        return next((n for n, preds in enumerate(rule.tiers) if all(p(item, c) for p in preds)), None)

    tiers = {c.evidence.id: tier(c) for c in found}
    return sorted((c for c in found if tiers[c.evidence.id] is not None),
                  key=lambda c: (tiers[c.evidence.id], content_hash([qa.id, c.evidence.id])))


def group(chosen: list[Candidate], size: int, count: int, spread: int = 1) -> list[OptionSeed]:
    """At most `count` seeds of exactly `size` statements each, in time order. A seed is one other stretch of this
    life: one event, its candidates together, the next events filling up — or, with `spread`, as many events as the
    key's statements come from (one statement of each first, then the rest of those events): a pattern's or a
    cause's key holds several occasions, and a seed from one event is rendered as one scene (a capable reader
    picked the key as "the one giving two instances", "the only complete chain")."""
    seeds: list[OptionSeed] = []
    used: set[str] = set()
    for c in chosen:
        if len(seeds) == count:
            break
        if c.evidence.id in used:
            continue
        parts = _parts(c, [x for x in chosen if x.evidence.id not in used], size, spread)
        if len(parts) < size:  # too few left: a written counter-seed of the key's size takes its place
            break
        used.update(x.evidence.id for x in parts)
        parts.sort(key=lambda x: x.seen)
        seeds.append(OptionSeed(role="distractor", statements=[x.evidence.statement for x in parts],
                                evidence_ids=[x.evidence.id for x in parts]))
    return seeds


def occasions(seed: OptionSeed, evidence: dict[str, Evidence]) -> int:
    """How many events a seed's statements come from (at least 1): what a written seed is asked to span too."""
    return max(1, len({evidence[i].event_id for i in seed.evidence_ids if i in evidence}))


def _parts(first: Candidate, free: list[Candidate], size: int, spread: int) -> list[Candidate]:
    """One seed's candidates: `first`, one of each of the next `spread - 1` events, the rest of those events, then
    any (all in the type's order)."""
    parts, events = [first], {first.evidence.event_id}
    for x in free:
        if len(events) >= spread or len(parts) >= size:
            break
        if x.evidence.event_id not in events:
            parts.append(x)
            events.add(x.evidence.event_id)
    for fits in (lambda x: x.evidence.event_id in events, lambda x: True):
        parts += [x for x in free if x not in parts and fits(x)][: size - len(parts)]
    return parts


def select(qa: QA, evidence: list[Evidence], seen: dict[str, dt.datetime], events: dict[str, Event],
           excluded: Iterable[str] = (), count: int = DISTRACTORS) -> tuple[OptionSeed, list[OptionSeed]]:
    """The key's seed and up to `count` distractor seeds in the type's order (fewer when this life has too few
    fitting statements: the caller has the rest written as counter-seeds). `excluded`: evidence ids a judge found
    also true. A `count` above three gives the candidates `balanced` chooses the three from."""
    by_id = {e.id: e for e in evidence}
    key = key_seed(qa)
    item = item_view(qa, seen, events, by_id)
    skip = set(excluded)
    found = [c for c in candidates(qa, item, evidence, seen, events) if c.evidence.id not in skip]
    size = max(1, min(len(key.statements), GROUP_MAX))
    chosen = ranked(qa, item, found)[: size * count * 2]
    spread = 1 if SEED_RULES[qa.question_type].crossed else min(size, len(item.event_ids))
    return key, group(chosen, size, count, spread)


CANDIDATES = 8  # the real seeds `balanced` chooses three from (56 triples)
# counter-seeds written beyond those needed, so that `balanced` chooses among written sets too: in 75-day lives 21
# of 26 answerable items had no fitting real distractor seed, and the written sets each shared a strand with the
# key (the readers' "most overlap" cue) with nothing to choose from
SPARE = 2


def seed_people(seed: OptionSeed, evidence: dict[str, Evidence], events: dict[str, Event]) -> frozenset[str]:
    """The people of the events a seed's statements come from (none for a counter-seed)."""
    ids = {evidence[i].event_id for i in seed.evidence_ids if i in evidence}
    return frozenset(p for e in ids if e in events for p in events[e].participant_ids)


def _units(seed: OptionSeed, people: Callable[[OptionSeed], frozenset[str]]) -> tuple[set[str], set[str]]:
    """What two seeds can share: content words (Chinese: character bigrams) and the people of their events."""
    return key_units(" ".join(seed.statements)), set(people(seed))


def _leads(sets: list[tuple[set[str], set[str]]]) -> tuple[float, float]:
    """Per measure (words, people), how far the first set's centrality stands above the most central other's."""
    def lead(measure: int) -> float:
        scores = overlap_centrality({n: pair[measure] for n, pair in enumerate(sets)})
        return scores[0] - max(v for n, v in scores.items() if n) if len(sets) > 1 else 0.0
    return lead(0), lead(1)


def key_leads(key: OptionSeed, chosen: list[OptionSeed], people: Callable[[OptionSeed], frozenset[str]]
              ) -> tuple[float, float]:
    """How far the key's set stands above the most central distractor set, by shared content words (Chinese:
    character bigrams) and by shared people: positive, the key is where the others' strands cross."""
    return _leads([_units(s, people) for s in [key, *chosen]])


def balanced(key: OptionSeed, found: list[OptionSeed], people: Callable[[OptionSeed], frozenset[str]],
             count: int = DISTRACTORS) -> list[OptionSeed]:
    """The `count` seeds among `found` (in the type's order) that leave the key's set least central: first the
    fewest measures (words, people) on which it leads, then the smallest leads, then the type's order. Each
    distractor seed is chosen for what it shares with the key (its arc, people, window), so three taken in order
    each share a strand with the key more than with one another, and the key sits where they cross: a capable
    reader without the records picked it as the centroid ("overlaps most; B outlier") on 20 of 22 items."""
    if len(found) <= count:
        return found
    mine, theirs = _units(key, people), [_units(seed, people) for seed in found]

    def cost(triple: tuple[int, ...]) -> tuple[int, float, int]:
        leads = _leads([mine, *(theirs[i] for i in triple)])
        return sum(lead > 0 for lead in leads), round(sum(max(0.0, lead) for lead in leads), 6), sum(triple)

    best = min(combinations(range(len(found)), count), key=cost)
    return [found[i] for i in best]


COPY_OVERLAP = 0.6  # a written statement sharing this share of its units with a key statement restates it


def restating(written: list[OptionSeed], key: OptionSeed) -> list[OptionSeed]:
    """The written (counter-)seeds that restate one of the key's statements: at least COPY_OVERLAP of the smaller
    one's content units (words, Han bigrams) shared, and at least three. A counter-seed for a comparison item
    copied the key's first statement word for word, so one of the key's halves stood in three of the four options
    (a capable reader counted the fragments and picked the centre)."""
    units = [key_units(line) for line in key.statements]

    def restates(line: str) -> bool:
        mine = key_units(line)
        return any(len(mine & other) >= max(3, COPY_OVERLAP * min(len(mine), len(other))) for other in units)

    return [seed for seed in written if any(restates(line) for line in seed.statements)]


def fitting(chosen: list[OptionSeed], question: str, persona_name: str = "",
            key: OptionSeed | None = None) -> list[OptionSeed]:
    """The distractor seeds that touch the question about as much as the key does: each shares at least one content
    word (Chinese: character bigram) with the question, the person's own name aside, and at least half as many as
    the key's statements share. A seed that touches the question less cannot answer it as well as the key, and a
    capable reader without the records picks the one option that fits the question's premise (one shared word let
    a seed about another matter through). A question with no content word of its own keeps every seed."""
    anchor = key_units(question) - key_units(persona_name)
    if not anchor:
        return chosen
    need = 1
    if key is not None:
        need = max(1, -(-len(anchor & key_units(" ".join(key.statements))) // 2))
    return [seed for seed in chosen if len(anchor & key_units(" ".join(seed.statements))) >= need]
