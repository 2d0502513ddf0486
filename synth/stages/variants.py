"""Stage `variants`: SubtleMemory's relation-controlled memory variants. Seed facts from the persona's evidence get a
variant set of a controlled relation (complementary all/any, nuanced temporal/contextual, contradictory); each
variant is hidden in its own session (a trace of the persona's usual media, dated at least `min_gap_days` from the
set's other sessions), checked for "too hidden" / "too explicit" by model-free rules and a judge; the query with
3 accepted and 3 known-wrong answers is written from the variants alone (never their dates or order) and must not
be answerable without memory (the visible-only check). The traces stage folds a kept set's sessions into
traces.jsonl; the qa stage turns a kept set into an item of type `relation_<relation>`."""

from __future__ import annotations

import datetime as dt
import random
import re
from collections.abc import Sequence
from functools import lru_cache, partial
from typing import Annotated

from pydantic import BaseModel, Field, create_model

from synth.config.settings import VariantsSettings
from synth.core import chain
from synth.engine.stage import Records, Stage, StageContext
from synth.life.relations import RELATIONS, RelationVerdict, judge_variables, wanted
from synth.llm.cache import content_hash
from synth.quality.rules import norm_option
from synth.records import (
    Event,
    Evidence,
    LifeArc,
    SessionCheck,
    Variant,
    VariantSet,
    mint_id,
)
from synth.stages.common import answer_tokens, media_weights, suggest_media

HOURS = (8, 21)  # a session happens while the person is awake
REFERENCES = 3  # SubtleMemory: three accepted and three known-wrong answers per query
_LATIN = re.compile(r"[^\W\d_]{4,}", re.U)
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")


def question_type(relation: str) -> str:
    return f"relation_{relation}"


# ------------------------------------------------------------------- answers the model gives (schemas)

@lru_cache(maxsize=None)
def set_answer(size: int) -> type[BaseModel]:
    variant = create_model("VariantDraft", text=(str, Field(min_length=1)), condition=(str, ...),
                           signal=(str, Field(min_length=1)))
    return create_model("VariantSetDraft", target=(str, Field(min_length=1)),
                        variants=(list[variant], Field(min_length=size, max_length=size)))


class SessionText(BaseModel):
    content: str = Field(min_length=20)


Reference = Annotated[str, Field(min_length=1)]  # minLength binds a grammar-bound local model (it wrote "")


class ItemDraft(BaseModel):
    query: str = Field(min_length=1)
    correct_answers: list[Reference] = Field(min_length=REFERENCES, max_length=REFERENCES)
    wrong_answers: list[Reference] = Field(min_length=REFERENCES, max_length=REFERENCES)


class SessionVerdict(BaseModel):
    recoverable: bool  # a careful reader of this session alone can recover the variant (not too hidden)
    implicit: bool  # it is shown through what happens, not announced as a statement or label (not too explicit)
    reason: str


class VisibleAnswer(BaseModel):
    answer: str
    needs_memory: bool


# ------------------------------------------------------------------- model-free parts

def cue_words(text: str) -> set[str]:
    """Content words of a text for the model-free checks: Latin words of 4+ letters (lower case), Chinese
    character bigrams (a single character is too common to tell anything)."""
    words = {w.lower() for w in _LATIN.findall(text)}
    for run in _CJK_RUN.findall(text):
        words |= {run[i:i + 2] for i in range(len(run) - 1)} if len(run) > 1 else {run}
    return words


def session_problems(variant_text: str, signal: str, content: str) -> list[str]:
    """The model-free "too explicit" and "too hidden" checks of one session: it must not state the variant or its
    decisive signal verbatim, and at least one content word of the signal must be in it (else nothing in the
    session can lead a reader to the variant)."""
    body = norm_option(content)
    problems = []
    if norm_option(variant_text) in body:
        problems.append("too explicit: the session states the variant verbatim")
    if norm_option(signal) and norm_option(signal) in body:
        problems.append(f"too explicit: the session names the decisive signal verbatim ({signal.strip()!r})")
    cues = cue_words(signal)
    if cues and not cues & cue_words(content):
        problems.append("too hidden: no word of the decisive signal occurs in the session")
    return problems


def recency_hits(query: str, words: Sequence[str]) -> list[str]:
    """Recency words in a query (whole words in Latin script): with one, the latest session would decide."""
    low = query.lower()
    found = []
    for word in words:
        w = word.lower()
        pattern = rf"(?<![^\W_]){re.escape(w)}(?![^\W_])" if w.isascii() else re.escape(w)
        if re.search(pattern, low):
            found.append(word)
    return found


def query_problems(query: str, sessions: Sequence[str], correct: Sequence[str], wrong: Sequence[str],
                   recency: Sequence[str], min_keywords: int) -> list[str]:
    """The model-free checks of a query and its references: its keywords are not all in one session (a lexical
    match to one session is a give-away), no recency word (order must never decide), three distinct accepted and
    three distinct known-wrong answers with none in both lists."""
    problems = []
    keywords = cue_words(query)
    if len(keywords) >= min_keywords:
        for k, content in enumerate(sessions, 1):
            if keywords <= cue_words(content):
                problems.append(f"too explicit: every keyword of the query is in session {k}")
                break
    hits = recency_hits(query, recency)
    if hits:
        problems.append(f"order decides: the query names recency ({', '.join(hits)})")
    right = {norm_option(a) for a in correct if a.strip()}
    wrong_set = {norm_option(a) for a in wrong if a.strip()}
    if len(right) < REFERENCES or len(wrong_set) < REFERENCES:
        problems.append("references: not three distinct accepted and three distinct wrong answers")
    if right & wrong_set:
        problems.append("references: an answer is both accepted and wrong")
    return problems


def visible_problems(query: str, visible_answer: str, correct: Sequence[str], overlap: float) -> list[str]:
    """The visible-only check's model-free part: the query must not hold every content word of an accepted answer
    (it would give the answer away), and the no-context answer must not share `overlap` or more of an accepted
    answer's content words (it was found without memory, whatever the judge says)."""
    asked, guessed = cue_words(query), cue_words(visible_answer)
    for k, answer in enumerate(correct, 1):
        words = cue_words(answer)
        if not words:
            continue
        if words <= asked:
            return [f"visible-only (rule): the query holds every content word of accepted answer {k}"]
        if len(words & guessed) / len(words) >= overlap:
            return [f"visible-only (rule): the no-context answer shares {len(words & guessed) / len(words):.0%} of "
                    f"accepted answer {k}'s content words"]
    return []


def session_days(key: str, first: dt.date, last: dt.date, count: int, gap: int) -> list[dt.date] | None:
    """`count` days in [first, last], each at least `gap` days after the one before (seeded by `key`); None when
    the span has no room."""
    room = (last - first).days - (count - 1) * gap
    if room < 0:
        return None
    rng = random.Random(content_hash([key, "days"]))
    offsets = sorted(rng.randint(0, room) for _ in range(count))
    return [first + dt.timedelta(days=offset + i * gap) for i, offset in enumerate(offsets)]


def session_times(key: str, first: dt.date, last: dt.date, count: int, gap: int) -> list[dt.datetime] | None:
    """The sessions' times, assigned to the variants in a seeded order that is not the variants' own: which
    variant comes first in time is drawn, never the set's order, so "the latest one" cannot be the key."""
    days = session_days(key, first, last, count, gap)
    if days is None:
        return None
    rng = random.Random(content_hash([key, "times"]))
    times = [dt.datetime.combine(day, dt.time(rng.randint(*HOURS), rng.randint(0, 59))) for day in days]
    rng.shuffle(times)
    return times


def ask_time(key: str, times: Sequence[dt.datetime], delay_days: int, last_day: dt.date) -> dt.datetime:
    """The query's time: 1..`delay_days` days after the set's last session, by `last_day`, never before it."""
    latest = max(times)
    rng = random.Random(content_hash([key, "ask"]))
    day = min(latest.date() + dt.timedelta(days=rng.randint(1, delay_days)), max(last_day, latest.date()))
    asked = dt.datetime.combine(day, dt.time(rng.randint(*HOURS)))
    return max(asked, latest + dt.timedelta(hours=1))


def pick_seeds(evidence: Sequence[Evidence], events: dict[str, Event], counts: dict[str, int], sizes: dict[str, int],
               gap: int, last: dt.date, salt: str) -> list[tuple[str, Evidence]]:
    """(relation, seed evidence) pairs: per relation its configured count, each seed used once, facts and opinions
    before emotions, in a seeded order; a seed whose event leaves no room for the set's sessions (before `last`,
    `gap` days apart) is skipped."""
    ranked = sorted(evidence, key=lambda e: (e.kind == "emotion", content_hash([salt, e.id])))
    used: set[str] = set()
    picks: list[tuple[str, Evidence]] = []
    for relation in RELATIONS:
        need = counts.get(relation, 0)
        for item in ranked:
            if need <= 0:
                break
            event = events.get(item.event_id)
            if item.id in used or event is None or not item.arc_ids:
                continue
            first = event.time.date() + dt.timedelta(days=1)
            if session_days(item.id, first, last, sizes[relation], gap) is None:
                continue
            used.add(item.id)
            picks.append((relation, item))
            need -= 1
    return picks


def item_variables(persona: dict, relation: str, target: str, variants: Sequence[dict], asked: dt.datetime) -> dict:
    """The item prompt's variables: the variants in the set's own order with their conditions, never their dates
    or session order (the order-independence test renders it with the sessions shuffled)."""
    return {"persona": persona, "relation": relation, "target": target,
            "variants": [{"text": v["text"], "condition": v["condition"]} for v in variants],
            "question_time": asked.isoformat(timespec="minutes")}


# ------------------------------------------------------------------------------------------------ stage

class VariantWriter:
    """What the units of one persona share; a unit builds, checks and keeps or rejects one variant set."""

    def __init__(self, ctx: StageContext) -> None:
        self.ctx = ctx
        self.section: VariantsSettings = ctx.section
        self.persona = ctx.persona
        self.persona_view = self.persona.model_dump(mode="json")
        self.events = {e.id: e for e in ctx.events}
        self.arcs: dict[str, LifeArc] = {a.id: a for a in ctx.arcs}
        traces = ctx.settings.traces
        self.weights = media_weights(traces, ctx.language, ctx.persona.occupation)
        # a private seed's sessions stay off public media (the privacy rule the traces stage and validate hold)
        self.private_weights = {m: w for m, w in self.weights.items() if m not in traces.public_media} or self.weights
        chars = traces.zh_chars_per_word if ctx.language == "zh" else 1.0
        self.words = (round(self.section.min_words * chars), round(self.section.max_words * chars))
        self.last_day = self.persona.end + dt.timedelta(days=ctx.settings.qa.question_grace_days)

    def set_id(self, relation: str, seed: Evidence) -> str:
        return mint_id(self.persona.id, "variant_set", relation, seed.id)

    async def build(self, relation: str, seed: Evidence) -> Records:
        section, ctx = self.section, self.ctx
        size = section.set_size[relation]
        set_id = self.set_id(relation, seed)
        event = self.events[seed.event_id]
        times = session_times(set_id, event.time.date() + dt.timedelta(days=1), self.persona.end, size,
                              section.min_gap_days)
        assert times is not None, "pick_seeds keeps only seeds with room for their sessions"
        drafted = await ctx.ask("variants_set", "variants_set.j2",
                                {"persona": self.persona_view, "relation": relation, "size": size,
                                 "seed": {"statement": seed.statement, "kind": seed.kind,
                                          "date": event.time.date().isoformat()}},
                                set_answer(size))
        drafts = [v.model_dump() for v in drafted.variants]
        media = suggest_media(set_id, size, self.private_weights if seed.private else self.weights)
        asked = ask_time(set_id, times, section.max_ask_delay_days, self.last_day)
        # The query reads the drafts, never the sessions: its chain (item → visible → judge) runs beside theirs.
        *written, (item, visible, judged) = await chain.gather(
            *(self.session(relation, drafts, k, media[k], times[k]) for k in range(size)),
            self.query(relation, drafted.target.strip(), drafts, asked))
        variants = [Variant(text=d["text"].strip(), condition=d["condition"].strip(), signal=d["signal"].strip(),
                            trace_id=mint_id(set_id, "session", k), time=times[k], medium=media[k], content=content)
                    for k, (d, (content, _)) in enumerate(zip(drafts, written, strict=True))]
        checks = [check for _, check in written]
        correct = [a.strip() for a in item.correct_answers]
        wrong = [a.strip() for a in item.wrong_answers]
        query = item.query.strip()
        problems = query_problems(query, [v.content for v in variants], correct, wrong,
                                  section.recency_words.get(ctx.language, []), section.min_query_keywords)
        problems += visible_problems(query, visible.answer, correct, section.visible_overlap)
        record = VariantSet(
            id=set_id, persona_id=self.persona.id, relation=question_type(relation), seed_evidence_id=seed.id,
            event_id=seed.event_id, arc_id=seed.arc_ids[0], dimension=self.arcs[seed.arc_ids[0]].dimension,
            target=drafted.target.strip(), variants=variants,
            query=query, question_time=asked, correct_answers=correct, wrong_answers=wrong,
            min_gap_days=section.min_gap_days, sessions=checks, query_problems=problems,
            visible_answer=visible.answer.strip(), visible_label=judged.label, visible_reason=judged.reason.strip(),
            kept=False)
        reason = rejection(record)
        return {"variants.jsonl": [record.model_copy(update={"kept": not reason, "reason": reason})]}

    async def query(self, relation: str, target: str, drafts: list[dict],
                    asked: dt.datetime) -> tuple[ItemDraft, VisibleAnswer, RelationVerdict]:
        """The set's query and references, written from the drafts; what a no-context reader answers to it; and
        the judge's verdict on that answer (the visible-only check)."""
        item = await self.ctx.ask("variants_item", "variants_item.j2",
                                  item_variables(self.persona_view, relation, target, drafts, asked), ItemDraft)
        correct = [a.strip() for a in item.correct_answers]
        wrong = [a.strip() for a in item.wrong_answers]
        query = item.query.strip()
        visible = await self.ctx.ask("variants_visible", "variants_visible.j2", {"question": query}, VisibleAnswer)
        judged = await self.ctx.ask("variants_judge", "variants_judge.j2",
                                    judge_variables(query, relation, visible.answer, correct, wrong), RelationVerdict)
        return item, visible, judged

    async def session(self, relation: str, drafts: list[dict], k: int, medium: str,
                      when: dt.datetime) -> tuple[str, SessionCheck]:
        """Write variant `k`'s session, check it (rules, then the judge), rewrite it while a check fails (at most
        `max_repairs` times); returns the last draft and its checks."""
        variant = drafts[k]
        base = {"persona": self.persona_view, "relation": relation, "variant": variant,
                "others": [d["text"] for i, d in enumerate(drafts) if i != k], "medium": medium,
                "time": when.isoformat(timespec="minutes"), "min_words": self.words[0], "max_words": self.words[1],
                "problems": [], "previous": ""}
        tokens = answer_tokens(self.ctx, 3 * self.words[1] + 200)
        check = SessionCheck(index=k)
        content, failures = "", []
        for round_ in range(self.section.max_repairs + 1):
            variables = base if round_ == 0 else {**base, "previous": content, "problems": failures}
            drafted = await self.ctx.ask("variants_session", "variants_session.j2", variables, SessionText,
                                         max_tokens=tokens, sample=round_)
            content = drafted.content.strip()
            rules = session_problems(variant["text"], variant["signal"], content)
            verdict = await self.ctx.ask("variants_check", "variants_check.j2",
                                         {"variant": variant, "medium": medium, "content": content}, SessionVerdict)
            failures: list[str] = rules + judge_problems(verdict)
            if round_ == 0:
                check.first_failures = failures
            check = check.model_copy(update={"rule_problems": rules, "recoverable": verdict.recoverable,
                                             "implicit": verdict.implicit, "reason": verdict.reason.strip(),
                                             "repairs": round_})
            if not failures:
                break
        return content, check


def judge_problems(verdict: SessionVerdict) -> list[str]:
    out = []
    if not verdict.recoverable:
        out.append(f"too hidden (judge): {verdict.reason.strip()}")
    if not verdict.implicit:
        out.append(f"too explicit (judge): {verdict.reason.strip()}")
    return out


def rejection(record: VariantSet) -> str:
    """Why a set is not kept ('' when it is): a session still failing after its repairs, the query's model-free
    problems, or a no-context answer the judge accepts (the visible-only check)."""
    for check in record.sessions:
        failing = check.rule_problems + judge_problems(SessionVerdict(recoverable=check.recoverable,
                                                                      implicit=check.implicit, reason=check.reason))
        if failing:
            return f"session {check.index + 1}: {failing[0]}"
    if record.query_problems:
        return record.query_problems[0]
    if record.visible_label == "CORRECT":
        return f"visible-only: answered without memory ({record.visible_answer!r})"
    return ""


async def run(ctx: StageContext) -> dict[str, list]:
    section: VariantsSettings = ctx.section
    if not wanted(section):
        return {"variants.jsonl": []}
    writer = VariantWriter(ctx)
    sizes = {r: section.set_size.get(r, 3) for r in RELATIONS}
    picks = pick_seeds(ctx.evidence, writer.events, dict(section.seeds_per_relation), sizes, section.min_gap_days,
                       ctx.persona.end, ctx.persona.id)
    await ctx.units([(f"set/{relation}/{seed.id}", partial(writer.build, relation, seed)) for relation, seed in picks])
    return {"variants.jsonl": [VariantSet.model_validate(r) for r in ctx.collected()["variants.jsonl"]]}


STAGE = Stage(
    name="variants",
    reads=("persona.jsonl", "arcs.jsonl", "events.jsonl", "evidence.jsonl"),
    writes=("variants.jsonl",),
    templates=("variants_set.j2", "variants_session.j2", "variants_check.j2", "variants_item.j2",
               "variants_visible.j2", "variants_judge.j2"),
    tasks=("variants_set", "variants_session", "variants_check", "variants_item", "variants_visible",
           "variants_judge"),
    judges=("variants_check", "variants_visible", "variants_judge"),
    body=run,
    help="variants.jsonl: relation-controlled variant sets (SubtleMemory), their sessions, queries and references",
    config_keys=("traces", "qa"),  # the media mix and zh length factor; the question grace days
)
