"""An event's traces written in one call (`[traces] write_together`, synth.stages.trace_write): one prompt shows
each trace's medium, evidence and voice reference; the answer's texts become the plans' traces in order; a trace
that leaks is re-written alone; one trace, or the setting off, keeps one call a trace; the dry run prices a joint
answer by its texts."""

from __future__ import annotations

import asyncio
import json

from handmade import PID, trace_inputs
from kit import Scripted, run_stage

from synth.config import conf
from synth.core.jsonl import read_records, write_atomic
from synth.core.tokens import estimate_tokens
from synth.llm.base import GenerationSettings, LLMRequest
from synth.pipeline.dryrun import price_requests
from synth.pipeline.dryrun_fake import DryRunFake
from synth.records import Evidence, Trace, mint_id
from synth.stages.traces import TraceText, texts_answer

HIDDEN = "Maya sobbed in the supply cupboard after Sister Hughes refused her transfer to paediatrics."
ERRAND = "Maya bought oat milk at the corner shop before the night shift."
FACTS = [ERRAND, "Maya booked a dentist appointment for the following Thursday.",
         "Maya told her brother about the new flat in Headingley."]
LEAKING = ("Not my best week. Sobbed in the supply cupboard after Sister Hughes refused my transfer to "
           "paediatrics. #nurselife #tired")
CLEAN = "Oat milk, a quiet corner shop and the long walk home before the night shift. #nightshift #smallthings"
# the quiet event's three traces (diary, email, diary): what the late event's traces read as their voice
QUIET = ["Quiet diary one: the ward was calm and I slept well after.", "Quiet email: Dear Sam, the rota is out.",
         "Quiet diary two: tea on the balcony, the rain easing off."]
# medium → words of its line in the prompt (prompts/_traces.j2)
MEDIUM_LINE = {"diary": "for themself only", "email": "subject line, greeting", "social_post": "2-4 hashtags"}


def config(**extra: str) -> str:
    lines = "".join(f"{k} = {v}\n" for k, v in extra.items())
    return ("[traces]\ntraces_per_event = 3\nprivacy_repairs = 1\nvoice_examples = 2\nvoice_wave_days = 7\n"
            f"privacy_judge = false\n{lines}")


def inputs(directory) -> None:
    trace_inputs(directory)
    evidence = [Evidence(id="ev0", persona_id=PID, event_id="e_quiet", kind="emotion", statement=HIDDEN,
                         arc_ids=["arc0"], private=True)]
    evidence += [Evidence(id=f"ev{j}", persona_id=PID, event_id="e_late", kind="fact", statement=s,
                          arc_ids=["arc0"]) for j, s in enumerate(FACTS, 1)]
    write_atomic(directory / "evidence.jsonl", evidence)


def late(request) -> bool:
    """A request of the late event (its moment names it; the quiet event's never does)."""
    return "e_late" in request.messages[-1]["content"]


def kind(request) -> str:
    props = request.json_schema["properties"]
    if set(props) == {"content"}:
        return "one"
    items = request.json_schema["$defs"].get("TraceText")
    return "joint" if items is not None and set(props) == {"traces"} else "plan"


def plans(media: list[str], evidence: list[int]) -> dict:
    return {"traces": [{"reasons": "r", "medium": m, "intent": f"intent {k}", "audience": "a",
                        "key_information": "k", "evidence": [e], "delay_hours": k}
                       for k, (m, e) in enumerate(zip(media, evidence, strict=True))]}


def script(post: str = CLEAN):
    """Replies by event and kind: the quiet event plans diary, email, diary; the late one diary, email, post."""
    def reply(request):
        is_late, what = late(request), kind(request)
        if what == "plan":
            return plans(["diary", "email", "social_post"], [1, 2, 3]) if is_late else plans(
                ["diary", "email", "diary"], [1, 1, 1])
        if what == "joint":
            texts = [f"Late diary: {ERRAND}", "Late email: Dear dentist, Thursday suits me fine.", post] if is_late \
                else QUIET
            return {"traces": [{"content": t} for t in texts]}
        return {"content": CLEAN if is_late else QUIET[0]}
    return reply


def traces_of(tmp_path) -> dict[str, Trace]:
    return {t.id: t for t in read_records(tmp_path / PID / "traces.jsonl", Trace)}


def sections(prompt: str) -> list[str]:
    """The joint prompt cut at each trace's heading: [before, trace 1, trace 2, ...]."""
    return prompt.split("### Trace ")


def test_three_traces_are_written_in_one_call_that_shows_each_its_medium_evidence_and_voice(tmp_path):
    inputs(tmp_path / PID)
    model = run_stage(tmp_path, "traces", config=config(), replies={"traces": script()})
    late_calls = [kind(r) for r in model.asked("traces") if late(r)]
    assert late_calls == ["plan", "joint"], "one plan, one write for all three traces"
    (joint,) = [r for r in model.asked("traces") if late(r) and kind(r) == "joint"]
    schema = joint.json_schema["properties"]["traces"]
    assert (schema["minItems"], schema["maxItems"]) == (3, 3)
    head, *each = sections(joint.messages[-1]["content"])
    assert len(each) == 3 and "separate records" in head
    for part, medium, fact in zip(each, ["diary", "email", "social_post"], FACTS, strict=True):
        assert MEDIUM_LINE[medium] in part and fact in part, (medium, part)
        assert sum(f in part for f in FACTS) == 1, "each trace shows only the evidence it carries"
    # the voice: the latest two diaries of the earlier stretch, its one email, no social post
    assert QUIET[0] in each[0] and QUIET[2] in each[0] and QUIET[1] not in each[0]
    assert QUIET[1] in each[1] and QUIET[0] not in each[1]
    assert "Earlier records" not in each[2]
    assert joint.messages[0]["content"] == next(r for r in model.asked("traces") if kind(r) == "plan"
                                                ).messages[0]["content"], "the cached system prefix is shared"
    written = traces_of(tmp_path)
    ids = [mint_id("e_late", "trace", k) for k in range(3)]
    assert [written[i].medium for i in ids] == ["diary", "email", "social_post"]
    assert [written[i].evidence_ids for i in ids] == [["ev1"], ["ev2"], ["ev3"]]
    assert written[ids[0]].content.startswith("Late diary") and written[ids[1]].content.startswith("Late email")
    assert written[ids[2]].content == CLEAN and written[ids[2]].privacy_rewrites == 0
    assert [written[mint_id("e_quiet", "trace", k)].content for k in range(3)] == QUIET


def test_a_leaking_public_trace_is_rewritten_alone_and_the_others_are_kept(tmp_path):
    inputs(tmp_path / PID)
    model = run_stage(tmp_path, "traces", config=config(), replies={"traces": script(post=LEAKING)})
    late_calls = [r for r in model.asked("traces") if late(r)]
    assert [kind(r) for r in late_calls] == ["plan", "joint", "one"]
    rewrite = late_calls[-1]
    text = rewrite.messages[-1]["content"]
    assert rewrite.sample == 1 and HIDDEN in text and "2-4 hashtags" in text, "the post alone, told what to hide"
    assert FACTS[2] in text and FACTS[0] not in text
    written = traces_of(tmp_path)
    post = written[mint_id("e_late", "trace", 2)]
    assert (post.content, post.privacy_rewrites) == (CLEAN, 1)
    kept = [written[mint_id("e_late", "trace", k)] for k in (0, 1)]
    assert [t.privacy_rewrites for t in kept] == [0, 0] and kept[0].content.startswith("Late diary")
    manifest = json.loads((tmp_path / PID / "manifests" / "traces.json").read_text())
    # quiet plan → quiet joint write → (the late traces read them) late joint write → the post's rewrite
    assert (manifest["provider_calls"], manifest["chain_calls"]) == (5, 4)


def test_write_together_off_or_one_trace_keeps_one_call_a_trace(tmp_path):
    inputs(tmp_path / "off" / PID)
    model = run_stage(tmp_path / "off", "traces", config=config(write_together="false"),
                      replies={"traces": script()})
    assert sorted(kind(r) for r in model.asked("traces") if late(r)) == ["one", "one", "one", "plan"]
    assert len(traces_of(tmp_path / "off")) == 6
    inputs(tmp_path / "one" / PID)

    def single(request):
        if kind(request) == "plan":
            return plans(["diary"], [1])
        return {"content": f"Only trace: {ERRAND}"}

    model = run_stage(tmp_path / "one", "traces", config=config().replace("traces_per_event = 3",
                                                                         "traces_per_event = 1"),
                      replies=Scripted({"traces": single}))
    assert [kind(r) for r in model.asked("traces") if late(r)] == ["plan", "one"]


def test_the_dry_run_prices_a_joint_answer_by_its_texts():
    fake = DryRunFake({"traces": 700}, 0, 0, 300, content_words=120)
    sent = LLMRequest(task="traces", messages=[{"role": "user", "content": "write three"}],
                      json_schema=texts_answer(3).model_json_schema(), settings=GenerationSettings(max_tokens=9000))
    answer = json.loads(asyncio.run(fake.complete(sent, "fake")).text)
    assert len(answer["traces"]) == 3 and all(len(t["content"].split()) >= 100 for t in answer["traces"])
    size = fake.text_tokens[id(sent)]
    assert size == estimate_tokens(json.dumps(answer, ensure_ascii=False)) and size > 3 * 120
    one = LLMRequest(task="traces", messages=[{"role": "user", "content": "write one"}],
                     json_schema=TraceText.model_json_schema())
    asyncio.run(fake.complete(one, "fake"))
    assert size > 2 * fake.text_tokens[id(one)], "three texts, priced as three"
    route = conf.resolve_route("openai", "gpt-4o-mini")
    priced = price_requests([sent], {"traces": "traces"}, {"traces": route}, {"traces": 700}, fake.text_tokens)
    assert priced["traces"].output_tokens == size, "the texts' length, not the task's table value (the plan's)"
