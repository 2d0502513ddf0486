"""The validity figures of multiple-choice items, without a model: option-position balance, the key-is-longest and
key-is-most-central rates (as the outside MCQ-bias script, mcq_bias.py, counts them), and blind accuracy against chance."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from synth.quality import rules
from synth.records import MCQ, FinalItem

POSITIONS = rules.POSITIONS


def answerable(item: MCQ) -> bool:
    return rules.answerable(item.question_type)


def option_text(item: MCQ, choice_id: str) -> str:
    return rules.choice_text(((c.id, c.text) for c in item.choices), choice_id)


def distractor_texts(item: MCQ) -> list[str]:
    return rules.distractors_of(((c.id, c.text) for c in item.choices), item.correct_choice_id)


def correct_is_longest(item: MCQ) -> bool:
    """The key is at least as long as every other A–D option (ties count, as the outside mcq_bias.py does)."""
    return rules.key_is_longest({c.id: c.text for c in item.choices}, item.correct_choice_id)


def key_is_central(item: MCQ) -> bool:
    """The key has the highest mean word overlap with the other A–D options (ties count, as mcq_bias.py does)."""
    return rules.key_is_most_central({c.id: c.text for c in item.choices}, item.correct_choice_id)


def key_is_entity_central(item: MCQ, names: Iterable[str] = ()) -> bool:
    """The key shares strictly the most people/places with the other A–D options (synth.quality.rules)."""
    return rules.key_is_entity_central({c.id: c.text for c in item.choices}, item.correct_choice_id, names)


def position_shares(items: Iterable[MCQ]) -> dict[str, float]:
    """Share of answerable items whose correct option is A, B, C, D."""
    counts = Counter(i.correct_choice_id for i in items if answerable(i))
    total = sum(counts.values())
    return {p: round(counts[p] / total, 4) if total else 0.0 for p in POSITIONS}


def bias_report(items: Sequence[MCQ], tolerance: float = 0.05, names: Iterable[str] = ()) -> dict:
    """Model-free give-aways over answerable items: position balance (each of A–D within ±tolerance of 25%), the
    key-is-longest rate (goal ≤ 25%), the key-is-most-central rate (goal ≤ 30%; chance is 25%) and the
    key-is-entity-centroid rate (strictly the most shared people/places; goal ≤ 25%)."""
    names = list(names)
    graded = [i for i in items if answerable(i)]
    shares = position_shares(graded)
    longest = sum(correct_is_longest(i) for i in graded) / len(graded) if graded else 0.0
    central = sum(key_is_central(i) for i in graded) / len(graded) if graded else 0.0
    entity = sum(key_is_entity_central(i, names) for i in graded) / len(graded) if graded else 0.0
    return {
        "answerable": len(graded),
        "positions": shares,
        "position_balance_ok": bool(graded) and all(abs(s - 0.25) <= tolerance for s in shares.values()),
        "correct_is_longest_rate": round(longest, 4),
        "correct_is_longest_ok": longest <= 0.25,
        "key_central_rate": round(central, 4),
        "key_central_ok": central <= 0.30,
        "key_entity_central_rate": round(entity, 4),
        "key_entity_central_ok": entity <= 0.25,
    }


CHANCE = 1 / 5  # a blind pick among five options
BLIND_MARGIN = 0.05  # a type whose blind accuracy is above chance by more than this is flagged


def _votes(item: FinalItem) -> list[str]:
    return list(item.blind_votes) or ([item.blind_choice] if item.blind_choice else [])


def blind_accuracy(items: Iterable[FinalItem]) -> dict:
    """How often no-context picks land on the key: over every pick (the refinement validator's last and each blind
    sample), overall and per question type against chance (1 in 5); types above chance + 5 points are flagged."""
    items = [i for i in items if _votes(i)]
    def rate(group: list[FinalItem]) -> tuple[int, float]:
        picks = [v == i.correct_choice_id for i in group for v in _votes(i)]
        return len(picks), (sum(picks) / len(picks) if picks else 0.0)

    by_type = {}
    for qtype in sorted({i.question_type for i in items}):
        n, accuracy = rate([i for i in items if i.question_type == qtype])
        by_type[qtype] = {"picks": n, "accuracy": round(accuracy, 4), "chance": CHANCE,
                          "above_chance": accuracy > CHANCE + BLIND_MARGIN}
    picks, overall = rate(items)
    graded_picks, graded = rate([i for i in items if answerable(i)])
    return {
        "blind_answered": len(items), "blind_picks": picks,
        "blind_accuracy": round(overall, 4),
        "blind_accuracy_answerable": round(graded, 4) if graded_picks else 0.0,
        "blind_by_type": by_type,
        "blind_flagged_types": [t for t, row in by_type.items() if row["above_chance"]],
    }


def choices_only_accuracy(items: Iterable[FinalItem]) -> dict:
    """How often a reader shown only the options (no question) picks the key, over answerable items it was asked
    about; chance is 1 in 4 among A–D (Balepur et al., ACL 2024: above chance, the options alone give it away)."""
    asked = [i for i in items if i.choices_only_choice and answerable(i)]
    right = sum(i.choices_only_choice == i.correct_choice_id for i in asked)
    return {"choices_only_answered": len(asked),
            "choices_only_accuracy": round(right / len(asked), 4) if asked else 0.0,
            "choices_only_ok": not asked or right / len(asked) <= 0.25 + BLIND_MARGIN}
