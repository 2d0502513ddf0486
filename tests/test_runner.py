"""The stage runner with a stand-in stage: staleness, atomic outputs, journaled resume, failures and the lock."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from synth.config import conf
from synth.config.personas import load_personas
from synth.core.errors import InputError
from synth.core.jsonl import Journal
from synth.engine.runner import RunOptions, StageFailed, run_stage, stage_status
from synth.engine.stage import Stage, StageRegistry
from synth.llm.cache import ResponseCache
from synth.llm.client import LLM
from synth.llm.fake import FakeProvider
from synth.pipeline.session import DatasetLock
from synth.records import Persona, mint_id

REPO = Path(__file__).resolve().parents[1]


class Line(BaseModel):
    text: str


async def body(ctx):
    persona = ctx.read("persona.jsonl")[0]

    def unit(i):
        async def work():
            answer = await ctx.ask("echo", "echo.j2", {"name": persona.name, "i": i}, Line)
            return {"lines.jsonl": [{"id": mint_id(persona.id, "line", i), "text": answer.text}]}

        return work

    await ctx.units([(f"u{i}", unit(i)) for i in range(int(ctx.section.get("count", 5)))])


PERSONA_STAGE = Stage(name="persona", reads=(), writes=("persona.jsonl",), templates=(), tasks=(), body=body)
STAGE = Stage(name="echo", reads=("persona.jsonl",), writes=("lines.jsonl",), templates=("echo.j2",),
              tasks=("echo",), body=body)


@pytest.fixture()
def world(tmp_path, monkeypatch):
    prompts = tmp_path / "prompts"
    shutil.copytree(REPO / "prompts", prompts)
    (prompts / "echo.j2").write_text("You write for {{ name }}.\n=== TASK ===\nLine {{ i }} in {{ language }}.")
    monkeypatch.setenv("SYNTH_PROMPTS_DIR", str(prompts))
    seed = load_personas([REPO / "personas" / "p01_maya.toml"])[0]
    out = tmp_path / "out"
    persona_dir = out / seed.id
    persona_dir.mkdir(parents=True)
    persona = Persona(id=seed.id, persona_id=seed.id, language=seed.language, big_five=seed.big_five.model_dump(),
                      start=seed.start, end=seed.end, scale=seed.scale, name="Maya", age=30, gender="f",
                      personality="p", family_history="f", education="e", occupation="o", concerns=[],
                      interests=[], backstory="b", relations=[])
    (persona_dir / "persona.jsonl").write_text(persona.model_dump_json() + "\n")
    route = conf.resolve_route("fake", None)
    config = conf.deep_merge(conf.preset_config("small"), {"echo": {"count": 5}, "temperature": 0.5, "max_tokens": 200})
    options = RunOptions(out=out, config=config, route=route, registry=StageRegistry(persona=PERSONA_STAGE, echo=STAGE))
    fake = FakeProvider(seed=0)
    llm = LLM(providers=lambda r: fake, cache=ResponseCache(out / "cache.sqlite"))
    return {"seed": seed, "out": out, "dir": persona_dir, "options": options, "config": config, "fake": fake,
            "llm": llm, "prompts": prompts, "route": route}


def run(w, config=None):
    return asyncio.run(run_stage(STAGE, w["seed"], w["options"], w["llm"], config or w["config"]))


def status(w, config=None):
    return stage_status(STAGE, w["seed"], w["dir"], config or w["config"], w["route"])


def test_outputs_manifest_and_freshness(world):
    assert status(world) == "missing"
    manifest = run(world)
    lines = [json.loads(x) for x in (world["dir"] / "lines.jsonl").read_text().splitlines()]
    assert [x["id"] for x in lines] == [mint_id(world["seed"].id, "line", i) for i in range(5)]
    assert manifest.records == {"lines.jsonl": 5} and manifest.provider_calls == 5 and manifest.provider == "fake"
    assert set(manifest.template_hashes) == {"echo.j2"}
    assert status(world) == "fresh"
    assert not list(world["dir"].glob(".*.tmp")) and not (world["dir"] / ".work" / "echo.journal.jsonl").exists()
    # an unchanged re-run is served from the cache
    again = run(world)
    assert again.provider_calls == 0 and again.cache_hits == 5
    assert [json.loads(x) for x in (world["dir"] / "lines.jsonl").read_text().splitlines()] == lines


def test_staleness_follows_inputs_templates_and_settings(world):
    run(world)
    assert status(world) == "fresh"
    assert status(world, {**world["config"], "echo": {"count": 6}}) == "stale"
    (world["prompts"] / "echo.j2").write_text("Changed {{ name }} {{ i }} {{ language }}")
    assert status(world) == "stale"
    manifest = run(world)
    assert manifest.provider_calls == 5  # the edited template renders new requests
    assert status(world) == "fresh"
    path = world["dir"] / "persona.jsonl"
    path.write_text(path.read_text().replace('"Maya"', '"Maia"'))
    assert status(world) == "stale"


def test_resume_skips_journaled_units(world):
    run(world)
    final = (world["dir"] / "lines.jsonl").read_text()
    # Simulate a killed run: a journal holding two finished units and a half-written line.
    (world["dir"] / "lines.jsonl").unlink()
    (world["dir"] / "manifests" / "echo.json").unlink()
    from synth.engine.runner import routes_for, signature_parts
    from synth.llm.cache import content_hash

    parts = signature_parts(STAGE, world["seed"], world["dir"], world["config"],
                            routes_for(STAGE, world["config"], world["route"]))
    journal_path = world["dir"] / ".work" / "echo.journal.jsonl"
    finished = [json.loads(x) for x in final.splitlines()][:2]
    journal_path.parent.mkdir(exist_ok=True)
    journal_path.write_text(
        json.dumps({"signature": content_hash(parts)}) + "\n"
        + "".join(json.dumps({"unit": f"u{i}", "records": {"lines.jsonl": [finished[i]]}}) + "\n" for i in range(2))
        + '{"unit": "u2", "reco'
    )
    warnings = []
    world["llm"].cache.close()
    world["llm"].cache = None
    before = len(world["fake"].seen)
    manifest = asyncio.run(run_stage(STAGE, world["seed"], world["options"], world["llm"], world["config"],
                                     warn=warnings.append))
    assert len(world["fake"].seen) - before == 3  # u2..u4 only
    assert manifest.records == {"lines.jsonl": 5}
    assert (world["dir"] / "lines.jsonl").read_text() == final
    assert any("half-written" in w for w in warnings)


def test_failed_units_are_recorded_and_retried_alone(world):
    world["llm"].max_repairs = 0
    world["fake"].script = ["not json"]  # the first unit to ask gets a bad answer, beyond the repair budget
    with pytest.raises(StageFailed, match="1 failed of 5"):
        run(world)
    failures = (world["dir"] / "failures" / "echo.jsonl").read_text().splitlines()
    assert len(failures) == 1 and "no valid answer" in failures[0]
    assert not (world["dir"] / "lines.jsonl").exists()
    assert status(world) == "failed"
    before = len(world["fake"].seen)
    manifest = run(world)
    assert len(world["fake"].seen) - before == 1
    assert manifest.records == {"lines.jsonl": 5}
    assert not (world["dir"] / "failures" / "echo.jsonl").exists()


def test_missing_input_names_the_stage_to_run(world):
    (world["dir"] / "persona.jsonl").unlink()
    with pytest.raises(InputError, match="run `synth persona` first"):
        run(world)


def test_broken_input_line_is_one_clear_error(world):
    path = world["dir"] / "persona.jsonl"
    path.write_text(path.read_text() + "{broken\n")
    with pytest.raises(InputError, match=r"persona.jsonl: line 2: not valid JSON"):
        run(world)


def test_journal_drops_a_half_written_line(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text('{"signature": "s"}\n{"unit": "a", "records": {"x": []}}\n{"unit": "b", "rec')
    warned = []
    journal = Journal(path, "s", warn=warned.append)
    assert set(journal.done) == {"a"} and journal.dropped_lines == 1 and warned
    journal.record("b", {"x": []})
    journal.close()
    assert Journal(path, "s").done.keys() == {"a", "b"}
    assert Journal(path, "other").done == {}  # another signature: a fresh journal


def test_lock_refuses_a_second_writer_and_takes_over_a_stale_lock(tmp_path):
    with DatasetLock(tmp_path), pytest.raises(InputError, match="another synth run"), DatasetLock(tmp_path):
        pass
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    import socket

    (tmp_path / ".lock").write_text(json.dumps({"pid": int(dead.stdout), "host": socket.gethostname()}))
    with DatasetLock(tmp_path):
        assert json.loads((tmp_path / ".lock").read_text())["pid"] == os.getpid()
    assert not (tmp_path / ".lock").exists()


def test_one_knob_of_another_section_in_config_keys_makes_the_stage_stale_only_when_that_knob_changes(world):
    """The qa planner is held to the filter's span (`filter.min_span_days`): changing it must re-plan, changing any
    other filter knob must not."""
    from dataclasses import replace

    from synth.engine.runner import routes_for, signature_parts

    stage = replace(STAGE, config_keys=("filter.min_span_days",))
    routes = routes_for(stage, world["config"], world["route"])

    def settings(config):
        return signature_parts(stage, world["seed"], world["dir"], config, routes)["settings"]

    base = {**world["config"], "filter": {"min_span_days": 14, "blind_samples": 2}}
    assert settings(base)["filter.min_span_days"] == 14
    assert settings({**base, "filter": {"min_span_days": 14, "blind_samples": 3}}) == settings(base)
    assert settings({**base, "filter": {"min_span_days": 7, "blind_samples": 2}}) != settings(base)
