"""Questions that need a written and a spoken trace together (`written_spoken`): which pair code picks, the
model-free check that an item's evidence spans both kinds of trace, and the filter and `synth validate` on it."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from kit import run_stage

from synth.core.jsonl import read_records
from synth.quality import rules
from synth.quality.validate import validate_dataset
from synth.records import FILES, Evidence, Trace
from synth.stages.filter.checks import medium_span_check
from synth.stages.qa.mixed import mixed_pairs

ROOT = Path(__file__).resolve().parents[1]
PID = "p01_maya"


def trace(k: str, event: str, medium: str, hour: int, evidence: list[str]) -> Trace:
    return Trace(id=k, persona_id=PID, event_id=event, evidence_ids=evidence, medium=medium,
                 time=dt.datetime(2022, 1, 5, hour), intent="", audience="", content=f"{k} text")


def evidence(k: str, event: str) -> Evidence:
    return Evidence(id=k, persona_id=PID, event_id=event, kind="fact", statement=f"statement {k}", arc_ids=["a"])


def test_the_span_rule_needs_a_spoken_and_a_written_trace():
    assert rules.medium_span_problem(["group_chat", "diary"]) == ""
    assert rules.medium_span_problem(["lifelog_dialogue", "email", "diary"]) == ""
    assert rules.medium_span_problem(["diary", "email"]) == "its traces (diary, email) include no spoken one"
    assert rules.medium_span_problem(["group_chat", "lifelog_dialogue"]) == (
        "its traces (group_chat, lifelog_dialogue) include no written one")
    assert rules.medium_span_problem([]) == "its traces (none) include no spoken one"


def test_a_pair_is_an_events_first_spoken_trace_and_the_written_one_that_adds_most():
    traces = [trace("chat", "e1", "group_chat", 20, ["v1", "v2"]), trace("talk", "e1", "lifelog_dialogue", 21, ["v1"]),
              trace("diary", "e1", "diary", 22, ["v1", "v2"]), trace("mail", "e1", "email", 23, ["v2", "v3"]),
              trace("note", "e2", "note", 9, ["v4"])]  # e2 has no spoken trace
    found = mixed_pairs(traces, [evidence(v, "e1") for v in ("v1", "v2", "v3")] + [evidence("v4", "e2")], 5)
    assert [(p.event_id, p.spoken.id, p.written.id) for p in found] == [("e1", "chat", "mail")]
    refs = found[0].refs()
    assert [(r.evidence_id, r.digital_trace_ids) for r in refs] == [
        ("v1", ["chat"]), ("v2", ["chat", "mail"]), ("v3", ["mail"])]
    assert mixed_pairs(traces, [], 5) == [], "no evidence record, no item"
    assert mixed_pairs(traces[:3], [evidence("v1", "e1")], 0) == []


def run(out: Path, stages: list[str]) -> None:
    config = out.parent / "w.toml"
    config.write_text('sources = ["written", "group_chat", "lifelog"]\n[qa]\ntypes = ["written_spoken"]\n')
    run_stage(out, stages, config=config)


def test_a_run_asks_written_spoken_items_whose_traces_span_both_and_the_checks_catch_one_that_does_not(tmp_path):
    from synth.stages import STAGES

    out = tmp_path / "m"
    run(out, STAGES.order())
    directory = out / PID
    traces = {t.id: t for t in read_records(directory / "traces.jsonl", FILES["traces.jsonl"])}
    [item] = read_records(directory / "mcq.jsonl", FILES["mcq.jsonl"])
    assert item.question_type == "written_spoken"
    media = [traces[t].medium for t in item.digital_trace_ids]
    assert len(media) == 2 and rules.is_spoken(media[0]) and not rules.is_spoken(media[1])
    assert medium_span_check(item, traces) == ""
    [decided] = [*read_records(directory / "final.jsonl", FILES["final.jsonl"]),
                 *read_records(directory / "rejected.jsonl", FILES["rejected.jsonl"])]
    assert next(v for v in decided.verdicts if v.filter == "medium_span").passed
    assert validate_dataset(out) == []

    spoken = item.digital_trace_ids[0]
    only_spoken = item.model_copy(update={"digital_trace_ids": [spoken], "evidence": [
        ref.model_copy(update={"digital_trace_ids": [spoken]}) for ref in item.evidence if spoken in ref.digital_trace_ids]})
    assert medium_span_check(only_spoken, traces) == f"its traces ({traces[spoken].medium}) include no written one"
    (directory / "mcq.jsonl").write_text(json.dumps(only_spoken.model_dump(mode="json")) + "\n")
    assert any("mcq.jsonl" in p and "written_spoken: its traces" in p for p in validate_dataset(out))
