"""LongMemEval and LoCoMo, out and in: the exports' shape (online haystacks, `_abs`, evidence on marked turns), the
round trips through `synth eval` (same recall as the native files for bm25 and oracle), hand-written files in each
format, malformed files (one line naming file and field, exit 2), and the field lists of docs/formats/."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from pathlib import Path

import pytest
from handmade import build_dataset
from kit import REPO, eval_fake, read_jsonl, run_synth, write_jsonl

from synth.core.bench_formats import (
    LME_TYPES,
    LOCOMO_CATEGORIES,
    lme_date,
    locomo_date,
    parse_lme_date,
    parse_locomo_date,
)
from synth.core.errors import InputError
from synth.eval.formats import load_data
from synth.life.spoken import format_lines
from synth.records import ChatDay, SpokenCheck, Utterance, mint_id
from synth.release.locomo import export_locomo
from synth.release.longmemeval import export_longmemeval

WORDS = ["bakery job downtown nervous flour", "valentine dinner lisbon argument moving",
         "pottery class thursdays clay calm", "lisbon decision packing boxes moving"]


def rich_dataset(root: Path) -> Path:
    """The hand-built dataset with distinct trace texts, a group-chat day whose second line alone carries an
    evidence, and final items of several types asked at several times (so haystacks differ)."""
    build_dataset(root)
    d = root / "p_test"
    traces = read_jsonl(d / "traces.jsonl")
    for trace, words in zip(traces, WORDS, strict=True):
        trace["content"] = f"Today: {words}."
    evidence = read_jsonl(d / "evidence.jsonl")
    day_time = dt.datetime(2022, 1, 20, 18, 0)
    lines = [Utterance(speaker="Test", speaker_id="p_test", time=day_time, text="Anyone up for pottery tonight?"),
             Utterance(speaker="R1", time=day_time + dt.timedelta(minutes=3), text="Yes, and I bought a bicycle!",
                       evidence_ids=[evidence[4]["id"]]),
             Utterance(speaker="Test", speaker_id="p_test", time=day_time + dt.timedelta(minutes=5), text="Great.")]
    day = ChatDay(id=mint_id("p_test", "chatday", 0), persona_id="p_test", group_id="g", date=day_time.date(),
                  event_ids=[traces[1]["event_id"]], evidence_ids=[evidence[4]["id"]], utterances=lines, summary="",
                  check=SpokenCheck())
    write_jsonl(d / "chats.jsonl", [day.model_dump(mode="json")])
    chat = {**traces[1], "id": mint_id(day.id, "trace", 0), "medium": "group_chat", "evidence_ids": [evidence[4]["id"]],
            "time": (day_time + dt.timedelta(minutes=5)).isoformat(), "content": format_lines(lines)}
    traces.append(chat)
    write_jsonl(d / "traces.jsonl", traces)
    base = read_jsonl(d / "final.jsonl")[0]

    def item(n: int, qtype: str, when: str, question: str, groups: list[tuple[int, list[str]]]) -> dict:
        ev = [{"statement": f"statement {k}", "evidence_id": evidence[k]["id"], "digital_trace_ids": ids,
               "background": qtype == "unanswerable"} for k, ids in groups]
        return {**base, "id": mint_id("p_test", "item", n), "question_type": qtype, "question": question,
                "question_time": when, "evidence": ev,
                "digital_trace_ids": list(dict.fromkeys(t for _, ids in groups for t in ids)),
                "correct_choice_id": "E" if qtype == "unanswerable" else "A"}

    ids = [t["id"] for t in traces]
    final = [
        item(0, "factual", "2022-01-10T08:00:00", "Which job downtown made you nervous?", [(0, [ids[0]])]),
        item(1, "comparison", "2022-02-20T09:00:00", "How did the Lisbon moving plans change?",
             [(2, [ids[1]]), (3, [ids[3]])]),
        item(2, "pattern", "2022-02-20T09:00:00", "What calms you, like the pottery class?", [(1, [ids[2], ids[4]])]),
        item(3, "inference", "2022-01-25T10:00:00", "What did R1 buy?", [(4, [ids[4]])]),
        item(4, "unanswerable", "2022-02-20T09:00:00", "Which boxes did Mia pack in Berlin?", [(5, [ids[3]])]),
        # gold that bm25 at k=2 misses (the words point at the Lisbon traces): recall is not trivially 1
        item(5, "causal", "2022-02-20T09:00:00", "Why the dinner argument about moving to Lisbon?", [(6, [ids[2]])]),
    ]
    write_jsonl(d / "final.jsonl", final)
    return root


@pytest.fixture
def rich(tmp_path) -> Path:
    return rich_dataset(tmp_path / "rich")



def _eval(data: Path, out: Path, system: str, **options) -> dict:
    """The round trips' settings: k=2 and bm25, so a missed gold shows."""
    return eval_fake(data, out, system, k=2, concurrency=2, retriever="bm25", **options)


def _trace_id(session_id: str) -> str:
    return session_id.removeprefix("answer_")


def _recalls(out: Path) -> dict[str, tuple]:
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return {r["question_id"]: (r["recall"], r["question_type"], r["dimension"]) for r in rows}


# ---------------------------------------------------------------------------------------------- the exports


def test_dates_in_each_formats_style_read_back():
    when = dt.datetime(2023, 5, 30, 13, 56)
    assert lme_date(when) == "2023/05/30 (Tue) 13:56" and parse_lme_date(lme_date(when)) == when
    assert locomo_date(when) == "1:56 pm on 30 May, 2023" and parse_locomo_date(locomo_date(when)) == when
    assert locomo_date(when.replace(hour=0)) == "12:56 am on 30 May, 2023"
    assert parse_locomo_date("12:05 pm on 8 May, 2023") == dt.datetime(2023, 5, 8, 12, 5)
    assert parse_lme_date("30 May 2023") is None and parse_locomo_date("2023-05-30") is None


def test_longmemeval_haystacks_are_online_in_time_order_with_abs_and_types(rich):
    export_longmemeval(rich)
    instances = json.loads((rich / "export/longmemeval/p_test.json").read_text())
    traces = {t["id"]: t for t in read_jsonl(rich / "p_test/traces.jsonl")}
    final = {i["id"]: i for i in read_jsonl(rich / "p_test/final.jsonl")}
    assert len(instances) == len(final)
    for inst in instances:
        item = final[inst["synth"]["id"]]
        asked = dt.datetime.fromisoformat(item["question_time"])
        shown = [_trace_id(s) for s in inst["haystack_session_ids"]]
        times = [dt.datetime.fromisoformat(traces[s]["time"]) for s in shown]
        assert times == sorted(times) and all(t <= asked for t in times)
        later = {t for t, r in traces.items() if dt.datetime.fromisoformat(r["time"]) > asked}
        assert set(shown) == set(traces) - later  # every earlier trace, no later one
        # LongMemEval's own retrieval takes exactly the sessions whose id holds "answer" for gold
        assert [s for s in inst["haystack_session_ids"] if "answer" in s] == \
            [s for s in inst["haystack_session_ids"] if s in inst["answer_session_ids"]]
        assert inst["question_type"] in LME_TYPES and inst["synth"]["question_type"] == item["question_type"]
        assert inst["question_id"].endswith("_abs") == (item["question_type"] == "unanswerable")
        assert len(inst["haystack_dates"]) == len(inst["haystack_sessions"]) == len(inst["haystack_session_ids"])
    first = next(i for i in instances if i["synth"]["question_type"] == "factual")
    assert first["haystack_session_ids"] == first["answer_session_ids"] == ["answer_" + next(iter(traces))]
    oracle = json.loads((rich / "export/longmemeval/p_test_oracle.json").read_text())
    for inst in oracle:
        assert inst["haystack_session_ids"] == [s for s in inst["haystack_session_ids"] if s in inst["answer_session_ids"]]
        assert set(inst["answer_session_ids"]) == set(inst["haystack_session_ids"])
    assert json.loads((rich / "export/longmemeval/all.json").read_text()) == instances  # one persona


def test_evidence_always_lands_on_marked_turns(rich):
    export_longmemeval(rich)
    export_locomo(rich)
    chat_id = read_jsonl(rich / "p_test/traces.jsonl")[-1]["id"]
    for inst in json.loads((rich / "export/longmemeval/all.json").read_text()):
        for sid, turns in zip(inst["haystack_session_ids"], inst["haystack_sessions"], strict=True):
            marked = [k for k, t in enumerate(turns) if t.get("has_answer")]
            assert bool(marked) == (sid in inst["answer_session_ids"]), (inst["question"], sid)
            # an evidence session says has_answer on every turn, true or false; no other session says it
            assert all(("has_answer" in t) == (sid in inst["answer_session_ids"]) for t in turns)
            if _trace_id(sid) == chat_id and inst["question"] == "What did R1 buy?":
                assert marked == [1] and turns[1]["role"] == "assistant" and turns[0]["role"] == "user"
                assert turns[1]["content"].endswith("R1: Yes, and I bought a bicycle!")
    (sample,) = json.loads((rich / "export/locomo/all.json").read_text())
    session_of = {v["trace_id"]: k for k, v in sample["synth"]["sessions"].items()}
    final = {i["id"]: i for i in read_jsonl(rich / "p_test/final.jsonl")}
    for qa in sample["qa"]:
        item = final[qa["synth"]["id"]]
        cited = {d.split(":")[0][1:] for d in qa["evidence"]}
        assert cited == {session_of[t].removeprefix("session_") for t in item["digital_trace_ids"]}
        assert qa["category"] in LOCOMO_CATEGORIES
        assert (qa["category"] == 5) == ("adversarial_answer" in qa) == (item["question_type"] == "unanswerable")
    chat = session_of[chat_id]
    bicycle = next(q for q in sample["qa"] if q["question"] == "What did R1 buy?")
    assert bicycle["evidence"] == [f"D{chat.removeprefix('session_')}:2"]
    assert sample["conversation"][chat][1] == {"speaker": "R1", "dia_id": bicycle["evidence"][0],
                                               "text": "Yes, and I bought a bicycle!"}
    adversarial = next(q for q in sample["qa"] if q["category"] == 5)
    assert adversarial["adversarial_answer"] not in ("", "Cannot be determined based on available information")


# ------------------------------------------------------------------------------------------------ round trips


@pytest.mark.parametrize("system", ["flat", "oracle"])
def test_longmemeval_round_trip_gives_the_native_recall(rich, tmp_path, system):
    native = _eval(rich, tmp_path / "native", system)
    export_longmemeval(rich)
    lme = _eval(rich / "export/longmemeval/all.json", tmp_path / "lme", system)
    assert _recalls(tmp_path / "lme") == _recalls(tmp_path / "native")
    for metric in ("recall_flat", "recall_all_all", "recall_any_any"):
        assert lme["overall"][metric] == native["overall"][metric]
    assert lme["settings"]["source"] == "longmemeval" and "question_date" in lme["settings"]["question_time"]
    if system == "flat":  # not trivially equal: bm25 misses some gold at k=2
        assert native["overall"]["recall_all_all"]["mean"] < 1


@pytest.mark.parametrize("system", ["flat", "oracle"])
def test_locomo_round_trip_gives_the_native_recall_of_the_whole_conversation(rich, tmp_path, system):
    native = _eval(rich, tmp_path / "native", system, offline=True)  # LoCoMo has no question time
    export_locomo(rich)
    locomo = _eval(rich / "export/locomo/p_test.json", tmp_path / "locomo", system, data_format="locomo")
    assert _recalls(tmp_path / "locomo") == _recalls(tmp_path / "native")
    assert locomo["overall"]["recall_flat"] == native["overall"]["recall_flat"]
    assert "whole conversation" in locomo["settings"]["question_time"]


def test_round_trip_rebuilds_every_trace_text_exactly(rich):
    export_longmemeval(rich)
    export_locomo(rich)
    native = {t.id: t.content for t in load_data(rich).personas[0].traces}
    (sample,) = load_data(rich / "export/locomo/all.json").personas
    assert {t.id: t.content for t in sample.traces} == native
    for persona in load_data(rich / "export/longmemeval/all.json").personas:
        assert all(native[_trace_id(t.id)] == t.content for t in persona.traces)


# ---------------------------------------------------------------------------------- hand-written files, empty


def _lme_file() -> list[dict]:
    """Two instances written from LongMemEval's published field list (not copied from its data)."""
    def turn(role, text, found=False):
        return {"role": role, "content": text, **({"has_answer": True} if found else {})}

    sessions = [[turn("user", "I adopted a grey cat called Pixel last week.", True), turn("assistant", "Lovely!")],
                [turn("user", "Recommend a hiking trail near Oslo?"), turn("assistant", "Try the Vettakollen loop.")],
                [turn("user", "My sister Ines moved to Porto in March.", True), turn("assistant", "Big change.")]]
    common = {"haystack_session_ids": ["s_a", "s_b", "s_c"],
              "haystack_dates": ["2023/04/02 (Sun) 10:15", "2023/04/20 (Thu) 18:00", "2023/05/01 (Mon) 09:30"],
              "haystack_sessions": sessions, "question_date": "2023/05/10 (Wed) 12:00"}
    return [{"question_id": "h1", "question_type": "single-session-user", "question": "What is my cat called?",
             "answer": "Pixel", "answer_session_ids": ["s_a"], **common},
            {"question_id": "h2_abs", "question_type": "multi-session",
             "question": "Which city did my brother move to?", "answer": "You did not mention a brother.",
             "answer_session_ids": ["s_c"], **common}]


def _locomo_file() -> list[dict]:
    """One sample written from LoCoMo's published field list (not copied from its data)."""
    return [{"sample_id": "hand-1", "conversation": {
        "speaker_a": "Noa", "speaker_b": "Tal",
        "session_1_date_time": "9:05 am on 3 June, 2023",
        "session_1": [{"speaker": "Noa", "dia_id": "D1:1", "text": "I started violin lessons on Monday."},
                      {"speaker": "Tal", "dia_id": "D1:2", "text": "Nice, who teaches you?"},
                      {"speaker": "Noa", "dia_id": "D1:3", "text": "A retired cellist named Ruth."}],
        "session_2_date_time": "7:40 pm on 19 June, 2023",
        "session_2": [{"speaker": "Tal", "dia_id": "D2:1", "text": "I finally repaired my old sailboat."},
                      {"speaker": "Noa", "dia_id": "D2:2", "text": "Will you sail to the island?"}]},
        "qa": [{"question": "Who teaches Noa the violin?", "answer": "Ruth", "evidence": ["D1:3"], "category": 4},
               {"question": "What did Tal repair after Noa began violin?", "answer": "A sailboat",
                "evidence": ["D1:1", "D2:1"], "category": 1},
               {"question": "What did Noa repair?", "adversarial_answer": "A sailboat", "evidence": ["D2:1"],
                "category": 5}]}]


def test_hand_written_longmemeval_and_locomo_files_load_and_score(tmp_path):
    lme, locomo = tmp_path / "hand_lme.json", tmp_path / "hand_locomo.json"
    lme.write_text(json.dumps(_lme_file()))
    locomo.write_text(json.dumps(_locomo_file()))
    loaded = load_data(lme)
    assert loaded.source == "longmemeval" and [p.key for p in loaded.personas] == ["h1", "h2_abs"]
    h1, h2 = (p.questions[0] for p in loaded.personas)
    assert h1.evidence_sets == (("s_a",),) and h1.statements == ("I adopted a grey cat called Pixel last week.",)
    assert h2.question_type == "unanswerable" and h1.question_time == dt.datetime(2023, 5, 10, 12, 0)
    (sample,) = load_data(locomo).personas
    assert [t.id for t in sample.traces] == ["session_1", "session_2"] and sample.name == "Noa"
    assert sample.traces[1].content == "Tal: I finally repaired my old sailboat.\nNoa: Will you sail to the island?"
    questions = {q.question: q for q in sample.questions}
    assert questions["What did Tal repair after Noa began violin?"].gold_ids == ["session_1", "session_2"]
    assert questions["What did Noa repair?"].question_type == "unanswerable"
    assert all(q.question_time is None for q in sample.questions)
    for path in (lme, locomo):
        summary = _eval(path, tmp_path / f"oracle-{path.stem}", "oracle")
        assert summary["overall"]["recall_all_all"]["mean"] == 1.0
        flat = _eval(path, tmp_path / f"flat-{path.stem}", "flat")
        assert flat["counts"]["scored"] == flat["counts"]["questions"] == summary["counts"]["questions"] > 0
    assert _recalls(tmp_path / "flat-hand_lme")["h1"][0]["recall_flat"] == 1.0  # "cat" finds s_a


def test_an_empty_final_exports_empty_files_that_score_nothing(rich, tmp_path):
    (rich / "p_test/final.jsonl").write_text("")
    export_longmemeval(rich)
    export_locomo(rich)
    assert json.loads((rich / "export/longmemeval/all_oracle.json").read_text()) == []
    (sample,) = json.loads((rich / "export/locomo/all.json").read_text())
    assert sample["qa"] == [] and sample["conversation"]["session_1"]
    assert load_data(rich / "export/longmemeval/all.json").questions == []
    summary = _eval(rich / "export/locomo/all.json", tmp_path / "empty", "flat")
    assert summary["counts"]["questions"] == 0
    (rich / "p_test/final.jsonl").unlink()
    with pytest.raises(InputError, match="no persona with final.jsonl"):
        export_locomo(rich)


# ------------------------------------------------------------------------------------------- malformed files


def _broken(kind: str) -> tuple[object, str]:
    lme, locomo = _lme_file(), _locomo_file()
    if kind == "lme-date":
        lme[1]["question_date"] = "10 May 2023"
        return lme, r"\[1\]\.question_date"
    if kind == "lme-missing":
        del lme[0]["haystack_sessions"]
        return lme, r"\[0\]\.haystack_sessions: missing"
    if kind == "lme-lengths":
        lme[0]["haystack_dates"] = lme[0]["haystack_dates"][:2]
        return lme, r"\[0\]\.haystack_dates"
    if kind == "lme-turn":
        lme[0]["haystack_sessions"][1][0] = {"role": "user"}
        return lme, r"\[0\]\.haystack_sessions\[1\]\[0\]"
    if kind == "locomo-category":
        locomo[0]["qa"][1]["category"] = 9
        return locomo, r"\[0\]\.qa\[1\]\.category"
    if kind == "locomo-turn":
        del locomo[0]["conversation"]["session_2"][0]["dia_id"]
        return locomo, r"\[0\]\.conversation\.session_2\[0\]"
    del locomo[0]["qa"][0]["answer"]
    return locomo, r"\[0\]\.qa\[0\]\.answer"


@pytest.mark.parametrize("kind", ["lme-date", "lme-missing", "lme-lengths", "lme-turn", "locomo-category",
                                  "locomo-turn", "locomo-answer"])
def test_a_malformed_file_is_one_line_naming_the_file_and_the_field(tmp_path, kind):
    data, field = _broken(kind)
    path = tmp_path / f"{kind}.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=re.escape(str(path)) + ": " + field):
        load_data(path)


def test_the_cli_exits_2_on_a_malformed_file_and_exports_both_formats(rich, tmp_path):
    data, _ = _broken("lme-date")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    result = run_synth("eval", "--data", str(bad), "--system", "flat", "--out", str(tmp_path / "never"))
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and f"{bad}: [1].question_date" in result.stderr
    assert not (tmp_path / "never").exists()
    wrong = run_synth("eval", "--data", str(rich), "--data-format", "locomo", "--out", str(tmp_path / "never"))
    assert wrong.returncode == 2 and "--data" in wrong.stderr
    for fmt in ("longmemeval", "locomo"):
        result = run_synth("export", "--format", fmt, "--out", str(rich))
        assert result.returncode == 0, result.stderr
        assert str(rich / "export" / fmt / "all.json") in result.stdout.replace("\n", "")


# ------------------------------------------------------------------------- the docs' field lists, on tiny


def doc_fields(name: str) -> dict[str, set[str]]:
    """The field tables of docs/formats/<name>.md: `| \\`field\\` | level | ...` rows → level → fields."""
    out: dict[str, set[str]] = {}
    for line in (REPO / "docs" / "formats" / f"{name}.md").read_text(encoding="utf-8").splitlines():
        match = re.match(r"^\|\s*`([^`]+)`\s*\|\s*(\w+)\s*\|", line)
        if match:
            out.setdefault(match.group(2), set()).add(match.group(1))
    return out


def test_a_tiny_fake_dataset_exported_to_both_formats_validates_against_the_docs(tiny_dataset, tmp_path):
    data = tmp_path / "tiny"
    shutil.copytree(tiny_dataset, data, ignore=shutil.ignore_patterns("export", "cache.sqlite"))
    export_longmemeval(data)
    export_locomo(data)
    lme = doc_fields("longmemeval")
    assert {"instance", "turn"} <= set(lme)
    instances = [i for path in sorted((data / "export/longmemeval").glob("*.json"))
                 for i in json.loads(path.read_text())]
    assert instances, "the tiny run kept no item (see TINY_SEED in tests/conftest.py)"
    for inst in instances:
        assert set(inst) == lme["instance"] | {"synth"}
        for session in inst["haystack_sessions"]:
            for turn in session:
                assert lme["turn"] <= set(turn) <= lme["turn"] | {"has_answer"}
    loc = doc_fields("locomo")
    assert {"sample", "conversation", "turn", "qa"} <= set(loc)
    for path in sorted((data / "export/locomo").glob("*.json")):
        for sample in json.loads(path.read_text()):
            assert set(sample) == loc["sample"] | {"synth"}
            sessions = {k for k in sample["conversation"] if re.fullmatch(r"session_\d+", k)}
            assert set(sample["conversation"]) == loc["conversation"] | sessions | {f"{s}_date_time" for s in sessions}
            assert all(set(t) == loc["turn"] for s in sessions for t in sample["conversation"][s])
            for qa in sample["qa"]:
                extra = {"synth"} | ({"adversarial_answer"} if qa["category"] == 5 else set())
                assert set(qa) == loc["qa"] | extra
    assert load_data(data / "export/longmemeval/all.json").questions
    assert load_data(data / "export/locomo/all.json").questions
