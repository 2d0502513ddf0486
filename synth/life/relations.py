"""What the variants stage's records become downstream (SubtleMemory): a kept set's sessions as traces (folded by
the traces stage into traces.jsonl), its query as a `relation_*` item (joined by the qa stage to qa.jsonl), the
judge with accepted and known-wrong answers (the stage's visible-only check and `synth eval` share it), and the
check rates `synth stats` prints."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from synth.config.settings import VariantsSettings
from synth.core.tokens import estimate_tokens
from synth.records import QA, EvidenceRef, Trace, VariantSet, mint_id

RELATIONS = ("complementary_all", "complementary_any", "nuanced_temporal", "nuanced_contextual", "contradictory")


class RelationVerdict(BaseModel):
    """The judge with accepted and known-wrong answers (SubtleMemory): a binary label with a short reason."""

    label: Literal["CORRECT", "WRONG"]
    reason: str


def judge_variables(question: str, relation: str, answer: str, correct: Sequence[str], wrong: Sequence[str]) -> dict:
    """What the relation judge sees (here and in `synth eval`): the query, the relation, the answer to grade and
    the accepted and known-wrong references."""
    return {"question": question, "relation": relation.removeprefix("relation_"), "answer": answer,
            "correct_answers": list(correct), "wrong_answers": list(wrong)}


def wanted(section: VariantsSettings) -> bool:
    """Whether the config asks for any variant set at all (tiny does not: the stage then writes nothing)."""
    return any(section.seeds_per_relation.get(r, 0) > 0 for r in RELATIONS)


def set_traces(record: VariantSet) -> list[Trace]:
    """A kept set's sessions as traces of the persona's usual media: they carry the seed evidence they vary and
    are marked with the set's id (provenance); a rejected set's sessions never join the history."""
    if not record.kept:
        return []
    return [Trace(id=v.trace_id, persona_id=record.persona_id, event_id=record.event_id,
                  evidence_ids=[record.seed_evidence_id], medium=v.medium, time=v.time, intent="variant session",
                  audience="", content=v.content, tokens=estimate_tokens(v.content), variant_set_id=record.id)
            for v in record.variants]


def relation_item(record: VariantSet) -> QA:
    """A kept set's query as an item: one evidence statement per variant (in the set's order, never the sessions'
    time order), each citing its own session; the answer is the first accepted reference, and the item keeps all
    three accepted and three known-wrong ones (the MCQ and the eval judge are built from them)."""
    refs = [EvidenceRef(statement=v.text, evidence_id=record.seed_evidence_id, digital_trace_ids=[v.trace_id])
            for v in record.variants]
    return QA(
        id=mint_id(record.persona_id, "qa", record.relation, record.id), persona_id=record.persona_id,
        question_type=record.relation, dimension=record.dimension, arc_id=record.arc_id,
        question_time=record.question_time, question=record.query, answer=record.correct_answers[0],
        evidence=refs, digital_trace_ids=[v.trace_id for v in record.variants],
        window_end=record.question_time.date(), outline=record.target, variant_set_id=record.id,
        correct_answers=list(record.correct_answers), wrong_answers=list(record.wrong_answers),
    )


def relation_items(records: Sequence[VariantSet]) -> list[QA]:
    return [relation_item(r) for r in records if r.kept]


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def variant_rates(records: Sequence[VariantSet]) -> dict:
    """The variants stage's check rates for `synth stats`: per relation, sets and kept; over every session, the
    share whose first draft was too explicit or too hidden by the model-free rules and by the judge, and the share
    a rewrite fixed; over every set, the share whose query failed a model-free check (keywords all in one session,
    a recency word, the references' shape), the share the visible-only check's rule flagged (an accepted answer's
    words in the query or the no-context answer) and the share whose no-context answer the judge accepted."""
    sessions = [s for r in records for s in r.sessions]

    def first(prefix: str) -> int:
        return sum(any(f.startswith(prefix) for f in s.first_failures) for s in sessions)

    def query(prefix: str) -> int:
        return sum(any(p.startswith(prefix) for p in r.query_problems) for r in records)

    failed = [s for s in sessions if s.first_failures]
    fixed = sum(not s.rule_problems and s.recoverable and s.implicit for s in failed)
    by_relation: dict[str, dict[str, int]] = {}
    for r in records:
        row = by_relation.setdefault(r.relation, {"sets": 0, "kept": 0})
        row["sets"] += 1
        row["kept"] += r.kept
    return {
        "sets": len(records), "kept": sum(r.kept for r in records), "sessions": len(sessions),
        "by_relation": by_relation,
        "kept_rate": _share(sum(r.kept for r in records), len(records)),
        "session_rule_explicit_rate": _share(first("too explicit: "), len(sessions)),
        "session_rule_hidden_rate": _share(first("too hidden: "), len(sessions)),
        "session_judge_explicit_rate": _share(first("too explicit (judge)"), len(sessions)),
        "session_judge_hidden_rate": _share(first("too hidden (judge)"), len(sessions)),
        "session_repaired_rate": _share(fixed, len(failed)),
        "query_one_session_rate": _share(query("too explicit: every keyword"), len(records)),
        "query_recency_rate": _share(query("order decides"), len(records)),
        "query_references_rate": _share(query("references"), len(records)),
        "visible_rule_rate": _share(query("visible-only (rule)"), len(records)),
        "visible_only_rate": _share(sum(r.visible_label == "CORRECT" for r in records), len(records)),
    }
