"""CloneMem export round trip, the human-review sheet, and stats — on a fake-provider qa → filter run."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from qa_world import PID, QAWorld, judges, make_item
from rich.console import Console

from synth.core.errors import InputError
from synth.core.jsonl import read_records, write_atomic
from synth.records import MCQ, QUESTION_TYPES, FinalItem, Rejected, Trace
from synth.release.clonemem import export_dataset, load_clonemem, size_bucket
from synth.release.review import import_review, write_review
from synth.release.stats import collect
from synth.release.stats_report import print_stats

QUESTION_KEYS = {"id", "question", "question_type", "question_time", "answer", "dimension", "digital_trace_ids",
                 "evidence", "choices", "correct_choice_id"}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """qa → distractors → filter with the fake provider over every type (plumbing only, not quality)."""
    out = tmp_path_factory.mktemp("stage4") / "out"
    world = QAWorld(out)
    world.config["qa"].update(plans_per_type=8, target_per_type=6)
    for stage in ("qa", "distractors", "filter"):
        world.run(stage)
    return out


def test_fake_run_yields_every_type_as_valid_mcqs(dataset):
    # Every type reaches mcq.jsonl. (Which survive the filters depends on the fake's random judge verdicts, so
    # this test does not demand all eight in final.jsonl; it demands that every item is accounted for.)
    mcq = read_records(dataset / PID / "mcq.jsonl", MCQ)
    final = read_records(dataset / PID / "final.jsonl", FinalItem)
    rejected = read_records(dataset / PID / "rejected.jsonl", Rejected)
    assert {i.question_type for i in mcq} == set(QUESTION_TYPES)
    assert sorted(i.id for i in mcq) == sorted([*(i.id for i in final), *(r.id for r in rejected)])
    # the fake's judges answer at random and every check rejects its share: several types survive, and every
    # rejection names one of the filters
    assert len({i.question_type for i in final}) >= 3
    from synth.stages.filter import FILTERS

    assert {r.filter for r in rejected} <= set(FILTERS) and all(r.reason for r in rejected)
    for item in mcq:
        assert [c.id for c in item.choices] == list("ABCDE")
        assert (item.correct_choice_id == "E") == (item.question_type == "unanswerable")


def test_export_round_trips_with_the_release_field_names(dataset):
    [path] = export_dataset(dataset)
    assert path == dataset / "export" / "clonemem" / "100k" / f"{PID}_benchmark_en.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert set(raw) == {"person_name", "person_id", "context", "questions"}
    assert raw["person_name"] == "Lin Wei" and raw["person_id"] == PID
    assert all(set(c) == {"id", "medium", "event_date", "content"} for c in raw["context"])
    assert all(set(q) == QUESTION_KEYS for q in raw["questions"])
    assert all(set(e) == {"statement", "digital_trace_ids"} for q in raw["questions"] for e in q["evidence"])
    assert all(set(c) == {"id", "text"} for q in raw["questions"] for c in q["choices"])

    loaded = load_clonemem(path)
    traces = read_records(dataset / PID / "traces.jsonl", Trace)
    assert {c.id for c in loaded.context} == {t.id for t in traces}
    context = {c.id for c in loaded.context}
    final = read_records(dataset / PID / "final.jsonl", FinalItem)
    assert [q.id for q in loaded.questions] == [i.id for i in final]
    formats = {i.id: i.formats for i in final}
    for question in loaded.questions:
        named = set(question.digital_trace_ids) | {t for e in question.evidence for t in e.digital_trace_ids}
        assert named <= context
        if "mcq" in formats[question.id]:
            assert any(c.id == question.correct_choice_id for c in question.choices)
        else:  # valid only as an open question: released without choices or key
            assert question.choices == [] and question.correct_choice_id is None


def test_unanswerable_items_export_their_background_evidence(tmp_path, dataset):
    """The background of an unanswerable item goes out as ordinary evidence (the release has no field to flag it;
    its question_type does), so recall can be scored on it; the field names stay exactly the release's."""
    final = read_records(dataset / PID / "final.jsonl", FinalItem)
    mcq = read_records(dataset / PID / "mcq.jsonl", MCQ)
    unanswerable = next(i for i in mcq if i.question_type == "unanswerable")
    assert unanswerable.evidence and all(r.background for r in unanswerable.evidence)
    copy = tmp_path / "copy"
    shutil.copytree(dataset, copy)
    # kept in both formats (an open-only item exports without options)
    both = FinalItem(**unanswerable.model_dump())
    write_atomic(copy / PID / "final.jsonl", [*(i for i in final if i.id != unanswerable.id), both])
    [path] = export_dataset(copy)
    raw = json.loads(path.read_text(encoding="utf-8"))
    [question] = [q for q in raw["questions"] if q["id"] == unanswerable.id]
    assert question["evidence"] == [{"statement": r.statement, "digital_trace_ids": r.digital_trace_ids}
                                    for r in unanswerable.evidence]
    assert question["digital_trace_ids"] == unanswerable.digital_trace_ids and question["correct_choice_id"] == "E"
    assert load_clonemem(path).questions  # still the strict release format


def test_load_clonemem_rejects_unknown_field_names(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"person_name": "a", "person_id": "b", "context": [], "questions": [], "extra": 1}))
    with pytest.raises(ValueError):
        load_clonemem(path)


def test_size_bucket_follows_trace_tokens(tmp_path, dataset):
    assert size_bucket(299_999) == "100k" and size_bucket(300_000) == "500k"
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(dataset, copy)
    traces = read_records(copy / PID / "traces.jsonl", Trace)
    write_atomic(copy / PID / "traces.jsonl", [t.model_copy(update={"tokens": 20_000}) for t in traces])
    [path] = export_dataset(copy)
    assert path.parent.name == "500k"
    assert not list((copy / "export" / "clonemem").glob("100k/*.json"))  # the old bucket's file is gone


def test_review_sheet_and_import_move_a_rejected_item(tmp_path, dataset):
    import shutil

    out = tmp_path / "copy"
    shutil.copytree(dataset, out)
    before = read_records(out / PID / "final.jsonl", FinalItem)
    strata = {(i.question_type, i.dimension) for i in before}
    # as many rows as strata (up to 8; the fake's random judges decide how many survive): a stratified sample
    # never repeats a stratum while an unused one is left
    size = min(8, len(strata))
    assert size >= 4, f"the fake run kept only {len(strata)} strata"
    sheet = write_review(out, size, seed=1)
    with sheet.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == size and all(r["verdict"] == "" for r in rows)
    assert len({(r["question_type"], r["dimension"]) for r in rows}) == size
    assert all("SECRET TRACE" in r["traces"] for r in rows if r["question_type"] != "unanswerable")
    rows[0]["verdict"], rows[0]["note"] = "reject", "gold answer is wrong"
    rows[1]["verdict"] = "ok"
    with sheet.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    message = import_review(out, sheet)
    assert "recorded 2 verdict(s); 1 item(s)" in message
    after = read_records(out / PID / "final.jsonl", FinalItem)
    assert [i.id for i in after] == [i.id for i in before if i.id != rows[0]["id"]]
    moved = [r for r in read_records(out / PID / "rejected.jsonl", Rejected) if r.id == rows[0]["id"]]
    assert len(moved) == 1 and moved[0].filter == "human_review" and moved[0].reason == "gold answer is wrong"
    # the verdicts are kept, so a re-run of the filter stage rejects the item again
    verdicts = [json.loads(line) for line in (out / PID / "review_verdicts.jsonl").read_text().splitlines()]
    assert {(v["id"], v["verdict"]) for v in verdicts} == {(rows[0]["id"], "reject"), (rows[1]["id"], "ok")}


def test_refiltering_keeps_human_rejections(tmp_path):
    from synth.core.jsonl import write_atomic
    from synth.records import Evidence

    probe = QAWorld(tmp_path / "probe")
    traces, evidence = list(probe.traces().values()), probe.read("evidence.jsonl", Evidence)
    items = [make_item(traces, evidence[0], number=0), make_item(traces, evidence[1], number=1,
                                                                  question="How did the spring change things, Lin?")]
    out = tmp_path / "out"
    world = QAWorld(out, model=judges({i.question: i.answer for i in items}))
    write_atomic(world.dir / "mcq.jsonl", items)
    world.run("filter")
    final = read_records(out / PID / "final.jsonl", FinalItem)
    assert [i.id for i in final] == [i.id for i in items]
    (out / PID / "review_verdicts.jsonl").write_text(json.dumps({"id": final[0].id, "verdict": "reject",
                                                                  "reason": "ambiguous"}) + "\n")
    world.config["filter"]["dedup_threshold"] = 0.9  # any settings change re-runs the stage
    world.run("filter")
    rejected = {r.id: r for r in read_records(out / PID / "rejected.jsonl", Rejected)}
    assert rejected[final[0].id].filter == "human_review" and rejected[final[0].id].reason == "ambiguous"


def test_import_refuses_an_unknown_verdict(tmp_path, dataset):
    sheet = tmp_path / "sheet.jsonl"
    final = read_records(dataset / PID / "final.jsonl", FinalItem)
    sheet.write_text(json.dumps({"persona_id": PID, "id": final[0].id, "verdict": "maybe"}) + "\n")
    with pytest.raises(InputError, match="neither ok nor reject"):
        import_review(dataset, sheet)


def test_stats_print_and_plot(tmp_path, dataset):
    console = Console(record=True, width=160)
    data = print_stats(dataset, console, plot=False)
    text = console.export_text()
    final = read_records(dataset / PID / "final.jsonl", FinalItem)
    rejected = read_records(dataset / PID / "rejected.jsonl", Rejected)
    assert data["final"] == len(final) and sum(data["by_type"].values()) == len(final)
    assert sum(data["rejected_by_filter"].values()) == len(rejected)
    assert data["by_medium"] == {"diary": 20, "message_thread": 10}
    assert data["personas"][PID]["trace_tokens"] == 20 * 40 + 10 * 30
    # the key's position is counted over answerable items kept as multiple choice (an open-only item has none)
    graded = [i for i in final if i.question_type != "unanswerable" and "mcq" in i.formats]
    assert abs(sum(data["positions"].values()) - (1.0 if graded else 0.0)) < 1e-3
    assert "blind accuracy" in text and "message_thread" in text and "the key is the longest option" in text
    assert "the key is the most central option" in text and "items per question type" in text
    assert data["generated"] == len(final) + len(rejected)
    assert sum(row["generated"] for row in data["final_by_type_and_filter"].values()) == data["generated"]
    pytest.importorskip("matplotlib")
    import shutil

    copy = tmp_path / "plots"
    shutil.copytree(dataset, copy)
    print_stats(copy, Console(record=True), plot=True)
    assert (copy / "stats" / "question_types.png").stat().st_size > 0
    assert collect(copy)["final"] == len(final)


def test_stats_agree_with_the_outside_mcq_bias_tool(tmp_path):
    """`synth stats`' key-is-longest and key-is-most-central rates are mcq_bias.py's (../shared/tools)."""
    import subprocess
    import sys

    from synth.core.jsonl import write_atomic
    from synth.records import Evidence

    tool = Path(__file__).resolve().parents[2] / "shared" / "tools" / "mcq_bias.py"
    if not tool.is_file():
        pytest.skip("../shared/tools/mcq_bias.py is not beside this checkout")
    probe = QAWorld(tmp_path / "probe")
    traces, evidence = list(probe.traces().values()), probe.read("evidence.jsonl", Evidence)
    answer = "I stopped hiding in the car and told Xiaomei everything about work and Mom."
    perturbed = [answer.replace("Xiaomei", "my sister"), answer.replace("work", "money"), answer.replace("car", "van")]
    items = [make_item(traces, evidence[0], number=0),  # neither longest nor central
             make_item(traces, evidence[1], number=1, wrong=perturbed, correct="C"),  # central, not longest
             make_item(traces, evidence[2], number=2, wrong=["No.", "Work.", "Mom."], correct="A"),  # both
             make_item(traces, evidence[3], number=3, question_type="unanswerable")]  # not graded
    out = tmp_path / "data"
    (out / PID).mkdir(parents=True)
    shutil.copy(probe.dir / "persona.jsonl", out / PID / "persona.jsonl")
    write_atomic(out / PID / "final.jsonl", [FinalItem(**i.model_dump()) for i in items])
    ours = collect(out)
    result = subprocess.run([sys.executable, str(tool), str(out)], capture_output=True, text=True, check=True)
    theirs = json.loads(result.stdout.strip().splitlines()[-1])
    assert theirs["n"] == ours["answerable"] == 3
    assert ours["correct_is_longest_rate"] == pytest.approx(theirs["key_longest_rate"], abs=1e-3)
    assert ours["key_central_rate"] == pytest.approx(theirs["key_central_rate"], abs=1e-3)
    assert (ours["correct_is_longest_rate"], ours["key_central_rate"]) == pytest.approx((1 / 3, 2 / 3), abs=1e-3)
