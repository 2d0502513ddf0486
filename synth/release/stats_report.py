"""`synth stats` as a person reads it: the run summary first, then tables of counts, rejections, validity rates
and, with --plot, the charts."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from synth.release.stats import collect
from synth.release.summary import recorded_run, run_summary, summary_lines


def _life_table(data: dict) -> Table:
    table = Table(title="a lived life: traces per month, gaps, everyday share, variety, cast", title_justify="left")
    cols = ("persona", "traces/month min", "median", "longest gap (days)", "gaps over limit", "events re-dated",
            "everyday share", "distinct-2", "repeated openings", "cast start → end", "places")
    for col in cols:
        table.add_column(col, justify="left" if col == "persona" else "right")
    for pid, row in data["life"].items():
        table.add_row(pid, str(row["traces_per_month_min"]), f"{row['traces_per_month_median']:g}",
                      str(row["gap_days_max"]), f"{row['gaps_over_limit']} (> {row['max_gap_days']})",
                      f"{row['redated_share']:.1%}",
                      f"{row['everyday_share']:.1%}", f"{row['distinct_2']:.3f}", f"{row['repeated_openings']:.1%}",
                      f"{row['cast_start']} → {row['cast_end']}", str(row["places"]))
    return table


def _privacy_table(data: dict) -> Table:
    table = Table(title="public media never reveal what is hidden (model-free): public traces that still carry a "
                        "private evidence or repeat its words; repairs by the traces stage", title_justify="left")
    cols = ("persona", "private evidence", "public traces", "leak", "carried", "words", "re-planned", "re-routed",
            "rewritten", "judged", "judge: still revealed")
    for col in cols:
        table.add_column(col, justify="left" if col == "persona" else "right")
    for pid, row in data["privacy"].items():
        table.add_row(pid, f"{row['private_evidence_share']:.1%}", f"{row['public_traces']} ({row['public_share']:.1%})",
                      f"{row['leak_rate']:.1%}", f"{row['carried_rate']:.1%}", f"{row['words_rate']:.1%}",
                      f"{row['replanned_rate']:.1%}", f"{row['rerouted_rate']:.1%}", f"{row['rewritten_rate']:.1%}",
                      str(row["judged"]), f"{row['judge_flagged_rate']:.1%}")
    return table


def _media_table(data: dict) -> Table:
    table = Table(title="media mix per language: share of the traces written in the mix vs target (a medium "
                        "outside the mix, e.g. spoken: share of all traces)", title_justify="left")
    for col in ("language", "medium", "share", "target"):
        table.add_column(col, justify="left" if col in ("language", "medium") else "right")
    for language, rows in data["media_by_language"].items():
        for medium, row in rows.items():
            target = "—" if row["target"] is None else f"{row['target']:.1%}"
            table.add_row(language, medium, f"{row['share']:.1%}", target)
    return table


def _formats_view(rows: dict[str, dict[str, int]]) -> Table:
    table = Table(title="formats by question type (generated → open-valid → MCQ-valid)")
    for col in ("type", "generated", "open-valid", "MCQ-valid"):
        table.add_column(col)
    for qtype, row in rows.items():
        table.add_row(qtype, str(row["generated"]), str(row["open_valid"]), str(row["mcq_valid"]))
    return table


def _table(title: str, counts: dict, total: int | None = None) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("")
    table.add_column("count", justify="right")
    if total:
        table.add_column("share", justify="right")
    for key, value in counts.items():
        row = [str(key), str(value)]
        if total:
            row.append(f"{value / total:.1%}")
        table.add_row(*row)
    return table


def print_summary(out: Path, console: Console) -> None:
    """The run summary (synth.release.summary) first: what a newcomer needs before the tables."""
    for line in summary_lines(run_summary(out), *recorded_run(out)):
        console.print(line, highlight=False, soft_wrap=True)


def print_stats(out: Path, console: Console, plot: bool = False) -> dict:
    print_summary(out, console)
    data = collect(out)
    people = Table(title="personas", title_justify="left")
    for col in ("persona", "name", "traces", "trace tokens", "final", "rejected"):
        people.add_column(col, justify="left" if col in ("persona", "name") else "right")
    for pid, row in data["personas"].items():
        people.add_row(pid, row["name"], str(row["traces"]), f"{row['trace_tokens']:,}", str(row["final"]),
                       str(row["rejected"]))
    console.print(people)
    cost = data["cost"]
    if cost["calls_per_item"] is not None:
        console.print(f"cost per final item: {cost['calls_per_item']:,} provider calls, ${cost['usd_per_item']:.5f} "
                      f"({cost['calls']:,} calls, ${cost['usd']:.4f} over {data['final']:,} final items)",
                      highlight=False)
    console.print(_table("final items by question type", data["by_type"], data["final"]))
    console.print(_formats_view(data["formats_by_type"]))
    console.print(_table("final items by dimension", data["by_dimension"], data["final"]))
    console.print(_table("traces by medium", data["by_medium"], sum(data["by_medium"].values())))
    console.print(_media_table(data))
    console.print(_life_table(data))
    console.print(_privacy_table(data))
    console.print(_table("rejections by filter", data["rejected_by_filter"]))
    console.print(_table("correct position (answerable final items)",
                         {p: f"{s:.1%}" for p, s in data["positions"].items()}))
    console.print(_checks_table(data))
    console.print(_blind_table(data))
    console.print(f"questions with explicit timestamps rewritten out (model-free): {data['timestamp_rewrite_rate']:.1%}",
                  highlight=False)
    for source, rates in data["spoken_validation"].items():
        if rates["records"]:
            console.print(
                f"{source} validation over {rates['records']} records: first draft broke a rule (level 1) "
                f"{rates['rule_fail_rate']:.1%}, failed a judge level (2–4) {rates['judge_fail_rate']:.1%}; "
                f"fixed by repair {rates['repaired_rate']:.1%}, still flagged {rates['flagged_rate']:.1%} "
                f"(repeats a similar event {rates['repeated_rate']:.1%}); {rates['repairs']} repairs", highlight=False)
    for level, rates in data["lifelog_plan"].items():
        if rates["records"]:
            console.print(
                f"lifelog plan, {level}: {rates['records']} nodes; first draft failed a parent–child check "
                f"{rates['rule_fail_rate']:.1%}, fixed by a re-ask {rates['repaired_rate']:.1%}, still flagged "
                f"{rates['flagged_rate']:.1%} (repeats a similar one {rates['repeated_rate']:.1%})", highlight=False)
    if data["profile_check"]["items"]:
        rates = data["profile_check"]
        console.print(
            f"profile items (fact × style 2×2, model-free check): {rates['items']}; first draft failed the check "
            f"{rates['first_draft_fail_rate']:.1%}, still failing after {rates['rewrites']} re-asks "
            f"{rates['fail_rate']:.1%}; kept by the filters {rates['kept_rate']:.1%}", highlight=False)
    if data["variants"]["sets"]:
        console.print(_variants_line(data["variants"]), highlight=False)
    console.print(
        f"final items: blind accuracy {data['blind_accuracy']:.1%} over {data['blind_picks']} no-context picks "
        f"({data['blind_accuracy_answerable']:.1%} on answerable; chance is 20%) · "
        f"the key is the longest option in {data['correct_is_longest_rate']:.1%} of answerable final items kept as multiple choice "
        f"(goal ≤ 25%: {'ok' if data['correct_is_longest_ok'] else 'MISSED'}) · the key is the most central option "
        f"in {data['key_central_rate']:.1%} (goal ≤ 30%, chance 25%: {'ok' if data['key_central_ok'] else 'MISSED'}) · "
        f"position balance {'ok' if data['position_balance_ok'] else 'MISSED'} (each of A–D within 25% ± 5) · "
        f"the key shares the most people/places with the others in {data['key_entity_central_rate']:.1%} "
        f"(goal ≤ 25%) · a reader shown only the options picks the key in {data['choices_only_accuracy']:.1%} "
        f"of {data['choices_only_answered']} (chance 25%)"
        + (f" · blind accuracy above chance + 5 points: {', '.join(data['blind_flagged_types'])}"
           if data["blind_flagged_types"] else "")
    )
    if plot:
        for path in plot_stats(out, data):
            console.print(str(path))
    return data


def _variants_line(v: dict) -> str:
    relations = ", ".join(f"{k.removeprefix('relation_')} {row['kept']}/{row['sets']}"
                          for k, row in v["by_relation"].items())
    return (f"variant sets kept {v['kept']} of {v['sets']} ({relations}); over {v['sessions']} sessions the first "
            f"draft was too explicit by rule {v['session_rule_explicit_rate']:.1%} / by judge "
            f"{v['session_judge_explicit_rate']:.1%}, too hidden by rule {v['session_rule_hidden_rate']:.1%} / by "
            f"judge {v['session_judge_hidden_rate']:.1%}, fixed by a rewrite {v['session_repaired_rate']:.1%}; "
            f"queries with every keyword in one session {v['query_one_session_rate']:.1%}, with a recency word "
            f"{v['query_recency_rate']:.1%}, with malformed references {v['query_references_rate']:.1%}; answered "
            f"without memory (visible-only) by rule {v['visible_rule_rate']:.1%} / by judge "
            f"{v['visible_only_rate']:.1%}")


def _checks_table(data: dict) -> Table:
    """Per question type: generated, rejected by each filter, final."""
    rows = data["final_by_type_and_filter"]
    table = Table(title="items per question type: generated, rejected by each check, final", title_justify="left")
    for col in ("type", "generated", "rejected by", "final"):
        table.add_column(col, justify="left" if col in ("type", "rejected by") else "right")
    for qtype, row in rows.items():
        rejected = ", ".join(f"{name} {n}" for name, n in sorted(row.items()) if name not in ("generated", "final"))
        table.add_row(qtype, str(row["generated"]), rejected or "—", str(row["final"]))
    return table


def _blind_table(data: dict) -> Table:
    table = Table(title="blind accuracy of final items per question type (no-context picks; chance 20%)",
                  title_justify="left")
    for col in ("type", "picks", "accuracy", "flag"):
        table.add_column(col, justify="left" if col in ("type", "flag") else "right")
    for qtype, row in data["blind_by_type"].items():
        table.add_row(qtype, str(row["picks"]), f"{row['accuracy']:.1%}",
                      "above chance + 5" if row["above_chance"] else "")
    return table


def plot_stats(out: Path, data: dict) -> list[Path]:
    """Bar charts of the distributions, plus the timeline density and arc states per persona and the validity panel
    (synth.release.charts), as PNGs under out/stats/ (matplotlib only when asked for)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    target = out / "stats"
    target.mkdir(parents=True, exist_ok=True)
    paths = []
    charts = {"question_types": data["by_type"], "dimensions": data["by_dimension"], "media": data["by_medium"],
              "rejections": data["rejected_by_filter"], "positions": data["positions"]}
    for name, counts in charts.items():
        fig, ax = plt.subplots(figsize=(7, 3.5))
        ax.bar([str(k) for k in counts], list(counts.values()))
        ax.set_title(name.replace("_", " "))
        ax.tick_params(axis="x", labelrotation=30)
        fig.tight_layout()
        path = target / f"{name}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    from synth.release.charts import plot_dataset
    from synth.release.view import load_dataset

    paths += plot_dataset(load_dataset(out), data, target)
    (target / "stats.json").write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    return paths
