"""`synth browse` on `tiny` fake runs (English and Chinese): the page's links are checked in a real headless
Chromium (@sparticuz/chromium driven by puppeteer-core, tests/browser/), against the dataset's own records."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import TINY_SEEDS, tiny_run_with_item
from kit import REPO, run_synth

from synth.core.jsonl import read_dicts as read_jsonl
from synth.release.browse import site_data
from synth.release.view import load_persona

BROWSER_DIR = REPO / "tests" / "browser"


def _site(source: Path, target: Path, *extra: str) -> Path:
    shutil.copytree(source, target)
    result = run_synth("browse", "--out", str(target), *extra)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("site/index.html")
    return target


@pytest.fixture(scope="module")
def site(tiny_dataset, tmp_path_factory) -> Path:
    return _site(tiny_dataset, tmp_path_factory.mktemp("browse") / "data")


@pytest.fixture(scope="module")
def site_zh(tmp_path_factory) -> Path:
    """A Chinese persona's tiny fake run that wrote an item to click (kept or rejected): the first seed of 1, then
    conftest's TINY_SEEDS, whose run did — every prompt edit reshuffles the fake's answers (seed 1 alone once
    planned no item at all)."""
    out = tiny_run_with_item(tmp_path_factory.mktemp("browse_zh"), (1, *TINY_SEEDS), "--persona", "p03_xiaoyu",
                             files=("final.jsonl", "rejected.jsonl"))
    result = run_synth("browse", "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


def _persona_dir(out: Path) -> Path:
    return next(p.parent for p in sorted(out.glob("*/persona.jsonl")))


def _expected_traces(item: dict) -> set[str]:
    return set(item["digital_trace_ids"]) | {t for e in item["evidence"] for t in e["digital_trace_ids"]}


def test_site_is_one_self_contained_folder(site):
    directory = _persona_dir(site)
    index = (site / "site" / "index.html").read_text(encoding="utf-8")
    page = (site / "site" / f"{directory.name}.html").read_text(encoding="utf-8")
    assert f'href="{directory.name}.html"' in index
    # no server and nothing fetched: no external script, stylesheet or fetch()
    assert "<script src" not in page and "<link" not in page and "fetch(" not in page
    assert sorted(p.name for p in (site / "site").iterdir()) == ["index.html", f"{directory.name}.html"]


def test_site_data_links_every_question_to_its_traces(site):
    view = load_persona(_persona_dir(site))
    data = site_data(view)
    assert [q["id"] for q in data["questions"]] == [i["id"] for i in view.final]
    assert [q["id"] for q in data["rejected"]] == [i["id"] for i in view.rejected]
    for item, row in zip([*view.final, *view.rejected], [*data["questions"], *data["rejected"]], strict=True):
        assert set(row["traces"]) == _expected_traces(item)
    for item, row in zip(view.rejected, data["rejected"], strict=True):
        assert (row["filter"], row["reason"]) == (item["filter"], item["reason"])
    assert [t["id"] for t in data["traces"]] == [t["id"] for t in sorted(view.traces, key=lambda t: (t["time"], t["id"]))]
    # each arc lane has the anchor index reached at every major event
    majors = sorted(view.majors, key=lambda m: m["start"])
    for arc in data["arcs"]:
        reached = [[m["start"], s["anchor_index"]] for m in majors for s in m["arc_states"] if s["arc_id"] == arc["id"]]
        assert arc["steps"] == reached


def test_optional_fields_from_other_stages_are_shown_not_refused(site, tmp_path):
    """Fields other stages may add (everyday events, a people registry, a trace's own language) pass through."""
    copy = tmp_path / "data"
    shutil.copytree(site, copy)
    directory = _persona_dir(copy)
    events = read_jsonl(directory / "events.jsonl")
    # events of an everyday stretch (issue 15: a major_events record of kind "everyday") are everyday already
    stretch = [e["everyday"] for e in site_data(load_persona(directory))["events"]]
    events[0]["everyday"] = True
    (directory / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    (directory / "people.jsonl").write_text(json.dumps({"id": "x1", "persona_id": directory.name, "name": "Ana",
                                                        "relation": "new colleague", "first_seen": "2022-01-05"}) + "\n")
    data = site_data(load_persona(directory))
    assert [e["everyday"] for e in data["events"]] == [True] + stretch[1:]
    assert data["people"] == [{"id": "x1", "name": "Ana", "relation": "new colleague"}]


def _node_ready() -> Path:
    """The browser test's node_modules (installed by `make browser`; installed here too when absent)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js/npm not installed: the headless-browser test of `synth browse` needs Node 20+")
    if not (BROWSER_DIR / "node_modules" / "puppeteer-core").is_dir():
        result = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=BROWSER_DIR, capture_output=True,
                                text=True, timeout=600)
        assert result.returncode == 0, f"npm ci in tests/browser failed (run `make browser`):\n{result.stderr[-2000:]}"
    return BROWSER_DIR / "check_site.mjs"


def _browse(page: Path, question_id: str) -> dict:
    script = _node_ready()
    result = subprocess.run(["node", str(script), str(page), question_id], cwd=BROWSER_DIR, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def _check_click(out: Path) -> dict:
    directory = _persona_dir(out)
    final = read_jsonl(directory / "final.jsonl")
    rejected = read_jsonl(directory / "rejected.jsonl")
    traces = read_jsonl(directory / "traces.jsonl")
    assert final or rejected, "the tiny run wrote no item to click"
    # the item with the most traces (a rejected one is shown, with its filter and reason, and clicks the same way)
    item = max([*final, *rejected], key=lambda i: len(_expected_traces(i)))
    assert _expected_traces(item), "no item with traces to highlight"
    report = _browse(out / "site" / f"{directory.name}.html", item["id"])

    assert report["console_errors"] == [] and report["page_errors"] == [] and report["failed_requests"] == []
    assert report["question_cards"] == [i["id"] for i in [*final, *rejected]]
    assert report["trace_cards"] == report["trace_dots"] == len(traces)
    # clicking the question selects it, highlights exactly its traces (cards and timeline dots), shows its evidence
    assert report["selected"] == [item["id"]]
    assert set(report["highlighted_cards"]) == set(report["highlighted_dots"]) == _expected_traces(item)
    assert report["detail_visible"] and report["hash"] == f"#q={item['id']}"
    assert len(report["evidence_shown"]) == len(item["evidence"])
    for shown, evidence in zip(report["evidence_shown"], item["evidence"], strict=True):
        assert evidence["statement"] in shown
    # clicking one of its traces lists every question that uses that trace
    trace_id = report["clicked_trace"]
    users = [i["id"] for i in [*final, *rejected] if trace_id in _expected_traces(i)]
    assert report["trace_used_by"] == users and item["id"] in users
    assert report["trace_highlighted_after_click"] == [trace_id]
    # the medium filter leaves exactly that medium's traces
    medium = report["medium_filter"]
    assert report["visible_traces_after_filter"] == [
        t["id"] for t in sorted(traces, key=lambda t: (t["time"], t["id"])) if t["medium"] == medium]
    return report


@pytest.mark.slow
def test_clicking_a_question_highlights_its_traces_in_a_real_browser(site):
    report = _check_click(site)
    assert report["timeline_heading"] == "Timeline"
    assert report["type_tags"] and all(title == shown for title, shown in report["type_tags"])


@pytest.mark.slow
def test_a_chinese_persona_page_in_a_real_browser(site_zh):
    directory = _persona_dir(site_zh)
    page = (site_zh / "site" / f"{directory.name}.html").read_text(encoding="utf-8")
    assert '<html lang="zh-CN">' in page and '<meta charset="utf-8">' in page
    persona = read_jsonl(directory / "persona.jsonl")[0]
    assert persona["language"] == "zh" and persona["name"] in page  # embedded as UTF-8, not \u escapes
    report = _check_click(site_zh)
    # the interface speaks Chinese: headings and the question types' names (the ids stay in the data)
    assert report["timeline_heading"] == "时间线"
    assert report["type_tags"] and all(not shown.isascii() and title.isascii() for title, shown in report["type_tags"])


def test_review_sheet_links_each_row_into_the_site(tiny_dataset, tmp_path):
    out = tmp_path / "data"
    shutil.copytree(tiny_dataset, out)
    result = run_synth("review", "--out", str(out), "--sample", "5")
    assert result.returncode == 0, result.stderr
    assert (out / "site" / "index.html").is_file()
    with (out / "review" / "sheet.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows
    for row in rows:
        page, _, fragment = row["link"].partition("#")
        assert fragment == f"q={row['id']}"
        assert page.startswith("file://") and Path(page.removeprefix("file://")).is_file()
        assert page.endswith(f"/site/{row['persona_id']}.html")


def test_without_node_the_browser_test_skips_and_says_why(monkeypatch):
    import test_browse

    monkeypatch.setattr(test_browse.shutil, "which", lambda name: None)
    with pytest.raises(pytest.skip.Exception, match="Node.js/npm not installed"):
        _node_ready()
