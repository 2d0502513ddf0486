"""The question-type registry and the stage registry: a type registered here, in the test (its spec and its
template, nothing else), flows through qa → distractors → filter → stats and validate with the fake provider;
`[qa] types` refuses a type the qa stage does not make; every stage's CLI command carries the stage's help."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import typer
from kit import PERSONAS, REPO, run_stage, run_synth

from synth.config import conf, question_types
from synth.config.prompts import label
from synth.config.question_types import QuestionTypeSpec
from synth.core.errors import InputError
from synth.core.jsonl import read_records
from synth.quality.validate import validate_dataset
from synth.records import FILES, QA, EvidenceRef, mint_id
from synth.release import stats
from synth.stages.qa.duration import seeded_time

PID = "p01_maya"
NAME = "first_mention"
RULE = "first_mention_one_trace"

# The new type's template (the second of its three files); a real one lives in prompts/.
TEMPLATE = """{% import "_qa_persona.j2" as p %}
You design question-answer items for a long-term memory benchmark about the person below.

{{ p.profile(persona, arcs, language) }}
=== TASK ===
# A first-mention question
The first time the person's traces on "{{ arc.title }}" mention this: {{ statement }}
{{ p.trace_block(traces, language) }}
Asked at: {{ question_time }}
- question: ask what the person first wrote about it; answer: what they wrote, at most {{ max_answer_chars }} characters.
"""


async def make_first_mentions(ctx, planner) -> list[QA]:
    """The first observable evidence of each arc, asked about after its first trace (one model call each)."""
    cap = planner.section.max_answer_chars[ctx.language]
    items = []
    for arc_id, found in sorted(planner.arc_items.items()):
        if not found or len(items) >= planner.section.target_per_type:
            continue
        first, arc = found[0], planner.arc_by_id[arc_id]
        trace = first.trace_ids[0]
        asked = seeded_time(first.time, (NAME, first.evidence_id), 3, planner.hours, planner.last_day)
        variables = {**planner.common, "arc": arc, "statement": first.statement, "max_answer_chars": cap,
                     "traces": [{"time": first.time.isoformat(timespec="minutes"), "medium": "",
                                 "content": planner.traces[trace].content}],
                     "question_time": asked.isoformat(timespec="minutes")}
        answer = await ctx.ask("qa_write", f"qa_{NAME}.j2", variables, planner.answer_model(cap))
        items.append(QA(id=mint_id(ctx.persona.id, "qa", NAME, first.evidence_id), persona_id=ctx.persona.id,
                        question_type=NAME, dimension=arc.dimension, arc_id=arc.id, question_time=asked,
                        question=answer.question, answer=answer.answer, window_end=asked.date(),
                        evidence=[EvidenceRef(statement=first.statement, evidence_id=first.evidence_id,
                                              digital_trace_ids=[trace])],
                        digital_trace_ids=[trace]))
    return items


def one_trace(item, traces) -> str:
    return "" if len(item.digital_trace_ids) == 1 else f"rests on {len(item.digital_trace_ids)} traces, not one"


def check_one_trace(validator, name: str, record: dict) -> None:
    if len(record.get("digital_trace_ids") or []) != 1:
        validator.flag(name, record, f"{NAME}: rests on {len(record.get('digital_trace_ids') or [])} traces")


SPEC = QuestionTypeSpec(NAME, "extra", templates=(f"qa_{NAME}.j2",), labels={"zh": "首次提及"},
                        make=make_first_mentions, filter_rule=(RULE, one_trace), validate_check=check_one_trace)


@pytest.fixture
def first_mention(tmp_path, monkeypatch):
    prompts = tmp_path / "prompts"
    shutil.copytree(REPO / "prompts", prompts)
    (prompts / f"qa_{NAME}.j2").write_text(TEMPLATE, encoding="utf-8")
    monkeypatch.setenv("SYNTH_PROMPTS_DIR", str(prompts))
    with question_types.registered(SPEC):
        yield SPEC


def run(out: Path) -> None:
    from synth.stages import STAGES

    config = out.parent / "c.toml"
    config.write_text(f'[qa]\ntypes = ["{NAME}"]\n[variants.seeds_per_relation]\n'
                      + "".join(f"{k} = 0\n" for k in ("complementary_all", "complementary_any", "nuanced_temporal",
                                                       "nuanced_contextual", "contradictory")))
    run_stage(out, STAGES.order(), config=config)


def test_a_type_registered_in_a_test_flows_through_qa_distractors_filter_stats_and_validate(tmp_path, first_mention):
    out = tmp_path / "d"
    run(out)
    directory = out / PID
    qa = read_records(directory / "qa.jsonl", FILES["qa.jsonl"])
    assert qa and {i.question_type for i in qa} == {NAME}, "only the listed type, made by its own `make`"
    mcq = read_records(directory / "mcq.jsonl", FILES["mcq.jsonl"])
    assert sorted(m.id for m in mcq) == sorted(i.id for i in qa)
    assert all([c.id for c in m.choices] == list("ABCDE") and m.correct_choice_id != "E" for m in mcq)
    decided = [*read_records(directory / "final.jsonl", FILES["final.jsonl"]),
               *read_records(directory / "rejected.jsonl", FILES["rejected.jsonl"])]
    assert len(decided) == len(mcq)
    for item in decided:  # its rule runs among the types' rules, before the general ones, and passes (one trace)
        names = [v.filter for v in item.verdicts]
        assert names[:4] == ["format", "profile_2x2", "medium_span", RULE] and item.verdicts[3].passed
    table = stats.collect(out)["final_by_type_and_filter"]
    assert table[NAME]["generated"] == len(mcq)
    assert validate_dataset(out) == []
    assert label(NAME, "question_type", "zh") == "首次提及" and label(NAME, "question_type", "en") == NAME

    # the spec's own validate check runs on its records: an item on two traces is flagged
    raw = json.loads((directory / "mcq.jsonl").read_text().splitlines()[0])
    raw["digital_trace_ids"] = raw["digital_trace_ids"] * 2
    (directory / "mcq.jsonl").write_text(json.dumps(raw) + "\n")
    assert any("mcq.jsonl" in p and f"{NAME}: rests on 2 traces" in p for p in validate_dataset(out))


def test_a_registered_types_filter_rule_follows_the_built_in_types_rules(first_mention):
    from synth.stages import filter as filter_stage

    assert filter_stage.FILTERS[:4] == ("format", "profile_2x2", "medium_span", RULE)
    assert RULE not in filter_stage.GENERAL_FILTERS


def test_once_unregistered_the_type_is_unknown_again(tmp_path):
    with question_types.registered(SPEC):
        assert question_types.check_qa_types([NAME]) == [NAME]
    assert question_types.get(NAME) is None
    with pytest.raises(ValueError, match=f"'{NAME}': unknown question type"):
        question_types.check_qa_types([NAME])
    with pytest.raises(ValueError, match="registered already"):
        question_types.register(question_types.get("factual"))


@pytest.mark.parametrize(("types", "needle"), [
    ('["factual", "comparsion"]', "'comparsion': unknown question type (the qa stage makes: factual, comparison,"),
    ('["relation_contradictory"]', "'relation_contradictory': made by the variants stage, not qa"),
])
def test_a_type_the_qa_stage_does_not_make_is_one_line_naming_the_file_and_key(tmp_path, types, needle):
    config = tmp_path / "my.toml"
    config.write_text(f"[qa]\ntypes = {types}\n")
    with pytest.raises(InputError) as caught:
        conf.preset_config("small", config)
    assert str(caught.value).startswith(f"{config}: [qa] types: ") and needle in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_cli_refuses_a_misspelled_type_with_exit_2_and_writes_nothing(tmp_path):
    config = tmp_path / "my.toml"
    config.write_text('[qa]\ntypes = ["factul"]\n')
    out = tmp_path / "out"
    result = run_synth("qa", "--preset", "tiny", "--provider", "fake", "--config", str(config), "--out", str(out),
                       "--personas", str(PERSONAS))
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert str(config) in line and "[qa] types: 'factul': unknown question type" in line
    assert not out.exists()


def test_every_registered_stage_has_a_cli_command_whose_help_is_the_stages():
    from rich.markup import escape

    from synth.cli import app
    from synth.stages import STAGES

    commands = typer.main.get_command(app).commands
    for stage in STAGES.values():
        assert stage.name in commands, f"no `synth {stage.name}` command"
        assert commands[stage.name].help == escape(stage.help)  # escaped for rich markup, the words unchanged
    assert STAGES["qa"].templates[4:] == ("qa_duration.j2", "qa_profile.j2", "qa_mixed.j2"), (
        "the qa stage's templates are its types' templates, in the registry's order")
