"""`synth export --format hf`: a folder `datasets.load_dataset(<folder>)` loads — Parquet files in three configs
(traces, questions, personas), one split per persona size (100k / 500k) — with a dataset card written from the
run's own records (synth.release.card)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from synth.core.errors import InputError, SynthError
from synth.core.jsonl import staged_dir
from synth.release.view import PersonaView, dict_list, id_list, load_dataset, record_language, text, trace_tokens

CONFIGS = ("questions", "traces", "personas")


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise SynthError("--format hf needs pyarrow: pip install 'synth[hf]'") from None
    return pa, pq


def schemas() -> dict:
    """Fixed column types per config, so every split of a config has the same features (an empty list is not a
    null column) and a field added later elsewhere cannot change the export's shape."""
    pa, _ = _pyarrow()
    ids = pa.list_(pa.string())
    evidence = pa.struct([("statement", pa.string()), ("evidence_id", pa.string()), ("digital_trace_ids", ids),
                          ("background", pa.bool_())])
    choice = pa.struct([("id", pa.string()), ("text", pa.string())])
    relation = pa.struct([("id", pa.string()), ("name", pa.string()), ("relation", pa.string()),
                          ("description", pa.string())])
    big_five = pa.struct([(k, pa.float64()) for k in
                          ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism")])
    s = pa.string()
    return {
        "questions": pa.schema([
            ("id", s), ("persona_id", s), ("language", s), ("question_type", s), ("dimension", s), ("arc_id", s),
            ("question_time", s), ("question", s), ("answer", s), ("evidence", pa.list_(evidence)),
            ("digital_trace_ids", ids), ("choices", pa.list_(choice)), ("correct_choice_id", s),
            ("blind_votes", ids), ("formats", ids),
            # relation items (SubtleMemory): their variant set and the references a free-text answer is judged by
            ("variant_set_id", s), ("correct_answers", ids), ("wrong_answers", ids)]),
        "traces": pa.schema([
            ("id", s), ("persona_id", s), ("language", s), ("event_id", s), ("evidence_ids", ids), ("arc_ids", ids),
            ("medium", s), ("time", s), ("content", s), ("tokens", pa.int64()), ("variant_set_id", s)]),
        "personas": pa.schema([
            ("id", s), ("name", s), ("language", s), ("scale", s), ("split", s), ("age", pa.int64()), ("gender", s),
            ("occupation", s), ("personality", s), ("backstory", s), ("big_five", big_five), ("start", s),
            ("end", s), ("relations", pa.list_(relation)), ("traces", pa.int64()), ("trace_tokens", pa.int64()),
            ("questions", pa.int64())]),
    }


def question_row(item: dict, language: str) -> dict:
    """One question; an item valid only as an open question has no choices and no key (`formats` says which)."""
    formats = id_list(item.get("formats")) or ["open", "mcq"]  # records from before formats: both
    mcq = "mcq" in formats
    return {
        "id": text(item.get("id")), "persona_id": text(item.get("persona_id")),
        "language": record_language(item, language), "question_type": text(item.get("question_type")),
        "dimension": text(item.get("dimension")), "arc_id": text(item.get("arc_id")),
        "question_time": text(item.get("question_time")), "question": text(item.get("question")),
        "answer": text(item.get("answer")),
        "evidence": [{"statement": text(e.get("statement")), "evidence_id": text(e.get("evidence_id")),
                      "digital_trace_ids": id_list(e.get("digital_trace_ids")),
                      "background": bool(e.get("background", False))} for e in dict_list(item.get("evidence"))],
        "digital_trace_ids": id_list(item.get("digital_trace_ids")),
        "choices": [{"id": text(c.get("id")), "text": text(c.get("text"))}
                    for c in dict_list(item.get("choices"))] if mcq else [],
        "correct_choice_id": text(item.get("correct_choice_id")) if mcq else "",
        "blind_votes": id_list(item.get("blind_votes")) if mcq else [], "formats": formats,
        "variant_set_id": text(item.get("variant_set_id")), "correct_answers": id_list(item.get("correct_answers")),
        "wrong_answers": id_list(item.get("wrong_answers")),
    }


def trace_rows(view: PersonaView) -> list[dict]:
    arcs_of = {text(e.get("id")): id_list(e.get("arc_ids")) for e in view.evidence}
    rows = []
    for t in sorted(view.traces, key=lambda t: (text(t.get("time")), text(t.get("id")))):
        evidence_ids = id_list(t.get("evidence_ids"))
        arcs = sorted({a for e in evidence_ids for a in arcs_of.get(e, [])})
        rows.append({"id": text(t.get("id")), "persona_id": text(t.get("persona_id")) or view.id,
                     "language": record_language(t, view.language), "event_id": text(t.get("event_id")),
                     "evidence_ids": evidence_ids, "arc_ids": arcs, "medium": text(t.get("medium")),
                     "time": text(t.get("time")), "content": text(t.get("content")),
                     "tokens": int(t.get("tokens") or 0), "variant_set_id": text(t.get("variant_set_id"))})
    return rows


def persona_row(view: PersonaView, split: str) -> dict:
    p = view.persona
    five = p.get("big_five") if isinstance(p.get("big_five"), dict) else {}
    return {
        "id": view.id, "name": text(p.get("name")), "language": view.language, "scale": text(p.get("scale")),
        "split": split, "age": p.get("age") if isinstance(p.get("age"), int) else None,
        "gender": text(p.get("gender")), "occupation": text(p.get("occupation")),
        "personality": text(p.get("personality")), "backstory": text(p.get("backstory")),
        "big_five": {k: float(five[k]) for k in ("openness", "conscientiousness", "extraversion", "agreeableness",
                                                 "neuroticism") if isinstance(five.get(k), int | float)} or None,
        "start": text(p.get("start")), "end": text(p.get("end")),
        "relations": [{k: text(r.get(k)) for k in ("id", "name", "relation", "description")}
                      for r in dict_list(p.get("relations"))],
        "traces": len(view.traces), "trace_tokens": trace_tokens(view.traces), "questions": len(view.final),
    }


def split_of(view: PersonaView) -> str:
    """The CloneMem export's size bucket (by the persona's trace tokens), so both exports file a persona alike."""
    from synth.release.clonemem import size_bucket

    return size_bucket(trace_tokens(view.traces))


def table_rows(views: Iterable[PersonaView]) -> dict[str, dict[str, list[dict]]]:
    """config → split → rows."""
    tables: dict[str, dict[str, list[dict]]] = {name: {} for name in CONFIGS}
    for view in views:
        split = split_of(view)
        tables["questions"].setdefault(split, []).extend(question_row(i, view.language) for i in view.final)
        tables["traces"].setdefault(split, []).extend(trace_rows(view))
        tables["personas"].setdefault(split, []).append(persona_row(view, split))
    return tables


def write_parquet(tables: dict[str, dict[str, list[dict]]], root: Path) -> dict[str, dict[str, str]]:
    """data/<config>/<split>.parquet; returns config → split → path relative to the folder."""
    pa, pq = _pyarrow()
    types = schemas()
    files: dict[str, dict[str, str]] = {}
    for config, splits in tables.items():
        for split, rows in sorted(splits.items()):
            relative = f"data/{config}/{split}.parquet"
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            if not rows:
                # `datasets.load_dataset` cannot load an empty split (a 0-row file fails, a file without row
                # groups is "no data"): a persona size with no kept question has no questions split.
                continue
            pq.write_table(pa.Table.from_pylist(rows, schema=types[config]), root / relative)
            files.setdefault(config, {})[split] = relative
    return files


def export_hf(out: Path, seeds: Iterable | None = None, license_id: str | None = None) -> Path:
    """Write <out>/export/hf/ (replacing an older one only once the new one is complete); returns its path."""
    from synth.release.card import card_facts, render_card

    only = {s.id for s in seeds} if seeds is not None else None
    views = [v for v in load_dataset(out, only) if (v.directory / "final.jsonl").is_file()]
    if not views:
        raise InputError(f"{out}: no persona with final.jsonl to export — run `synth filter` first")
    if not any(view.final for view in views):
        raise InputError(f"{out}: no final item in final.jsonl (the filters kept none; `synth stats` says why): "
                         "datasets.load_dataset cannot load an empty questions split, so nothing was exported")
    target = out / "export" / "hf"
    with staged_dir(target, ".hf.") as staging:
        tables = table_rows(views)
        files = write_parquet(tables, staging)
        figures = _figures(views, out, staging / "figures")
        rows = {c: {s: len(r) for s, r in splits.items()} for c, splits in tables.items()}
        facts = card_facts(out, views, files, rows, figures, license_id)
        (staging / "README.md").write_text(render_card(facts), encoding="utf-8")
    return target


def _figures(views: list[PersonaView], out: Path, target: Path) -> list[str]:
    """The charts of synth.release.charts for the card, as paths relative to the folder ([] without matplotlib)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return []
    from synth.release.card import validity_figures
    from synth.release.charts import plot_dataset

    return [f"figures/{p.name}" for p in plot_dataset(views, validity_figures(out, views), target)]
