"""One life in two languages: the structure once, traces and final items translated under the same ids, one
CloneMem export per language (the fake provider: plumbing, ids and structure — not translation quality)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from kit import PERSONAS, run_synth

from synth.quality.translation import structure_problem
from synth.records import CANNOT_DETERMINE, Persona, Relation, Translation
from synth.stages import translate

CJK = re.compile(r"[\u4e00-\u9fff]")


def manifest(out: Path, persona: str, stage: str) -> dict:
    return json.loads((out / persona / "manifests" / f"{stage}.json").read_text())


@pytest.fixture(scope="module")
def bilingual(tiny_dataset, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bilingual") / "data"
    shutil.copytree(tiny_dataset, out)
    result = run_synth("run", "--languages", "en,zh", "--out", str(out), "--personas", str(PERSONAS))
    assert result.returncode == 0, result.stderr[-3000:]
    return out


def test_a_tiny_run_in_two_languages_exports_the_same_items_under_the_same_ids(bilingual, tiny_dataset):
    [en] = list((bilingual / "export" / "clonemem").glob("*/*_benchmark_en.json"))
    [zh] = list((bilingual / "export" / "clonemem").glob("*/*_benchmark_zh.json"))
    english, chinese = json.loads(en.read_text()), json.loads(zh.read_text())
    assert english["questions"], "the tiny run kept items to compare"
    assert [q["id"] for q in english["questions"]] == [q["id"] for q in chinese["questions"]]
    assert [t["id"] for t in english["context"]] == [t["id"] for t in chinese["context"]]
    assert english["person_name"] == chinese["person_name"], "the name is not translated"
    for a, b in zip(english["questions"], chinese["questions"], strict=True):
        assert (a["question_type"], a["question_time"], a["dimension"], a["correct_choice_id"]) == (
            b["question_type"], b["question_time"], b["dimension"], b["correct_choice_id"])
        assert [c["id"] for c in a["choices"]] == [c["id"] for c in b["choices"]]
        assert a["digital_trace_ids"] == b["digital_trace_ids"]
        assert [e["digital_trace_ids"] for e in a["evidence"]] == [e["digital_trace_ids"] for e in b["evidence"]]
        assert CJK.search(b["question"]) and not CJK.search(a["question"])
        if a["choices"]:  # an open-only item is released without choices, in every language
            assert b["choices"][-1]["text"] == CANNOT_DETERMINE["zh"]
            assert a["choices"][-1]["text"] == CANNOT_DETERMINE["en"]
    assert all(CJK.search(t["content"]) for t in chinese["context"])


def test_the_structure_is_generated_once_and_only_translate_ran(bilingual, tiny_dataset):
    persona = next(p.name for p in bilingual.iterdir() if (p / "persona.jsonl").is_file())
    for stage in ("persona", "arcs", "phases", "events", "traces", "qa", "distractors", "filter"):
        assert manifest(bilingual, persona, stage) == manifest(tiny_dataset, persona, stage), stage
    before = manifest(tiny_dataset, persona, "translate")
    after = manifest(bilingual, persona, "translate")
    assert before["records"] == {"translations.jsonl": 0}, "one language: nothing to translate"
    assert after["provider_calls"] > 0 and after["records"]["translations.jsonl"] > 0
    assert run_synth("validate", "--out", str(bilingual)).returncode == 0
    dataset = json.loads((bilingual / "dataset.json").read_text())
    assert dataset["config"]["translate"]["languages"] == ["en", "zh"], "recorded: a re-run keeps both languages"


def test_an_unknown_language_is_one_line_and_exit_2(tmp_path):
    result = run_synth("run", "--preset", "tiny", "--provider", "fake", "--languages", "en,fr", "--out",
                       str(tmp_path / "x"), "--personas", str(PERSONAS))
    assert result.returncode == 2 and "--languages: unknown language 'fr'" in result.stderr
    assert not (tmp_path / "x").exists(), "nothing half-written"


PERSONA = Persona.model_validate({
    "id": "p", "persona_id": "p", "language": "zh", "scale": "100k", "start": "2023-01-01", "end": "2023-12-31",
    "big_five": {"openness": .5, "conscientiousness": .5, "extraversion": .5, "agreeableness": .5, "neuroticism": .5},
    "name": "林晓梅", "age": 38, "gender": "女", "personality": "p", "family_history": "f", "education": "e",
    "occupation": "o", "concerns": [], "interests": [], "backstory": "b",
    "relations": [Relation(id="r1", name="周建国", relation="丈夫", description="d").model_dump()]})


def test_translations_must_be_in_the_target_language_and_keep_every_name():
    names = translate.kept_names(PERSONA)
    assert names == ["林晓梅", "周建国"]
    source = ["今天和周建国去西湖散步。"]
    assert translate.language_problem(["Today I walked by West Lake with 周建国."], "en", names) == ""
    assert "Chinese character" in translate.language_problem(["Today I walked by 西湖 with 周建国."], "en", names)
    assert "no Chinese" in translate.language_problem(["Lin Xiaomei"], "zh", names)
    assert translate.names_problem(source, ["Today I walked with Zhou Jianguo."], names) == (
        "keep these names exactly as written: 周建国")
    assert translate.names_problem(source, ["Today I walked by West Lake with 周建国."], names) == ""


def test_a_translation_that_breaks_the_structure_is_named():
    from synth.records import Choice, EvidenceRef, FinalItem

    item = FinalItem(id="q", persona_id="p", question_type="causal", dimension="emotion", arc_id="a",
                     question_time="2023-03-01T20:00", question="为什么？", answer="因为。",
                     evidence=[EvidenceRef(statement="s", evidence_id="e1", digital_trace_ids=["t1"])],
                     digital_trace_ids=["t1"], window_end="2023-03-10",
                     choices=[Choice(id=c, text=f"选项{c}") for c in "ABCD"] + [
                         Choice(id="E", text=CANNOT_DETERMINE["zh"])], correct_choice_id="B")
    choices = translate.translated_choices(item, ["a", "b", "c", "d"], "en", "zh")
    assert [c.text for c in choices] == ["a", "b", "c", "d", CANNOT_DETERMINE["en"]]
    good = Translation(id="x", persona_id="p", language="en", kind="item", source_id="q", question="Why?",
                       answer="Because.", choices=choices, evidence=[{"evidence_id": "e1", "statement": "s"}])
    assert structure_problem(item, good) == ""
    assert structure_problem(item, good.model_copy(update={"choices": choices[:4]})) == (
        "the option letters differ from the source item's")
    assert structure_problem(item, good.model_copy(update={"evidence": []})) == (
        "the evidence ids differ from the source item's")


def test_synth_eval_reports_the_two_languages_side_by_side(bilingual, tmp_path):
    result = run_synth("eval", "--data", str(bilingual / "export" / "clonemem"), "--system", "flat",
                       "--answerer-provider", "fake", "--judge-provider", "fake", "--out", str(tmp_path / "eval"))
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads((tmp_path / "eval" / "summary.json").read_text())
    counts = summary["counts"]["by_language"]
    assert set(counts) == {"en", "zh"} and counts["en"] == counts["zh"] > 0, "the same items in each language"
    assert "by language" in result.stdout


def test_validate_names_a_translation_that_lost_its_structure(bilingual, tmp_path):
    out = tmp_path / "broken"
    shutil.copytree(bilingual, out)
    persona = next(p for p in out.iterdir() if (p / "translations.jsonl").is_file())
    rows = [json.loads(line) for line in (persona / "translations.jsonl").read_text().splitlines() if line]
    item = next(r for r in rows if r["kind"] == "item")
    item["choices"] = item["choices"][:4]
    rows = [r for r in rows if r["kind"] != "trace" or r is not next(x for x in rows if x["kind"] == "trace")]
    (persona / "translations.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    result = run_synth("validate", "--out", str(out))
    assert result.returncode != 0
    assert "the option letters differ from the source item's" in result.stdout + result.stderr
    assert "no zh translation" in result.stdout + result.stderr


@pytest.mark.slow
def test_a_chinese_persona_is_released_in_english_too(tmp_path):
    out = tmp_path / "zh"
    result = run_synth("run", "--preset", "tiny", "--provider", "fake", "--languages", "zh,en", "--persona",
                       "p03_xiaoyu", "--out", str(out), "--personas", str(PERSONAS))
    assert result.returncode == 0, result.stderr[-2000:]
    [zh] = list((out / "export" / "clonemem").glob("*/p03_xiaoyu_benchmark_zh.json"))
    [en] = list((out / "export" / "clonemem").glob("*/p03_xiaoyu_benchmark_en.json"))
    chinese, english = json.loads(zh.read_text()), json.loads(en.read_text())
    assert [q["id"] for q in chinese["questions"]] == [q["id"] for q in english["questions"]]
    assert [t["id"] for t in chinese["context"]] == [t["id"] for t in english["context"]]
    assert english["person_name"] == chinese["person_name"] and CJK.search(english["person_name"]), (
        "a Chinese persona's name is not translated")
    assert not any(CJK.search(t["content"]) for t in english["context"])
