"""What several stages share: how persona, arcs, major events and traces look to a template, and how a label
from an enum maps back to an id. Stages import these from here, never from each other."""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import random
import re
from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel

from synth.config.settings import PromptsSettings, TracesSettings
from synth.core.calendar import weekdays_between, weekdays_named
from synth.engine.stage import StageContext
from synth.life.registry_view import name_keys
from synth.quality.label_check import key_units
from synth.records import ArcState, LifeArc, MajorEvent, Person, Persona, Phase, Trace, mint_id


def unique_labels(names: list[str]) -> list[str]:
    """Names made unique (a repeated one gets ' (2)', ' (3)' …) so an enum of them maps back to one item."""
    out: list[str] = []
    for name in names:
        label, n = name.strip() or "?", 1
        while label in out:
            n += 1
            label = f"{name.strip() or '?'} ({n})"
        out.append(label)
    return out


def relation_labels(persona: Persona) -> dict[str, str]:
    """Label → relation id: what an enum of participants offers and how an answer maps back."""
    return dict(zip(unique_labels([r.name for r in persona.relations]), (r.id for r in persona.relations), strict=True))


def arc_views(arcs: list[LifeArc]) -> list[dict]:
    """Arcs as templates see them: `label` is unique, so an enum of labels maps back to one arc id."""
    labels = unique_labels([a.title for a in arcs])
    return [{**a.model_dump(mode="json"), "label": label} for a, label in zip(arcs, labels, strict=True)]


def persona_and_arcs(persona: Persona, arcs: list[LifeArc]) -> dict:
    """The template variables most prompts open with: the persona, and its arcs with their labels."""
    return {"persona": persona.model_dump(mode="json"), "arcs": arc_views(arcs)}


def arc_label_ids(arcs: list[LifeArc]) -> dict[str, str]:
    return {view["label"]: view["id"] for view in arc_views(arcs)}


def media_weights(section: TracesSettings, language: str = "en", occupation: str = "") -> dict[str, float]:
    """The persona's language's media mix (the English one when the language has none), without the work media
    when the occupation has no workplace (`no_workplace_words`: a graduate student has no DingTalk group)."""
    table = section.media.get(language) or section.media.get("en") or next(iter(section.media.values()))
    weights = {name: float(w) for name, w in table.items() if float(w) > 0}
    text = occupation.lower()
    if any(word.lower() in text for word in section.no_workplace_words):
        weights = {m: w for m, w in weights.items() if m not in section.work_media} or weights
    return weights


def medium_band(section: TracesSettings, medium: str, language: str) -> tuple[int, int]:
    """The length band of one medium (`[traces] medium_words`, else min_words..max_words): words in English,
    characters in Chinese (times `zh_chars_per_word`) — the writer's only length rule, so it follows the medium."""
    low, high = section.medium_words.get(medium, (section.min_words, section.max_words))
    if language == "zh":
        return round(low * section.zh_chars_per_word), round(high * section.zh_chars_per_word)
    return low, high


# a medium whose band tops out at this many words or fewer (a photo caption, a Moments post) holds one evidence and a
# detail or two: more would not fit its length (a caption asked to carry a scene, a place, a partner and a quote)
SHORT_WORDS = 60


def short_media(section: TracesSettings, media: tuple[str, ...] | list[str], language: str) -> dict[str, int]:
    """The short media of `media` (band top at most SHORT_WORDS words) → the top of their band in `language`."""
    return {m: medium_band(section, m, language)[1] for m in media
            if section.medium_words.get(m, (0, section.max_words))[1] <= SHORT_WORDS}


def hint_weights(weights: dict[str, float], public: frozenset[str] | set[str], private: bool,
                 work: bool = True, work_media: frozenset[str] | set[str] = frozenset(),
                 short: Iterable[str] | None = None) -> dict[str, float]:
    """The media a planner's hint may name: none that the evidence's privacy rules out — with private evidence,
    no public medium and no work medium (a capable writer was hinted work chat for a diary-private line) — and none whose audience does not fit the moment: no work medium (`work_media`) for a
    moment without colleagues (`work` false); none of the `short` media when a trace must carry more than one
    evidence (a short medium carries one: a search query cannot hold a late-night talk). The mix itself is
    unchanged; all of it, if nothing else is left."""
    left_out = set(short or ())
    fitting = {m: w for m, w in weights.items() if (work or m not in work_media) and m not in left_out}
    if private:  # kept to themself or someone close: not for the public, nor for colleagues
        fitting = {m: w for m, w in fitting.items() if m not in public and m not in work_media}
    return fitting or dict(weights)


def relation_holds(relation: str, words: list[str] | tuple[str, ...]) -> bool:
    """Whether a relation ("my manager", "client at Halvorsen", "old school friend") holds one of `words`: the work
    words say a colleague, the family and close words someone close."""
    text = relation.lower()
    return any(word.lower() in text for word in words)


WORK_HOURS = (8, 19)  # a weekday's working hours: an evening call with a friend is not a moment for work chat


def work_moment(event, people: dict[str, str], work_words: list[str] | tuple[str, ...],
                holidays: list[dict] | tuple[dict, ...] = ()) -> bool:
    """A moment colleagues belong to: an event with someone whose relation is a work one (`people`: person id →
    relation; `work_words` as the chats stage reads them), or one spent with no one named during the working hours
    of a working day (a weekday that is not a public holiday of `holidays`, the calendar's {date, name} entries).
    An event with only family or friends is not one, whatever the hour (a capable writer was hinted work chat for
    an evening video call with a friend)."""
    relations = [people.get(pid, "") for pid in event.participant_ids]
    if any(relation_holds(relation, work_words) for relation in relations):
        return True
    if relations:
        return False
    day = event.time.date().isoformat()
    return (event.time.weekday() < 5 and WORK_HOURS[0] <= event.time.hour < WORK_HOURS[1]
            and not any(h.get("date") == day for h in holidays))


def mentions(text: str, words: Iterable[str]) -> bool:
    """Whether `text` holds one of `words`, case aside: English words whole, Chinese ones anywhere."""
    folded = text.casefold()
    return any(re.search(rf"(?<!\w){re.escape(word.casefold())}(?!\w)", folded) if word.isascii()
               else word.casefold() in folded for word in words if word.strip())


def names_close(text: str, people: dict[str, str], work_words: list[str] | tuple[str, ...],
                close_words: list[str] | tuple[str, ...]) -> bool:
    """Whether `text` names someone close: a person of `people` (name → relation) whose relation is a close one
    (it holds one of `close_words`: family, a friend, a partner) and not a work one, as the registry recognises a
    name in a text (`name_keys`), or a close word itself ("her sister", "我妈"), found as `mentions` finds words."""
    close = [name for name, relation in people.items()
             if relation_holds(relation, close_words) and not relation_holds(relation, work_words)]
    keys = [key for name in close for key in name_keys(name)]
    keys += [word for word in close_words if not relation_holds(word, work_words)]
    return mentions(text, keys)


def confided(statements: list[str], people: dict[str, str], work_words: list[str] | tuple[str, ...],
             close_words: list[str] | tuple[str, ...], concealed_words: list[str] | tuple[str, ...]) -> bool:
    """Whether private evidence (`statements`) could be written to someone: it names someone close (`names_close`)
    and none of it says it was kept from others (`concealed_words`: "told no one", "瞒着"). A capable planner was
    hinted email for the fear he told no one after a visit to his GP, for private unease at a handover to a
    colleague, and for a doubt she hid from everyone present while her mother was in the moment: a medium written
    to someone fits private words only when the evidence has her tell them to someone close."""
    text = " ".join(statements).casefold()
    if any(word.casefold() in text for word in concealed_words):
        return False
    return any(names_close(statement, people, work_words, close_words) for statement in statements)


def posted_media(statements: list[str], posted: dict[str, list[str]], allowed: list[str]) -> list[str]:
    """The media of `allowed` (in its order) that an evidence says it is itself a post on (`posted`: medium → the
    words naming such a post): its trace is that post, not a diary entry about it."""
    text = " ".join(statements).casefold()
    return [m for m in allowed if any(word.casefold() in text for word in posted.get(m, ()))]


def media_hint(key: str, count: int, weights: dict[str, float], statements: list[str],
               posted: dict[str, list[str]]) -> list[str]:
    """A planner's hint over the media `weights` allows: the media the evidence says it was posted on first, then
    the seeded draw (`suggest_media`) for the rest."""
    own = posted_media(statements, posted, sorted(weights))[:count]
    rest = {m: w for m, w in weights.items() if m not in own}
    return own + (suggest_media(key, count - len(own), rest) if rest and count > len(own) else [])


def suggest_media(key: str, count: int, weights: dict[str, float]) -> list[str]:
    """A deterministic weighted draw per event (distinct media while they last), so that over many events the
    media follow the configured mix rather than a model's favourite."""
    rng = random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))
    picks: list[str] = []
    pool = dict(weights)
    for _ in range(count):
        if not pool:
            pool = dict(weights)
        names = sorted(pool)
        choice = rng.choices(names, weights=[pool[n] for n in names])[0]
        picks.append(choice)
        del pool[choice]
    return picks


def answer_tokens(ctx: StageContext, estimate: int) -> int:
    """Room for a long structured answer: the configured max_tokens, raised when the answer needs more."""
    return max(ctx.settings.max_tokens, estimate)


def event_view(event: MajorEvent, arcs: list[LifeArc]) -> dict:
    """A major event with the anchor state each arc is in at that time, as templates see it."""
    labels = {view["id"]: view["label"] for view in arc_views(arcs)}
    by_id = {arc.id: arc for arc in arcs}
    states = []
    for state in event.arc_states:
        arc = by_id.get(state.arc_id)
        if arc is not None:
            anchor = arc.anchor_states[min(state.anchor_index, len(arc.anchor_states) - 1)]
            states.append({"arc": labels[arc.id], "index": state.anchor_index, "label": anchor.label,
                           "description": anchor.description})
    return {**event.model_dump(mode="json"), "states": states}


def arc_moves(arcs: list[LifeArc], before: dict[str, int], after: dict[str, int],
              days: tuple[dt.date, dt.date] | None = None, target: dict[str, int] | None = None) -> list[dict]:
    """Per arc, as the phase prompts show it: the state it is in (with trigger and cues) and every state this
    phase brings about — never a state beyond the phase's end. With the phase's first and last day (`days`), each
    state reached is marked with the weekdays its cues name that the phase has no day on (`absent_days`, Monday 0
    … Sunday 6): a capable writer met "tells his mother on their Sunday call" in a phase of a Wednesday and a
    Thursday. With the event's `target` (its alignment), the states a later phase of the same event reaches are
    listed as `later` (label and description only): a writer met a major event whose description placed a trigger
    in its first phase while the shared transitions gave that state to the second, and nothing said which wins."""
    labels = {view["id"]: view["label"] for view in arc_views(arcs)}
    present = weekdays_between(*days) if days else set(range(7))
    out = []
    for arc in arcs:
        top = len(arc.anchor_states) - 1
        now = min(before.get(arc.id, 0), top)
        then = min(max(after.get(arc.id, now), now), top)
        reaches = [arc.anchor_states[i] for i in range(now + 1, then + 1)]
        out.append({"arc": labels[arc.id], "index": now, "state": arc.anchor_states[now].model_dump(mode="json"),
                    "reaches": [{"index": i, "state": s.model_dump(mode="json"),
                                 "absent_days": sorted(weekdays_named(" ".join(s.cues)) - present)}
                                for i, s in enumerate(reaches, start=now + 1)],
                    "later": [{"index": i, "state": arc.anchor_states[i].model_dump(mode="json")}
                              for i in range(then + 1, min((target or {}).get(arc.id, then), top) + 1)]})
    return out


def state_map(states: list[ArcState]) -> dict[str, int]:
    return {s.arc_id: s.anchor_index for s in states}


def trace_excerpts(ids: list[str], traces: dict[str, Trace], section: PromptsSettings,
                   about: Sequence[str] | Mapping[str, str] = ()) -> list[dict]:
    """Every named trace as an excerpt: up to `max_prompt_traces` at `trace_chars` each; when more are needed, none is
    dropped — each is shortened so that the total stays within max_prompt_traces × trace_chars (a question whose
    evidence spans many traces loses detail per trace, never the trace carrying its newest evidence). A trace cut
    short keeps the passages that carry the statements `about` (the item's evidence), not just its opening; given as
    evidence id → statement (`statements_of`), each trace is cut around the statements it carries itself (all of
    them when it carries none): a capable writer was shown an email "carrying" an evidence whose excerpt, cut
    around another evidence, had none of it."""
    limit, chars = section.max_prompt_traces, section.trace_chars
    unique = list(dict.fromkeys(ids))
    if limit == 0 or not unique:
        return []
    each = chars if len(unique) <= limit else max(1, limit * chars // len(unique))
    carried = isinstance(about, Mapping)
    every = list(about.values()) if carried else list(about)
    out = []
    for trace_id in unique:
        trace = traces[trace_id]
        own = [about[e] for e in trace.evidence_ids if e in about] if carried else []
        out.append({"medium": trace.medium, "time": trace.time.isoformat(timespec="minutes"),
                    "content": excerpt(trace.content, each, own or every)})
    return out


def statements_of(refs: Iterable) -> dict[str, str]:
    """Evidence references (anything with `evidence_id` and `statement`) as `trace_excerpts` reads them."""
    return {ref.evidence_id: ref.statement for ref in refs}


_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*\s*|\n+")
_LINE = re.compile(r"[^\n]+\n*")
_GAP = " … "
_PARAGRAPH = 240  # a line longer than this is a paragraph, cut by sentences; a shorter one (a chat line) stays whole


def _passages(text: str, size: int) -> list[tuple[int, int]]:
    """The spans an excerpt is made of: whole lines, a line longer than `_PARAGRAPH` (or `size`) by sentences."""
    spans: list[tuple[int, int]] = []
    for line in _LINE.finditer(text):
        if line.end() - line.start() <= min(size, _PARAGRAPH):
            spans.append((line.start(), line.end()))
        else:
            spans += [(line.start() + m.start(), line.start() + m.end()) for m in _SENTENCE.finditer(line.group())]
    return spans or [(0, len(text))]


def excerpt(text: str, size: int, about: list[str] | tuple[str, ...] = ()) -> str:
    """At most `size` characters of `text`: the whole text when it fits; else, for each statement of `about`, the
    sentence sharing the most words (Chinese: character bigrams) with it, grown by whole sentences while the whole
    fits (first the neighbour sharing most words with the statements, then the one after), the passages in the
    text's order with "…" where it was cut — so a text carrying two statements far apart shows both (the first
    statements when not all fit). Short lines (a chat, a search history, a list) stay whole, so a cut never drops
    the speaker or the time that opens one; a paragraph is cut by sentences. Without statements, or when none is
    found, the opening."""
    if len(text) <= size:
        return text
    spans = _passages(text, size)
    units = [key_units(text[a:b]) for a, b in spans]
    anchors: list[int] = []
    for statement in about:
        wanted = key_units(statement)
        scores = [len(u & wanted) for u in units]
        if wanted and max(scores) > 0:
            anchors.append(max(range(len(spans)), key=lambda i: (scores[i], -i)))
    chosen: set[int] = set()

    def cost(extra: set[int]) -> int:  # the characters the passages take, with a gap mark between two of them
        picked = sorted(chosen | extra)
        gaps = sum(1 for a, b in itertools.pairwise(picked) if b != a + 1)
        return sum(spans[i][1] - spans[i][0] for i in picked) + gaps * len(_GAP)

    for i in dict.fromkeys(anchors or [0]):
        if not chosen or cost({i}) <= size:
            chosen.add(i)
    wanted_all = set().union(*(key_units(statement) for statement in about)) if about else set()
    while True:  # grow by one whole sentence at a time while the whole fits: next to a passage, the sentence
        # sharing the most words with the statements first (a statement may run over two sentences), then after
        grow = [j for j in range(len(spans)) if j not in chosen and ({j - 1, j + 1} & chosen) and cost({j}) <= size]
        if not grow:
            break
        chosen.add(max(grow, key=lambda j: (len(units[j] & wanted_all), j - 1 in chosen, -j)))
    picked = sorted(chosen)
    runs = [[i for _, i in group] for _, group in itertools.groupby(enumerate(picked), key=lambda p: p[1] - p[0])]
    pieces = [text[spans[run[0]][0]:spans[run[-1]][1]].strip() for run in runs]
    shown = _GAP.join(pieces)[:size].strip()
    return ("…" if spans[picked[0]][0] > 0 else "") + shown + ("…" if spans[picked[-1]][1] < len(text) else "")


class RelatedTraces:
    """The persona's traces most related to a question (BM25, Chinese through jieba), among those written by a
    given time: what a judge reads to confirm that the record does not answer an "unanswerable" question."""

    def __init__(self, traces: list[Trace]) -> None:
        from synth.eval.systems import BM25System

        self.traces = traces
        self.index = BM25System()
        for trace in traces:
            self.index.ingest({"id": trace.id, "medium": trace.medium, "content": trace.content})
        self.time = {t.id: t.time for t in traces}

    def before(self, question: str, when: dt.datetime, limit: int) -> list[str]:
        if limit <= 0:
            return []
        ranked = self.index.retrieve(question, len(self.traces), None)
        return [tid for tid in ranked if self.time[tid] <= when][:limit]


class SpokenContext:
    """What the spoken-source stages (chats, lifelog) share: the persona and its template view, its evidence by
    event, and the names of everyone in its registry (relations and those introduced later) by id."""

    def __init__(self, ctx: StageContext) -> None:
        self.ctx = ctx
        self.section = ctx.section
        self.persona = ctx.persona
        self.persona_view = self.persona.model_dump(mode="json")
        self.evidence: dict[str, list] = {}
        for item in ctx.evidence:
            self.evidence.setdefault(item.event_id, []).append(item)
        self.people = [p for p in ctx.people if p.kind == "person"]
        self.names = {**{r.id: r.name for r in self.persona.relations}, **{p.id: p.name for p in self.people}}


class Newcomer(BaseModel):
    """A person or place a phase or an event brings into the life: code mints its id and adds it to the registry."""

    name: str
    relation: str
    description: str


def newcomers(draft: BaseModel, owner_id: str, phase: Phase, day: dt.date, known: list[Person],
              event_id: str | None = None) -> list[Person]:
    """The people and places a phase's or an event's answer (`draft.new_people`, `draft.new_places`) introduced,
    with ids minted from `owner_id`; a name already in the registry (or given twice) is the same one, not a
    newcomer. `day`: their first appearance."""
    taken = {p.name.strip().casefold() for p in known}
    out = []
    for kind, drafts in (("person", draft.new_people), ("place", draft.new_places)):
        for i, item in enumerate(drafts):
            name = item.name.strip()
            if not name or name.casefold() in taken:
                continue
            taken.add(name.casefold())
            out.append(Person(id=mint_id(owner_id, kind, i), persona_id=phase.persona_id, kind=kind, name=name,
                              relation=item.relation.strip(), description=item.description.strip(),
                              origin="introduced", first_phase_id=phase.id, first_date=day, first_event_id=event_id))
    return out


def first_seen(traces: Iterable[Trace]) -> dict[str, dt.datetime]:
    """Evidence id → when the first trace carrying it appeared."""
    seen: dict[str, dt.datetime] = {}
    for trace in traces:
        for evidence_id in trace.evidence_ids:
            if evidence_id not in seen or trace.time < seen[evidence_id]:
                seen[evidence_id] = trace.time
    return seen
