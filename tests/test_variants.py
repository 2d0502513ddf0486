"""Relation-controlled memory variants (synth variants, SubtleMemory): the model-free checks, session dating,
scripted variant sets of every relation (kept, repaired, rejected), order independence of the key, what the traces
and qa stages make of a kept set, and what `synth validate` and `synth stats` say about them."""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path

import pytest
from kit import Scripted, run_stage
from rich.console import Console

from synth.config.conf import preset_config
from synth.config.prompts import render
from synth.config.settings import parse
from synth.core.jsonl import read_records, write_atomic
from synth.eval import waterfall
from synth.eval.run import run_eval
from synth.life import relations
from synth.llm.fake import respond
from synth.pipeline.session import open_session
from synth.quality import rules
from synth.quality.validate import validate_dataset
from synth.records import (
    CANNOT_DETERMINE,
    FILES,
    AnchorState,
    ArcState,
    BigFive,
    Event,
    Evidence,
    LifeArc,
    MajorEvent,
    Persona,
    Phase,
    Relation,
    SessionCheck,
    Snapshot,
    Variant,
    VariantSet,
)
from synth.release import stats
from synth.stages import variants as stage

ROOT = Path(__file__).resolve().parents[1]
PERSONAS = ROOT / "personas"
PID = "p01_maya"
ALL = ("complementary_all", "complementary_any", "nuanced_temporal", "nuanced_contextual", "contradictory")


# no written traces (the traces stage then only folds what it is given: here the kept variant sessions)
SOURCES = 'sources = ["lifelog"]\n'


def one_of(relation: str, n: int = 1, gap: int = 5) -> str:
    counts = ", ".join(f"{r} = {n if r == relation else 0}" for r in ALL)
    return SOURCES + f"[variants]\nseeds_per_relation = {{ {counts} }}\nmin_gap_days = {gap}\nmin_words = 5\n"


def persona() -> Persona:
    return Persona(
        id=PID, persona_id=PID, language="en",
        big_five=BigFive(openness=.9, conscientiousness=.1, extraversion=.5, agreeableness=1.0, neuroticism=.5),
        start=dt.date(2022, 1, 1), end=dt.date(2022, 3, 31), scale="100k", name="Maya", age=34, gender="f",
        personality="p", family_history="f", education="e", occupation="o", concerns=["c"], interests=["i"],
        backstory="b", relations=[Relation(id="r1", name="Sam", relation="partner", description="d")],
    )


def setup(out: Path, config: str, seeds: int = 1) -> Path:
    directory = out / PID
    directory.mkdir(parents=True)
    write_atomic(directory / "persona.jsonl", [persona()])
    state = AnchorState(label="s", description="d", trigger="t", cues=["c"])
    write_atomic(directory / "arcs.jsonl", [LifeArc(id="a1", persona_id=PID, dimension="opinion", title="running",
                                                     description="d", anchor_states=[state, state])])
    events = [Event(id=f"e{k}", persona_id=PID, phase_id="ph", time=dt.datetime(2022, 1, 3 + k, 9), title="Run",
                    description="a run", location="park", participant_ids=[]) for k in range(seeds)]
    write_atomic(directory / "events.jsonl", events)
    states = [ArcState(arc_id="a1", anchor_index=0)]
    snap = Snapshot(energy=5, stress=5, dominant_emotion="calm", focus="running", arc_status={"a1": "s"})
    p = persona()
    write_atomic(directory / "major_events.jsonl", [MajorEvent(id="m", persona_id=PID, index=0, title="Spring",
                                                               description="d", start=p.start, end=p.end,
                                                               arc_states=states)])
    write_atomic(directory / "phases.jsonl", [Phase(id="ph", persona_id=PID, major_event_id="m", index=0, title="t",
                                                    description="d", start=p.start, end=p.end, snapshot_before=snap,
                                                    snapshot_after=snap, arc_states=states)])
    write_atomic(directory / "people.jsonl", [])
    write_atomic(directory / "lifelog.jsonl", [])
    write_atomic(directory / "evidence.jsonl", [
        Evidence(id=f"v{k}", persona_id=PID, event_id=f"e{k}", kind="fact", statement=f"Maya runs three times a week {k}",
                 arc_ids=["a1"]) for k in range(seeds)])
    (out / "config.toml").write_text(config)
    return directory


class Script(Scripted):
    """The kit's model keyed by task (sessions run concurrently, so a FIFO queue would race): each task's replies
    are consumed in order; a session's reply is chosen by the variant its prompt carries, a check's verdict by the
    session text it reads."""

    def __init__(self, replies: dict[str, list[dict]], sessions: dict[str, list[str]] | None = None,
                 verdicts: dict[str, dict] | None = None) -> None:
        self.sessions = {k: list(v) for k, v in (sessions or {}).items()}
        self.verdicts = verdicts or {}  # session text → the judge's verdict on it (default: recoverable, implicit)
        super().__init__({**replies, "variants_session": self.session, "variants_check": self.check})

    def session(self, request) -> dict:
        prompt = " ".join(m["content"] for m in request.messages)
        variant = next(k for k in self.sessions if f"The information to carry: {k}" in prompt)
        return {"content": self.sessions[variant].pop(0)}

    def check(self, request) -> dict:
        prompt = " ".join(m["content"] for m in request.messages)
        return next((v for k, v in self.verdicts.items() if k in prompt), OK)


def run(out: Path, names: list[str], script: Script | None = None) -> Scripted:
    return run_stage(out, names, config=out / "config.toml", replies=script)


def load(directory: Path, name: str) -> list:
    return read_records(directory / name, FILES[name])


WINTER = {"text": "Maya runs on the treadmill at home in winter", "condition": "winter", "signal": "treadmill in winter"}
SUMMER = {"text": "Maya runs by the river at dawn in summer", "condition": "summer", "signal": "river at dawn"}
RAIN = {"text": "Maya swims indoors when it rains", "condition": "rainy days", "signal": "swims when it rains"}
SETS = {
    "complementary_all": [
        {"text": "Maya needs a route with no hills", "condition": "", "signal": "flat route"},
        {"text": "Maya wants at most five kilometres", "condition": "", "signal": "five kilometres"},
        {"text": "Maya wants water fountains on the way", "condition": "", "signal": "water fountains"}],
    "complementary_any": [
        {"text": "Maya avoids running after dark", "condition": "", "signal": "after dark"},
        {"text": "Maya finishes her runs before sunset", "condition": "", "signal": "before sunset"},
        {"text": "Maya never runs at night", "condition": "", "signal": "runs at night"}],
    "nuanced_temporal": [WINTER, SUMMER, RAIN],
    "nuanced_contextual": [
        {"text": "Maya runs alone when she trains", "condition": "training", "signal": "alone when training"},
        {"text": "Maya runs with Sam on holidays", "condition": "holidays", "signal": "with Sam on holidays"},
        {"text": "Maya runs with the club at races", "condition": "races", "signal": "club at races"}],
    "contradictory": [
        {"text": "Maya wants to run the spring marathon", "condition": "", "signal": "spring marathon"},
        {"text": "Maya has decided against any marathon this spring", "condition": "", "signal": "against any marathon"}],
}
SESSION = {  # one implicit session per variant: shares a word with the signal, never the signal itself
    "Maya needs a route with no hills": "Knees again after the hill on Tuesday. Looking for something flat for Sunday.",
    "Maya wants at most five kilometres": "Five is plenty for me now, the long loop left me wrecked for two days.",
    "Maya wants water fountains on the way": "Forgot my bottle again; the park has fountains, so that's where I go.",
    "Maya avoids running after dark": "Cut the run short, the light was going and that path gets too dark later on.",
    "Maya finishes her runs before sunset": "Out by four so I'm home while the sky is still orange, sunset is my cutoff.",
    "Maya never runs at night": "Sam asked if I'd join the night loop. Told him I'll stick to my mornings.",
    WINTER["text"]: "Too icy out. Another five k on the treadmill in the hall with a podcast.",
    SUMMER["text"]: "Up at five, the river path was empty and the light on the water was unreal.",
    RAIN["text"]: "It rains all day, so I went to the pool instead of the usual loop.",
    "Maya runs alone when she trains": "Intervals today, headphones in, nobody to chat with: exactly how I like training.",
    "Maya runs with Sam on holidays": "Holiday morning jog with Sam along the beach, slow and chatty.",
    "Maya runs with the club at races": "Race day! Wore the club vest and stuck with the green shirts the whole way.",
    "Maya wants to run the spring marathon": "Printed the spring training plan and stuck it on the fridge, week one done.",
    "Maya has decided against any marathon this spring": "Told the coach I'm skipping the long races until autumn; "
                                                          "my marathon days can wait.",
}
ITEMS = {
    "complementary_all": "Plan a Sunday running route for me.",
    "complementary_any": "When should I schedule my runs next week?",
    "nuanced_temporal": "Put together my January running plan.",
    "nuanced_contextual": "Set up my training block for next month.",
    "contradictory": "Should I book the spring marathon entry for me?",
}
OK = {"recoverable": True, "implicit": True, "reason": "shown through details"}
BLIND = {"answer": "Any route will do.", "needs_memory": True}
WRONG = {"label": "WRONG", "reason": "generic"}


def item(relation: str) -> dict:
    return {"query": ITEMS[relation],
            "correct_answers": [f"{relation} right answer {k}" for k in "abc"],
            "wrong_answers": [f"{relation} wrong answer {k}" for k in "abc"]}


def script_for(relation: str, verdicts: dict[str, dict] | None = None, visible: dict = WRONG) -> Script:
    return Script({"variants_set": [{"target": "plan the runs", "variants": SETS[relation]}],
                   "variants_item": [item(relation)], "variants_visible": [BLIND], "variants_judge": [visible]},
                  {v["text"]: [SESSION[v["text"]]] for v in SETS[relation]}, verdicts)


# ------------------------------------------------------------------------------------------ model-free parts

def test_session_rules_catch_a_stated_variant_a_verbatim_signal_and_a_hidden_one():
    text, signal = WINTER["text"], WINTER["signal"]
    assert stage.session_problems(text, signal, SESSION[text]) == []
    assert stage.session_problems(text, signal, f"Note to self: {text.lower()}.")[0].startswith("too explicit")
    explicit = stage.session_problems(text, signal, "I only do the Treadmill  in winter, obviously.")
    assert explicit == [f"too explicit: the session names the decisive signal verbatim ('{signal}')"]
    assert stage.session_problems(text, signal, "Lovely dinner with Sam.") == [
        "too hidden: no word of the decisive signal occurs in the session"]


def test_query_rules_catch_one_session_keywords_recency_and_bad_references():
    good = (["a1", "a2", "a3"], ["w1", "w2", "w3"])
    recency = ["latest", "still", "最近"]
    sessions = ["Up at five, the river path was empty.", "Pool instead of the usual loop."]
    assert stage.query_problems("Plan my January running week.", sessions, *good, recency, 3) == []
    leak = stage.query_problems("river path empty", sessions, *good, recency, 3)
    assert leak == ["too explicit: every keyword of the query is in session 1"]
    assert stage.query_problems("What is my latest plan?", sessions, *good, recency, 3) == [
        "order decides: the query names recency (latest)"]
    assert stage.query_problems("Plan my stillness retreat.", sessions, *good, recency, 3) == [], "whole words only"
    assert stage.query_problems("我最近的跑步计划", sessions, *good, recency, 3)[0].startswith("order decides")
    assert stage.query_problems("Plan it.", sessions, ["a", "a", "b"], good[1], recency, 3) == [
        "references: not three distinct accepted and three distinct wrong answers"]
    assert "references: an answer is both accepted and wrong" in stage.query_problems(
        "Plan it.", sessions, ["a", "b", "c"], ["c", "d", "e"], recency, 3)


def test_the_visible_only_rule_catches_an_answer_in_the_query_or_in_the_no_context_answer():
    correct = ["Treadmill runs at home in January.", "Indoor treadmill sessions.", "Run at home on the treadmill."]
    assert stage.visible_problems("Put together my January running plan.", "Run outside when you can.", correct,
                                  0.6) == []
    assert stage.visible_problems("Indoor treadmill sessions or not?", "No idea.", correct, 0.6) == [
        "visible-only (rule): the query holds every content word of accepted answer 2"]
    assert stage.visible_problems("Plan January.", "Treadmill runs at home, it is January.", correct, 0.6) == [
        "visible-only (rule): the no-context answer shares 100% of accepted answer 1's content words"]
    assert stage.visible_problems("Plan January.", "Treadmill runs outdoors.", correct, 0.6) == [], "50% < 60%"


def test_sessions_keep_the_gap_stay_in_range_and_their_time_order_is_drawn():
    first, last = dt.date(2022, 1, 2), dt.date(2022, 3, 1)
    firsts = set()
    for k in range(40):
        times = stage.session_times(f"set{k}", first, last, 3, 10)
        days = sorted(t.date() for t in times)
        assert days[0] >= first and days[-1] <= last
        assert all((b - a).days >= 10 for a, b in zip(days, days[1:], strict=False))
        assert all(stage.HOURS[0] <= t.hour <= stage.HOURS[1] for t in times)
        firsts.add(min(range(3), key=lambda i: times[i]))
    assert firsts == {0, 1, 2}, "which variant comes first in time is drawn, never the set's own order"
    assert stage.session_times("x", first, first + dt.timedelta(days=15), 3, 10) is None, "no room"
    asked = stage.ask_time("x", [dt.datetime(2022, 3, 30, 20)], 14, dt.date(2022, 3, 31))
    assert dt.datetime(2022, 3, 30, 21) <= asked <= dt.datetime(2022, 3, 31, 23, 59)


# ------------------------------------------------------------------------------------------ scripted sets

@pytest.mark.parametrize("relation", ALL)
def test_each_relation_scripted_set_is_kept_and_becomes_traces_and_a_relation_item(tmp_path, relation):
    out = tmp_path / "data"
    directory = setup(out, one_of(relation))
    script = script_for(relation)
    run(out, ["variants"], script)
    [record] = load(directory, "variants.jsonl")
    assert record.kept and record.reason == "", record.reason
    assert record.relation == f"relation_{relation}" and record.seed_evidence_id == "v0"
    assert [v.text for v in record.variants] == [v["text"] for v in SETS[relation]]
    assert [v.content for v in record.variants] == [SESSION[v["text"]] for v in SETS[relation]]
    days = sorted(v.time.date() for v in record.variants)
    assert all((b - a).days >= 5 for a, b in zip(days, days[1:], strict=False)) and days[0] > dt.date(2022, 1, 3)
    assert record.question_time > max(v.time for v in record.variants)
    # the item prompt shows the variants and their conditions, never a session's date
    [asked] = [r for r in script.seen if r.task == "variants_item"]
    prompt = " ".join(m["content"] for m in asked.messages)
    assert all(v["text"] in prompt for v in SETS[relation])
    assert not any(v.time.isoformat(timespec="minutes") in prompt for v in record.variants)
    [judged] = [r for r in script.seen if r.task == "variants_judge"]
    judge_prompt = " ".join(m["content"] for m in judged.messages)
    assert "Any route will do." in judge_prompt and f"{relation} wrong answer b" in judge_prompt
    run(out, ["traces", "qa"])
    sessions = [t for t in load(directory, "traces.jsonl") if t.variant_set_id]
    assert [t.id for t in sessions] == [v.trace_id for v in record.variants]
    assert {t.medium for t in sessions} <= {"diary", "social_post", "message_thread", "email", "note", "todo_list",
                                            "calendar_entry", "search_history", "voice_memo_transcript",
                                            "photo_caption"}
    items = [q for q in load(directory, "qa.jsonl") if q.variant_set_id]
    assert len(items) == 1 and items[0].question_type == f"relation_{relation}"
    assert items[0].correct_answers == record.correct_answers and items[0].wrong_answers == record.wrong_answers
    assert items[0].digital_trace_ids == [v.trace_id for v in record.variants]


def test_a_too_explicit_session_is_rewritten_and_a_still_failing_one_rejects_the_set(tmp_path):
    out = tmp_path / "data"
    directory = setup(out, one_of("contradictory"))
    stated = "Note: I want to run it, the spring race, decided."
    script = script_for("contradictory", {stated: {**OK, "implicit": False, "reason": "says it outright"}})
    first = SETS["contradictory"][0]["text"]
    script.sessions[first] = [stated, SESSION[first]]
    run(out, ["variants"], script)
    [record] = load(directory, "variants.jsonl")
    assert record.kept, record.reason
    repaired = record.sessions[0]
    assert repaired.repairs == 1 and repaired.first_failures == ["too explicit (judge): says it outright"]
    rewrite = [r for r in script.seen if r.task == "variants_session" and stated in " ".join(
        m["content"] for m in r.messages)]
    assert rewrite and "too explicit (judge): says it outright" in " ".join(m["content"] for m in rewrite[0].messages)

    out2 = tmp_path / "data2"
    directory2 = setup(out2, one_of("contradictory") + "max_repairs = 0\n")
    hidden = SESSION[first]
    run(out2, ["variants"], script_for("contradictory", {hidden: {**OK, "recoverable": False, "reason": "no cue"}}))
    [rejected] = load(directory2, "variants.jsonl")
    assert not rejected.kept and rejected.reason.startswith("session 1: too hidden (judge)")


def test_a_query_answered_without_memory_is_rejected_and_never_joins(tmp_path):
    out = tmp_path / "data"
    directory = setup(out, one_of("nuanced_temporal"))
    run(out, ["variants"], script_for("nuanced_temporal", visible={"label": "CORRECT", "reason": "obvious"}))
    [record] = load(directory, "variants.jsonl")
    assert not record.kept and record.reason.startswith("visible-only")
    run(out, ["traces", "qa"])
    assert not [t for t in load(directory, "traces.jsonl") if t.variant_set_id]
    assert not [q for q in load(directory, "qa.jsonl") if q.variant_set_id]

    out2 = tmp_path / "data2"  # the rule alone: the judge says WRONG, the no-context answer is an accepted one
    directory2 = setup(out2, one_of("nuanced_temporal"))
    guessed = script_for("nuanced_temporal")
    guessed.replies["variants_visible"] = [{"answer": "nuanced_temporal right answer b", "needs_memory": False}]
    run(out2, ["variants"], guessed)
    [record] = load(directory2, "variants.jsonl")
    assert record.visible_label == "WRONG" and not record.kept
    assert record.reason == "visible-only (rule): the no-context answer shares 100% of accepted answer 1's content words"


# ------------------------------------------------------------------------------------------ order independence

def test_shuffling_the_session_order_never_changes_the_key(tmp_path, monkeypatch):
    """Two runs of the unscripted fake, the second with every set's session times in the opposite order: the
    sessions move in time, yet every query, accepted and wrong answer (and so every MCQ key) stays the same —
    the key never rests on which session came first. The fake answers from the prompt's text, so a date or a
    time order leaking into the item prompt would change the key and fail this test."""
    config = SOURCES + "\n".join(["[variants]", "seeds_per_relation = { " + ", ".join(f"{r} = 1" for r in ALL) + " }",
                        "min_gap_days = 5", "min_words = 5"]) + "\n"
    first = setup(tmp_path / "a", config, seeds=5)
    run(tmp_path / "a", ["variants"])
    original = stage.session_times
    monkeypatch.setattr(stage, "session_times", lambda *a: list(reversed(original(*a))))
    second = setup(tmp_path / "b", config, seeds=5)
    run(tmp_path / "b", ["variants"])
    a, b = load(first, "variants.jsonl"), load(second, "variants.jsonl")
    assert [r.relation for r in a] == [r.relation for r in b] and len(a) == 5
    for x, y in zip(a, b, strict=True):
        assert [v.time for v in x.variants] != [v.time for v in y.variants], "the session order did change"
        assert (x.query, x.correct_answers, x.wrong_answers) == (y.query, y.correct_answers, y.wrong_answers)
        assert relations.relation_item(x.model_copy(update={"kept": True})).answer == \
            relations.relation_item(y.model_copy(update={"kept": True})).answer


def test_the_item_prompt_is_the_same_whatever_the_session_order():
    p = persona().model_dump(mode="json")
    shown = stage.item_variables(p, "nuanced_temporal", "plan", [WINTER, SUMMER, RAIN], dt.datetime(2022, 3, 1, 9))
    dated = [{**v, "time": f"2022-01-0{k}"} for k, v in enumerate([WINTER, SUMMER, RAIN], 1)]
    again = stage.item_variables(p, "nuanced_temporal", "plan", dated, dt.datetime(2022, 3, 1, 9))
    assert render("variants_item.j2", language="en", **shown) == render("variants_item.j2", language="en", **again)


# ------------------------------------------------------------------------------------------ validate and stats

def kept_set(directory: Path) -> VariantSet:
    return load(directory, "variants.jsonl")[0]


def test_validate_checks_the_new_links(tmp_path):
    out = tmp_path / "data"
    directory = setup(out, one_of("complementary_all"))
    run(out, ["variants"], script_for("complementary_all"))
    run(out, ["traces", "qa"])
    assert [p for p in validate_dataset(out) if "variant" in p or "relation" in p or "session" in p] == []
    record = kept_set(directory)
    close = record.model_copy(update={"variants": [
        v.model_copy(update={"time": record.variants[0].time + dt.timedelta(days=k)})
        for k, v in enumerate(record.variants)]})
    write_atomic(directory / "variants.jsonl", [close])
    assert any("closer than 5 days" in p for p in validate_dataset(out))
    write_atomic(directory / "variants.jsonl", [record])
    traces = load(directory, "traces.jsonl")
    stray = traces[0].model_copy(update={"id": "stray", "variant_set_id": "nope"})
    write_atomic(directory / "traces.jsonl", [*traces, stray])
    assert any("stray: variant_set_id 'nope'" in p for p in validate_dataset(out))
    write_atomic(directory / "traces.jsonl", traces)
    [qa] = [q for q in load(directory, "qa.jsonl") if q.variant_set_id]
    write_atomic(directory / "qa.jsonl", [qa.model_copy(update={"question_type": "relation_contradictory",
                                                                "digital_trace_ids": qa.digital_trace_ids[:1]})])
    found = validate_dataset(out)
    assert any("but its set's relation is relation_complementary_all" in p for p in found)
    assert any("digital_trace_ids are not its set's sessions" in p for p in found)


def test_validate_rejects_an_mcq_whose_key_is_not_an_accepted_answer(tmp_path):
    out = tmp_path / "data"
    directory = setup(out, one_of("complementary_any"))
    run(out, ["variants"], script_for("complementary_any"))
    run(out, ["traces", "qa", "distractors"])
    [mcq] = [m for m in load(directory, "mcq.jsonl") if m.variant_set_id]
    key = next(c.text for c in mcq.choices if c.id == mcq.correct_choice_id)
    assert key in mcq.correct_answers
    assert {c.text for c in mcq.choices[:4]} - {key} <= set(mcq.wrong_answers)
    wrong_key = next(c.id for c in mcq.choices[:4] if c.id != mcq.correct_choice_id)
    write_atomic(directory / "mcq.jsonl", [mcq.model_copy(update={"correct_choice_id": wrong_key})])
    assert any("the key is not one of its accepted answers" in p for p in validate_dataset(out))


def test_stats_report_each_check_rate():
    def one(kept: bool, first: list[str], query: list[str], label: str) -> VariantSet:
        session = SessionCheck(index=0, first_failures=first)
        variant = Variant(text="t", signal="s", trace_id="t1", time=dt.datetime(2022, 1, 2), medium="diary",
                          content="c")
        return VariantSet(id=f"s{len(first)}{label}", persona_id=PID, relation="relation_contradictory",
                          seed_evidence_id="v0", event_id="e0", arc_id="a1", dimension="opinion", target="t",
                          variants=[variant], query="q", question_time=dt.datetime(2022, 1, 9), correct_answers=[],
                          wrong_answers=[], min_gap_days=5, sessions=[session], query_problems=query,
                          visible_label=label, kept=kept)

    rates = relations.variant_rates([
        one(True, ["too explicit: the session states the variant verbatim"], [], "WRONG"),
        one(False, ["too hidden (judge): x", "too hidden: no word"], ["order decides: the query names recency (x)"],
            "CORRECT"),
        one(False, [], ["too explicit: every keyword of the query is in session 1"], "WRONG"),
        one(False, [], ["visible-only (rule): the query holds every content word of accepted answer 1"], "CORRECT"),
    ])
    assert rates["sets"] == 4 and rates["kept"] == 1 and rates["kept_rate"] == 0.25
    assert rates["by_relation"] == {"relation_contradictory": {"sets": 4, "kept": 1}}
    assert rates["session_rule_explicit_rate"] == 0.25 and rates["session_rule_hidden_rate"] == 0.25
    assert rates["session_judge_hidden_rate"] == 0.25 and rates["session_judge_explicit_rate"] == 0.0
    assert rates["session_repaired_rate"] == 1.0  # both first-draft failures ended clean (no rule_problems left)
    assert rates["query_recency_rate"] == 0.25 and rates["query_one_session_rate"] == 0.25
    assert rates["visible_only_rate"] == 0.5 and rates["visible_rule_rate"] == 0.25


def test_synth_stats_prints_the_variant_rates(tmp_path):
    out = tmp_path / "data"
    directory = setup(out, one_of("nuanced_contextual"))
    run(out, ["variants"], script_for("nuanced_contextual"))
    data = stats.collect(out)
    assert data["variants"]["sets"] == 1 and data["variants"]["kept"] == 1
    assert data["variants"]["by_relation"] == {"relation_nuanced_contextual": {"sets": 1, "kept": 1}}
    assert (directory / "variants.jsonl").is_file()


def test_tiny_asks_for_no_variant_set_and_writes_an_empty_file(tmp_path):
    out = tmp_path / "data"
    directory = setup(out, "")
    fake = run(out, ["variants"])
    assert load(directory, "variants.jsonl") == [] and not [r for r in fake.seen if r.task.startswith("variants")]


# ------------------------------------------------------------------------------------------ templates

def test_the_fake_answers_the_item_schema_with_three_accepted_and_three_wrong():
    answer = json.loads(respond(stage.ItemDraft.model_json_schema(), [{"role": "user", "content": "x"}]))
    assert len(answer["correct_answers"]) == 3 and len(answer["wrong_answers"]) == 3


# ------------------------------------------------------------------------------------------ synth eval

def _row(key: str, relation: str, oracle: str, perfect: str, default: str) -> dict:
    return {"key": key, "relation": {"type": relation, "oracle": {"label": oracle}, "perfect": {"label": perfect},
                                     "default": {"label": default}}}


def test_the_waterfall_nests_the_sets_and_conditions_each_rate_on_the_stage_before():
    C, W = "CORRECT", "WRONG"
    rows = [_row("a", "relation_contradictory", C, C, C), _row("b", "relation_contradictory", C, C, W),
            _row("c", "relation_contradictory", C, W, C),  # right by default although lost in perfect: not in S_D
            _row("d", "relation_contradictory", W, C, C),  # an oracle failure never counts downstream
            _row("e", "relation_nuanced_temporal", C, C, C), {"key": "f", "relation": None}]
    report = waterfall.relation_report(rows)
    block = report["by_relation"]["relation_contradictory"]
    assert block["n"] == 4 and block["accuracy"] == {"oracle": 0.75, "perfect": 0.75, "default": 0.75}
    assert (block["oracle_correct"], block["preserved"], block["retrieved"]) == (3, 2, 1)
    assert block["p_preserve"] == round(2 / 3, 4) and block["p_retrieve"] == 0.5
    assert report["overall"]["n"] == 5 and report["overall"]["retrieved"] == 2
    assert waterfall.relation_report([{"key": "x", "relation": None}]) is None


def test_eval_judges_relation_items_under_oracle_perfect_and_own_retrieval(tmp_path):
    out = tmp_path / "data"
    directory = setup(out, one_of("complementary_all"))
    run(out, ["variants"], script_for("complementary_all"))
    run(out, ["traces", "qa", "distractors"])
    [item] = [m for m in load(directory, "mcq.jsonl") if m.variant_set_id]
    summaries = run_eval(data=out, system="flat,memory", k=1, answerer_provider="fake", answerer_model=None,
                         judge_provider="fake", judge_model=None, base_url=None, embed_model=None, offline=False,
                         out=tmp_path / "run", plot=False, limit=None, concurrency=2,
                         console=Console(file=io.StringIO()))
    for system in ("flat", "memory"):
        [row] = [json.loads(line) for line in (tmp_path / "run" / system / "results.jsonl").read_text().splitlines()
                 if json.loads(line)["question_id"] == item.id]
        relation = row["relation"]
        assert relation["type"] == "relation_complementary_all"
        assert {relation[s]["label"] for s in ("oracle", "perfect", "default")} <= {"CORRECT", "WRONG"}
        assert relation["default"]["answer"] == row["prediction"]
        report = summaries["systems"][system]["relations"]
        assert report["by_relation"]["relation_complementary_all"]["n"] == 1
    flat = json.loads((tmp_path / "run" / "flat" / "results.jsonl").read_text().splitlines()[0])["relation"]
    memory = json.loads((tmp_path / "run" / "memory" / "results.jsonl").read_text().splitlines()[0])["relation"]
    # flat keeps raw traces only: its perfect retrieval shows exactly the oracle's sessions (the same answer);
    # the memory system reads back what it extracted from them, so its answerer sees more than the sessions
    assert flat["perfect"]["answer"] == flat["oracle"]["answer"]
    assert memory["oracle"]["answer"] == flat["oracle"]["answer"]
    assert memory["perfect"]["answer"] != memory["oracle"]["answer"]


def test_the_hf_export_carries_the_references_and_the_session_marker(tmp_path):
    import pyarrow.parquet as pq

    from synth.records import FinalItem
    from synth.release.hf import export_hf

    out = tmp_path / "data"
    directory = setup(out, one_of("nuanced_temporal"))
    run(out, ["variants"], script_for("nuanced_temporal"))
    run(out, ["traces", "qa", "distractors"])
    [mcq] = [m for m in load(directory, "mcq.jsonl") if m.variant_set_id]
    write_atomic(directory / "final.jsonl", [FinalItem(**mcq.model_dump())])  # as if every filter passed
    root = export_hf(out)
    [questions] = list((root / "data" / "questions").glob("*.parquet"))
    [row] = pq.read_table(questions).to_pylist()
    assert row["question_type"] == "relation_nuanced_temporal" and row["variant_set_id"] == mcq.variant_set_id
    assert row["correct_answers"] == mcq.correct_answers and row["wrong_answers"] == mcq.wrong_answers
    [traces] = list((root / "data" / "traces").glob("*.parquet"))
    marked = {r["id"] for r in pq.read_table(traces).to_pylist() if r["variant_set_id"] == mcq.variant_set_id}
    assert marked == set(mcq.digital_trace_ids)


def test_the_mcq_tries_an_accepted_answer_no_give_away_rule_flags_first(tmp_path):
    out = tmp_path / "data"
    directory = setup(out, one_of("complementary_all"))
    long_answer = ("A flat five-kilometre loop past the fountains in the park, " * 4).strip()
    draft = {"query": ITEMS["complementary_all"],
             "correct_answers": [long_answer, "A flat 5 km park loop with fountains.", "Flat, 5 km, by fountains."],
             "wrong_answers": ["Any flat route of any length.", "A hilly 5 km loop with fountains.",
                               "A flat 10 km river route."]}
    script = script_for("complementary_all")
    script.replies["variants_item"] = [draft]
    run(out, ["variants"], script)
    run(out, ["traces", "qa"])
    choose = Script({"distractors_validate": [{"choice": "E", "needs_memory": True, "reason": "needs the record"}],
                     "distractors_verify": [{"key_supported": True, "others_ruled_out": True,
                                             "question_favours_option": False, "notes": [],
                                             "reason": "only the key fits every session"}]})
    run(out, ["distractors"], choose)
    [mcq] = load(directory, "mcq.jsonl")
    key = next(c.text for c in mcq.choices if c.id == mcq.correct_choice_id)
    assert key != long_answer and key in draft["correct_answers"] and mcq.answer == key
    options = {c.id: c.text for c in mcq.choices}
    found = rules.giveaways(options, mcq.correct_choice_id, mcq.question_type, CANNOT_DETERMINE["en"], 1.5, 0.05)
    assert [kind for kind, _ in found if kind != "key_longest"] == [], found
    assert len(mcq.refinement) == 1 and not mcq.refinement[0].too_easy, "one round: no model call on a flagged key"
    assert mcq.correct_answers == draft["correct_answers"], "the item keeps its references as written"
    assert not [r for r in choose.seen if r.task == "distractors"], "nothing is written for a relation item"
    assert not [p for p in validate_dataset(out) if "relation" in p or "variant" in p or "accepted" in p]


def test_a_bad_variants_setting_is_one_line_naming_the_key():
    from synth.config.conf import preset_config
    from synth.config.settings import parse
    from synth.core.errors import InputError

    config = preset_config("small")
    bad = {**config, "variants": {**config["variants"], "set_size": {**config["variants"]["set_size"],
                                                                       "contradictory": 7}}}
    with pytest.raises(InputError, match=r"\[variants.set_size\] contradictory: Input should be less than or equal "
                                         r"to 4 \(got 7\)"):
        parse(bad, {"variants.set_size.contradictory": "override.toml"})
    assert parse(config).variants.seeds_per_relation["contradictory"] == 3  # small asks for 3 sets per relation
    assert not relations.wanted(parse(preset_config("tiny")).variants), "tiny asks for none"


def test_variants_rerun_alone_makes_traces_and_qa_stale(tmp_path):
    """`synth variants` runs alone; a changed set (here: another minimum gap) changes variants.jsonl, which traces
    and qa read, so both are stale until they re-run (traces re-folds the sessions without a model call)."""
    from synth.config.personas import load_personas
    from synth.engine.runner import stage_status
    from synth.stages import STAGES

    out = tmp_path / "data"
    directory = setup(out, one_of("contradictory"))
    run(out, ["variants"], script_for("contradictory"))
    run(out, ["traces", "qa"])
    seed = next(s for s in load_personas([PERSONAS]) if s.id == PID)

    def status(stage: str) -> str:
        session = open_session(out, [PERSONAS], [PID], "tiny", "fake", None, None, None, None, None,
                               out / "config.toml")
        try:
            return stage_status(STAGES[stage], seed, directory, session.configs[PID], session.options.route)
        finally:
            session.close()

    assert (status("variants"), status("traces"), status("qa")) == ("fresh", "fresh", "fresh")
    second = script_for("contradictory")
    first = SETS["contradictory"][0]["text"]
    second.sessions[first] = ["Printed the spring plan again; week two of training starts tomorrow."]
    run(out, ["variants"], second)
    assert not second.seen, "fresh: nothing is asked"
    (out / "config.toml").write_text(one_of("contradictory", gap=6))
    assert status("variants") == "stale"
    run(out, ["variants"], second)
    [record] = load(directory, "variants.jsonl")
    assert record.min_gap_days == 6 and record.variants[0].content.startswith("Printed the spring plan again")
    assert (status("variants"), status("traces"), status("qa")) == ("fresh", "stale", "stale")
    fake = run(out, ["traces"])
    assert not fake.seen, "the fold makes no model call"
    assert record.variants[0].content in {t.content for t in load(directory, "traces.jsonl")}


def test_a_private_seed_keeps_its_sessions_off_public_media(tmp_path):
    out = tmp_path / "data"
    directory = setup(out, one_of("complementary_all", n=5), seeds=5)
    seeds = load(directory, "evidence.jsonl")
    write_atomic(directory / "evidence.jsonl", [s.model_copy(update={"private": k < 4}) for k, s in enumerate(seeds)])
    one = script_for("complementary_all")
    script = Script({task: replies * 5 for task, replies in one.replies.items() if not callable(replies)},
                    {text: contents * 5 for text, contents in one.sessions.items()})
    run(out, ["variants"], script)
    records = load(directory, "variants.jsonl")
    public = set(parse(preset_config("tiny")).traces.public_media)
    private = {s.id for s in seeds[:4]}
    used = {v.medium for r in records if r.seed_evidence_id in private for v in r.variants}
    assert len(records) == 5 and public and used and not used & public, used
