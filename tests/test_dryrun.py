"""The dry run: no HTTP and no key, the same calls as a real fake run, and prices from the real model's row."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import socket
from pathlib import Path

import pytest
from rich.console import Console

from synth.config import conf
from synth.core.errors import SynthError
from synth.llm.base import GenerationSettings, LLMRequest
from synth.pipeline import session as pipeline
from synth.pipeline.dryrun import DEFAULT_OUTPUT_TOKENS, dry_run, price_requests
from synth.stages import STAGES

PERSONAS = Path(__file__).resolve().parents[1] / "personas"


def fake_run_calls(out: Path, monkeypatch, config: Path | None = None) -> dict[str, int]:
    """provider_calls per stage of a real run with the fake provider (what `synth run --provider fake` does), with
    traces of the length the dry run gives them (tiny: (30 + 120) // 2 words), so every request is the same."""
    monkeypatch.setenv("SYNTH_FAKE_CONTENT_WORDS", "75")
    session = pipeline.open_session(out, [PERSONAS], [], "tiny", "fake", None, None, None, None, None, config)
    try:
        asyncio.run(pipeline.run_stages(session, STAGES.order(), show_progress=False))
    except (SynthError, ExceptionGroup):
        pass  # compared stage by stage below; a stage that failed in both runs fails alike
    finally:
        session.close()
    calls: dict[str, int] = {}
    for path in out.glob("*/manifests/*.json"):
        manifest = json.loads(path.read_text())
        calls[manifest["stage"]] = calls.get(manifest["stage"], 0) + manifest["provider_calls"]
    return calls


def test_dry_run_calls_no_model_and_matches_a_fake_run(tmp_path, monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "SYNTH_BATCH"):
        monkeypatch.delenv(name, raising=False)
    connects: list = []

    def refuse(self, address):
        connects.append(address)
        raise OSError("the dry run must not open a connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    # tiny's prefixes are shorter than any vendor caches (cache_min_tokens): priced as if it cached them, so the
    # caching columns are exercised
    resolve = conf.resolve_route

    def no_floor(*args, **kwargs):
        route = resolve(*args, **kwargs)
        return dataclasses.replace(route, prices=tuple(p for p in route.prices if p[0] != "cache_min_tokens"))

    monkeypatch.setattr(conf, "resolve_route", no_floor)
    buffer = io.StringIO()
    # a few plans per type, so that some item reaches distractors and filter whatever the fake's random verdicts
    config = tmp_path / "more_plans.toml"
    config.write_text("[qa]\nplans_per_type = 4\n", encoding="utf-8")
    result = dry_run(preset="tiny", provider="anthropic", model="claude-sonnet-4-5", base_url=None,
                     personas=[PERSONAS], persona=[], config=config, batch=True,
                     console=Console(file=buffer, width=160), realistic=False)  # the plain fake's answers, as below
    assert connects == []
    assert result["provider"] == "anthropic" and result["model"] == "claude-sonnet-4-5"
    assert "dry run" in buffer.getvalue() and "total" in buffer.getvalue()
    monkeypatch.undo()

    assert result["error"] is None, result["error"]
    # translate makes no call when the personas are released in their own language only (tiny's default), nor
    # do chats and lifelog when the sources are written only (tiny's default), nor variants (tiny asks for no set)
    assert set(result["stages"]) == set(STAGES.order()) - {"translate", "chats", "lifelog", "variants"}
    expected = fake_run_calls(tmp_path / "real", monkeypatch, config)
    assert {s: e["calls"] for s, e in result["stages"].items()} == {s: n for s, n in expected.items() if n}

    total = result["total"]
    assert total["calls"] == sum(expected.values())
    assert 0 < total["usd_batch_cache"] < total["usd_cache"] < total["usd"]
    assert total["usd_batch"] == pytest.approx(total["usd"] / 2)
    assert 0 < total["cached_input_tokens"] < total["input_tokens"]
    route = conf.resolve_route("anthropic", "claude-sonnet-4-5")
    plain = route.cost(total["input_tokens"], total["output_tokens"])
    assert total["usd"] == pytest.approx(plain)


def request(task: str, system: str, user: str, max_tokens: int = 4096) -> LLMRequest:
    return LLMRequest(task=task, messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                      json_schema={}, settings=GenerationSettings(max_tokens=max_tokens))


def test_pricing_caches_a_repeated_prefix_per_task_and_uses_the_output_table():
    route = conf.resolve_route("anthropic", "claude-haiku-4-5")
    prefix = "profile " * 2100  # 4,200 tokens by the 4-characters estimate: past haiku-4-5's cache_min_tokens
    reqs = [request("traces_write", prefix, "write one"), request("traces_write", prefix, "write two"),
            request("traces_plan", prefix, "plan"), request("qa_write", "other", "q", max_tokens=100)]
    stage_of = {"traces_write": "traces", "traces_plan": "traces", "qa_write": "qa"}
    out = price_requests(reqs, stage_of, {t: route for t in stage_of}, {"traces_write": 1000, "qa_write": 500})
    traces, qa = out["traces"], out["qa"]
    assert traces.calls == 3 and qa.calls == 1
    assert traces.cached_input_tokens == 4200  # only the second traces_write reads the prefix
    assert traces.output_tokens == 1000 + 1000 + DEFAULT_OUTPUT_TOKENS
    assert qa.output_tokens == 100  # capped at the request's max_tokens
    write_cost = route.cost(traces.input_tokens, traces.output_tokens, 4200, 8400)
    assert traces.usd_cache == pytest.approx(write_cost)
    assert traces.usd_batch_cache == pytest.approx(write_cost / 2)
    short = [request("qa_write", "profile " * 2000, "q"), request("qa_write", "profile " * 2000, "q")]
    assert price_requests(short, stage_of, {t: route for t in stage_of}, {})["qa"].cached_input_tokens == 0, \
        "a prefix shorter than the model's cache_min_tokens (4,096) is never cached"


def test_the_dry_run_sizes_its_own_fake_and_leaves_the_environment_alone(monkeypatch):
    """No hidden global state: the dry run sets the trace size on its own fake provider, not in os.environ."""
    import os

    from synth.llm.fake import FakeProvider
    from synth.pipeline.dryrun import fake_requests

    monkeypatch.delenv("SYNTH_FAKE_CONTENT_WORDS", raising=False)
    made: list[FakeProvider] = []
    original = FakeProvider.__init__

    def spy(self, *args, **kwargs):
        original(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(FakeProvider, "__init__", spy)
    requests, _, _, error, _, _ = fake_requests("tiny", [PERSONAS], [], None, conf.resolve_route("fake", None))
    assert error is None and requests
    assert "SYNTH_FAKE_CONTENT_WORDS" not in os.environ
    # the session's plain fake and the dry run's own (synth.pipeline.dryrun_fake) that takes its place
    assert {p.content_words for p in made} == {(30 + 120) // 2}  # tiny's min_words and max_words


def test_a_trace_text_is_priced_at_its_length_and_a_plan_at_the_table():
    """The planner and the writer share the `traces` task; the writer's answer is the trace itself, so it is priced
    at the length the dry run's fake wrote (the configured trace length), the plan at the task's table value."""
    route = conf.resolve_route("openai", "gpt-4o-mini")
    plan, write = request("traces", "p", "plan"), request("traces", "p", "write")
    write.json_schema = {"properties": {"content": {"type": "string"}}}
    out = price_requests([plan, write], {"traces": "traces"}, {"traces": route}, {"traces": 700},
                         {id(write): 270})
    assert out["traces"].output_tokens == 700 + 270
    assert price_requests([write], {"traces": "traces"}, {"traces": route}, {"traces": 700})["traces"].output_tokens \
        == 700, "without a measured size the table holds"


def test_the_dry_run_fake_writes_fields_at_a_capable_models_lengths():
    """Field lengths come from a capable model's answers (FIELD_WORDS, LIST_ITEMS), not from a share of the task's
    output: a concern is a few words, an evidence statement touches one arc, a trace's text has the configured length
    and is recorded for pricing."""
    from pydantic import create_model

    from synth.pipeline.dryrun_fake import FIELD_WORDS, DryRunFake

    profile = create_model("P", personality=(str, ...), concerns=(list[str], ...), arcs=(list[str], ...))
    text = create_model("T", content=(str, ...))
    fake = DryRunFake({"persona": 2000}, 0, 0, 300, content_words=120)

    def ask(task: str, model) -> tuple[LLMRequest, dict]:
        sent = LLMRequest(task=task, messages=[{"role": "user", "content": "go"}],
                          json_schema=model.model_json_schema())
        return sent, json.loads(asyncio.run(fake.complete(sent, "fake")).text)

    _, answer = ask("persona", profile)
    assert answer["concerns"] and all(len(c.split()) == FIELD_WORDS["concerns"] for c in answer["concerns"])
    assert len(answer["personality"].split()) == FIELD_WORDS["personality"]
    assert len(answer["arcs"]) <= 1
    sent, written = ask("traces", text)
    assert len(written["content"].split()) >= 100
    assert fake.text_tokens[id(sent)] >= 100, "the trace's size is kept for the pricing"


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_dry_runs_trace_plans_keep_private_evidence_out_of_public_media(language):
    """The plain fake picks media at random, so most of its plans broke the privacy rule and every re-plan was
    priced; a capable model's plans did not break it. The dry run's plans keep to it, in both languages."""
    from types import SimpleNamespace

    from template_cases_en import variables

    from synth.config.prompts import render
    from synth.llm.fake import FakeProvider
    from synth.pipeline.dryrun_fake import DryRunFake
    from synth.stages import traces

    values = variables("traces_plan.j2", language)
    values.update(evidence=[{"kind": "fact", "statement": f"s{n}", "private": n == 2} for n in (1, 2, 3)],
                  problems=[])
    messages = render("traces_plan.j2", language=language, **values)
    media = ("diary", "social_post")
    schema = traces.plan_answer(media, 3, 2, 12).model_json_schema()
    broken = 0
    for seed in range(30):
        fake = DryRunFake({"traces": 700}, 0, 0, 300, seed=seed, public_media=frozenset({"social_post"}))
        plans = json.loads(asyncio.run(fake.complete(LLMRequest(task="traces", messages=messages,
                                                                 json_schema=schema), "fake")).text)["traces"]
        assert traces.plan_privacy_problems([SimpleNamespace(**p) for p in plans], frozenset({2}),
                                            frozenset({"social_post"})) == []
        plain = json.loads(asyncio.run(FakeProvider(seed=seed).complete(
            LLMRequest(task="traces", messages=messages, json_schema=schema), "fake")).text)["traces"]
        broken += bool(traces.plan_privacy_problems([SimpleNamespace(**p) for p in plain], frozenset({2}),
                                                    frozenset({"social_post"})))
    assert broken > 5, "the plain fake breaks the rule often: the test would not see a dry run that stopped fixing it"


def test_the_dry_runs_open_question_judge_says_yes_at_the_measured_rate():
    """The plain fake's judge matched three questions in four, so the dry run priced a rewrite for most questions; a
    capable model's matched 5 of 18 in `synth qa`."""
    from pydantic import create_model

    from synth.pipeline.dryrun_fake import TRUE_RATES, DryRunFake

    verdict = create_model("OpenMatch", matches=(bool, ...), reason=(str, ...))
    fake = DryRunFake({}, 0, 0, 100)

    def share(task: str) -> float:
        said = [json.loads(asyncio.run(fake.complete(LLMRequest(
            task=task, messages=[{"role": "user", "content": f"question {n}"}],
            json_schema=verdict.model_json_schema()), "fake")).text)["matches"] for n in range(400)]
        return sum(said) / len(said)

    assert abs(share("qa_open_judge") - TRUE_RATES[("qa_open_judge", "matches")]) < 0.08
    assert abs(share("filter_open_judge") - TRUE_RATES[("filter_open_judge", "matches")]) < 0.06
    assert share("distractors_verify") > 0.6  # other tasks keep the plain fake's draw



def test_the_dry_runs_option_judges_and_renderer_say_yes_at_the_measured_rates():
    """The plain fake's verify judge failed nearly every round (a "no" on any of three questions sends it back) and
    its renderer found a set unable to answer half the time: the dry run priced re-renders a capable model does not
    ask for."""
    from pydantic import create_model

    from synth.pipeline.dryrun_fake import TRUE_RATES, DryRunFake

    fake = DryRunFake({}, 0, 0, 100)
    verify = create_model("Verify", key_supported=(bool, ...), others_ruled_out=(bool, ...),
                          question_favours_option=(bool, ...), reason=(str, ...))
    rendered = create_model("Rendered", answer=(str, ...), cannot_answer=(bool, ...))

    def answers(task: str, schema) -> list[dict]:
        return [json.loads(asyncio.run(fake.complete(LLMRequest(
            task=task, messages=[{"role": "user", "content": f"item {n}"}],
            json_schema=schema.model_json_schema()), "fake")).text) for n in range(400)]

    said = answers("distractors_verify", verify)
    for field in ("key_supported", "others_ruled_out", "question_favours_option"):
        rate = sum(a[field] for a in said) / len(said)
        assert abs(rate - TRUE_RATES[("distractors_verify", field)]) < 0.06, field
    unable = sum(a["cannot_answer"] for a in answers("distractors_render", rendered)) / 400
    assert abs(unable - TRUE_RATES[("distractors_render", "cannot_answer")]) < 0.04
