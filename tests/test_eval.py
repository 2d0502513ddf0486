"""Tests of `synth eval`: recall variants, letter parsing, intervals, online visibility, BM25, and a fake end-to-end run."""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path

import pytest
from eval_release import CONTEXT, QUESTIONS, SpySystem, write_release
from eval_release import question_row as _q
from kit import eval_fake as _eval
from rich.console import Console

from synth.eval.data import EvalPersona, load_eval_set, parse_time
from synth.eval.metrics import (
    METRICS,
    bootstrap_ci,
    parse_choice,
    recall_all_all,
    recall_all_any,
    recall_any_all,
    recall_any_any,
    recall_flat,
    recall_scores,
    summarize,
)
from synth.eval.protocol import retrieve_all
from synth.eval.run import run_eval
from synth.eval.systems import BM25System, OracleSystem

# ---- recall variants -----------------------------------------------------------------------------------------

TWO_SETS = [["t1", "t2"], ["t3"]]


@pytest.mark.parametrize(
    "retrieved, expected",
    [
        # flat, all_all, all_any, any_all, any_any
        (["t1", "t2", "t3"], (1.0, 1.0, 1.0, 1.0, 1.0)),
        (["t1", "t3"], (2 / 3, 0.0, 1.0, 1.0, 1.0)),  # set 2 complete, set 1 only partly
        (["t1", "t2"], (2 / 3, 0.0, 0.0, 1.0, 1.0)),  # set 1 complete, set 2 missed
        (["t1", "x"], (1 / 3, 0.0, 0.0, 0.0, 1.0)),   # one id of one set
        (["x", "y"], (0.0, 0.0, 0.0, 0.0, 0.0)),
    ],
)
def test_recall_variants_on_two_evidence_sets(retrieved, expected):
    got = tuple(f(retrieved, TWO_SETS) for f in (recall_flat, recall_all_all, recall_all_any, recall_any_all,
                                                   recall_any_any))
    assert got == pytest.approx(expected)


def test_recall_flat_counts_a_shared_trace_once():
    # t2 backs both statements: 2 unique gold ids, 1 retrieved.
    assert recall_flat(["t2"], [["t1", "t2"], ["t2"]]) == pytest.approx(0.5)
    assert recall_all_any(["t2"], [["t1", "t2"], ["t2"]]) == 1.0


def test_unanswerable_question_without_evidence_has_no_recall():
    assert recall_scores(["t1"], []) is None
    assert recall_scores(["t1"], [[]]) is None
    assert summarize([None, 1.0, 0.0])["n"] == 2


# ---- letter parsing ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, letter",
    [
        ("B) because she moved out", "B"),
        ("Answer: B", "B"),
        ("**B**", "B"),
        ("The answer is (b).", "B"),
        ("答案：B", "B"),
        ("答案是 c，因为……", "C"),
        ("I'd go with option D.", "D"),
        ("E. Cannot be determined", "E"),
        ("**Answer:** C — the second one", "C"),
        ("A good question; I pick B", "B"),
        ("The answer is a hard one", None),
        ("no letter at all", None),
        ("", None),
    ],
)
def test_parse_choice(text, letter):
    assert parse_choice(text) == letter


# ---- bootstrap -----------------------------------------------------------------------------------------------


def test_bootstrap_interval_contains_the_mean_and_is_reproducible():
    values = [1, 0, 1, 1, 0, 1, 0, 1, 1, 1, 0, 0, 1, 1, 1]
    low, high = bootstrap_ci(values, seed=3)
    mean = sum(values) / len(values)
    assert low < mean < high
    assert low >= 0 and high <= 1
    assert bootstrap_ci(values, seed=3) == (low, high)


def test_question_time_of_a_bare_date_covers_the_whole_day():
    assert parse_time("2022-03-05", end_of_day=True) > parse_time("2022-03-05 21:00")
    assert parse_time("2022年3月5日") == dt.datetime(2022, 3, 5)
    assert parse_time("not a date") is None


# ---- a hand-made CloneMem release file ---------------------------------------------------------------------












def test_loader_reads_a_release_dir_and_a_single_file_alike(tmp_path):
    path = write_release(tmp_path)
    from_dir, from_file = load_eval_set(tmp_path), load_eval_set(path)
    assert from_dir.source == from_file.source == "clonemem"
    (p,) = from_dir.personas
    assert p.language == "en" and p.name == "Ana" and len(p.traces) == 6
    q2 = next(q for q in p.questions if q.id == "q2")
    assert q2.evidence_sets == (("t2",), ("t4",))
    assert [q.id for q in from_file.personas[0].questions] == [q.id for q in p.questions]




def _persona(tmp_path) -> EvalPersona:
    return load_eval_set(write_release(tmp_path)).personas[0]


def test_online_protocol_never_shows_a_trace_after_the_question_time(tmp_path):
    persona = _persona(tmp_path)
    spy = SpySystem()
    retrievals = retrieve_all(persona, spy, k=10, offline=False)
    assert len(spy.asked) == len(QUESTIONS)
    times = [when for when, _ in spy.asked]
    assert times == sorted(times)  # queried in time order
    for when, seen in spy.asked:
        assert all(parse_time(t["time"]) <= when for t in seen)
    # and it was given everything up to then: q1 (March 10) has seen t1..t3, not t4.
    first = dict((r.question.id, r) for r in retrievals)["q1"]
    assert first.visible == 3 and set(first.retrieved) == {"t1", "t2", "t3"}


def test_offline_protocol_feeds_every_trace_first(tmp_path):
    spy = SpySystem()
    retrieve_all(_persona(tmp_path), spy, k=10, offline=True)
    assert all(len(seen) == len(CONTEXT) for _, seen in spy.asked)


def test_oracle_recall_is_exactly_one(tmp_path):
    persona = _persona(tmp_path)
    scored = [recall_scores(r.at_k, r.question.evidence_sets)
              for r in retrieve_all(persona, OracleSystem(), k=10, offline=False)]
    answerable = [s for s in scored if s is not None]
    assert len(answerable) == 3 and len(scored) == 4
    assert all(v == 1.0 for s in answerable for v in s.values())


def test_oracle_recall_at_1_is_of_its_first_gold_trace(tmp_path):
    # It ignores k (the answerer gets every gold trace), but recall@k is of the first k ids, as for any system.
    q2 = next(r for r in retrieve_all(_persona(tmp_path), OracleSystem(), k=1, offline=False)
              if r.question.id == "q2")
    assert (q2.retrieved, q2.at_k) == (["t2", "t4"], ["t2"])
    assert recall_scores(q2.at_k, q2.question.evidence_sets)["recall_flat"] == 0.5


# ---- BM25 ----------------------------------------------------------------------------------------------------


def _bm25(texts: list[str]) -> BM25System:
    system = BM25System()
    for i, text in enumerate(texts):
        system.ingest({"id": f"d{i}", "medium": "note", "content": text})
    return system


def test_bm25_ranks_the_matching_english_trace_first():
    system = _bm25(["Went hiking in the mountains with Tom.", "My sister called about the wedding dress.",
                    "Bought groceries: apples, rice, and milk."])
    assert system.retrieve("What did your sister say about the wedding?", 2, None)[0] == "d1"


def test_bm25_ranks_the_matching_chinese_trace_first():
    system = _bm25(["今天和老王去爬山，风景很好。", "女儿打电话说她很担心我们离婚的事情。", "超市买了苹果和大米。"])
    assert system.retrieve("你女儿那次打电话担心什么？", 2, None)[0] == "d1"


# ---- end to end with the fake answerer and judge -------------------------------------------------------------



def test_end_to_end_with_the_fake_writes_results_and_a_summary_in_range(tmp_path):
    write_release(tmp_path / "data")
    out = tmp_path / "run"
    summary = _eval(tmp_path / "data", out)
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == len(QUESTIONS)
    for row in rows:
        assert row["chosen"] in "ABCDE" and len(row["retrieved"]) <= 3
        assert row["correct"] == (row["chosen"] == row["correct_choice_id"])
        assert row["tokens"]["provider_calls"] == 4
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk["settings"]["protocol"] == "online" and on_disk["settings"]["system"] == "flat"
    assert on_disk["counts"]["recall_excluded_no_gold_traces"] == 1
    assert set(on_disk["overall"]) == set(METRICS)
    for metric, cell in on_disk["overall"].items():
        assert cell["mean"] is not None and 0 <= cell["ci_low"] <= cell["mean"] <= cell["ci_high"] <= 1, metric
    assert set(on_disk["by_question_type"]) == {"factual", "trajectory", "pattern", "unanswerable"}
    assert set(on_disk["by_dimension"]) == {"experience", "opinion", "emotion"}
    assert summary["calls"]["provider_calls"] == 4 * len(QUESTIONS)


def test_resume_skips_finished_questions(tmp_path):
    write_release(tmp_path / "data")
    out = tmp_path / "run"
    first = _eval(tmp_path / "data", out, limit=2)
    assert first["counts"]["scored"] == 2
    second = _eval(tmp_path / "data", out)
    assert second["calls"]["requests"] == 4 * (len(QUESTIONS) - 2)  # only the two new questions were asked
    third = _eval(tmp_path / "data", out)
    assert third["calls"]["requests"] == 0 and third["calls"]["provider_calls"] == 0
    assert len((out / "results.jsonl").read_text().splitlines()) == len(QUESTIONS)


def test_resume_refuses_results_of_another_system(tmp_path):
    from synth.core.errors import InputError

    write_release(tmp_path / "data")
    _eval(tmp_path / "data", tmp_path / "run", limit=1)
    with pytest.raises(InputError, match="system"):
        _eval(tmp_path / "data", tmp_path / "run", system="oracle")


def test_oracle_end_to_end_and_a_user_system_by_spec(tmp_path, monkeypatch):
    write_release(tmp_path / "data")
    summary = _eval(tmp_path / "data", tmp_path / "oracle", system="oracle")
    assert summary["overall"]["recall_all_all"]["mean"] == 1.0
    (tmp_path / "mymem.py").write_text(
        "class Newest:\n"
        "    def __init__(self):\n        self.ids = []\n"
        "    def ingest(self, trace):\n        self.ids.append(trace['id'])\n"
        "    def retrieve(self, question, k, question_time):\n        return self.ids[::-1]\n"
        "    def answer(self, question, choices, question_time):\n        return 'Answer: C'\n")
    monkeypatch.chdir(tmp_path)
    summary = _eval(tmp_path / "data", tmp_path / "user", system="mymem:Newest")
    rows = [json.loads(line) for line in (tmp_path / "user" / "results.jsonl").read_text().splitlines()]
    assert all(r["chosen"] == "C" and len(r["retrieved"]) <= 3 for r in rows)
    assert summary["overall"]["choice_accuracy"]["mean"] == pytest.approx(1 / 4)  # only q3's answer is C


def test_loader_reads_a_synth_dataset_with_mcq_fallback(tmp_path):
    persona_dir = tmp_path / "ds" / "p1"
    persona_dir.mkdir(parents=True)
    (persona_dir / "persona.jsonl").write_text(json.dumps({"id": "p1", "language": "zh", "name": "老沈"}) + "\n")
    traces = [{"id": "a", "persona_id": "p1", "event_id": "e", "evidence_ids": [], "medium": "diary",
               "time": "2022-05-01T20:00:00", "content": "女儿说她担心我们。"},
              {"id": "b", "persona_id": "p1", "event_id": "e", "evidence_ids": [], "medium": "chat",
               "time": "2022-01-01T08:00:00", "content": "开会。"}]
    (persona_dir / "traces.jsonl").write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in traces))
    question = {**_q("m1", "2022-06-01T10:00:00", "causal", "emotion", [("担心", ["a"])]), "persona_id": "p1"}
    (persona_dir / "mcq.jsonl").write_text(json.dumps(question, ensure_ascii=False) + "\n")
    loaded = load_eval_set(tmp_path / "ds")
    assert loaded.source == "synth"
    (p,) = loaded.personas
    assert (p.key, p.language, p.name) == ("p1", "zh", "老沈")
    assert [t.id for t in p.traces] == ["b", "a"]  # time order
    assert p.questions[0].key == "p1/m1" and p.questions[0].evidence_sets == (("a",),)
    assert load_eval_set(persona_dir).personas[0].questions[0].id == "m1"


def test_plot_writes_one_png_per_grouping(tmp_path):
    pytest.importorskip("matplotlib")
    write_release(tmp_path / "data")
    out = tmp_path / "run"
    run_eval(data=tmp_path / "data", system="full", k=2, answerer_provider="fake", answerer_model=None,
             judge_provider="fake", judge_model=None, base_url=None, embed_model=None, offline=True, out=out,
             plot=True, limit=None, concurrency=2, console=Console(file=io.StringIO()))
    for name in ("by_question_type.png", "by_dimension.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert all(len(r["retrieved"]) == len(CONTEXT) for r in rows)  # full context ignores k; offline sees all
    assert json.loads((out / "summary.json").read_text())["settings"]["protocol"] == "offline"


def test_dense_flat_retrieval_through_an_openai_compatible_embeddings_endpoint(monkeypatch):
    from synth.eval.embed import OpenAIEmbedder
    from synth.eval.systems import SystemOptions, system_factory
    from synth.testing.fake_server import FakeServer

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeServer() as server:
        options = SystemOptions(retriever="dense", embedder=lambda: OpenAIEmbedder("any-embedder", server.openai_base_url))
        system = system_factory("flat", options)()
        for i, text in enumerate(["hiking in the mountains with tom", "my sister called about the wedding dress",
                                  "bought apples rice and milk"]):
            system.ingest({"id": f"d{i}", "medium": "note", "content": text})
        assert system.retrieve("sister wedding dress", 2, None)[0] == "d1"
        assert server.stats()["requests"] >= 2  # traces and query were really embedded there


# ---- unanswerable questions: recall on their related background -----------------------------------------------


def test_an_unanswerable_questions_background_is_gold_for_recall_not_for_the_judges(tmp_path):
    """synth keeps an unanswerable item's related background (`background: true`); a release file marks it only by
    the type. Either way its traces are the recall gold, and the judges get no ground-truth statements."""
    raw = _q("u1", "2022-12-10", "unanswerable", "experience", [("Lives in Lisbon now", ["t4", "t6"])], correct="E")
    flagged = {**raw, "evidence": [{**e, "background": True} for e in raw["evidence"]]}
    persona_dir = tmp_path / "ds" / "p1"
    persona_dir.mkdir(parents=True)
    (persona_dir / "traces.jsonl").write_text("".join(json.dumps(t) + "\n" for t in CONTEXT))
    (persona_dir / "final.jsonl").write_text(json.dumps(flagged) + "\n")
    write_release(tmp_path / "release")
    for question in (load_eval_set(tmp_path / "ds").questions[0], _loaded_release(tmp_path / "release", raw)):
        assert question.background and question.statements == ()
        assert question.evidence_sets == (("t4", "t6"),) and question.gold_ids == ["t4", "t6"]
        assert recall_scores(["t4", "t1"], question.evidence_sets)["recall_flat"] == 0.5
    empty = load_eval_set(write_release(tmp_path / "plain")).questions[3]  # q4: unanswerable, no background
    assert empty.background and empty.evidence_sets == () and recall_scores(["t1"], empty.evidence_sets) is None


def _loaded_release(root: Path, extra: dict):
    path = root / "100k" / "ana_benchmark_en.json"
    data = json.loads(path.read_text())
    data["questions"].append(extra)
    path.write_text(json.dumps(data))
    return next(q for q in load_eval_set(path).questions if q.id == extra["id"])


def test_unanswerable_questions_with_background_are_scored_for_recall(tmp_path):
    data = tmp_path / "data"
    write_release(data)
    _loaded_release(data, _q("u1", "2022-12-10", "unanswerable", "experience", [("Lives in Lisbon now", ["t4", "t6"])],
                             correct="E"))
    out = tmp_path / "run"
    summary = _eval(data, out)
    rows = {r["question_id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert rows["u1"]["recall"] is not None and rows["u1"]["gold_trace_ids"] == ["t4", "t6"]
    assert rows["u1"]["judge"]["memory_recall"] is None  # no ground-truth statements: the judges see none
    assert rows["q4"]["recall"] is None  # no background: still left out
    counts = summary["counts"]
    assert counts["recall_excluded_no_gold_traces"] == 1 and counts["recall_on_background"] == 1
    assert summary["by_question_type"]["unanswerable"]["recall_flat"]["n"] == 1
