"""Golden renders of the stage-IV templates in English and Chinese: prefix split, variables, language, type text."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from qa_world import build_persona_dir

from synth.config.prompts import label, render
from synth.core.jsonl import read_records
from synth.core.tokens import estimate_tokens
from synth.life.windows import Segment, SegmentEvidence, Window
from synth.records import CANNOT_DETERMINE, QUESTION_TYPES, LifeArc, Persona
from synth.stages import qa

CJK = re.compile(r"[\u4e00-\u9fff]")
TEMPLATES = ("qa_plan.j2", "qa_write.j2", "distractors_write.j2", "distractors_validate.j2",
             "distractors_verify.j2", "filter_sufficiency.j2", "filter_blind.j2", "filter_single_trace.j2")
GIVEAWAY_KINDS = ("repeated_option", "key_too_long", "key_longest", "key_central", "unanswerable_length")


@pytest.fixture(scope="module")
def people(tmp_path_factory):
    directory = build_persona_dir(tmp_path_factory.mktemp("tpl"))
    return read_records(directory / "persona.jsonl", Persona)[0], read_records(directory / "arcs.jsonl", LifeArc)


def variables(template: str, persona: Persona, arcs: list[LifeArc], language: str, question_type: str = "causal"):
    evidence = [{"index": 1, "date": "2022-02-01", "kind": "emotion", "statement": "EVIDENCE-ONE", "recent": True,
                 "media": ["diary"]}]
    traces = [{"medium": "diary", "time": "2022-02-01T21:00", "content": "TRACE-CONTENT"}]
    choices = [{"id": c, "text": f"OPTION-{c}"} for c in "ABCDE"]
    common = {"persona": persona, "arcs": arcs, "question_type": question_type}
    return {
        "qa_plan.j2": {**common, "arc": arcs[0], "window_start": "2022-01-01", "window_end": "2022-03-01",
                       "evidence": evidence, "max_delay_days": 23, "hours": (7, 22), "planned": [], "settled": []},
        "qa_write.j2": {**common, "arc": arcs[0], "window_start": "2022-01-01", "window_end": "2022-03-01",
                        "evidence": evidence, "traces": traces, "temporal_scope": "SCOPE", "outline": "OUTLINE",
                        "absent_topic": "ABSENT-TOPIC", "question_time": "2022-02-03T19:00",
                        "max_answer_chars": 280},
        "distractors_write.j2": {**common, "dimension": "emotion", "question_time": "2022-03-02T20:00",
                                 "question": "QUESTION-TEXT", "answer": "ANSWER-TEXT",
                                 "unanswerable": question_type == "unanswerable",
                                 "cannot_determine": CANNOT_DETERMINE[language], "evidence": evidence,
                                 "traces": traces, "target_chars": 77, "settled": [],
                                 "feedback": [{"round": 1, "kinds": [], "reason": "FEEDBACK-REASON",
                                               "blind_correct": False, "unsupported": ""},
                                              {"round": 2, "kinds": ["key_central"], "reason": "",
                                               "blind_correct": True, "unsupported": "C-ALSO-HOLDS"}]},
        "distractors_verify.j2": {"question": "QUESTION-TEXT", "question_time": "2022-03-02T20:00",
                                  "choices": choices, "correct": "B", "unanswerable": question_type == "unanswerable",
                                  "evidence": evidence, "traces": traces, "style_of": "", "settled": []},
        "distractors_validate.j2": {"question": "QUESTION-TEXT", "question_time": "2022-03-02T20:00",
                                    "choices": choices},
        "filter_sufficiency.j2": {"persona": persona, "question_type": question_type, "question": "QUESTION-TEXT",
                                  "question_time": "2022-03-02T20:00",
                                  "answer": "ANSWER-TEXT", "unanswerable": question_type == "unanswerable",
                                  "evidence": evidence, "traces": traces, "settled": []},
        "filter_blind.j2": {"question": "QUESTION-TEXT", "question_time": "2022-03-02T20:00", "choices": choices},
        "filter_single_trace.j2": {"question": "QUESTION-TEXT", "question_time": "2022-03-02T20:00",
                                   "choices": choices, "traces": traces},
    }[template]


@pytest.mark.parametrize("template", TEMPLATES)
@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_template_renders_a_system_prefix_and_a_task(people, template, language):
    persona, arcs = people
    messages = render(template, language=language, **variables(template, persona, arcs, language))
    assert [m["role"] for m in messages] == ["system", "user"]
    system, task = messages[0]["content"], messages[1]["content"]
    assert "QUESTION-TEXT" in task or "EVIDENCE-ONE" in task
    assert "{{" not in system + task and "{%" not in system + task
    if language == "zh":
        assert "简体中文" in system  # asks for Chinese output
        assert len(CJK.findall(task)) > 20
    else:
        assert not CJK.search(system + task)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_persona_prefix_is_shared_and_stable(people, language):
    persona, arcs = people
    plan_a = render("qa_plan.j2", language=language, **variables("qa_plan.j2", persona, arcs, language, "factual"))
    plan_b = render("qa_plan.j2", language=language, **variables("qa_plan.j2", persona, arcs, language, "pattern"))
    write = render("qa_write.j2", language=language, **variables("qa_write.j2", persona, arcs, language))
    assert plan_a[0] == plan_b[0] == write[0]  # one cacheable prefix for the whole qa stage
    assert persona.name in plan_a[0]["content"] and arcs[2].title in plan_a[0]["content"]
    assert "Xiaomei" in plan_a[0]["content"]  # relations
    assert plan_a[1] != plan_b[1]


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("question_type", QUESTION_TYPES)
def test_each_type_definition_is_rendered(people, language, question_type):
    persona, arcs = people
    task = render("qa_plan.j2", language=language,
                  **variables("qa_plan.j2", persona, arcs, language, question_type))[1]["content"]
    name = label(question_type, "question_type", language)  # zh shows the native name, which opens the definition
    line = next(line for line in task.splitlines() if name in line and ("—" in line or "题型：" in line))
    assert len(line) > len(name) + 15  # the definition itself, not just the name
    assert ("absent_topic：一个" in task or "absent_topic: a concrete topic" in task) == (question_type == "unanswerable")


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("question_type", ["causal", "unanswerable"])
def test_the_plan_decides_the_question_time_and_the_writer_is_given_it(people, language, question_type):
    persona, arcs = people
    plan = render("qa_plan.j2", language=language,
                  **variables("qa_plan.j2", persona, arcs, language, question_type))[1]["content"]
    assert "ask_after_days" in plan and "ask_hour" in plan and "0–23" in plan and "7–22" in plan
    write = render("qa_write.j2", language=language,
                   **variables("qa_write.j2", persona, arcs, language, question_type))[1]["content"]
    assert write.count("2022-02-03T19:00") == 2  # stated, then what the answer must hold at
    assert "day_offset" not in write and "ask_" not in write  # nothing left for the writer to decide


def test_no_context_tasks_see_no_persona_or_traces(people):
    persona, arcs = people
    for template in ("distractors_validate.j2", "filter_blind.j2"):
        text = " ".join(m["content"] for m in render(template, language="en",
                                                     **variables(template, persona, arcs, "en")))
        assert persona.name not in text and "TRACE-CONTENT" not in text and "OPTION-E" in text


def test_distractor_prompt_carries_feedback_length_and_the_unanswerable_switch(people):
    persona, arcs = people
    answerable = render("distractors_write.j2", language="en",
                        **variables("distractors_write.j2", persona, arcs, "en"))[1]["content"]
    assert "FEEDBACK-REASON" in answerable and "77 characters" in answerable and "ANSWER-TEXT" in answerable
    assert "independently coherent alternative answer" in answerable and "not be the correct answer with one" in answerable
    assert "picked the correct answer straight away" in answerable and "C-ALSO-HOLDS" in answerable
    assert "wrong trigger" not in answerable  # alternatives, not perturbations that sit next to the truth
    unanswerable = render("distractors_write.j2", language="en",
                          **variables("distractors_write.j2", persona, arcs, "en", "unanswerable"))[1]["content"]
    assert CANNOT_DETERMINE["en"] in unanswerable and "nothing in the records supports it" in unanswerable
    # never an invented "did not": a writer, pressed by a reviewer to make the options as plausible as E, wrote "I
    # never went and took nothing", which the records do not say either and may be true of the life
    zh = render("distractors_write.j2", language="zh",
                **variables("distractors_write.j2", persona, arcs, "zh", "unanswerable"))[1]["content"]
    assert "never that nothing happened" in unanswerable and "不要说什么都没发生" in zh
    assert "never that nothing happened" not in answerable


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_giveaway_kind_is_worded_for_the_writer(people, language):
    """The refinement loop names a give-away by kind (synth.quality.rules); the template words each one, in both languages."""
    persona, arcs = people
    base = variables("distractors_write.j2", persona, arcs, language)
    texts = set()
    for kind in GIVEAWAY_KINDS:
        feedback = [{"round": 1, "kinds": [kind], "reason": "", "blind_correct": False, "unsupported": ""}]
        task = render("distractors_write.j2", language=language, **{**base, "feedback": feedback})[1]["content"]
        texts.add(task.split("round 1:" if language == "en" else "第 1 轮：")[1].strip())
    assert len(texts) == len(GIVEAWAY_KINDS) and all(len(t) > 20 for t in texts)


def test_the_verify_judge_sees_evidence_and_traces_and_the_key(people):
    persona, arcs = people
    task = render("distractors_verify.j2", language="en",
                  **variables("distractors_verify.j2", persona, arcs, "en"))[1]["content"]
    assert "EVIDENCE-ONE" in task and "TRACE-CONTENT" in task and "marked correct: B" in task
    unanswerable = render("distractors_verify.j2", language="en",
                          **variables("distractors_verify.j2", persona, arcs, "en", "unanswerable"))[1]["content"]
    assert "TRACE-CONTENT" in unanswerable and "EVIDENCE-ONE" not in unanswerable  # the related traces only


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_sufficiency_judge_checks_the_premise_as_well_as_the_answer(people, language):
    persona, arcs = people
    task = render("filter_sufficiency.j2", language=language,
                  **variables("filter_sufficiency.j2", persona, arcs, language))[1]["content"]
    assert ("premise" in task) if language == "en" else ("前提" in task)
    assert "2022-03-02T20:00" in task  # the premise must hold before the question time


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_question_writer_is_shown_the_premise_and_date_rules(people, language):
    persona, arcs = people
    task = render("qa_write.j2", language=language, **variables("qa_write.j2", persona, arcs, language))[1]["content"]
    if language == "en":
        assert "premise" in task and "no year, month or weekday" in task
    else:
        assert "前提" in task and "星期几" in task


@pytest.mark.parametrize("language", ["en", "zh"])
def test_an_unanswerable_plan_is_shown_what_the_life_settled_and_told_to_avoid_it(people, language):
    """A phase narrative or an event may settle a fact no trace carries (a son's rank that rose): the unanswerable
    planner sees the window's settled facts, so its absent topic is something the life never decided."""
    persona, arcs = people
    settled = ["2022-03-02 School report: the son's rank rose by more than ten places"]
    values = {**variables("qa_plan.j2", persona, arcs, language, "unanswerable"), "settled": settled}
    task = render("qa_plan.j2", language=language, **values)[1]["content"]
    assert settled[0] in task
    assert ("absent_topic 不能是其中任何一件事" if language == "zh" else "may not be any of these") in task
    other = render("qa_plan.j2", language=language,
                   **{**variables("qa_plan.j2", persona, arcs, language, "causal"), "settled": []})[1]["content"]
    assert "rank rose" not in other


def test_settled_facts_are_the_windows_phases_and_events_newest_first_and_bounded():
    import datetime as dt

    from synth.life.windows import Segment, Window
    from synth.records import Event, Phase, Snapshot
    from synth.stages.qa import DECIDED_LINES, settled_facts

    still = Snapshot(energy=5, stress=5, dominant_emotion="calm", focus="work", arc_status={})
    window = Window(index=0, start=dt.date(2022, 3, 1), end=dt.date(2022, 3, 31))
    segment = Segment(arc_id="a", window=window, evidence=(), new_ids=frozenset())
    events = [Event(id=f"e{d}", persona_id="p", phase_id="ph", time=dt.datetime(2022, 3, d, 9), title=f"day {d}",
                    description="rank rose" if d == 20 else "d", location="", participant_ids=[]) for d in range(1, 31)]
    outside = Event(id="late", persona_id="p", phase_id="ph", time=dt.datetime(2022, 5, 1, 9), title="later",
                    description="after the window", location="", participant_ids=[])
    phase = Phase(id="ph", persona_id="p", major_event_id="m", index=0, title="spring", description="exam season",
                  start=dt.date(2022, 2, 20), end=dt.date(2022, 4, 10), snapshot_before=still, snapshot_after=still)
    facts = settled_facts(segment, [phase], [*events, outside])
    assert len(facts) == DECIDED_LINES and "after the window" not in " ".join(facts)
    assert facts[0].startswith("2022-02-20–2022-04-10 spring")  # newest end first
    # a phase's summary is cut only at 720 characters (a planner found one cut before a talk it had to avoid)
    summary = "exam season; " * 80
    long_phase = phase.model_copy(update={"description": summary.strip()})
    shown = settled_facts(segment, [long_phase], events)[0]
    assert 600 < len(shown) <= 720 and shown.endswith("…")
    assert any("rank rose" in f for f in facts)
    # the facts about the question's matter come first and whole: an option writer of an unanswerable question
    # about a counsellor's fee found the one event that might settle it cut off
    long = ("He met the counsellor in Drumcondra for a first session after weeks of putting it off, talked about "
            "the headaches, the money and his mother's calls, and walked home along the canal feeling lighter than "
            "he had expected, stopping for a coffee on the bridge; at the door she said the session fee was €60.")
    events[3] = events[3].model_copy(update={"description": long})
    plain = settled_facts(segment, [phase], [*events, outside])
    assert not any("€60" in f for f in plain)  # newest first and cut: the fee is lost
    about = settled_facts(segment, [phase], [*events, outside], "How much is a counsellor session, and who paid?")
    assert about[0] == f"2022-03-04 day 4: {long}" and len(about) == DECIDED_LINES
    # what the life settled before the window is as true at the question's time: a capable planner's list began
    # at the window's first day, and a January check-up was left unprotected; the window's own facts come first
    earlier = Event(id="jan", persona_id="p", phase_id="ph", time=dt.datetime(2022, 1, 13, 9), title="GP check",
                    description="the GP found his blood pressure high", location="", participant_ids=[])
    few = settled_facts(segment, [phase], [earlier, *events[:3], outside])
    assert few[-1] == "2022-01-13 GP check: the GP found his blood pressure high" and len(few) == 5
    asked = settled_facts(segment, [phase], [earlier, *events, outside], "Did the GP say his blood pressure was high?")
    assert asked[0].startswith("2022-01-13 GP check")


def test_settled_facts_keep_every_phase_of_a_long_window_before_its_events():
    """A 75-day window's newest twelve events and phases left its July phases out; a capable planner of an
    unanswerable question had to keep clear of what July had settled without seeing it."""
    import datetime as dt

    from synth.life.windows import Segment, Window
    from synth.records import Event, Phase, Snapshot
    from synth.stages.qa import DECIDED_LINES, settled_facts

    still = Snapshot(energy=5, stress=5, dominant_emotion="calm", focus="work", arc_status={})
    window = Window(index=0, start=dt.date(2022, 7, 1), end=dt.date(2022, 9, 13))
    segment = Segment(arc_id="a", window=window, evidence=(), new_ids=frozenset())
    phases = [Phase(id=f"ph{n}", persona_id="p", major_event_id="m", index=n, title=f"phase {n}",
                    description="moved in together" if n == 0 else "d", start=start, end=start + dt.timedelta(days=9),
                    snapshot_before=still, snapshot_after=still)
              for n, start in enumerate(dt.date(2022, 7, 1) + dt.timedelta(days=10 * k) for k in range(4))]
    events = [Event(id=f"e{d}", persona_id="p", phase_id="ph3", time=dt.datetime(2022, 8, d, 9), title=f"day {d}",
                    description="e", location="", participant_ids=[]) for d in range(1, 31)]
    facts = settled_facts(segment, phases, events)
    assert len(facts) == DECIDED_LINES and any("moved in together" in f for f in facts)
    assert [f for f in facts if f.startswith("2022-07")][-1].startswith("2022-07-01–2022-07-10 phase 0")


def test_a_plan_whose_outline_names_a_date_the_evidence_does_not_state_is_asked_again():
    """Outlines carried dates no trace held ("3月5日"); the writer then had to avoid them. A date the selected
    evidence does not state is refused with its reason (a re-ask); one it states ("since August", "on Sunday": the
    blind writer of a capable-model run had such outlines refused) and an undated outline pass."""
    import datetime as dt
    from types import SimpleNamespace

    from synth.life.windows import Segment, SegmentEvidence, Window
    from synth.stages.qa import undated_outline

    when = dt.datetime(2022, 1, 9, 9)
    item = SegmentEvidence(evidence_id="v1", arc_ids=("a",), kind="fact", time=when, trace_ids=("t1",),
                           trace_times=(when,), statement="On Sunday she noted a $410 monthly transfer since August.")
    segment = Segment(arc_id="a", window=Window(index=0, start=when.date(), end=when.date()), evidence=(item,),
                      new_ids=frozenset())
    for dated in ("She quit on 3月5日 after the review", "Ask about the talk on March 5 with her boss",
                  "What changed after 2022-03-05"):
        with pytest.raises(ValueError, match="outline: names"):
            undated_outline(SimpleNamespace(outline=dated, evidence=[1]), segment=segment)
    undated_outline(SimpleNamespace(outline="What she found: a transfer every month since August, seen on Sunday",
                                    evidence=[1]), segment=segment)
    undated_outline(SimpleNamespace(outline="What made her quit after the review, and how she told her boss",
                                    evidence=[1]), segment=segment)


def test_a_plan_prompt_shows_the_arcs_earlier_plans_within_a_budget(people):
    """An arc's feasible plans pile up over the types; a plan prompt shows those sharing its evidence by their
    numbers, the most shared first, within `[qa] planned_tokens` — however many were planned before."""
    persona, arcs = people
    items = tuple(SegmentEvidence(evidence_id=f"e{n}", arc_ids=(arcs[0].id,), kind="fact", statement=f"statement {n}",
                                  time=dt.datetime(2022, 2, n, 21), trace_ids=(), trace_times=())
                  for n in range(1, 4))
    segment = Segment(arc_id=arcs[0].id, window=Window(index=0, start=items[0].time.date(),
                                                        end=items[-1].time.date()), evidence=items, new_ids=frozenset())
    earlier = [{"question_type": "factual", "outline": f"OUTLINE-{k} " + "a long outline of the question " * 12,
                "evidence_ids": ["e1", "e2"] if k % 3 == 0 else ["e2", "e99"]} for k in range(30)]
    earlier.append({"question_type": "causal", "outline": "ELSEWHERE", "evidence_ids": ["e99"]})
    common = {"persona": persona, "arcs": arcs}

    def prompt(planned, budget):
        variables = qa.plan_variables(common, arcs[0], segment, "causal", {}, 23, planned, planned_tokens=budget)
        return variables["planned"], "\n".join(m["content"] for m in render("qa_plan.j2", language="en", **variables))

    shown, text = prompt(earlier, 400)
    assert shown and shown[0]["outline"].startswith("OUTLINE-27 ") and shown[0]["evidence"] == [1, 2], \
        "the most shared first, then the latest"
    assert "(evidence: [1], [2])" in text and "statement 1; statement 2" not in text, "numbers, not statements"
    assert "ELSEWHERE" not in text, "a plan sharing no evidence with the segment stays out"
    _, blind = prompt([], 400)
    assert estimate_tokens(text) - estimate_tokens(blind) <= 400 + 60, "the budget bounds the growth"
    everything, _ = prompt(earlier, None)
    assert len(everything) == 30 > len(shown)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_counter_seed_writer_may_name_the_question_s_people_in_every_set(people, language):
    """Two capable writers left "the moderator" unnamed in every counter-seed: the question asked what he made of
    the guide, his name stood only in a chosen set, and the prompt said not to reuse its particular details."""
    persona, arcs = people
    task = render("distractors_seeds.j2", language=language, persona=persona, arcs=arcs, question_type="factual",
                  question="What did the moderator make of the guide?", question_time="2022-03-02T20:00",
                  examples=[], others=[["Gareth Hughes posted the guide on the wiki."]], need=2, size=1,
                  occasions=1)[1]["content"]
    assert "Gareth Hughes posted" in task
    rule = ("they may stand in every set, by the same name" if language == "en"
            else "它们可以出现在每一组里，用同样的名字")
    assert rule in task


@pytest.mark.parametrize("language", ["en", "zh"])
def test_counter_seeds_span_as_many_occasions_as_the_key(people, language):
    """A key of two occasions beside written sets of one scene each: a capable reader picked "the one giving two
    instances". The writer is told how many occasions (never what the key says)."""
    from synth.records import Evidence, OptionSeed
    from synth.stages.options import seeds

    persona, arcs = people
    evidence = {f"v{n}": Evidence(id=f"v{n}", persona_id="p", event_id=f"e{n // 2}", kind="fact", statement="s",
                                  arc_ids=["a"]) for n in range(4)}
    key = OptionSeed(role="key", statements=["s"] * 3, evidence_ids=["v0", "v1", "v2"])
    assert seeds.occasions(key, evidence) == 2 and seeds.occasions(OptionSeed(role="key", statements=["s"]), {}) == 1

    def task(occasions: int) -> str:
        return render("distractors_seeds.j2", language=language, persona=persona, arcs=arcs, question_type="pattern",
                      question="How do you usually answer Priya?", question_time="2022-03-02T20:00", examples=[],
                      others=[], need=2, size=3, occasions=occasions)[1]["content"]

    rule = "come from 2 different occasions" if language == "en" else "来自 2 个不同的场合"
    assert rule in task(2) and "occasions" not in task(1) and "场合" not in task(1)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_an_earlier_plan_with_evidence_in_another_stretch_says_so(people, language):
    """A writer read an earlier outline relying on a breakdown its listed numbers did not cover."""
    persona, arcs = people
    planned = [{"question_type": "comparison", "outline": "OUTLINE-EARLIER", "evidence": [1], "elsewhere": 2},
               {"question_type": "pattern", "outline": "OUTLINE-HERE", "evidence": [1], "elsewhere": 0}]
    body = render("qa_plan.j2", language=language,
                  **{**variables("qa_plan.j2", persona, arcs, language), "planned": planned})[-1]["content"]
    said = "and 2 not in the list above" if language == "en" else "另有 2 条不在上面的列表里"
    assert said in body and body.count(said) == 1
    assert ("not in the list above" if language == "en" else "不在上面的列表里") not in body.split("OUTLINE-HERE")[1]
