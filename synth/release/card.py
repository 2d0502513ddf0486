"""The dataset card of the HF export: every figure is computed here from the run's records — manifests (settings,
routes, prompt hashes, calls), filter_report.json and the items' filter verdicts, dataset.json (preset, provider,
validity, license) — and rendered by the Jinja template synth/release/assets/dataset_card.md.j2. Nothing is typed by hand."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from synth.config import question_types
from synth.quality import rules
from synth.release.view import PersonaView, dict_list, read_json, record_language, text

ASSETS = Path(__file__).parent / "assets"
TYPES = question_types.names("clonemem")  # a card names those of CloneMem's eight a dataset lacks
# what the card shows of dataset.json's `validity` (a dataset recorded before one of them existed is recomputed)
VALIDITY_KEYS = {"blind_accuracy", "blind_accuracy_answerable", "blind_picks", "blind_by_type", "blind_flagged_types",
                 "positions", "position_balance_ok", "correct_is_longest_rate", "correct_is_longest_ok",
                 "key_central_rate", "key_central_ok", "key_entity_central_rate", "choices_only_accuracy",
                 "choices_only_answered", "open_valid", "mcq_valid", "formats_by_type"}
SMALL_SAMPLE = 100  # fewer answerable items than this: the validity figures are noisy, and the card says so


def validity_figures(out: Path, views: list[PersonaView]) -> dict:
    """dataset.json's `validity` (recorded when the filter ran) when it still describes the final items; after a
    change to final.jsonl (a review import) the same figures recomputed from the records by synth.release.stats."""
    recorded = read_json(out / "dataset.json").get("validity")
    finals = sum(len(v.final) for v in views)
    if isinstance(recorded, dict) and recorded.get("final") == finals and set(recorded) >= VALIDITY_KEYS:
        return {**recorded, "source": "dataset.json"}
    from synth.release.stats import collect

    return {**collect(out), "source": "recomputed from final.jsonl / rejected.jsonl"}


def _license(out: Path, given: str | None) -> str:
    if given:
        return given
    recorded = read_json(out / "dataset.json")
    config = recorded.get("config") if isinstance(recorded.get("config"), dict) else {}
    section = config.get("export") if isinstance(config.get("export"), dict) else {}
    if text(section.get("license")):
        return section["license"]
    from synth.config import conf

    return conf.preset_config(text(recorded.get("preset")) or "tiny")["export"]["license"]


def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return name
    return "1M<n<10M"


def stage_table(views: list[PersonaView]) -> list[dict]:
    """Per stage, summed over personas: provider/model routes per task, settings, calls, tokens, cost, wall time."""
    rows: dict[str, dict] = {}
    for view in views:
        for stage, m in view.manifests.items():
            row = rows.setdefault(stage, {"stage": stage, "routes": defaultdict(set), "settings": set(), "calls": 0,
                                          "cache_hits": 0, "tokens": 0, "cost_usd": 0.0, "wall_s": 0.0,
                                          "models": set()})
            settings = m.get("settings") if isinstance(m.get("settings"), dict) else {}
            for task, route in (settings.get("routes") or {}).items():
                row["routes"][task].add(str(route))
            shown = {k: v for k, v in settings.items() if k != "routes"}
            row["settings"].add(json.dumps(shown, sort_keys=True, ensure_ascii=False))
            row["models"].add(f"{m.get('provider', '?')}/{m.get('model', '?')}")
            row["calls"] += int(m.get("provider_calls") or 0)
            row["cache_hits"] += int(m.get("cache_hits") or 0)
            row["tokens"] += int(m.get("input_tokens") or 0) + int(m.get("output_tokens") or 0)
            row["cost_usd"] += float(m.get("cost_usd") or 0.0)
            row["wall_s"] += float(m.get("wall_s") or 0.0)
    order = ["persona", "arcs", "phases", "events", "traces", "qa", "distractors", "filter"]
    stages = sorted(rows.values(), key=lambda r: (order.index(r["stage"]) if r["stage"] in order else 99, r["stage"]))
    return [{**r, "routes": {t: sorted(v) for t, v in sorted(r["routes"].items())}, "models": sorted(r["models"]),
             "settings": sorted(r["settings"]), "cost_usd": round(r["cost_usd"], 4), "wall_s": round(r["wall_s"], 1)}
            for r in stages]


def prompt_hashes(views: list[PersonaView]) -> dict[str, list[str]]:
    hashes: dict[str, set[str]] = defaultdict(set)
    for view in views:
        for m in view.manifests.values():
            for template, digest in (m.get("template_hashes") or {}).items():
                hashes[template].add(str(digest))
    return {t: sorted(h) for t, h in sorted(hashes.items())}


def filter_rates(views: list[PersonaView]) -> list[dict]:
    """Per check, over every item the filter judged (final and rejected): items checked, passed, the pass rate, and
    how many it rejected first (filter_report.json's `rejected_by_filter`; an item counts for its first failure)."""
    checked: Counter = Counter()
    passed: Counter = Counter()
    first: Counter = Counter()
    for view in views:
        for item in [*view.final, *view.rejected]:
            for verdict in dict_list(item.get("verdicts")):
                name = text(verdict.get("filter"))
                checked[name] += 1
                passed[name] += bool(verdict.get("passed"))
        first.update({str(k): int(v) for k, v in (view.filter_report.get("rejected_by_filter") or {}).items()})
    names = list(dict.fromkeys([*checked, *first]))
    return [{"filter": n, "checked": checked[n], "passed": passed[n],
             "rate": round(passed[n] / checked[n], 4) if checked[n] else None, "rejected_first": first[n]}
            for n in names]


def counts(views: list[PersonaView]) -> dict:
    items = [(i, v.language) for v in views for i in v.final]
    traces = [(t, v.language) for v in views for t in v.traces]
    return {
        "by_type": dict(Counter(text(i.get("question_type")) for i, _ in items).most_common()),
        "by_dimension": dict(Counter(text(i.get("dimension")) for i, _ in items).most_common()),
        "questions_by_language": dict(Counter(record_language(i, lang) for i, lang in items).most_common()),
        "by_medium": dict(Counter(text(t.get("medium")) for t, _ in traces).most_common()),
        "traces_by_language": dict(Counter(record_language(t, lang) for t, lang in traces).most_common()),
        "rejected": sum(len(v.rejected) for v in views),
        "missing_types": [t for t in TYPES if t not in {text(i.get("question_type")) for i, _ in items}],
    }


def limitations(dataset: dict, validity: dict, count: dict) -> list[str]:
    """What a user must know before trusting the figures, each derived from them."""
    found = []
    if dataset.get("provider") == "fake":
        found.append("Generated with the `fake` provider, a test double: every text is placeholder words. This "
                     "folder shows the format and the plumbing; it is not a benchmark.")
    answerable = int(validity.get("answerable") or 0)
    if answerable < SMALL_SAMPLE:
        found.append(f"The validity figures rest on {answerable} answerable item(s); below {SMALL_SAMPLE} they "
                     "are noisy (one item moves a rate by several points).")
    if validity.get("blind_flagged_types"):
        found.append("Blind accuracy is above chance + 5 points for: "
                     f"{', '.join(validity['blind_flagged_types'])} — these items can partly be answered without "
                     "the memory.")
    if not validity.get("position_balance_ok", True):
        shares = ", ".join(f"{k} {v:.0%}" for k, v in (validity.get("positions") or {}).items())
        found.append(f"Correct-option positions are not balanced within 25% ± 5 ({shares}).")
    if not validity.get("correct_is_longest_ok", True):
        found.append(f"The key is the longest option in {validity.get('correct_is_longest_rate', 0):.0%} of "
                     "answerable items (goal ≤ 25%).")
    if not validity.get("key_central_ok", True):
        found.append(f"The key is the most central option in {validity.get('key_central_rate', 0):.0%} of "
                     "answerable items (goal ≤ 30%).")
    if count["missing_types"]:
        found.append(f"No final item of type: {', '.join(count['missing_types'])}.")
    return found


def card_facts(out: Path, views: list[PersonaView], files: dict, rows: dict, figures: list[str],
               license_id: str | None = None) -> dict:
    dataset = read_json(out / "dataset.json")
    validity = validity_figures(out, views)
    finals = [i for v in views for i in v.final]
    validity.setdefault("answerable", sum(rules.answerable(text(i.get("question_type"))) for i in finals))
    count = counts(views)
    languages = sorted({*count["questions_by_language"], *count["traces_by_language"]} or {v.language for v in views})
    chance = {t: row for t, row in (validity.get("blind_by_type") or {}).items()}
    return {
        "pretty_name": f"synth memory benchmark ({out.name})", "license": _license(out, license_id),
        "languages": languages,
        "size_category": _size_category(sum(n for splits in rows.values() for n in splits.values())),
        "files": files, "rows": rows, "default_config": "questions",
        "dataset": {k: dataset.get(k) for k in ("preset", "provider", "model", "base_url", "batch")},
        "personas": [{"id": v.id, "name": text(v.persona.get("name")), "language": v.language,
                      "scale": text(v.persona.get("scale")), "traces": len(v.traces), "questions": len(v.final),
                      "rejected": len(v.rejected)} for v in views],
        "stages": stage_table(views), "prompts": prompt_hashes(views), "counts": count,
        "filters": filter_rates(views), "validity": validity, "blind_by_type": chance,
        "chance": 0.2, "limitations": limitations(dataset, validity, count), "figures": figures,
        "positions": rules.POSITIONS,
    }


def render_card(facts: dict) -> str:
    env = Environment(loader=FileSystemLoader(str(ASSETS)), undefined=StrictUndefined, keep_trailing_newline=True,
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["q"] = lambda v: json.dumps(v, ensure_ascii=False)  # a double-quoted YAML scalar
    env.filters["pct"] = lambda v: "—" if v is None else f"{float(v):.1%}"
    return env.get_template("dataset_card.md.j2").render(**facts)
