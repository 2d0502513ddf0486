"""`synth eval` at its edges: broken plugins, ids a system was never given, malformed data, undated items, recall@k
of systems that ignore k, and the terminal tables at 80 columns."""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path

import pytest
from eval_release import CONTEXT, QUESTIONS, write_release
from eval_release import question_row as _q
from eval_release import trace_row as _trace
from kit import eval_fake as _eval
from rich.cells import cell_len
from rich.console import Console
from typer.testing import CliRunner

from synth.cli import app
from synth.core.errors import InputError
from synth.eval.data import EvalSet, load_eval_set, parse_time
from synth.eval.metrics import METRICS, recall_scores
from synth.eval.protocol import retrieve_all
from synth.eval.report import print_summary, summarize_rows
from synth.eval.run import eval_settings, run_eval
from synth.eval.scoring import Scorer
from synth.records import DIMENSIONS, QUESTION_TYPES

NO_KEYS = {"ANTHROPIC_API_KEY": None, "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None, "SYNTH_PROMPTS_DIR": None}



def _rows(out: Path) -> dict[str, dict]:
    return {r["question_id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}


def _plugin(tmp_path: Path, source: str) -> str:
    """A plugin file; returns its `path.py:Memory` spec."""
    path = tmp_path / "plugin_mem.py"
    path.write_text(source)
    return f"{path}:Memory"


def _cli_eval(data: Path, out: Path, system: str):
    return CliRunner().invoke(app, ["eval", "--data", str(data), "--system", system, "--k", "3", "--out", str(out),
                                    "--answerer-provider", "fake", "--judge-provider", "fake"], env=NO_KEYS)


def _one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


WORKING = (
    "class Memory:\n"
    "    def __init__(self):\n        self.ids = []\n"
    "    def ingest(self, trace):\n        self.ids.append(trace['id'])\n"
    "    def retrieve(self, question, k, question_time):\n        return self.ids[::-1]\n"
)


# ---- plugins that cannot run at all: one line, exit 2, nothing written -----------------------------------------


@pytest.mark.parametrize("source, problem", [
    ("def Memory():\n    return None\n", "is a function, not a class"),
    ("Memory = 42\n", "is a int, not a class"),
    (WORKING.replace("def __init__(self):", "def __init__(self, db_path):"), "needs constructor arguments"),
    (WORKING.replace("self.ids = []", "raise RuntimeError('no database here')"),
     "constructing it raised RuntimeError: no database here"),
    (WORKING.replace("def retrieve", "def lookup"), "lacks retrieve"),
    ("import json\nraise ValueError('broken module')\n", "importing"),
])
def test_a_plugin_that_cannot_run_is_one_line_naming_it_and_exit_2(tmp_path, source, problem):
    write_release(tmp_path / "data")
    spec = _plugin(tmp_path, source)
    line = _one_error_line(_cli_eval(tmp_path / "data", tmp_path / "run", spec))
    assert spec in line and problem in line
    assert not (tmp_path / "run").exists()  # nothing half-written


# ---- a plugin failing on one question: that question fails, the run goes on ------------------------------------


@pytest.mark.parametrize("retrieve_body, error", [
    ("if 'q2' in question: raise ValueError('boom on q2')", "Memory.retrieve raised ValueError: boom on q2"),
    ("if 'q2' in question: return None", "Memory.retrieve returned None, not a list of trace ids"),
    ("if 'q2' in question: return 't1'", "Memory.retrieve returned a str, not a list of trace ids"),
    ("if 'q2' in question: return [1, 2]", "Memory.retrieve returned 1 (int) among its ids"),
])
def test_a_plugin_failing_on_one_question_fails_that_question_only(tmp_path, retrieve_body, error):
    write_release(tmp_path / "data")
    source = WORKING.replace("        return self.ids[::-1]\n", f"        {retrieve_body}\n        return self.ids[::-1]\n")
    summary = _eval(tmp_path / "data", tmp_path / "run", _plugin(tmp_path, source))
    rows = _rows(tmp_path / "run")
    assert rows["q2"]["error"].startswith(error) and rows["q2"]["cause"] == "system"
    assert all(rows[q]["error"] is None for q in ("q1", "q3", "q4"))
    counts = json.loads((tmp_path / "run" / "summary.json").read_text())["counts"]
    assert counts == summary["counts"]
    assert (counts["scored"], counts["failed"], counts["failed_by_cause"]) == (3, 1, {"system": 1, "model": 0})


def test_an_answer_method_that_raises_fails_the_question(tmp_path):
    write_release(tmp_path / "data")
    source = WORKING + "    def answer(self, question, choices, question_time):\n        raise KeyError('x')\n"
    summary = _eval(tmp_path / "data", tmp_path / "run", _plugin(tmp_path, source))
    assert summary["counts"]["failed"] == 4
    assert all("Memory.answer raised KeyError" in r["error"] for r in _rows(tmp_path / "run").values())


def test_an_ingest_that_raises_fails_the_personas_later_questions(tmp_path):
    write_release(tmp_path / "data")
    source = WORKING.replace("        self.ids.append(trace['id'])\n",
                             "        if trace['id'] == 't4': raise OSError('disk full')\n"
                             "        self.ids.append(trace['id'])\n")
    summary = _eval(tmp_path / "data", tmp_path / "run", _plugin(tmp_path, source))
    rows = _rows(tmp_path / "run")
    assert rows["q1"]["error"] is None  # asked on 2022-03-10, before t4 (2022-05-20) arrived
    for qid in ("q2", "q3", "q4"):
        assert "Memory.ingest raised OSError: disk full" in rows[qid]["error"] and "'t4'" in rows[qid]["error"]
    assert summary["counts"]["failed_by_cause"]["system"] == 3


def test_failed_questions_are_retried_by_the_next_run(tmp_path):
    write_release(tmp_path / "data")
    flag = tmp_path / "broken"
    flag.write_text("")
    source = ("import pathlib\n" + WORKING.replace(
        "        return self.ids[::-1]\n",
        f"        if pathlib.Path({str(flag)!r}).exists(): raise RuntimeError('down')\n        return self.ids[::-1]\n"))
    spec = _plugin(tmp_path, source)
    assert _eval(tmp_path / "data", tmp_path / "run", spec)["counts"]["scored"] == 0
    flag.unlink()
    again = _eval(tmp_path / "data", tmp_path / "run", spec)
    assert (again["counts"]["scored"], again["counts"]["failed"]) == (4, 0)


# ---- ids a system was never given ------------------------------------------------------------------------------


EVERYTHING = ("class Memory:\n"
              "    def ingest(self, trace):\n        pass\n"
              "    def retrieve(self, question, k, question_time):\n"
              "        return ['ghost', 't6', 't5', 't4', 't3', 't2', 't1']\n")


def test_unknown_and_future_ids_are_dropped_before_recall_and_answering_and_counted(tmp_path, monkeypatch):
    write_release(tmp_path / "data")
    seen: dict[str, list[str]] = {}
    original = Scorer._context

    def spy(self, ids):
        seen.setdefault("ids", []).extend(ids)
        return original(self, ids)

    monkeypatch.setattr(Scorer, "_context", spy)
    summary = _eval(tmp_path / "data", tmp_path / "run", _plugin(tmp_path, EVERYTHING), k=3)
    rows = _rows(tmp_path / "run")
    # q1 is asked on 2022-03-10: t4..t6 are later. Its first three ids are all invalid: nothing left, recall 0.
    assert rows["q1"]["dropped_ids"] == {"unknown": ["ghost"], "future": ["t6", "t5"]}
    assert rows["q1"]["retrieved"] == [] and rows["q1"]["recall"]["recall_flat"] == 0.0
    # q3 (2022-12-05) was given everything: only the ghost is dropped, and t6 and t5 fill its top 3.
    assert rows["q3"]["dropped_ids"] == {"unknown": ["ghost"], "future": []}
    assert rows["q3"]["retrieved"] == ["t6", "t5"]
    assert "ghost" not in seen["ids"] and seen["ids"].count("t6") == 1  # only q3 (12-05) may see t6 (11-30)
    dropped = summary["counts"]["retrieved_ids_dropped"]
    # q1: ghost t6 t5; q2 (06-01): ghost t6 t5; q4 (09-01): ghost t6; q3: ghost
    assert dropped == {"unknown": 4, "future": 5, "questions": 4}


def test_offline_a_system_was_given_every_trace_so_only_unknown_ids_are_dropped(tmp_path):
    write_release(tmp_path / "data")
    summary = _eval(tmp_path / "data", tmp_path / "run", _plugin(tmp_path, EVERYTHING), k=3, offline=True)
    assert summary["counts"]["retrieved_ids_dropped"] == {"unknown": 4, "future": 0, "questions": 4}
    assert _rows(tmp_path / "run")["q1"]["retrieved"] == ["t6", "t5"]


def test_the_oracle_cannot_pass_gold_traces_from_after_the_question_time(tmp_path):
    root = tmp_path / "data" / "ana_benchmark_en.json"
    root.parent.mkdir()
    leaky = _q("q9", "2022-03-10", "factual", "experience", [("pottery", ["t3"]), ("moved", ["t4"])])
    root.write_text(json.dumps({"context": CONTEXT, "questions": [leaky]}))
    summary = _eval(tmp_path / "data", tmp_path / "run", "oracle")
    row = _rows(tmp_path / "run")["q9"]
    assert row["retrieved"] == ["t3"] and row["dropped_ids"]["future"] == ["t4"]
    assert row["recall"]["recall_flat"] == 0.5
    assert summary["counts"]["questions_with_future_evidence"] == 1


# ---- malformed data: one line naming the file and the item ----------------------------------------------------


def _release(tmp_path: Path, context: list, questions: list) -> Path:
    path = tmp_path / "data" / "ana_benchmark_en.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"context": context, "questions": questions}))
    return path


@pytest.mark.parametrize("context, questions, where", [
    (CONTEXT[:2] + [{k: v for k, v in CONTEXT[2].items() if k != "id"}] + CONTEXT[3:], QUESTIONS,
     "context[2]/id: missing"),
    (CONTEXT[:3] + [{**CONTEXT[3], "id": "t2"}] + CONTEXT[4:], QUESTIONS,
     "context[3]/id: trace id 't2' already used by context[1]"),
    (CONTEXT, QUESTIONS + [{**QUESTIONS[0], "question": "again"}],
     "questions[4]/id: question id 'q1' already used by questions[0]"),
    (CONTEXT, [{k: v for k, v in QUESTIONS[0].items() if k != "id"}], "questions[0]/id: missing"),
    (CONTEXT + ["just text"], QUESTIONS, "context[6]: a trace must be a JSON object, not str"),
])
def test_malformed_clonemem_file_is_an_input_error_naming_file_and_item(tmp_path, context, questions, where):
    path = _release(tmp_path, context, questions)
    with pytest.raises(InputError) as caught:
        load_eval_set(tmp_path / "data")
    assert str(caught.value) == f"{path}: {where}"


def test_duplicate_question_ids_stop_the_cli_with_one_line_and_no_results(tmp_path):
    path = _release(tmp_path, CONTEXT, QUESTIONS + [{**QUESTIONS[1], "question": "a different question"}])
    line = _one_error_line(_cli_eval(tmp_path / "data", tmp_path / "run", "flat"))
    assert f"{path}: questions[4]/id: question id 'q2' already used by questions[1]" in line
    assert not (tmp_path / "run").exists()


def _synth_persona(root: Path, name: str, persona_id: str, traces: list[dict]) -> Path:
    directory = root / name
    directory.mkdir(parents=True)
    (directory / "persona.jsonl").write_text(json.dumps({"id": persona_id, "language": "en"}) + "\n")
    (directory / "traces.jsonl").write_text("".join(json.dumps(t) + "\n" for t in traces))
    (directory / "final.jsonl").write_text(json.dumps(QUESTIONS[0]) + "\n")
    return directory


def test_synth_trace_without_id_names_its_line(tmp_path):
    directory = _synth_persona(tmp_path / "ds", "p1", "p1", [CONTEXT[0], {"medium": "chat", "content": "x"}])
    with pytest.raises(InputError, match=r"traces\.jsonl: line 2/id: missing"):
        load_eval_set(tmp_path / "ds")
    assert str(directory) in str(pytest.raises(InputError, load_eval_set, directory).value)


def test_two_synth_persona_dirs_with_one_persona_id_are_refused(tmp_path):
    _synth_persona(tmp_path / "ds", "a", "same", CONTEXT)
    _synth_persona(tmp_path / "ds", "b", "same", CONTEXT)
    with pytest.raises(InputError, match=r"b/persona\.jsonl: id: persona 'same' already used by .*/a$"):
        load_eval_set(tmp_path / "ds")


# ---- the online protocol: the same-day rule, and what cannot be ordered ---------------------------------------


def test_same_day_rule_date_only_trace_is_midnight_date_only_question_is_the_days_end():
    assert parse_time("2022-03-10") == dt.datetime(2022, 3, 10)
    assert parse_time("2022年3月10日") == dt.datetime(2022, 3, 10)
    assert parse_time("2022-03-10", end_of_day=True) == dt.datetime(2022, 3, 10, 23, 59, 59, 999999)
    assert parse_time("2022/3/10", end_of_day=True) == dt.datetime(2022, 3, 10, 23, 59, 59, 999999)
    assert parse_time("2022-03-10T09:30", end_of_day=True) == dt.datetime(2022, 3, 10, 9, 30)  # a time is kept


class Spy:
    def __init__(self) -> None:
        self.ids: list[str] = []
        self.seen: dict[str, list[str]] = {}

    def ingest(self, trace: dict) -> None:
        self.ids.append(trace["id"])

    def retrieve(self, question, k, question_time):
        self.seen[question] = list(self.ids)
        return []


def test_same_day_rule_decides_what_each_question_sees(tmp_path):
    context = [_trace(1, "2022-03-10", "date only, that day"),
               {**_trace(2, "", "evening that day"), "event_date": "2022-03-10T21:00:00"},
               _trace(3, "2022-03-11", "next day")]
    questions = [{**_q("morning", "2022-03-10T09:00:00", "factual", "experience", []), "question": "morning"},
                 {**_q("day", "2022-03-10", "factual", "experience", []), "question": "day"}]
    persona = load_eval_set(_release(tmp_path, context, questions)).personas[0]
    spy = Spy()
    retrieve_all(persona, spy, k=5, offline=False)
    assert spy.seen == {"morning": ["t1"], "day": ["t1", "t2"]}


def test_undated_questions_and_traces_are_counted_and_reported(tmp_path):
    context = CONTEXT + [{**_trace(7, "", "a note with no date"), "event_date": "someday"},
                         {"id": "t8", "medium": "chat", "time": "garbled", "event_date": "2022-04-01",
                          "content": "an unreadable time but a readable event_date"}]
    questions = QUESTIONS + [_q("q5", "in the spring", "factual", "experience", [("pottery", ["t3"])])]
    _release(tmp_path, context, questions)
    persona = load_eval_set(tmp_path / "data").personas[0]
    assert next(t for t in persona.traces if t.id == "t8").time == dt.datetime(2022, 4, 1)
    screen = io.StringIO()
    summary = _eval(tmp_path / "data", tmp_path / "run", "flat", console=Console(file=screen, width=80))
    counts = json.loads((tmp_path / "run" / "summary.json").read_text())["counts"]
    assert (counts["questions_without_time"], counts["traces_without_date"]) == (1, 1)
    assert summary["settings"]["protocol"] == "online"
    assert _rows(tmp_path / "run")["q5"]["visible_traces"] == len(context)  # it saw everything: hence the count
    assert "1 question(s) without a readable question_time" in " ".join(screen.getvalue().split())


# ---- recall@k uses the first k ids, for every system ------------------------------------------------------------


def test_full_context_recall_is_of_its_first_k_ids_not_of_hundreds(tmp_path):
    context = [_trace(0, "2020-01-01", "the one that matters: adopting the cat")]
    context += [_trace(i, f"2021-{1 + i % 12:02d}-{1 + i % 28:02d}", f"filler note {i}") for i in range(1, 301)]
    question = _q("q1", "2022-01-01", "factual", "experience", [("adopted a cat", ["t0"])])
    _release(tmp_path, context, [question])
    summary = _eval(tmp_path / "data", tmp_path / "run", "full", k=10)
    row = _rows(tmp_path / "run")["q1"]
    assert len(row["retrieved"]) == 301  # the answerer still gets every visible trace
    assert row["retrieved_at_k"] == row["retrieved"][:10] and "t0" not in row["retrieved_at_k"]
    assert summary["overall"]["recall_any_any"]["mean"] == 0.0  # was 1.0 from 301 ids "at k=10"


def test_a_plugin_that_ignores_k_is_scored_on_its_first_k(tmp_path):
    write_release(tmp_path / "data")
    spec = _plugin(tmp_path, WORKING.replace("class Memory:\n", "class Memory:\n    ignores_k = True\n"))
    _eval(tmp_path / "data", tmp_path / "run", spec, k=1)
    for row in _rows(tmp_path / "run").values():
        assert row["retrieved_at_k"] == row["retrieved"][:1]
        expected = recall_scores(row["retrieved"][:1], [row["gold_trace_ids"]]) if row["gold_trace_ids"] else None
        if expected is not None:
            assert row["recall"]["recall_any_any"] == expected["recall_any_any"]
    assert max(len(r["retrieved"]) for r in _rows(tmp_path / "run").values()) > 1


# ---- the terminal at 80 columns --------------------------------------------------------------------------------


def _summary_for_every_group(extra_type: str | None = None) -> dict:
    rows = []
    for i, qtype in enumerate(QUESTION_TYPES + ((extra_type,) if extra_type else ())):
        for j, dimension in enumerate(DIMENSIONS):
            rows.append({"question_type": qtype, "dimension": dimension,
                         "recall": None if qtype == "unanswerable" else {m: (i + j) % 2 / 1 for m in METRICS[:5]},
                         "correct": bool(i % 2),
                         "judge": {"memory_recall": 0.5, "memory_helpfulness": 1, "truthfulness": 1,
                                   "consistency": 2}})
    run = {"data": "outputs/a-rather-long-dataset-directory-name/with/nested/parts/and-more-of-them", "system":
           "flat", "k": 10, "protocol": "online"}
    return summarize_rows(rows, EvalSet("synth", Path("x")), [], eval_settings(), run)


def _render(summary: dict) -> str:
    screen = Console(width=80, file=io.StringIO(), color_system=None)
    print_summary(summary, screen)
    return screen.file.getvalue()


def test_group_tables_fit_80_columns_without_truncation():
    text = _render(_summary_for_every_group())
    assert "…" not in text
    assert max(cell_len(line) for line in text.splitlines()) <= 80
    for name in QUESTION_TYPES + DIMENSIONS + METRICS:
        assert f" {name} " in text, name  # each type, dimension and metric appears whole, in a cell of its own
    assert "0.500 [" in text  # the overall table keeps its intervals


def test_a_group_name_wider_than_the_screen_wraps_instead_of_being_cut():
    long_name = "temporal_reasoning_across_several_years_with_multi_hop_evidence_chains_x"
    text = _render(_summary_for_every_group(long_name))
    assert "…" not in text
    assert max(cell_len(line) for line in text.splitlines()) <= 80
    # its table has one group column; the header cell is folded over two lines, every character kept
    header = "".join(line.split("┃")[2].strip() for line in text.splitlines() if line.count("┃") == 3)
    assert long_name in header


def test_dense_flat_without_a_key_or_server_stops_before_writing_anything(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    write_release(tmp_path / "data")
    with pytest.raises(InputError, match="--embed-model needs OPENAI_API_KEY"):
        run_eval(data=tmp_path / "data", system="flat", k=3, answerer_provider="fake", answerer_model=None,
                 judge_provider="fake", judge_model=None, base_url=None, embed_model="some-embedder",
                 offline=False, out=tmp_path / "run", plot=False, limit=None, concurrency=2,
                 console=Console(file=io.StringIO()))
    assert not (tmp_path / "run").exists()
