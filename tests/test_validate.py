"""`synth validate` finds each kind of corruption on a hand-edited copy of a valid dataset, and passes a clean one."""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from handmade import PERSONA_ID
from kit import read_jsonl, write_jsonl
from typer.testing import CliRunner

from synth.cli import app
from synth.quality.validate import validate_dataset, violations


def edit(root: Path, name: str, change: Callable[[list[dict]], None], persona: str = PERSONA_ID) -> None:
    path = root / persona / name
    records = read_jsonl(path)
    change(records)
    write_jsonl(path, records)


def shift(value: str, days: int) -> str:
    """Move an ISO date or datetime string by `days`."""
    if "T" in value:
        return (dt.datetime.fromisoformat(value) + dt.timedelta(days=days)).isoformat()
    return (dt.date.fromisoformat(value) + dt.timedelta(days=days)).isoformat()


def exactly(dataset: Path, kinds: set[str], *needles: str) -> list[str]:
    """The corruption breaks exactly these invariants (no more, no fewer), and each needle is in some line."""
    found = violations(dataset)
    assert {kind for kind, _ in found} == kinds, "\n".join(f"{k}: {line}" for k, line in found)
    only([line for _, line in found], *needles)
    return [line for _, line in found]


def only(problems: list[str], *needles: str) -> None:
    """Each needle occurs in some problem line (and there is at least one line)."""
    assert problems, "the corruption went unnoticed"
    for needle in needles:
        assert any(needle in p for p in problems), f"no line mentions {needle!r}:\n" + "\n".join(problems)


def test_clean_handmade_dataset_passes(handmade_dataset):
    assert validate_dataset(handmade_dataset) == []


def test_missing_or_empty_directory_is_a_violation(tmp_path):
    assert "no such dataset directory" in validate_dataset(tmp_path / "nope")[0]
    assert "no persona directory" in validate_dataset(tmp_path)[0]


def test_dangling_ids_are_named(handmade_dataset):
    def dangle(key: str, value):
        def change(records):
            records[0][key] = value
        return change

    edit(handmade_dataset, "events.jsonl", dangle("phase_id", "no-such-phase"))
    edit(handmade_dataset, "traces.jsonl", dangle("evidence_ids", ["ghost-evidence"]))
    edit(handmade_dataset, "events.jsonl", lambda rs: rs[1].update(participant_ids=["stranger"]))
    edit(handmade_dataset, "mcq.jsonl", lambda rs: rs[0]["evidence"][0].update(evidence_id="ghost-ev2"))
    edit(handmade_dataset, "qa.jsonl", dangle("digital_trace_ids", ["ghost-trace"]))
    edit(handmade_dataset, "major_events.jsonl", lambda rs: rs[0]["arc_states"][0].update(arc_id="ghost-arc"))
    problems = exactly(handmade_dataset, {"references", "evidence_carried"})  # the trace lost its real evidence
    only(problems, "'no-such-phase'", "'ghost-evidence'", "'stranger' is neither a relation", "'ghost-ev2'",
         "'ghost-trace'", "'ghost-arc'")
    line = next(p for p in problems if "no-such-phase" in p)
    assert line.startswith(f"{PERSONA_ID}/events.jsonl: ") and "phase_id" in line


def test_event_outside_its_phase(handmade_dataset):
    edit(handmade_dataset, "events.jsonl", lambda rs: rs[0].update(time=shift(rs[0]["time"], -10)))
    exactly(handmade_dataset, {"containment"}, "outside its phase")


def test_phase_outside_its_major_event(handmade_dataset):
    edit(handmade_dataset, "phases.jsonl", lambda rs: rs[0].update(end=shift(rs[0]["end"], 5)))
    exactly(handmade_dataset, {"containment"}, "outside its major event")


def test_major_event_outside_timeline_and_out_of_order(handmade_dataset):
    def swap(records):
        records[0]["start"], records[1]["start"] = records[1]["start"], records[0]["start"]
        records[1]["end"] = shift(records[1]["end"], 30)

    edit(handmade_dataset, "major_events.jsonl", swap)
    # swapping two major events also breaks the alignment and the snapshot chain, which follow their order
    exactly(handmade_dataset, {"containment", "major_event_order", "arc_alignment", "snapshot_chain"},
            "outside its persona timeline", "out of order")


def test_arc_alignment_must_not_go_back_or_overflow(handmade_dataset):
    def regress(records):
        records[1]["arc_states"][0]["anchor_index"] = 0
        records[0]["arc_states"][0]["anchor_index"] = 1
        records[1]["arc_states"][1]["anchor_index"] = 7

    edit(handmade_dataset, "major_events.jsonl", regress)
    exactly(handmade_dataset, {"arc_alignment"}, "goes back from 1", "anchor_index 7 is outside its 3 anchor states")


def test_broken_snapshot_chain(handmade_dataset):
    edit(handmade_dataset, "phases.jsonl", lambda rs: rs[1]["snapshot_before"].update(energy=0))
    exactly(handmade_dataset, {"snapshot_chain"}, "snapshot chain is broken")


def test_evidence_carried_by_no_trace(handmade_dataset):
    edit(handmade_dataset, "traces.jsonl", lambda rs: rs[-1].update(evidence_ids=rs[-1]["evidence_ids"][:1]))
    exactly(handmade_dataset, {"evidence_carried"}, "carried by no trace")


def test_needed_trace_after_question_time(handmade_dataset):
    def early(records):
        for record in records:
            record["question_time"] = "2022-01-02T00:00:00"

    for name in ("qa.jsonl", "mcq.jsonl", "final.jsonl"):
        edit(handmade_dataset, name, early)
    problems = exactly(handmade_dataset, {"causality"})
    only(problems, "after question_time")
    assert {p.split(":")[0] for p in problems if "after question_time" in p} == {
        f"{PERSONA_ID}/{n}" for n in ("qa.jsonl", "mcq.jsonl", "final.jsonl")}


def test_trace_before_its_event(handmade_dataset):
    edit(handmade_dataset, "traces.jsonl", lambda rs: rs[0].update(time=shift(rs[0]["time"], -1)))
    exactly(handmade_dataset, {"containment"}, "is before its event")


@pytest.mark.parametrize("breakage, needle", [
    (lambda r: r.update(choices=r["choices"][:4]), "no option E"),
    (lambda r: r["choices"][4].update(text="None of the above"), "option E reads"),
    (lambda r: r["choices"][1].update(id="A"), "exactly once each"),
    (lambda r: r.update(correct_choice_id="E") if r["question_type"] == "factual" else None, None),
    (lambda r: r.update(correct_choice_id="A") if r["question_type"] == "unanswerable" else None,
     "must have answer E"),
])
def test_mcq_shape(handmade_dataset, breakage, needle):
    edit(handmade_dataset, "mcq.jsonl", lambda rs: [breakage(r) for r in rs])
    found = violations(handmade_dataset)
    assert {kind for kind, _ in found} <= {"mcq_shape"}, found
    problems = [line for _, line in found]
    if needle is None:  # E as the answer of an answerable question is allowed by the contract
        assert problems == []
    else:
        only(problems, needle)


def test_mcq_without_e_in_final(handmade_dataset):
    edit(handmade_dataset, "final.jsonl", lambda rs: rs[0].update(choices=rs[0]["choices"][:4], correct_choice_id="A"))
    exactly(handmade_dataset, {"mcq_shape"}, "final.jsonl", "no option E")


def test_duplicate_ids_within_and_across_files(handmade_dataset):
    edit(handmade_dataset, "evidence.jsonl", lambda rs: rs.append(dict(rs[0])))
    events = read_jsonl(handmade_dataset / PERSONA_ID / "events.jsonl")
    edit(handmade_dataset, "traces.jsonl", lambda rs: rs[1].update(id=events[0]["id"]))
    # an item may not be both accepted and rejected
    final = read_jsonl(handmade_dataset / PERSONA_ID / "final.jsonl")
    edit(handmade_dataset, "rejected.jsonl", lambda rs: rs[0].update(id=final[0]["id"]))
    problems = exactly(handmade_dataset, {"duplicates"})
    only(problems, "duplicate id within the file", "duplicate id: also in events.jsonl",
         "also in final.jsonl (both accepted and rejected)")


def test_question_ids_may_flow_from_qa_to_final(handmade_dataset):
    qa = {r["id"] for r in read_jsonl(handmade_dataset / PERSONA_ID / "qa.jsonl")}
    mcq = {r["id"] for r in read_jsonl(handmade_dataset / PERSONA_ID / "mcq.jsonl")}
    assert qa == mcq  # the fixture keeps ids along the flow, and that is no violation
    assert validate_dataset(handmade_dataset) == []


def test_broken_json_line_is_a_violation_not_a_crash(handmade_dataset):
    path = handmade_dataset / PERSONA_ID / "traces.jsonl"
    lines = path.read_text().splitlines()
    lines[1] = lines[1][: len(lines[1]) // 2]
    path.write_text("\n".join(lines) + "\n[1, 2]\n")
    # the cut trace no longer carries its evidence, and its day has no trace: a 19-day gap
    problems = exactly(handmade_dataset, {"parse", "evidence_carried", "trace_gaps"})
    only(problems, "traces.jsonl: line 2: not valid JSON", "line 5: not a JSON object", "no trace for 19 days")


def test_garbage_values_do_not_crash(handmade_dataset):
    """Wrong types everywhere are reported, never raised."""
    edit(handmade_dataset, "events.jsonl", lambda rs: rs[0].update(time=17, participant_ids="x"))
    edit(handmade_dataset, "phases.jsonl", lambda rs: rs[0].update(start="soon", snapshot_before=None))
    edit(handmade_dataset, "major_events.jsonl", lambda rs: rs[0].update(arc_states=[{"arc_id": 3}], index="x"))
    edit(handmade_dataset, "qa.jsonl", lambda rs: rs[0].update(question_time=None, evidence=[1, {"x": 2}]))
    edit(handmade_dataset, "mcq.jsonl", lambda rs: rs[0].update(choices="ABCDE"))
    edit(handmade_dataset, "persona.jsonl", lambda rs: rs[0].update(relations=None, end=None))
    problems = validate_dataset(handmade_dataset)
    only(problems, "time: not an ISO datetime", "start: not an ISO date", "question_time: not an ISO datetime",
         'no option E ("cannot be determined")')


def test_persona_id_mismatch(handmade_dataset):
    edit(handmade_dataset, "arcs.jsonl", lambda rs: rs[0].update(persona_id="someone_else"))
    exactly(handmade_dataset, {"persona"}, "is not this persona")


def test_partial_dataset_checks_what_exists(handmade_dataset):
    """Upstream-only datasets (a run stopped after `phases`) validate clean; a file naming a missing one says so."""
    root = handmade_dataset / PERSONA_ID
    for name in ("events.jsonl", "evidence.jsonl", "traces.jsonl", "qa.jsonl", "mcq.jsonl", "final.jsonl",
                 "rejected.jsonl"):
        (root / name).unlink()
    assert validate_dataset(handmade_dataset) == []
    (root / "arcs.jsonl").unlink()
    exactly(handmade_dataset, {"references"}, "arcs.jsonl, which is missing")


def test_cli_exit_codes(handmade_dataset):
    runner = CliRunner()
    ok = runner.invoke(app, ["validate", "--out", str(handmade_dataset)])
    assert ok.exit_code == 0, ok.output
    edit(handmade_dataset, "phases.jsonl", lambda rs: rs[1]["snapshot_before"].update(stress=0))
    bad = runner.invoke(app, ["validate", "--out", str(handmade_dataset)])
    assert bad.exit_code == 1
    assert "snapshot chain is broken" in bad.output


def test_tiny_fake_run_validates(tiny_dataset):
    problems = validate_dataset(tiny_dataset)
    assert problems == [], "\n".join(problems[:30])


def _orphan_evidence(records):
    records.append({**records[0], "id": "orphan-evidence"})


def _early_question(records):
    """Move the first question that needs a trace to a day before the timeline starts."""
    needy = next(r for r in records if r["digital_trace_ids"] or r["evidence"])
    needy["question_time"] = "2000-01-01T00:00:00"


def _break_chain(records):
    records[1]["snapshot_before"]["energy"] = (records[1]["snapshot_before"]["energy"] + 1) % 11


TINY_CORRUPTIONS = {  # case: (file, change, the one invariant it breaks, a needle)
    "dangling-id": ("events.jsonl", lambda rs: rs[0].update(phase_id="dangling"), "references", "'dangling'"),
    "event-outside-phase": ("events.jsonl", lambda rs: rs[0].update(time=shift(rs[0]["time"], -400)),
                            "containment", "outside its phase"),
    "phase-outside-major-event": ("phases.jsonl", lambda rs: rs[0].update(end=shift(rs[0]["end"], 400)),
                                  "containment", "outside its major event"),
    "broken-snapshot-chain": ("phases.jsonl", _break_chain, "snapshot_chain", "snapshot chain is broken"),
    "evidence-without-trace": ("evidence.jsonl", _orphan_evidence, "evidence_carried", "carried by no trace"),
    "trace-after-question-time": ("qa.jsonl", _early_question, "causality", "after question_time"),
    "mcq-without-e": ("mcq.jsonl", lambda rs: rs[0].update(choices=[c for c in rs[0]["choices"] if c["id"] != "E"]),
                      "mcq_shape", "no option E"),
    "duplicate-ids": ("traces.jsonl", lambda rs: rs.append(dict(rs[0])), "duplicates", "duplicate id within the file"),
}


@pytest.mark.parametrize("case", sorted(TINY_CORRUPTIONS))
def test_corrupted_copy_of_tiny_run(case, tiny_dataset, tmp_path):
    """The issue's corruptions, each alone, on a real pipeline output: each is caught."""
    name, change, kind, needle = TINY_CORRUPTIONS[case]
    root = tmp_path / "copy"
    shutil.copytree(tiny_dataset, root, ignore=shutil.ignore_patterns("cache.sqlite", ".lock"))
    persona = next(p.parent.name for p in root.glob("*/persona.jsonl"))
    edit(root, name, change, persona)
    exactly(root, {kind}, needle)


def test_reference_problems_checks_only_the_named_inputs(handmade_dataset):
    from synth.quality.validate import reference_problems

    root = handmade_dataset / PERSONA_ID
    inputs = ["persona.jsonl", "events.jsonl", "evidence.jsonl"]
    assert reference_problems(root, inputs) == []  # events name phases, which are not among the inputs
    edit(handmade_dataset, "evidence.jsonl", lambda rs: rs[0].update(event_id="ghost-event"))
    problems = reference_problems(root, inputs)
    assert len(problems) == 1 and "'ghost-event'" in problems[0] and "evidence.jsonl" in problems[0]


def test_unlabelled_evidence_a_trace_visibly_carries_is_reported_without_failing(handmade_dataset):
    from synth.quality.label_check import label_warnings

    assert label_warnings(handmade_dataset) == []
    target = read_jsonl(handmade_dataset / PERSONA_ID / "evidence.jsonl")[0]
    traces = read_jsonl(handmade_dataset / PERSONA_ID / "traces.jsonl")
    carrier = next(t for t in traces if t["event_id"] == target["event_id"])
    statement = "Lin finally admitted his exhaustion about the warehouse overtime schedule"

    def plant(records):
        for record in records:
            if record["id"] == target["id"]:
                record["statement"] = statement

    def echo(records):  # the trace says it, but no longer lists it
        for record in records:
            if record["id"] == carrier["id"]:
                record["content"] += " " + statement
                record["evidence_ids"] = [e for e in record["evidence_ids"] if e != target["id"]]

    edit(handmade_dataset, "evidence.jsonl", plant)
    edit(handmade_dataset, "traces.jsonl", echo)
    lines = label_warnings(handmade_dataset)
    assert lines == [f"{PERSONA_ID}/traces.jsonl: {carrier['id']}: seems to carry evidence {target['id']} without "
                     "listing it in evidence_ids"]
    result = CliRunner().invoke(app, ["validate", "--out", str(handmade_dataset)])
    assert "seems to carry evidence" in result.output
