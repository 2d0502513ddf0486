"""Dataset statistics as data: counts, rejections, validity rates, life figures and cost per item (`collect`), and
the validity block recorded in dataset.json. `stats_report` prints them."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from synth.config.conf import recorded_section
from synth.core.jsonl import read_records
from synth.life.relations import variant_rates
from synth.life.spoken import validation_rates
from synth.quality import rules
from synth.quality.privacy import LeakRule, privacy_figures
from synth.quality.validate import recorded_config
from synth.quality.validity import (  # noqa: F401  (re-exported: the figures are part of what stats reports)
    BLIND_MARGIN,
    CHANCE,
    answerable,
    bias_report,
    blind_accuracy,
    choices_only_accuracy,
    correct_is_longest,
    distractor_texts,
    key_is_central,
    option_text,
    position_shares,
)
from synth.records import (
    ChatDay,
    Event,
    Evidence,
    FinalItem,
    LifelogDialogue,
    LifelogPlan,
    MajorEvent,
    Person,
    Persona,
    Phase,
    Rejected,
    Trace,
    VariantSet,
)
from synth.release.life_stats import media_mix, persona_life
from synth.release.view import persona_dirs

POSITIONS = rules.POSITIONS


# ------------------------------------------------------------------------------------------- dataset view

def profile_rates(items: Sequence[FinalItem]) -> dict:
    """The profile items' model-free 2×2 check (synth.quality.rules.profile_problems): the share whose first draft failed
    it, the share still failing after the re-asks, the re-asks made, and the share of profile items kept."""
    profiled = [i for i in items if i.profile is not None]
    n = len(profiled)
    if not n:
        return {"items": 0}
    return {
        "items": n,
        "first_draft_fail_rate": round(sum(bool(i.profile.first_problems) for i in profiled) / n, 4),
        "fail_rate": round(sum(bool(i.profile.problems) for i in profiled) / n, 4),
        "rewrites": sum(i.profile.rewrites for i in profiled),
        "kept_rate": round(sum(not isinstance(i, Rejected) for i in profiled) / n, 4),
    }


def _read(path: Path, model):
    return read_records(path, model) if path.is_file() else []


def trace_tokens(traces: Sequence[Trace]) -> int:
    from synth.core.tokens import estimate_tokens

    return sum(t.tokens or estimate_tokens(t.content) for t in traces)


def item_cost(out: Path, final: int) -> dict:
    """Provider calls and USD of the run (every stage's manifest) in all and per final item: a check that rejects
    most items shows here, not only in the per-stage cost."""
    calls, usd = 0, 0.0
    for path in sorted(out.glob("*/manifests/*.json")):
        manifest = json.loads(path.read_text(encoding="utf-8"))
        calls += int(manifest.get("provider_calls", 0))
        usd += float(manifest.get("cost_usd", 0.0))
    return {"calls": calls, "usd": round(usd, 6), "calls_per_item": round(calls / final, 2) if final else None,
            "usd_per_item": round(usd / final, 6) if final else None}


def collect(out: Path) -> dict:
    """Every number `synth stats` prints, as a dict (tests and charts read it)."""
    final: list[FinalItem] = []
    rejected: list[Rejected] = []
    media: Counter = Counter()
    media_by_language: dict[str, Counter] = {}
    life = {}
    privacy = {}
    config = recorded_config(out)
    personas = {}
    chats: list[ChatDay] = []
    dialogues: list[LifelogDialogue] = []
    plan: list[LifelogPlan] = []
    variant_sets: list[VariantSet] = []
    names: list[str] = []  # the people and places of every life: what the entity-overlap measure counts
    for directory in persona_dirs(out):
        persona = _read(directory / "persona.jsonl", Persona)
        names += [p.name for p in _read(directory / "people.jsonl", Person)]
        names += [r.name for p in persona for r in p.relations]
        traces = _read(directory / "traces.jsonl", Trace)
        if persona:
            events = _read(directory / "events.jsonl", Event)
            media_by_language.setdefault(persona[0].language, Counter()).update(t.medium for t in traces)
            privacy[directory.name] = privacy_figures(traces, events, _read(directory / "evidence.jsonl", Evidence),
                                                      LeakRule.of(config.get("traces", {})))
            life[directory.name] = persona_life(
                persona[0], traces, events,
                _read(directory / "phases.jsonl", Phase), _read(directory / "major_events.jsonl", MajorEvent),
                _read(directory / "people.jsonl", Person), int(recorded_section(config, "events")["max_gap_days"]))
        kept = _read(directory / "final.jsonl", FinalItem)
        chats += _read(directory / "chats.jsonl", ChatDay)
        dialogues += _read(directory / "lifelog.jsonl", LifelogDialogue)
        plan += _read(directory / "lifelog_plan.jsonl", LifelogPlan)
        variant_sets += _read(directory / "variants.jsonl", VariantSet)
        dropped = _read(directory / "rejected.jsonl", Rejected)
        final += kept
        rejected += dropped
        media.update(t.medium for t in traces)
        personas[directory.name] = {
            "name": persona[0].name if persona else "", "traces": len(traces), "trace_tokens": trace_tokens(traces),
            "final": len(kept), "rejected": len(dropped),
        }
    return {
        "personas": personas,
        "cost": item_cost(out, len(final)),
        "final": len(final),
        "generated": len(final) + len(rejected),
        "by_type": dict(Counter(i.question_type for i in final).most_common()),
        "by_dimension": dict(Counter(i.dimension for i in final).most_common()),
        "by_medium": dict(media.most_common()),
        "media_by_language": media_mix(media_by_language, config.get("traces", {}).get("media", {})),
        "life": life,
        "privacy": privacy,
        "rejected_by_filter": dict(Counter(r.filter for r in rejected).most_common()),
        "spoken_validation": {"group_chat": validation_rates(chats), "lifelog": validation_rates(dialogues)},
        "profile_check": profile_rates([*final, *rejected]),
        # the lifelog plan's parent–child checks per level (rule level only: no judge)
        "lifelog_plan": {level: validation_rates([n for n in plan if n.level == level])
                         for level in ("year", "month", "week", "day")},
        "variants": variant_rates(variant_sets),  # SubtleMemory's variant-set checks (synth variants)
        # LifeDialBench's rewrite: the share of generated items whose question had explicit timestamps taken out
        "timestamp_rewrite_rate": round(sum(i.timestamps_stripped > 0 for i in [*final, *rejected])
                                        / max(1, len(final) + len(rejected)), 4),
        "final_by_type_and_filter": _type_table(final, rejected),
        "formats_by_type": _formats_table(final, rejected),
        "open_valid": sum("open" in i.formats for i in final),
        "mcq_valid": sum("mcq" in i.formats for i in final),
        # the multiple-choice figures are over the items valid as multiple choice
        **blind_accuracy([i for i in final if "mcq" in i.formats]),
        "blind_before_filtering": blind_accuracy([*final, *rejected]),
        **choices_only_accuracy([*final, *rejected]),
        **bias_report([i for i in final if "mcq" in i.formats], names=names),
    }


def record_validity(out: Path) -> dict:
    """The validity figures of the dataset's final items, recorded in dataset.json (the dataset card's data):
    blind accuracy per question type against chance (flagging types above chance + 5 points), the key-is-longest
    and key-is-most-central rates, position balance, and items per type and check."""
    data = collect(out)
    keys = ("final", "generated", "blind_accuracy", "blind_accuracy_answerable", "blind_picks", "blind_by_type",
            "blind_flagged_types", "positions", "position_balance_ok", "correct_is_longest_rate",
            "correct_is_longest_ok", "key_central_rate", "key_central_ok", "key_entity_central_rate",
            "key_entity_central_ok", "choices_only_answered", "choices_only_accuracy", "choices_only_ok",
            "open_valid", "mcq_valid", "formats_by_type", "rejected_by_filter", "final_by_type_and_filter")
    validity = {key: data[key] for key in keys}
    path = out / "dataset.json"
    if path.is_file():
        from synth.core.jsonl import write_json_atomic

        write_json_atomic(path, {**json.loads(path.read_text(encoding="utf-8")), "validity": validity})
    return validity


def _formats_table(final: list[FinalItem], rejected: list[Rejected]) -> dict[str, dict[str, int]]:
    """Per question type: items generated, open-valid, MCQ-valid."""
    table: dict[str, dict[str, int]] = {}
    for item in [*final, *rejected]:
        row = table.setdefault(item.question_type, {"generated": 0, "open_valid": 0, "mcq_valid": 0})
        row["generated"] += 1
        if not isinstance(item, Rejected):
            row["open_valid"] += "open" in item.formats
            row["mcq_valid"] += "mcq" in item.formats
    return dict(sorted(table.items()))


def _type_table(final: list[FinalItem], rejected: list[Rejected]) -> dict[str, dict[str, int]]:
    """Per question type: items generated, rejected by each filter, final."""
    table: dict[str, dict[str, int]] = {}
    for item in [*final, *rejected]:
        row = table.setdefault(item.question_type, {"generated": 0, "final": 0})
        row["generated"] += 1
        if isinstance(item, Rejected):
            row[item.filter] = row.get(item.filter, 0) + 1
        else:
            row["final"] += 1
    return table
