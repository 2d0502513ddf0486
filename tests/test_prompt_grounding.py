"""What the QA planner and writers see keeps to the evidence: every writer's excerpt is cut around the passage that
carries its evidence, the evidence an outline relies on is selected, an outline date the selected evidence states
(however worded, in its traces or as its day) passes while one it does not is asked again, and an unanswerable
item's settled facts reach the distractor writer and the judges."""

from __future__ import annotations

import asyncio
import datetime as dt
from types import SimpleNamespace

import pytest
from test_stage_functions_qa import SECTIONS, trace

from synth.life.windows import Segment, SegmentEvidence, Window
from synth.stages import qa
from synth.stages.qa import duration
from synth.stages.qa.plan_checks import relied_on, undated_outline

WINDOW = Window(index=0, start=dt.date(2022, 3, 1), end=dt.date(2022, 3, 20))
FILLER = "In the morning I went to the market and cooked lunch after. "


def item(n: int, statement: str, when: dt.datetime) -> SegmentEvidence:
    return SegmentEvidence(evidence_id=f"e{n}", arc_ids=("X",), kind="fact", statement=statement, time=when,
                           trace_ids=(f"t{n}",), trace_times=(when,))


def segment(*items: SegmentEvidence) -> Segment:
    return Segment(arc_id="X", window=WINDOW, evidence=items, new_ids=frozenset())


def test_the_evidence_an_outline_relies_on_is_selected():
    """The planner dropped the key statement of a causal chain ("工作日一滴黄酒不碰") while its outline turned on it."""
    day = dt.datetime(2022, 3, 5, 9)
    seg = segment(item(1, "他周末去钓鱼。", day), item(2, "他工作日一滴黄酒不碰。", day),
                  item(3, "妈说别跟爸说她去体检了。", day))
    outline = "问他周末钓鱼时的习惯；答案要点：他工作日一滴黄酒不碰，只有钓鱼时喝。"
    assert relied_on(outline, seg, [1]) == [1, 2]
    answer = SimpleNamespace(feasible=True, evidence=[1], outline=outline, temporal_scope="s", absent_topic="",
                             ask_after_days=1, ask_hour=9)
    assert qa.build_plan(answer, "factual", seg).evidence == [1, 2]


def test_a_later_statement_recapping_the_chosen_ones_is_not_pulled_in():
    """A capable planner chose April's three steps; a May statement recapping them (in words of theirs, not the
    outline's) was added, and the question moved past the time the planner chose."""
    day = dt.datetime(2022, 4, 4, 20)
    seg = segment(item(1, "Margaret caught Ingrid as she slipped on the wet bathroom floor.", day),
                  item(2, "Michelle said Ingrid's support would rise and suggested long-term care homes.", day),
                  item(3, "Margaret and Daniel agreed to put Ingrid on the long-term care waiting list.", day),
                  item(4, "Margaret told Anna she had kept Ingrid's bathroom slip and the long-term care waiting "
                          "list quiet.", day))
    outline = ("How the arrangements evolved: Margaret caught Ingrid as she slipped on the bathroom floor; Michelle "
               "said Ingrid's support would rise and suggested long-term care homes; Margaret and Daniel agreed "
               "to put Ingrid on the long-term care waiting list.")
    assert relied_on(outline, seg, [1, 2, 3]) == [1, 2, 3]
    # what the fourth adds (Anna, keeping it quiet) does reach an outline that tells it
    assert relied_on(outline + " She told Anna she had kept it quiet.", seg,
                     [1, 2, 3]) == [1, 2, 3, 4]


def test_an_outline_may_name_a_date_its_evidence_states_however_worded():
    """A capable model's outlines were refused for "since August" / "Sunday" that the selected evidence itself
    states: the date word is compared without its context word, and the evidence's traces and days count."""
    sunday = dt.datetime(2022, 3, 6, 9)  # a Sunday
    seg = segment(item(1, "She noted a $410 monthly transfer since August.", sunday),
                  item(2, "他在日记里写：3月9日要去复查。", sunday))
    pool = {"t1": trace("t1", sunday, ["e1"]), "t2": trace("t2", sunday, ["e2"])}
    for fine in ("What she found in August", "What she noticed on Sunday about the transfer",
                 "She checked her account on Sundays"):
        undated_outline(SimpleNamespace(outline=fine, evidence=[1]), segment=seg, traces=pool)
    undated_outline(SimpleNamespace(outline="他星期天在日记里写了什么，3月9日要做什么", evidence=[2]), segment=seg,
                    traces=pool)
    # spaced, padded or full-width digits name the same day ("3 月 4 日" was refused against "2022年3月4日晚上")
    for spaced in ("他 3 月 9 日要做什么", "他03月09号要做什么", "他３月９日要做什么"):
        undated_outline(SimpleNamespace(outline=spaced, evidence=[2]), segment=seg, traces=pool)
    with pytest.raises(ValueError, match="outline: names"):
        undated_outline(SimpleNamespace(outline="他 3 月 19 日要做什么", evidence=[2]), segment=seg, traces=pool)
    # the evidence's own month, written with a Chinese numeral (a 75-day run's plan was refused "七月" in July)
    undated_outline(SimpleNamespace(outline="三月里他在日记里写了什么", evidence=[2]), segment=seg, traces=pool)
    with pytest.raises(ValueError, match="outline: names"):
        undated_outline(SimpleNamespace(outline="七月里他在日记里写了什么", evidence=[2]), segment=seg, traces=pool)
    # a day in Chinese numerals names the evidence's day too ("九月九日" was refused against "9月9日")
    undated_outline(SimpleNamespace(outline="他三月九日要做什么", evidence=[2]), segment=seg, traces=pool)
    for other in ("他三月十九日要做什么", "他十二月九号要做什么"):
        with pytest.raises(ValueError, match="outline: names"):
            undated_outline(SimpleNamespace(outline=other, evidence=[2]), segment=seg, traces=pool)
    for stray in ("What she found on Friday", "Ask about the talk on March 5", "What happened on March 1", "她3月12日做了什么"):
        with pytest.raises(ValueError, match="outline: names"):
            undated_outline(SimpleNamespace(outline=stray, evidence=[1, 2]), segment=seg, traces=pool)
    held_in_trace = {"t1": trace("t1", sunday, ["e1"]).model_copy(update={"content": "Payday is the 25th of March."})}
    undated_outline(SimpleNamespace(outline="What she expects on March 25th", evidence=[1]), segment=seg,
                    traces=held_in_trace)


def test_the_duration_writer_sees_the_passage_of_each_moment():
    """The duration item's excerpts were cut from each trace's start, before the passage it asks about."""
    first, second = item(1, "She signed the lease for the studio.", dt.datetime(2022, 3, 2, 9)), \
        item(2, "She handed back the keys of the studio.", dt.datetime(2022, 3, 9, 9))
    long = {n: trace(f"t{n}", it.time, [f"e{n}"]).model_copy(update={"content": FILLER * 30 + it.statement})
            for n, it in ((1, first), (2, second))}
    seen = {}

    async def ask(task, template, variables, model, **_):
        seen.update(variables)
        return SimpleNamespace(question="How long?")

    prompts = SECTIONS.prompts.model_copy(update={"trace_chars": 300})
    ctx = SimpleNamespace(ask=ask, section=SECTIONS.qa, settings=SimpleNamespace(prompts=prompts), language="en",
                          persona=SimpleNamespace(id="p"))
    pair = duration.DurationPair(arc_id="X", first=first, second=second)
    pool = {t.id: t for t in long.values()}
    asyncio.run(duration.write_one(ctx, pair, SimpleNamespace(id="X", dimension="emotion"), {}, pool,
                                   dt.datetime(2022, 3, 12, 9)))
    shown = [m["traces"][0]["content"] for m in seen["moments"]]
    assert "signed the lease" in shown[0] and "handed back the keys" in shown[1]


def test_an_unanswerable_items_settled_facts_reach_the_distractor_writer_and_the_judges():
    """A phase said the son's rank "rose by more than ten places" with no trace carrying it: the planner was told,
    but the distractor writer then invented "rose by ten places" (true of the life) and the judges passed it."""
    from template_cases_zh import ARC_RECORDS, PERSONA
    from test_stage_functions_qa import phase

    from synth.config.prompts import render
    from synth.records import MCQ
    from synth.stages import distractors, filter

    fact = "2022-03-01–2022-03-20 spring: Her son's class rank rose by more than ten places."
    narrative = phase(1).model_copy(update={"start": WINDOW.start, "end": WINDOW.end, "title": "spring",
                                            "description": "Her son's class rank rose by more than ten places."})
    seg = segment(item(1, "She asked her son about school.", dt.datetime(2022, 3, 5, 9)))
    assert qa.settled_facts(seg, [narrative], []) == [fact]
    answer = SimpleNamespace(question="What rank did he reach?", answer="The records do not say.")
    plan = qa.Plan(question_type="unanswerable", segment=seg.key, feasible=True, gate="", evidence=[1],
                   temporal_scope="s", outline="o", absent_topic="the exact rank", ask_after_days=1, ask_hour=9)
    arc = SimpleNamespace(id="X", dimension="emotion")
    needed = {"e1": ["t1"]}
    item_ = qa.build_qa(answer, plan, seg, arc, "p", dt.datetime(2022, 3, 9, 9), needed, [fact])
    assert item_.settled == [fact]
    factual = qa.build_qa(answer, plan.model_copy(update={"question_type": "factual"}), seg, arc, "p",
                          dt.datetime(2022, 3, 9, 9), needed, [fact])
    assert factual.settled == [], "only an unanswerable item keeps them"
    mcq = MCQ.model_validate({**item_.model_dump(), "choices": [{"id": c, "text": c} for c in "ABCDE"],
                              "correct_choice_id": "E"})
    prompts = SECTIONS.prompts
    shown = {"distractors_write.j2": distractors.write_variables(mcq, SimpleNamespace(), [], {}, prompts, "en", []),
             "distractors_verify.j2": distractors.verify_variables(mcq, mcq.choices, "E", {}, [], prompts),
             "filter_sufficiency.j2": filter.sufficiency_variables(mcq, [], {}, prompts)}
    for name, values in shown.items():
        assert values["settled"] == [fact], name
        for language in ("en", "zh"):
            body = "\n".join(m["content"] for m in render(name, language=language, **{
                **values, "persona": PERSONA, "arcs": ARC_RECORDS, "question_type": "unanswerable"}))
            assert "rose by more than ten places" in body, (name, language)


def test_a_settled_fact_is_cut_at_a_clause_end_never_mid_word():
    from synth.stages.qa.plan_checks import clipped

    fact = "2022-01-16 The laptop-free Sunday: Rachel agreed to it, then by 2:40 p.m. she had opened it for the redline."
    cut = clipped(fact, 80)
    assert len(cut) <= 80 and cut.endswith("…") and cut[:-1] in fact
    assert fact[len(cut) - 1] in " ,"  # cut where a word or clause ends, never inside "2:40" or "she"
    assert clipped("短句。", 80) == "短句。"
    zh = "2022-01-12 选题：她把三个题目都写了说明，导师听完以后让她先交一个版本，晚上她发了条朋友圈说题目定了"
    assert clipped(zh, 40) == zh[:zh.index("，导师") + 1] + "…"  # after its last clause end within the limit
    # a whole sentence before a half one: a capable planner met "On Saturday afternoon, during her 'offline' block,…"
    call = ("2022-02-12 The call from Milwaukee: her mother asked for the loan back by March. On Saturday "
            "afternoon, during her 'offline' block, she wrote the reply twice and sent neither.")
    assert clipped(call, 120) == call[:call.index("March.") + 6] + "…"



def test_an_infeasible_plan_is_not_held_to_the_date_rule_and_a_plan_still_failing_it_is_dropped(monkeypatch):
    """The bundled model kept naming the timeline's first day in outlines; after the re-asks the whole run failed."""
    from synth.llm.base import GenerationFailed, Usage
    from synth.stages.qa.plan_checks import UNSTATED_DATE

    sunday = dt.datetime(2022, 3, 6, 9)
    seg = segment(item(1, "He went fishing.", sunday))
    undated_outline(SimpleNamespace(feasible=False, outline="on 2022-01-01", evidence=[1]), segment=seg, traces={})
    with pytest.raises(ValueError, match=UNSTATED_DATE):
        undated_outline(SimpleNamespace(feasible=True, outline="on 2022-01-01", evidence=[1]), segment=seg, traces={})

    async def refuses(*args, **kwargs):
        raise GenerationFailed(f"qa_plan: no valid answer after 3 attempts: {UNSTATED_DATE} '2022-01-01'", raw="",
                               attempts=3, usage=Usage())

    async def broken(*args, **kwargs):
        raise GenerationFailed("qa_plan: no valid answer after 3 attempts: not JSON", raw="", attempts=3, usage=Usage())

    monkeypatch.setattr(qa, "plan_variables", lambda *args, **kwargs: {})
    planner = object.__new__(qa.Planner)
    planner.section = SimpleNamespace(max_question_delay_days=7, planned_tokens=None)
    planner.arc_by_id, planner.traces, planner.common = {"X": None}, {}, {}
    spans = SimpleNamespace(filter=SimpleNamespace(min_span_days=14))
    planner.ctx = SimpleNamespace(ask=refuses, phases=[], events=[], settings=spans)
    [plan] = asyncio.run(planner.plan("factual", seg))["plans"]
    assert not plan.feasible and UNSTATED_DATE in plan.gate  # dropped as a plan, not a failed unit
    planner.ctx = SimpleNamespace(ask=broken, phases=[], events=[], settings=spans)
    with pytest.raises(GenerationFailed):  # any other failure still fails the unit (and is re-asked next run)
        asyncio.run(planner.plan("factual", seg))
