"""The dry run's fake answers grow the registry at the configured rate of newcomers per month (not the plain
fake's maximum per phase and event), with names of a couple of words."""

from __future__ import annotations

from pathlib import Path

from synth.config import conf
from synth.core.jsonl import read_records
from synth.pipeline.dryrun import fake_requests
from synth.records import Person

PERSONAS = Path(__file__).resolve().parents[1] / "personas"
PID = "p01_maya"
DAYS = 42  # the tiny preset's timeline of p01_maya


def registry(tmp: Path, people: float, places: float, realistic: bool = True) -> list[Person]:
    tmp.mkdir(parents=True, exist_ok=True)
    config = tmp / "rate.toml"
    config.write_text(f"[dry_run]\npeople_per_month = {people}\nplaces_per_month = {places}\n"
                      "[events]\nnew_people = 3\n")
    out = tmp / "run"
    _, _, _, error, _, _ = fake_requests("tiny", [PERSONAS], [PID], config, conf.resolve_route("fake", None),
                                         realistic=realistic, keep=out)
    assert error is None
    return [p for p in read_records(out / PID / "people.jsonl", Person) if p.origin == "introduced"]


def test_the_dry_run_registry_grows_at_the_configured_rate(tmp_path):
    added = registry(tmp_path, 10.0, 5.0)
    people = [p for p in added if p.kind == "person"]
    places = [p for p in added if p.kind == "place"]
    months = DAYS / 30.44
    # events' windows cover the timeline once (gap fillers add a few days): the count follows the rate
    assert 0.7 * 10 * months <= len(people) <= 1.5 * 10 * months + 2, len(people)
    assert 0.7 * 5 * months - 1 <= len(places) <= 1.5 * 5 * months + 2, len(places)
    assert all(len(p.name.split()) <= 3 for p in added), "names of a couple of words"
    assert not [p for p in added if p.first_event_id is None], "newcomers come with the events, not the phases"


def test_no_rate_no_newcomers_and_the_plain_fake_fills_every_slot(tmp_path):
    assert registry(tmp_path / "a", 0.0, 0.0) == []
    plain = registry(tmp_path / "b", 0.0, 0.0, realistic=False)
    assert len(plain) > 2 * len(registry(tmp_path / "c", 1.2, 0.4)), \
        "the plain fake adds the most it may (what inflated the estimate)"


def test_stats_reports_calls_and_usd_per_final_item(tmp_path):
    import json

    from synth.release.stats import item_cost

    for stage, calls, usd in (("traces", 30, 0.3), ("qa", 10, 0.1)):
        (tmp_path / PID / "manifests").mkdir(parents=True, exist_ok=True)
        (tmp_path / PID / "manifests" / f"{stage}.json").write_text(
            json.dumps({"stage": stage, "provider_calls": calls, "cost_usd": usd}))
    cost = item_cost(tmp_path, 4)
    assert cost["calls"] == 40 and cost["calls_per_item"] == 10
    assert abs(cost["usd_per_item"] - 0.1) < 1e-9
    assert item_cost(tmp_path, 0)["usd_per_item"] is None, "no final item: no figure, not a division by zero"
