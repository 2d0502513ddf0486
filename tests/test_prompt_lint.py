"""The prompt lint: generation prompts rendered over scripted situations (one-event phases, several reached states,
private evidence, no places yet, a holiday that is also a make-up day), in both languages, fail on what a capable
model could not follow — English in a zh prompt or its schema, a medium hint the evidence's privacy rules out, two
length rules for one text, a count rule that cannot be met, the future shown to an earlier moment."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
import template_cases_en as en_case
import template_cases_zh as zh_case

from synth.config.prompts import render
from synth.config.shown_schema import decode_answer, native_schema
from synth.core.calendar import holidays_between
from synth.life import relations
from synth.stages import arcs as arcs_stage
from synth.stages import events as events_stage
from synth.stages import phases as phases_stage
from synth.stages import qa as qa_stage
from synth.stages import traces as traces_stage
from synth.stages.common import hint_weights, suggest_media
from synth.stages.lifelog import plan as lifelog_plan

ENGLISH = re.compile(r"[A-Za-z][A-Za-z_]+")


def text(name: str, language: str, **override) -> str:
    if language == "zh":
        values = {"persona": zh_case.PERSONA, **zh_case._generation(name)}
    else:
        values = en_case.variables(name, "en")
    return "\n".join(m["content"] for m in render(name, language=language, **{**values, **override}))


def schema_words(schema: dict) -> set[str]:
    """English words a zh model reads in a schema: every string value except JSON keywords and field names."""
    words: set[str] = set()

    def walk(node, key=""):
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ("properties", "$defs"):
                    for sub in v.values():
                        walk(sub)
                elif k not in ("type", "required", "format", "pattern", "$ref"):
                    walk(v, k)
        elif isinstance(node, list):
            for v in node:
                walk(v, key)
        elif isinstance(node, str):
            words.update(ENGLISH.findall(node))
    walk(schema)
    return words


SCHEMAS = {
    "events": events_stage.events_answer(7, ("周建国",), ("带新团队",), 2, 1, 3, 1, 1),
    "phase": phases_stage.phase_answer(0, 6, 2),
    "snapshot": phases_stage.snapshot_answer(2),
    "trace plan": traces_stage.plan_answer(("diary", "moments", "wechat_chat"), 3, 2, 48),
    "trace": traces_stage.TraceText,
    "traces written together": traces_stage.texts_answer(2),
    "seeds": arcs_stage.seed_answer(("升职",), 1, 3, 2),
    "arcs": arcs_stage.arc_answer(("升职",), 1, 3),
    "major events": arcs_stage.major_answer(("升职",), 30, 3, 3, 2),
    "qa write": qa_stage.write_model(120),
    "lifelog day": lifelog_plan.day_answer(("第一次周会",), 10),
    "relation verdict": relations.RelationVerdict,
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_a_zh_schema_shows_no_english_and_its_labels_map_back(name):
    raw = SCHEMAS[name].model_json_schema()
    shown, labels = native_schema(raw, "zh")
    assert not schema_words(shown), f"{name}: English in the zh schema: {sorted(schema_words(shown))}"
    assert native_schema(raw, "en") == (raw, {}), "an English prompt shows the schema as it is"
    assert schema_words(raw) or name in ("trace", "qa write", "relation verdict"), "the check has something to catch on the raw schema"


def test_native_enum_labels_decode_to_the_codes_the_data_keeps():
    shown, labels = native_schema(SCHEMAS["events"].model_json_schema(), "zh")
    kinds = json.dumps(shown, ensure_ascii=False)
    assert '"事实"' in kinds and '"fact"' not in kinds
    answer = {"events": [{"evidence": [{"kind": "情绪", "statement": "她在车里哭了。"}]}]}
    assert decode_answer(answer, labels)["events"][0]["evidence"][0]["kind"] == "emotion"


def strings(value) -> list[str]:
    """Every string a scripted context holds (the values a template substitutes), longest first."""
    if isinstance(value, str):
        return [value]
    found = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else []
    return sorted({s for v in found for s in strings(v)}, key=len, reverse=True)


CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")


@pytest.mark.parametrize("name", zh_case.templates())
def test_an_english_prompt_has_no_chinese_of_its_own(name):
    """Every template rendered in English over the Chinese scripted contexts: with the substituted values taken out,
    no Chinese is left (a zh label or a zh rule leaking into the en branch)."""
    for values in zh_case.scripted(name):
        body = "\n".join(m["content"] for m in render(name, language="en", **values))
        for value in strings(values):
            body = body.replace(value, "")
        assert not CJK.search(body), f"prompts/{name}: Chinese in the en render: {CJK.findall(body)[:10]}"


def test_every_partial_is_reached_by_a_scripted_render():
    """A shared piece (`_x.j2`) no scripted template includes is never linted."""
    from pathlib import Path

    from synth.config.prompts import prompts_dir
    sources = {p.name: p.read_text() for p in Path(prompts_dir()).glob("*.j2")}
    partials = {n for n in sources if n.startswith("_")}

    def named(text: str) -> set[str]:
        return {n for n in partials if f'"{n}"' in text or f"'{n}'" in text}

    used = {n for name in zh_case.templates() for n in named(sources[name])}
    used |= {n for m in set(used) for n in named(sources[m])}
    assert used == partials, f"partials no scripted render reaches: {sorted(partials - used)}"


@pytest.mark.parametrize("name", ["arcs_seeds.j2", "arcs_plan.j2", "arcs_major_events.j2", "events_generate.j2",
                                  "traces_plan.j2"])
def test_a_zh_prompt_shows_no_enum_code_beside_its_label(name):
    body = text(name, "zh")
    assert not re.search(r"[\u4e00-\u9fff]（[a-z_]+）", body), name
    assert "英文" not in body, f"{name}: an id rule stated as a language rule"


# ---- planning the life

def test_a_one_event_phase_is_not_asked_for_exactly_one_spread_over_the_phase():
    for language in ("en", "zh"):
        for kind in ("everyday", "major"):
            event = {**(zh_case.EVENT_VIEW if language == "zh" else en_case.VARIABLES["events_generate.j2"]["event"]),
                     "kind": kind}
            body = text("events_generate.j2", language, count=1, event=event)
            assert not re.search(r"exactly 1\b|恰好 1 个", body), (language, kind)
            assert "spread over" not in body and "分散在整个阶段" not in body, (language, kind)


def test_each_reached_state_gets_its_own_event():
    moves = [{**m, "reaches": [m["reaches"][0]] * 3} for m in zh_case.MOVES]
    body = text("events_generate.j2", "zh", moves=moves, count=3)
    assert "3 个状态各由一个不同的事件引起" in body
    lone = text("events_generate.j2", "en", count=1)
    assert "Each of the 1 state marked" in lone


@pytest.mark.parametrize("name", ["phases_generate.j2", "events_generate.j2"])
def test_an_arc_after_a_reached_state_starts_on_its_own_line(name):
    """A capable writer read "…夸人.- "第二条" now: …": the line of a state reached in the phase lost its line break,
    so the next arc ran on after it."""
    arc = zh_case.MOVES[0]
    moves = [arc, {**arc, "arc": "second-arc"}]
    for language in ("en", "zh"):
        body = text(name, language, moves=moves)
        assert re.search(r"\n- (「|\")second-arc", body), body[body.find("second-arc") - 80:][:120]


def test_a_place_of_one_visit_is_said_in_a_few_words():
    """A capable writer, given one hospital by name, read a transfer for an angiogram as a place it may not name."""
    assert "A place visited once or twice needs no entry: say it in a few words" in text("phases_generate.j2", "en")
    assert "只去一两次的地方不用登记，用几个字说清楚" in text("phases_generate.j2", "zh")


def test_an_evidence_never_sets_the_length_of_its_trace():
    """An evidence asked for "a four-screen message" that its message thread (40–200 words) could not hold: two length
    rules for one text. The medium's band is the only one."""
    assert "never how long a message or an entry was" in text("events_generate.j2", "en", count=1)
    assert "不写一条消息或一篇记录有多长" in text("events_generate.j2", "zh", count=1)


def test_an_event_never_sets_the_length_of_what_the_person_wrote():
    """An event said the diary held "only one line" ("日记本上只潦草地写了一行") while its diary trace had to be
    102–374 characters: the event's description, like its evidence, leaves length to the medium."""
    assert 'never how long something the person wrote was, such as "only one line"' in text(
        "events_generate.j2", "en", count=1)
    assert "不写此人写下的东西有多长" in text("events_generate.j2", "zh", count=1)


def test_the_medium_hint_is_its_own_sentence_after_privacy():
    """"不必每个事件都照顾到（参考：微博）": a medium name in brackets after the rule on shares read as a riddle."""
    for language, said, old in (("en", "Media to consider (a suggestion; the evidence's privacy comes first): diary",
                                 "(a hint:"),
                                ("zh", "可以考虑的媒介（只是建议，证据的私密程度优先）：", "（参考：")):
        body = text("traces_plan.j2", language, suggested=["diary"])
        assert said in body and old not in body, language


def test_an_event_past_midnight_is_asked_on_the_next_day():
    """A capable writer stamped an event "2 月 18 日夜里十二点多" as day 18, hour 0 — the night before — and every
    later prompt carried the day's error (a "next morning" evidence a day off its event)."""
    assert "past midnight is the next day" in text("events_generate.j2", "en", count=1)
    assert "过了午夜就算第二天" in text("events_generate.j2", "zh", count=1)


def test_a_location_is_asked_by_a_listed_name_only_when_places_are_listed():
    assert "a regular place listed above" not in text("events_generate.j2", "en", introduced=[])
    place = {"kind": "place", "name": "Ward 7", "relation": "ward", "description": "her ward"}
    assert "a regular place listed above by its name" in text("events_generate.j2", "en", introduced=[place])
    assert "上面列出的常去地点" not in text("events_generate.j2", "zh", introduced=[])


def test_every_listed_person_may_take_part():
    people = tuple(f"P{n}" for n in range(6))
    schema = events_stage.events_answer(7, people, ("arc",), 1, 1, 2, 1, 0).model_json_schema()
    participants = schema["$defs"]["EventDraft"]["properties"]["participants"]
    assert participants["maxItems"] == 6


def test_transitions_spread_over_the_phases_of_an_event():
    before, target = {"a": 0, "b": 0, "c": 0}, {"a": 1, "b": 1, "c": 1}
    first = phases_stage.states_after(before, target, 0, 2)
    assert sum(first.values()) == 2, "two of three transitions in the first phase, one left for the second"
    assert phases_stage.states_after(first, target, 1, 2) == target


def test_the_change_an_event_tells_first_comes_in_its_first_phase():
    """A writer's event had the class reunion (the opinion arc's trigger) before the deadlines were checked (the
    experience arc's): stepping in arc order put the deadlines in the first phase and the reunion in the second."""
    from synth.records import LifeArc

    def arc(arc_id: str, dimension: str, trigger: str, label: str) -> LifeArc:
        states = [{"label": "before", "description": "d", "trigger": "t", "cues": []},
                  {"label": label, "description": "d", "trigger": trigger, "cues": []}]
        return LifeArc(id=arc_id, persona_id="p", dimension=dimension, title=arc_id, description="d",
                       anchor_states=states)

    arcs = [arc("exp", "experience", "she checks the application deadlines", "preparing in earnest"),
            arc("opi", "opinion", "a classmate's promotion at the reunion", "doubts her path")]
    told = "At the class reunion a classmate's promotion stings; afterwards she checks three deadlines."
    before, target = {"exp": 0, "opi": 0}, {"exp": 1, "opi": 1}
    ordered = phases_stage.told_order(told, arcs, before, target)
    assert list(ordered) == ["opi", "exp"] and ordered == target
    assert phases_stage.states_after(before, ordered, 0, 2) == {"exp": 0, "opi": 1}
    assert phases_stage.states_after(before, target, 0, 2) == {"exp": 1, "opi": 0}  # arc order: the other way
    # untold arcs keep arc order, after the told ones; zh by character pairs
    assert list(phases_stage.told_order("Nothing said.", arcs, before, target)) == ["exp", "opi"]
    zh = [arc("exp", "experience", "查清申请截止时间", "开始冲刺"), arc("opi", "opinion", "同学聚会上听说升职", "动摇")]
    assert list(phases_stage.told_order("同学聚会后，她查清了三所学校的截止时间。", zh, before, target)) == ["opi", "exp"]


def test_a_change_the_event_dates_later_waits_for_its_phase():
    """A writer's first phase was told the state "paid in full" while the event's own text said "his last invoice is
    paid on 31 January", a date of the second phase; a change dated inside a phase's range makes the phase end on
    that day or later."""
    import datetime as dt

    from synth.records import LifeArc, MajorEvent

    def arc(arc_id: str, trigger: str) -> LifeArc:
        states = [{"label": "before", "description": "d", "trigger": "t", "cues": []},
                  {"label": "after", "description": "d", "trigger": trigger, "cues": []}]
        return LifeArc(id=arc_id, persona_id="p", dimension="experience", title=arc_id, description="d",
                       anchor_states=states)

    arcs = [arc("pay", "his last invoice is paid"), arc("gym", "joins the climbing gym")]
    told = "He joins the climbing gym on 12 January. His last invoice is paid on 31 January, and he exhales."
    event = MajorEvent(id="m", persona_id="p", index=0, title="M", description=told, start=dt.date(2022, 1, 10),
                       end=dt.date(2022, 2, 8), arc_states=[])
    before, target = {"pay": 0, "gym": 0}, {"pay": 1, "gym": 1}
    days = phases_stage.trigger_days(told, arcs, before, target, event.start)
    assert days == {"pay": dt.date(2022, 1, 31), "gym": dt.date(2022, 1, 12)}
    after = phases_stage.states_after(before, target, 0, 2)
    assert after == {"pay": 1, "gym": 0}, "arc order alone would put the invoice first"
    slot = phases_stage.phase_slot(event, 0, 2, None, None, phases_stage.phases_reaching(after, target, 0, 2))
    assert slot.date(slot.high) < dt.date(2022, 1, 31)
    slot, after = phases_stage.dated_slot(slot, days, before, after, target, None, None)
    assert after == {"pay": 0, "gym": 1}
    assert slot.date(slot.low) == dt.date(2022, 1, 12), "the phase takes in the day its change is dated to"
    # a day inside the phase's range but past its fair share waits too: a writer's first phase was stretched to the
    # show its event dated on the fourteenth of fifteen days, leaving the second one day
    show = MajorEvent(id="m2", persona_id="p", index=1, title="S", description="d", start=dt.date(2022, 3, 2),
                      end=dt.date(2022, 3, 16), arc_states=[])
    one = {"pay": 1}
    first = phases_stage.phase_slot(show, 0, 2, None, None, 0)
    assert first.date(first.high) >= dt.date(2022, 3, 15)
    late, stays = phases_stage.dated_slot(first, {"pay": dt.date(2022, 3, 15)}, {"pay": 0}, one, one, None, None)
    assert stays == {"pay": 0} and late.date(late.low) < dt.date(2022, 3, 15)
    # the last phase reaches every target, whatever its text dates
    assert phases_stage.states_after(after, target, 1, 2, frozenset({"pay"})) == target
    zh = [arc("pay", "尾款到账"), arc("gym", "办了攀岩馆的卡")]
    assert phases_stage.trigger_days("他1月12日办了攀岩馆的卡。尾款1月31日到账。", zh, before, target,
                                     event.start) == days


def test_a_state_comes_where_its_outcome_is_told_not_its_first_cause():
    """A writer's event told an invitation to demo at a festival at its start, the side projects shelved next and
    the demo itself at its end; the state "presenting on stage" (trigger: the invitation) came in the first phase
    and the shelving in the second."""
    from synth.records import LifeArc

    def arc(arc_id: str, trigger: str, label: str) -> LifeArc:
        states = [{"label": "before", "description": "d", "trigger": "t", "cues": []},
                  {"label": label, "description": "d", "trigger": trigger, "cues": []}]
        return LifeArc(id=arc_id, persona_id="p", dimension="experience", title=arc_id, description="d",
                       anchor_states=states)

    arcs = [arc("demo", "an invitation to demo the prototype", "presenting on stage to investors"),
            arc("side", "shelving the side projects", "single-minded")]
    told = ("An invitation arrives to demo the prototype at the festival. He shelves the side projects to make "
            "time. Three weeks later he is presenting on stage to a room of investors.")
    before, target = {"demo": 0, "side": 0}, {"demo": 1, "side": 1}
    ordered = phases_stage.told_order(told, arcs, before, target)
    assert list(ordered) == ["side", "demo"]
    assert phases_stage.states_after(before, ordered, 0, 2) == {"demo": 0, "side": 1}
    # a label the description never tells: the trigger alone places it (the invitation still comes first)
    quiet = [arc("demo", "an invitation to demo the prototype", "keyed up"), arcs[1]]
    assert list(phases_stage.told_order(told, quiet, before, target)) == ["demo", "side"]
    zh = [arc("demo", "收到路演邀请", "登台路演"), arc("side", "搁置副业项目", "一心一意")]
    said = "她收到路演邀请，随即搁置副业项目。三周后她登台面对投资人。"
    assert list(phases_stage.told_order(said, zh, before, target)) == ["side", "demo"]


def test_a_cue_on_a_weekday_the_phase_lacks_is_marked_for_the_writer():
    """"Tells his mother the news on their Sunday call" reached in a phase of a Wednesday and a Thursday."""
    from synth.records import LifeArc
    from synth.stages.common import arc_moves

    state = {"label": "l", "description": "d", "trigger": "t"}
    arc = LifeArc(id="a", persona_id="p", dimension="experience", title="Heart", description="d", anchor_states=[
        {**state, "cues": ["checks his pulse"]},
        {**state, "cues": ["tells his mother the news on their Sunday call", "每周六去爬山"]}])
    wed, thu = dt.date(2022, 2, 2), dt.date(2022, 2, 3)
    (move,) = arc_moves([arc], {}, {"a": 1}, (wed, thu))
    assert move["reaches"][0]["absent_days"] == [5, 6]
    (week,) = arc_moves([arc], {}, {"a": 1}, (wed, wed + dt.timedelta(days=6)))
    assert week["reaches"][0]["absent_days"] == []
    body = text("phases_generate.j2", "en", moves=[move])
    assert "this phase has no Saturday or Sunday" in body
    assert "这个阶段里没有周六、周日" in text("phases_generate.j2", "zh", moves=[move])
    assert "this phase has no" not in text("phases_generate.j2", "en", moves=[week])


def test_a_state_of_a_later_phase_is_shown_as_later_and_the_marks_decide():
    """A major event's description put the father's "we'll back you" (the trigger of an opinion state) in the first
    weekend's call while the shared transitions gave that state to the second phase; the first phase's prompt
    did not say the state comes later, nor which of the two wins."""
    from synth.records import LifeArc
    from synth.stages.common import arc_moves
    from synth.stages.phases import states_after

    state = {"label": "l", "description": "d", "trigger": "t", "cues": ["c"]}
    arcs = [LifeArc(id=a, persona_id="p", dimension="opinion", title=a, description="d",
                    anchor_states=[state, {**state, "label": f"{a} backed"}]) for a in ("x", "y")]
    target = {"x": 1, "y": 1}
    first = states_after({}, target, 0, 2)
    moves = arc_moves(arcs, {}, first, None, target)
    assert [len(m["reaches"]) for m in moves] == [1, 0] and [len(m["later"]) for m in moves] == [0, 1]
    body = text("phases_generate.j2", "en", moves=moves)
    assert 'reached in a later phase of this event' in body and '"y backed"' in body and "this mark decides" in body
    assert "本事件后面的阶段才进入" in text("phases_generate.j2", "zh", moves=moves)
    last = arc_moves(arcs, first, states_after(first, target, 1, 2), None, target)
    assert all(not m["later"] for m in last)
    assert "later phase" not in text("phases_generate.j2", "en", moves=last)
    # a phase that reaches nothing before a later phase's change leads up to it (it was told to live with a change
    # that had not come: its state waited for the day the event dates it to)
    waiting = arc_moves(arcs, {}, {}, None, target)
    assert all(not m["reaches"] for m in waiting) and all(m["later"] for m in waiting)
    assert "leading up to the states" in text("phases_generate.j2", "en", moves=waiting)
    assert "lives with the change so far" not in text("phases_generate.j2", "en", moves=waiting)
    assert "一步步走向" in text("phases_generate.j2", "zh", moves=waiting)
    assert "lives with the change so far" in text("phases_generate.j2", "en", moves=[
        {**m, "later": []} for m in waiting])


@pytest.mark.parametrize("name", ["phases_generate.j2", "events_generate.j2"])
def test_more_newcomers_than_the_cap_have_a_rule(name):
    """"Two members invite him" with new_people at most 1: the prompt says who is named and who is not."""
    assert 'call the others by their role, "another regular"' in text(name, "en", newcomers=1)
    assert "其余的按身份称呼" in text(name, "zh", newcomers=1)


def test_a_one_day_phase_is_not_asked_for_a_gradual_stretch():
    """A capable writer's second phase was one day (its end forced to its start) and was asked for "a gradual
    stretch of change, not an isolated incident"."""
    one = text("phases_generate.j2", "en", start_day=7, low=7, high=7)
    assert "gradual stretch of change" not in one and "this phase is 1 day long" in one
    assert "这个阶段只有1天" in text("phases_generate.j2", "zh", start_day=7, low=7, high=7)
    assert "gradual stretch of change" in text("phases_generate.j2", "en", start_day=7, low=9, high=12)
    assert "逐渐变化的过程" in text("phases_generate.j2", "zh", start_day=7, low=9, high=12)


def test_a_phase_that_reaches_no_state_is_not_asked_for_change():
    still = [{**m, "reaches": []} for m in zh_case.MOVES]
    body = text("phases_generate.j2", "en", moves=[{**m, "reaches": []} for m in en_case.VARIABLES["phases_generate.j2"]["moves"]])
    assert "gradual stretch of change" not in body and "reaches no new state" in body
    assert "逐渐变化的过程" not in text("phases_generate.j2", "zh", moves=still)


def test_an_evidence_stays_within_what_its_traces_can_hold():
    """An evidence of a New Year's Eve event told of a doctor's visit three days later, while its one trace could
    come at most 48 hours after the event and must not tell what happens after it: the writer could meet only one."""
    en = text("events_generate.j2", "en", within_hours=48)
    assert "within 48 hours of it" in en and "is an event of its own" in en
    assert "事件之后 48 小时之内" in text("events_generate.j2", "zh", within_hours=48)


def test_a_state_s_cues_are_shown_as_fit_where_the_person_is():
    """A state's cue "on the phone with her mother, first says 'I want to think again'" reached in a phase she spends
    at home with her mother: the writer had the mother call from a shift to keep to the cue's letter."""
    en = text("phases_generate.j2", "en")
    assert "Observable cues (shown as fits where the person is at the time" in en
    assert "可观察的线索（以合乎此人此时处境的方式出现" in text("phases_generate.j2", "zh")


def test_an_events_prompt_of_a_phase_that_reaches_no_state_asks_for_no_change():
    """"Write one concrete event that shows the change from the start state to the end state", then "This phase
    reaches no new state": a capable writer met both in one request."""
    still_en = [{**m, "reaches": []} for m in en_case.variables("events_generate.j2", "en")["moves"]]
    body = text("events_generate.j2", "en", moves=still_en)
    assert "reaches no new state" in body and "the change from the start state" not in body
    still_zh = [{**m, "reaches": []} for m in zh_case._generation("events_generate.j2")["moves"]]
    body = text("events_generate.j2", "zh", moves=still_zh)
    assert "没有进入新的状态" in body and "展现从开始状态到结束状态的变化" not in body
    assert "the change from the start state" in text("events_generate.j2", "en")  # a phase that does reach one


def test_the_day_0_snapshot_does_not_see_the_first_major_event():
    event = {**zh_case.EVENT_VIEW, "description": "病人去世，她在停车场哭了。"}
    body = text("phases_init.j2", "zh", event=event)
    assert "病人去世" not in body
    variables = phases_stage.init_variables.__code__.co_varnames
    assert "first" in variables  # the signature is kept; the event is not a prompt variable any more


def test_the_arcs_prompts_say_the_real_span():
    for name in ("arcs_seeds.j2", "arcs_plan.j2", "arcs_major_events.j2"):
        body = text(name, "en")
        assert "coming years" not in body and "2022-01-01" in body, name


def test_a_make_up_day_is_named_by_its_festival_first():
    (eve,) = holidays_between("CN", "zh", "2022-01-31", "2022-01-31")
    assert eve["name"].startswith("除夕"), eve
    (eve_en,) = holidays_between("CN", "en", "2022-01-31", "2022-01-31")
    assert eve_en["name"].startswith("Chinese New Year's Eve"), eve_en


# ---- traces

def test_words_said_aloud_are_never_hinted_to_a_to_do_list():
    """A capable planner was hinted "todo_list" for evidence quoting what she said to her partner at dinner."""
    from synth.config import conf, settings
    from synth.records import Event, Evidence

    section = settings.parse(conf.preset_config("small")).traces
    weights = {"todo_list": 1e9, "diary": 1e-9, "message_thread": 1e-9}  # the seeded draw alone: the to-do list
    event = Event(id="e", persona_id="p", phase_id="ph", time=dt.datetime(2022, 3, 7, 20), title="t",
                  description="d", location="", participant_ids=[])
    said = [Evidence(id="v", persona_id="p", event_id="e", kind="fact", arc_ids=[],
                     statement='Over dinner Dana told Evan: "The agreement was the end of last year."')]
    terse = frozenset(section.terse_media)
    assert "todo_list" in terse
    hint = traces_stage.plan_variables({}, event, said, 1, weights, 48, terse=terse)["suggested"]
    assert hint != ["todo_list"] and hint
    plain = [said[0].model_copy(update={"statement": "Dana needs to call the bank about the loan."})]
    assert traces_stage.plan_variables({}, event, plain, 1, weights, 48, terse=terse)["suggested"] == ["todo_list"]


def planned_hint(statement: str, weights: dict[str, float], rules: tuple[str, ...], participants: tuple[str, ...] = (),
                 private: bool = False) -> list[str]:
    """The medium hint for one evidence of an evening moment with `participants`, under the small preset's said and
    typed words and its media lists named in `rules` ("terse", "addressed", "typed")."""
    from synth.config import conf, settings
    from synth.records import Event, Evidence

    section = settings.parse(conf.preset_config("small")).traces
    event = Event(id="e", persona_id="p", phase_id="ph", time=dt.datetime(2022, 3, 15, 19, 30), title="t",
                  description="d", location="", participant_ids=list(participants))
    evidence = [Evidence(id="v", persona_id="p", event_id="e", kind="fact", arc_ids=[], private=private,
                         statement=statement)]
    media = {rule: frozenset(getattr(section, f"{rule}_media")) for rule in rules}
    return traces_stage.plan_variables({}, event, evidence, 1, weights, 48, said=(
        tuple(section.said_words), tuple(section.typed_words)), **media)["suggested"]


def test_words_reported_without_quotes_are_never_hinted_to_a_to_do_list():
    """A capable planner was hinted a to-do list for a text to her partner and words to a colleague, both reported
    without quotation marks: a to-do line cannot hold what was said or written."""
    weights = {"todo_list": 1e9, "diary": 1e-9}  # the seeded draw alone: the to-do list

    def hint(statement: str) -> list[str]:
        return planned_hint(statement, weights, ("terse",), ("k",))

    assert hint("Dana texted Marcus that his calf raises had got her through twenty minutes.") == ["diary"]
    assert hint("When Kevin joked, Dana told him rest days are a term of the deal.") == ["diary"]
    assert hint("他发微信跟妻子说，这周已经做了三十多页幻灯片。") == ["diary"]
    assert hint("Dana needs to book a physio appointment for Tuesday.") == ["todo_list"]


def test_private_words_said_to_someone_in_the_moment_are_never_hinted_to_an_email():
    """A capable planner was hinted email for three private things said to her partner over dinner: the one to
    write to sat across the table. Said to someone not in the moment, or typed, the email may stay."""
    weights = {"email": 1e9, "diary": 1e-9}  # the seeded draw alone: the email

    def hint(statement: str, private: bool = True) -> list[str]:
        return planned_hint(statement, weights, ("addressed",), ("marcus",), private)

    assert hint("Dana cooked salmon for Marcus and told him at dinner she had been unfair to Tom.") == ["diary"]
    assert hint("晚饭时她当面跟丈夫说，自己对弟弟太不公平了。") == ["diary"]
    assert hint("Dana cooked salmon for Marcus and told him at dinner.", private=False) == ["email"]
    assert hint("Dana emailed her sister that she had been unfair to Tom.") == ["email"]
    # told by name, over a pint: a capable planner was hinted email for words said to a friend at the pub
    told = "Over a pint on 10 March Ciaran told Darragh, 'I've been talking to someone, actually,' and Darragh nodded."
    assert hint(told) == ["diary"]
    assert hint("Ciaran told Darragh in a text that he had been talking to someone.") == ["email"]


def test_a_moment_with_someone_outside_work_is_never_hinted_to_an_email():
    """A capable planner was hinted email for a phone-free dinner with her partner (nothing private in it) and
    wrote to a friend in a message thread instead: a letter about an evening out with someone close is not how
    people keep it. In a work moment, or when the evidence says it was emailed, the email may stay."""
    from synth.config import conf, settings
    from synth.records import Event, Evidence

    section = settings.parse(conf.preset_config("small")).traces
    weights = {"email": 1e9, "message_thread": 1e-9, "diary": 1e-9}  # the seeded draw alone: the email
    event = Event(id="e", persona_id="p", phase_id="ph", time=dt.datetime(2022, 3, 3, 19, 15), title="t",
                  description="d", location="", participant_ids=["dan"])

    def hint(statement: str, work: bool, people: tuple[str, ...] = ("dan",)) -> list[str]:
        evidence = [Evidence(id="v", persona_id="p", event_id="e", kind="fact", arc_ids=[], private=False,
                             statement=statement)]
        moment = event.model_copy(update={"participant_ids": list(people)})
        return traces_stage.plan_variables({}, moment, evidence, 1, weights, 48, work=work,
                                           addressed=frozenset(section.addressed_media),
                                           typed=frozenset(section.typed_media), posted=section.posted)["suggested"]

    dinner = "At dinner with Dan on March 3 Meg kept her phone zipped in her coat pocket for the whole meal."
    assert hint(dinner, work=False) == ["message_thread"]
    assert hint(dinner, work=True) == ["email"]
    assert hint(dinner, work=False, people=()) == ["email"]
    assert hint("After dinner Meg emailed her sister that Dan had chosen the restaurant.", work=False) == ["email"]


def test_words_said_aloud_are_never_hinted_to_a_message_thread():
    """A capable planner was hinted a message thread for words said face to face to his wife that evening, while the
    rule says a thread never holds words said face to face: it retold them and noted the hint against the rule."""
    from synth.config import conf, settings
    from synth.records import Event, Evidence

    section = settings.parse(conf.preset_config("small")).traces
    typed, said = frozenset(section.typed_media), (tuple(section.said_words), tuple(section.typed_words))
    assert {"message_thread", "wechat_chat"} <= typed
    weights = {"message_thread": 1e9, "wechat_chat": 1e9, "diary": 1e-9}  # the seeded draw alone: a thread
    event = Event(id="e", persona_id="p", phase_id="ph", time=dt.datetime(2022, 3, 7, 20), title="t",
                  description="d", location="", participant_ids=["w"])

    def hint(statement: str) -> list[str]:
        evidence = [Evidence(id="v", persona_id="p", event_id="e", kind="fact", arc_ids=[], statement=statement)]
        return traces_stage.plan_variables({}, event, evidence, 1, weights, 48, typed=typed, said=said)["suggested"]

    assert hint('Over dinner he told Priya he had "done more than thirty slides" that day.') == ["diary"]
    assert hint("晚饭时他当面跟妻子说，这周已经做了三十多页幻灯片。") == ["diary"]
    # typed words may stand in a thread; evidence that says nothing of saying keeps the draw
    assert hint('He texted Priya that he had "done more than thirty slides" that day.') != ["diary"]
    assert hint("他发微信跟妻子说，这周已经做了三十多页幻灯片。") != ["diary"]
    assert hint("He finished thirty slides for the pitch.") != ["diary"]
    # a said word inside another word is not one ("aloudness" is not "aloud")
    assert not traces_stage.said_aloud("The aloudness of the room", ("aloud",), ())


def test_evidence_typed_in_a_message_is_hinted_to_that_message_whatever_is_said_beside_it():
    """A capable planner was hinted a diary (and a note) for a physio's words to Gareth beside his text to a friend
    about them: the words said aloud left every thread out, while the text itself lives in one. It wrote the
    thread instead and noted the hint."""
    from synth.config import conf, settings
    from synth.records import Event, Evidence

    section = settings.parse(conf.preset_config("small")).traces
    rules = {f"{rule}_media": frozenset(getattr(section, f"{rule}_media")) for rule in ("typed", "addressed", "terse")}
    said = (tuple(section.said_words), tuple(section.typed_words))
    weights = {"message_thread": 1e-9, "wechat_chat": 1e-9, "diary": 1e9}  # the seeded draw alone: the diary
    event = Event(id="e", persona_id="p", phase_id="ph", time=dt.datetime(2022, 3, 15, 11), title="t",
                  description="d", location="", participant_ids=["b"])

    def hint(*statements: str) -> list[str]:
        evidence = [Evidence(id=f"v{n}", persona_id="p", event_id="e", kind="fact", arc_ids=[], statement=text)
                    for n, text in enumerate(statements)]
        return traces_stage.plan_variables({}, event, evidence, 1, weights, 48, said=said, posted=section.posted,
                                           typed=rules["typed_media"], addressed=rules["addressed_media"],
                                           terse=rules["terse_media"])["suggested"]

    physio = "On 15 March Bethan told Gareth his knee was bending better than at any time since he started physio."
    assert hint(physio) == ["diary"], "words said aloud alone: no thread"
    assert hint(physio, "After the session Gareth texted Rhian that he had been promoted to top of the class.") == [
        "message_thread"]
    assert hint("理疗师当面告诉他膝盖好多了。", "出来后他发微信跟女儿说，作业减半了。") == ["wechat_chat"]
    # a sticker sent to someone is a chat message (a planner was hinted a diary for "给郑可欣发了…的表情包")
    assert hint("评审会后她改出了第四版，给郑可欣发了“第四版，来了”的表情包。") == ["wechat_chat"]
    # a post the evidence names stays out when the one trace must carry more than a short medium holds (a planner
    # was hinted 朋友圈, at most 85 characters and one evidence, for a trace of two evidence)
    short = {"moments": 50}
    moments = {"moments": 1e9, "diary": 1e-9}
    two = [Evidence(id=f"v{n}", persona_id="p", event_id="e", kind="fact", arc_ids=[], statement=text) for n, text in
           enumerate(["她发朋友圈晒了和母亲的合照。", "那晚她十二点四十就睡着了。"])]
    assert traces_stage.plan_variables({}, event, two, 1, moments, 48, said=said, posted=section.posted,
                                       short=short)["suggested"] == ["diary"]
    assert traces_stage.plan_variables({}, event, two[:1], 1, moments, 48, said=said, posted=section.posted,
                                       short=short)["suggested"] == ["moments"]
    # two messages, one trace: no thread holds both (the writer retold them in a diary)
    weights.update(message_thread=1e9)  # the seeded draw alone would now name the thread
    assert hint("He texted Dana that the demo slipped.", "He messaged Priya that he was fine.") == ["diary"]


def test_a_medium_an_evidence_was_typed_in_is_not_hinted_when_the_one_trace_carries_private_evidence_it_rules_out():
    """A capable planner was hinted an email for one trace of three evidence: an invoice emailed to a client, a
    grin at his blog's stats he kept to himself, a text left unanswered; and a thread for a text to a friend beside
    an afternoon of refreshing his bank app. The one trace carries the private evidence too, so it cannot be
    written to anyone; with a trace for each evidence, the medium it was typed in stays."""
    from synth.config import conf, settings
    from synth.records import Event, Evidence

    section = settings.parse(conf.preset_config("small")).traces
    weights = {"email": 1e-9, "message_thread": 1e-9, "diary": 1e9}  # the seeded draw alone: the diary
    event = Event(id="e", persona_id="p", phase_id="ph", time=dt.datetime(2022, 2, 28, 17, 30), title="t",
                  description="d", location="", participant_ids=[])

    def hint(count: int, *evidence: tuple[str, bool]) -> list[str]:
        rows = [Evidence(id=f"v{n}", persona_id="p", event_id="e", kind="fact", arc_ids=[], statement=text,
                         private=private) for n, (text, private) in enumerate(evidence)]
        return traces_stage.plan_variables({}, event, rows, count, weights, 48, posted=section.posted, close=False,
                                           addressed=frozenset(section.addressed_media),
                                           typed=frozenset(section.typed_media))["suggested"]

    invoice = ("On 28 February Declan emailed the Berlin startup its February invoice.", False)
    grin = ("That evening Declan kept checking his blog post's stats, grinning as the views passed 300.", True)
    assert hint(1, invoice, grin) == ["diary"]
    assert hint(2, invoice, grin)[0] == "email", "a trace each: the email may be the invoice's"
    assert hint(1, invoice, (grin[0], False)) == ["email"], "nothing private: the email it was sent in"
    rory = ("When Rory texted that he would keep an ear out, Declan answered with a thumbs-up.", False)
    bank = ("Through the afternoon Declan kept refreshing his inbox and his bank app.", True)
    assert hint(1, rory, bank) == ["diary"]


def test_private_evidence_of_a_moment_alone_is_never_hinted_to_an_email():
    """A capable planner, hinted email for private evidence of a moment with no one else in it, invented a reply to
    a therapist's pre-appointment email that no event holds: there was no one to write it to."""
    from synth.config import conf, settings
    from synth.records import Event, Evidence

    section = settings.parse(conf.preset_config("small")).traces
    addressed = frozenset(section.addressed_media)
    assert {"email", "wechat_chat"} <= addressed
    weights = {"email": 1e9, "diary": 1e-9}  # the seeded draw alone: the email
    alone = Event(id="e", persona_id="p", phase_id="ph", time=dt.datetime(2022, 3, 7, 21), title="t",
                  description="d", location="", participant_ids=[])
    kept = [Evidence(id="v", persona_id="p", event_id="e", kind="emotion", arc_ids=[], private=True,
                     statement="She has not told anyone that she booked a therapist.")]
    assert traces_stage.plan_variables({}, alone, kept, 1, weights, 48, addressed=addressed)["suggested"] == ["diary"]
    # evidence that is not private keeps the email
    told = [kept[0].model_copy(update={"private": False})]
    assert traces_stage.plan_variables({}, alone, told, 1, weights, 48, addressed=addressed)["suggested"] == ["email"]


def test_private_evidence_is_hinted_to_an_email_only_when_it_is_told_to_someone_close():
    """A capable planner was hinted email for private unease at a handover to a colleague, for the fear he told no
    one after a visit to his GP, and for a doubt she hid from everyone present while her mother was in the moment
    (she told the carer she was "only asking"): an email or a message fits private words only when the evidence
    has them told to someone close, and never when it says they were kept from others."""
    from synth.config import conf, settings
    from synth.records import Event, Evidence
    from synth.stages.common import confided, names_close

    section = settings.parse(conf.preset_config("small"))
    addressed = frozenset(section.traces.addressed_media)
    work_words = section.chats.work_words
    close_words = [*section.chats.family_words, *section.traces.close_words]
    concealed = section.traces.concealed_words
    people = {"Jenna Moss": "colleague", "Rosa Medeiros": "her mother's home-care worker",
              "Elise Laurent": "old school friend", "Ingrid Lindqvist": "mother", "Dr. Farah Siddiqui": "GP"}
    weights = {"email": 1e9, "diary": 1e-9}
    moment = Event(id="e", persona_id="p", phase_id="ph", time=dt.datetime(2022, 3, 30, 7, 45), title="t",
                   description="d", location="", participant_ids=["rosa", "ingrid"])

    def hint(statement: str) -> list[str]:
        kept = [Evidence(id="v", persona_id="p", event_id="e", kind="emotion", arc_ids=[], private=True,
                         statement=statement)]
        close = confided([statement], people, work_words, close_words, concealed)
        return traces_stage.plan_variables({}, moment, kept, 1, weights, 48, addressed=addressed,
                                           close=close)["suggested"]

    # the hidden doubt: her mother is in the moment, but the private evidence tells it to no one
    assert hint("Margaret stayed up past 1 a.m. browsing adult day programmes and bookmarked two.") == ["diary"]
    assert hint("Jenna Moss took over the handover; Margaret did not let on how uneasy it made her.") == ["diary"]
    assert hint("After the ECG Dr. Farah Siddiqui said it was fine; he has told no one how scared he was.") == ["diary"]
    assert hint("Margaret has not told Elise that she is thinking of a care home.") == ["diary"]
    # told to someone close, by name, first name or relation: the email may stay
    for told in ("Margaret told Elise Laurent she felt she was failing her mother.",
                 "Margaret admitted to Elise that she had not slept in weeks.",
                 "她跟我妈说自己其实很怕。", "He texted his sister that he was scared."):
        assert hint(told) == ["email"], told
    # a colleague or a doctor named is no one to write private words to; a friend, 室友 or 男朋友 is
    assert names_close("Jenna Moss said nothing.", {"Jenna Moss": "colleague"}, work_words, close_words) is False
    assert names_close("Farah listened.", {"Dr. Farah Siddiqui": "GP"}, work_words, close_words) is False
    for relation in ("old school friend", "室友", "男朋友", "mother"):
        assert names_close("小王听他说完了。", {"小王": relation}, work_words, close_words) is True, relation
    # English words match whole: "son" is not in "reason" or "person"
    assert names_close("For no reason the person left.", {}, work_words, close_words) is False


def test_a_trace_plan_leaves_the_length_to_the_medium():
    """A capable planner's key_information said a diary entry was "only a line or two", against its 102–374 字."""
    assert "never how long it is: the medium sets its length" in text("traces_plan.j2", "en")
    assert "不写篇幅长短，篇幅由媒介决定" in text("traces_plan.j2", "zh")


def test_a_trace_plan_keeps_the_audience_its_medium_allows():
    """A capable planner chose a voice memo ("private, spoken to themself") with his daughter as its audience."""
    assert "a medium for themself only, or spoken to themself, has themself as audience" in text("traces_plan.j2", "en")
    assert "只给自己看、说给自己听的媒介，读者就是自己" in text("traces_plan.j2", "zh")


def test_a_medium_hint_never_names_a_medium_the_privacy_rules_out():
    weights = {"moments": 5.0, "weibo": 5.0, "diary": 1.0}
    public = frozenset({"moments", "weibo"})
    for key in range(30):
        assert not set(suggest_media(f"e{key}", 1, hint_weights(weights, public, True))) & public
    assert hint_weights(weights, public, False) == weights


def test_the_hint_shown_with_private_evidence_is_private():
    import datetime as dt

    from synth.records import Event, Evidence
    event = Event(id="e1", persona_id="p", phase_id="ph", time=dt.datetime(2022, 1, 3, 9), title="t",
                  description="d", location="l", participant_ids=[])
    evidence = [Evidence(id=f"v{n}", persona_id="p", event_id="e1", kind="emotion", statement="s", arc_ids=[],
                         private=True) for n in range(2)]
    weights = {"weibo": 10.0, "moments": 10.0, "wechat_chat": 1.0}
    for n in range(20):
        shown = traces_stage.plan_variables({}, event.model_copy(update={"id": f"e{n}"}), evidence, 2, weights, 48,
                                            frozenset({"weibo", "moments"}))["suggested"]
        assert set(shown) == {"wechat_chat"} or not set(shown) & {"weibo", "moments"}, shown


LENGTH_WORDS = re.compile(r"一两句话|几段话|几行字|a few paragraphs|a line or two|one- or two-line|a few lines")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_one_length_rule_per_trace(language):
    for medium in ("moments", "diary", "note", "photo_caption", "social_post", "phone_memo", "weibo"):
        body = text("traces_write.j2", language, medium=medium)
        assert not LENGTH_WORDS.search(body), (language, medium, LENGTH_WORDS.search(body))


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_quoted_opening_is_not_against_the_no_stock_opening_rule(language):
    """A writer met an evidence quoting how a diary entry began ("Too tired to write much") beside "vary the
    opening, no stock first line": the rule says a quoted opening is kept."""
    said = ("where an evidence quotes how this record begins, begin so" if language == "en"
            else "证据引了这条记录怎么开头的，就照那样开头")
    assert said in text("traces_write.j2", language)
    assert said in text("traces_write_all.j2", language)


def test_a_medium_sets_its_own_length_band():
    from synth.config.conf import recorded_section
    from synth.config.settings import TracesSettings
    from synth.stages.common import medium_band
    section = TracesSettings.model_validate({
        **recorded_section({}, "traces"), "min_words": 80, "max_words": 320, "zh_chars_per_word": 1.7,
        "media": {"zh": {"moments": 1}}, "public_media": ["moments"], "medium_words": {"moments": [8, 50]}})
    assert medium_band(section, "moments", "zh") == (14, 85)
    assert medium_band(section, "diary", "en") == (80, 320)


def test_speech_goes_where_it_can_appear():
    assert "said aloud" in text("traces_plan.j2", "en") and "当面说出口" in text("traces_plan.j2", "zh")
    # a message thread is not where words said face to face appear (a planner was hinted one for words said at home)
    assert "never words said face to face as they were said" in text("traces_plan.j2", "en")
    assert "当面说的话不会原样出现在里面" in text("traces_plan.j2", "zh")
    assert "(a message thread, a transcript)" not in text("traces_plan.j2", "en")


# ---- questions

def test_the_reference_answer_has_no_cap_and_abstention_is_not_in_the_persona_voice():
    for question_type in ("causal", "unanswerable"):
        values = zh_case._qa("qa_write.j2", question_type)
        body = "\n".join(m["content"] for m in render("qa_write.j2", language="zh", persona=values.pop("persona"),
                                                      **values))
        assert "最多 120 个字" not in body
        if question_type == "unanswerable":
            assert "不用" in body and "第三人称" in body
        # said where the task starts, not only in the last bullets (a capable writer answered in the first person
        # before reaching them): the reference is not the person's reply
        task = body[body.index("第二步"):]
        assert ("不是此人的回答" in task[:120]) == (question_type == "unanswerable")
    assert "maxLength" not in json.dumps(qa_stage.write_model(120).model_json_schema()["properties"]["answer"])


# ------------------------------------------------------------------------------------------ excerpts (point 11)

def test_an_excerpt_keeps_the_passage_that_carries_the_evidence_not_the_opening():
    from synth.config.conf import recorded_section
    from synth.config.settings import PromptsSettings
    from synth.records import Trace
    from synth.stages.common import trace_excerpts

    filler = "I woke early and the bus was late again. " * 12
    key = "I told Xiaomei I have not touched a drop of yellow wine on weekdays since March."
    trace = Trace(id="t1", persona_id="p", event_id="e", evidence_ids=["v"], medium="diary", intent="i", audience="a",
                  time=dt.datetime(2022, 3, 5, 21), content=filler + key + " " + filler)
    prompts = PromptsSettings(**{**recorded_section({}, "prompts"), "trace_chars": 200})
    [shown] = trace_excerpts(["t1"], {"t1": trace}, prompts, ["not a drop of yellow wine on weekdays"])
    assert key in shown["content"] and len(shown["content"]) <= 202 and shown["content"].startswith("…")
    [opening] = trace_excerpts(["t1"], {"t1": trace}, prompts)  # no statements: the opening, as before
    assert key not in opening["content"] and opening["content"].startswith("I woke early")
    zh = Trace(id="t2", persona_id="p", event_id="e", evidence_ids=["v"], medium="diary", intent="i", audience="a",
               time=trace.time,
               content="早上去菜场买菜。" * 20 + "工作日一滴黄酒不碰，这是我答应老婆的。" + "晚上看电视。" * 20)
    [cut] = trace_excerpts(["t2"], {"t2": zh}, PromptsSettings(**{**recorded_section({}, "prompts"), "trace_chars": 40}),
                           ["工作日一滴黄酒不碰"])
    assert "工作日一滴黄酒不碰" in cut["content"]


EMAIL = """Subject: Knee log pattern before Friday's follow-up

Dr. Hale,

A data point ahead of my follow-up. Last night I sorted the past two weeks of my training log by the 0-10 pain \
column (credit to Priya, my partner, who is a PT and spotted it). Every knee-pain score of 4 or higher came the day \
after a session I had added beyond your program - mostly second swims and extra trainer time. Days that followed \
the plan as written topped out at 2.

I had assumed the extra swims don't even load the knee. The numbers say otherwise, or at least that fatigue is \
doing something. I've deleted the two extra sessions I had scheduled for this weekend and will run the program as \
written, nothing extra, until you tell me otherwise.

Wall sits and decline squats are done daily. Happy to send the spreadsheet if useful.

Best,
Daniel Kowalczyk"""


def test_an_excerpt_shows_every_evidence_its_trace_carries_each_trace_its_own():
    """A capable writer was told an evidence ("his extra swims 'don't even load the knee'") is carried by an email
    whose excerpt, cut around the other evidence it carries (the pain scores), had none of its words."""
    from synth.config.conf import recorded_section
    from synth.config.settings import PromptsSettings
    from synth.records import Trace
    from synth.stages.common import trace_excerpts

    pain = ("Daniel sorted two weeks of his training log by pain score and found every score of 4 or higher came the "
            "day after a session he had added beyond the program.")
    swims = ("Daniel first argued to Priya that his extra swims 'don't even load the knee', then deleted two added "
             "weekend sessions and said, 'Fine. Plan as written, nothing extra.'")
    other = "Daniel logged his 8-mile run as 'knee sore, ran anyway' and told Priya she was being cautious."
    email = Trace(id="t1", persona_id="p", event_id="e", evidence_ids=["pain", "swims"], medium="email", intent="i",
                  audience="his physiotherapist", time=dt.datetime(2022, 1, 27, 8, 45), content=EMAIL)
    note = Trace(id="t2", persona_id="p", event_id="e", evidence_ids=["other"], medium="note", intent="i",
                 audience="himself", time=dt.datetime(2022, 1, 1, 20, 30),
                 content="Jan 1. " + "Logged the run, knee sore, ran anyway. " * 30)
    prompts = PromptsSettings(**{**recorded_section({}, "prompts"), "trace_chars": 600})
    statements = {"pain": pain, "swims": swims, "other": other}
    shown, _ = trace_excerpts(["t1", "t2"], {"t1": email, "t2": note}, prompts, statements)
    text = shown["content"]
    assert len(text) <= 602, len(text)
    assert "don't even load the knee" in text and "nothing extra" in text, text
    assert "pain" in text and "4 or higher" in text, text
    # one statement alone still gets the passage around it
    [alone] = trace_excerpts(["t1"], {"t1": email}, prompts, [swims])
    assert "don't even load the knee" in alone["content"] and alone["content"].startswith("…")


def test_an_excerpt_of_a_chat_keeps_whole_lines_with_their_speaker():
    """Cut by sentences, a chat excerpt began mid-line: the line's speaker and time were lost."""
    from synth.stages.common import excerpt

    lines = [f"[21:{m:02d}] Evan: Fine. Nothing new here. The bus was late." for m in range(10)]
    lines[6] = "[21:06] Mum: Did you eat? I have not touched a drop of yellow wine on weekdays since March."
    shown = excerpt("\n".join(lines), 160, ["not a drop of yellow wine on weekdays"])
    assert "yellow wine" in shown
    assert all(line.startswith("[21:") for line in shown.strip("…").strip().split("\n")), shown
    assert "[21:06] Mum: Did you eat?" in shown


# ------------------------------------------------------------------------------------------ hints fit the audience

def test_a_rest_day_errand_without_colleagues_gets_no_work_chat_hint():
    from synth.records import Event
    from synth.stages.common import hint_weights, work_moment

    weights = {"work_chat": 50.0, "wechat_chat": 1.0, "diary": 1.0}
    sunday = Event(id="e", persona_id="p", phase_id="ph", time=dt.datetime(2022, 1, 9, 10), title="errand",
                   description="buying medicine for Dad", location="", participant_ids=["r1"])
    people = {"r1": "father", "r2": "colleague at the bank"}
    words = ["colleague", "同事"]
    assert not work_moment(sunday, people, words)
    work = frozenset({"work_chat"})
    assert "work_chat" not in hint_weights(weights, frozenset(), False, work_moment(sunday, people, words), work)
    with_colleague = sunday.model_copy(update={"participant_ids": ["r1", "r2"]})
    monday = sunday.model_copy(update={"time": dt.datetime(2022, 1, 10, 10), "participant_ids": []})
    assert work_moment(with_colleague, people, words) and work_moment(monday, people, words)
    # family or friends only, or a weekday evening: not a moment for work chat (an evening call with a friend)
    assert not work_moment(monday.model_copy(update={"participant_ids": ["r1"]}), people, words)
    assert not work_moment(monday.model_copy(update={"time": dt.datetime(2022, 1, 10, 21)}), people, words)
    assert "work_chat" in hint_weights(weights, frozenset(), False, True, work)
    # a trace that must carry two evidence is not hinted to a medium that carries one
    assert "work_chat" not in hint_weights(weights, frozenset(), False, True, work, short=["work_chat"])
    assert "work_chat" in hint_weights(weights, frozenset(), False, True, work, short=None)
    # a private line (kept to themself or someone close) is not hinted to colleagues, even in a work moment
    assert "work_chat" not in hint_weights(weights, frozenset(), True, True, work)
    assert set(hint_weights(weights, frozenset(), True, True, work)) == {"wechat_chat", "diary"}
    # privacy and audience together; when nothing else is left, the whole mix
    assert hint_weights({"work_chat": 1.0}, frozenset(), False, False, work) == {"work_chat": 1.0}
    assert set(hint_weights(weights, frozenset({"wechat_chat"}), True, False, work)) == {"diary"}
    # a public holiday on a weekday is a rest day too (2022-10-03, 国庆节, a Monday)
    holiday = monday.model_copy(update={"time": dt.datetime(2022, 10, 3, 10)})
    assert work_moment(holiday, people, words) and not work_moment(holiday, people, words,
                                                                  [{"date": "2022-10-03", "name": "国庆节"}])


def test_a_medium_hint_follows_a_post_the_evidence_names_and_the_mix_follows_the_occupation():
    """"(a hint: diary)" for evidence that is itself a Moments post; 12% DingTalk/WeCom for a graduate student."""
    from synth.config import conf, settings
    from synth.records import Event, Evidence
    from synth.stages.common import media_weights

    section = settings.parse(conf.preset_config("small")).traces
    weights = {"diary": 1e9, "moments": 1e-9, "wechat_chat": 1e-9}  # the seeded draw alone: always a diary
    event = Event(id="e", persona_id="p", phase_id="ph", time=dt.datetime(2022, 3, 7, 10), title="t",
                  description="d", location="", participant_ids=[])
    posted = [Evidence(id="v", persona_id="p", event_id="e", kind="fact", arc_ids=[],
                       statement="她发了一条朋友圈，晒了女儿的奖状。")]
    hint = traces_stage.plan_variables({}, event, posted, 1, weights, 48, posted=section.posted)["suggested"]
    assert hint == ["moments"]
    plain = [posted[0].model_copy(update={"statement": "她把奖状贴在了冰箱上。"})]
    assert traces_stage.plan_variables({}, event, plain, 1, weights, 48, posted=section.posted)["suggested"] == \
        ["diary"]
    # a private line the evidence says was written in a build log: a note, not the email the draw would give
    mailed = {"email": 1e9, "note": 1e-9, "diary": 1e-9}
    logged = [posted[0].model_copy(update={"statement": "He wrote in his synth build log: 'the first one in ages "
                                                          "where I didn't check my pulse'.", "private": True})]
    assert traces_stage.plan_variables({}, event, logged, 1, mailed, 48, posted=section.posted)["suggested"] == \
        ["note"]
    # "wrote in his notebook" (a planner was hinted a message thread for it, to the co-founder he was avoiding)
    noted = [logged[0].model_copy(update={"statement": "He wrote in his notebook that he could not open the "
                                                         "spreadsheet Priya sent."})]
    chatty = {"message_thread": 1e9, "note": 1e-9, "diary": 1e-9}
    assert traces_stage.plan_variables({}, event, noted, 1, chatty, 48, posted=section.posted)["suggested"] == \
        ["note"]
    # "copied the words into her diary that night" (a planner was hinted email for it)
    copied = [logged[0].model_copy(update={"statement": "Bernard told Margaret 'Don't waste it,' and she copied the "
                                                          "words into her diary that night."})]
    assert traces_stage.plan_variables({}, event, copied, 1, mailed, 48, posted=section.posted)["suggested"] == \
        ["diary"]
    # the evidence names itself a diary entry by the person's name (a planner was hinted email for it)
    entry = [logged[0].model_copy(update={"statement": "Cormac Duffy's diary entry of 10 January began as a rant "
                                                         "about the rent letter."})]
    assert traces_stage.plan_variables({}, event, entry, 1, mailed, 48, posted=section.posted)["suggested"] == \
        ["diary"]
    unsaid = [logged[0].model_copy(update={"statement": "He didn't check his pulse once all evening."})]
    assert traces_stage.plan_variables({}, event, unsaid, 1, mailed, 48, posted=section.posted)["suggested"] == \
        ["email"]
    assert "work_chat" in media_weights(section, "zh", "一家物流公司的调度员")
    assert "work_chat" not in media_weights(section, "zh", "成都一所大学的社会学研究生")
    assert "work_chat" not in media_weights(section, "zh", "退休中学教师")
    # a freelancer (a writer was given 12% DingTalk/WeCom for a freelance delivery rider and tutor)
    assert "work_chat" not in media_weights(section, "zh", "自由职业状态：主要在美团跑外卖骑手，兼做家教")


def test_the_tree_memory_schemas_offer_native_labels_in_chinese_and_map_back():
    """synth eval's tree prompts no longer show codes beside labels (条件触发（condition_trigger）): the zh schema offers
    the labels, and an answer in labels comes back as the codes."""
    from synth.config.shown_schema import decode_answer, native_schema
    from synth.eval.tree import MidOut, RouteOut, ValidateOut

    for model, code, label in ((RouteOut, "leaf", "事件层"), (MidOut, "condition_trigger", "条件触发"),
                               (ValidateOut, "weak_conflict", "弱冲突")):
        shown, decode = native_schema(model.model_json_schema(), "zh")
        text = json.dumps(shown, ensure_ascii=False)
        assert label in text and code not in text
        field = next(name for name, f in model.model_fields.items() if "Literal" in str(f.annotation))
        assert decode_answer({field: label}, decode) == {field: code}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_count_of_one_and_an_equal_ended_range_read_as_one_number(language):
    """Seen by a capable model: "Place exactly 1 major life events", "2-2 evidence statements"."""
    majors = text("arcs_major_events.j2", language, count=1)
    assert "exactly 1 " not in majors and "恰好 1 " not in majors
    assert ("one major life event" in majors) if language == "en" else ("1 个重大人生事件" in majors)
    events = text("events_generate.j2", language, min_evidence=2, max_evidence=2)
    assert not re.search(r"(?<![\d-])(\d+)\s*[-–]\s*\1 (?:evidence|条)", events), "a range whose ends are equal"
    assert ("has 2 evidence statements" in events) if language == "en" else ("要有 2 条" in events)


def test_the_rules_a_capable_model_found_contradictory_say_what_is_meant():
    """Seen by the bridge writer: counter-seeds that must answer one question yet 'not contradict each other';
    a length rule cited against options already inside the band; a first state whose trigger lay in the future.
    (Both languages live in each template's source.)"""
    from synth.config.prompts import prompts_dir

    seeds = (prompts_dir() / "distractors_seeds.j2").read_text(encoding="utf-8")
    assert "may exclude each other" in seeds and "可以互相排斥" in seeds
    assert "do not contradict each other" not in seeds and "互不矛盾" not in seeds
    render_ = (prompts_dir() / "distractors_render.j2").read_text(encoding="utf-8")
    # one set per call: its length band is the same for all four, and it is the only length rule
    assert "{{ min_chars }}–{{ max_chars }} characters" in render_ and "{{ min_chars }}–{{ max_chars }} 个字" in render_
    # a question that asks several things at once gets a clause for each in every option (a renderer found "one
    # point per answer" against a four-part question)
    assert "when it asks several things at once" in render_ and "如果问题一次问了几件事" in render_
    arcs = text("arcs_plan.j2", "en") + text("arcs_plan.j2", "zh")
    assert "already happened before" in arcs and "之前已经发生的事" in arcs


def test_a_zh_memory_tree_shows_its_node_types_by_their_labels():
    """A mid or root node's text is read by the tree's later prompts: in a Chinese tree its type is a native label,
    not the English code (条件触发, not condition_trigger)."""
    from types import SimpleNamespace

    from synth.eval.tree import PersonaTreeSystem
    tree = SimpleNamespace(language="zh")
    assert PersonaTreeSystem._typed(tree, "下雨天他会推迟跑步", "condition_trigger", "tree_pattern") == \
        "下雨天他会推迟跑步（条件触发）"
    tree.language = "en"
    assert PersonaTreeSystem._typed(tree, "He runs less in rain", "condition_trigger", "tree_pattern") == \
        "He runs less in rain (condition_trigger)"


def test_a_counter_seed_prompt_without_examples_says_the_form_instead_of_an_empty_list():
    """A capable option writer met "Statements from this person's records ... for their form only:" over nothing."""
    for language, header, form in (("en", "for their form only", "The form of a statement"),
                                   ("zh", "只参考它们的形式", "陈述的形式")):
        case = {"persona": zh_case.PERSONA, **zh_case._qa("distractors_seeds.j2", "causal")}

        def body(examples: list[str], case=case, language=language) -> str:
            return "\n".join(m["content"] for m in render("distractors_seeds.j2", language=language,
                                                           **{**case, "examples": examples}))
        assert header in body(["S5: thing 5"]) and form not in body(["S5: thing 5"])
        assert header not in body([]) and form in body([])
    # the sets already chosen: a capable writer reused their "41 percent", which then stood in two options
    chosen = {"persona": zh_case.PERSONA, **zh_case._qa("distractors_seeds.j2", "causal"), "others": [["S7: 41%"]]}
    assert "nor their numbers and particular details" in "\n".join(
        m["content"] for m in render("distractors_seeds.j2", language="en", **chosen))
    assert "也不要沿用它们的数字和具体细节" in "\n".join(
        m["content"] for m in render("distractors_seeds.j2", language="zh", **chosen))
    # and a capable writer asked whether the chosen sets, real statements of other arcs that did not answer the
    # question, were meant to answer it: they are real stretches that may not; the written ones must
    assert "some may not answer the question — yours must" in "\n".join(
        m["content"] for m in render("distractors_seeds.j2", language="en", **chosen))
    assert "有的未必回答得了这个问题——你写的每组都要能回答" in "\n".join(
        m["content"] for m in render("distractors_seeds.j2", language="zh", **chosen))
    # the chosen sets include sets written for the question before: a capable writer read "real stretches" as false
    for language in ("en", "zh"):
        shown = "\n".join(m["content"] for m in render("distractors_seeds.j2", language=language, **chosen))
        assert "real stretches" not in shown and "真实片段" not in shown
        assert "written for this question before" in shown or "之前为这个问题写的陈述组" in shown


def test_an_option_may_give_the_deadline_a_question_asks_for():
    """A capable renderer met "no date unless the question asks when" for "what did they ask of you?" when one
    requirement was the deadline itself, and wrote "the deadline" without it."""
    case = {"persona": zh_case.PERSONA, **zh_case._qa("distractors_render.j2", "factual")}
    shown = {language: "\n".join(m["content"] for m in render("distractors_render.j2", language=language, **case))
             for language in ("en", "zh")}
    assert "or what it asks for is itself a deadline or a schedule" in shown["en"]
    assert "或者问到的东西本身就是一个期限或日程" in shown["zh"]


def test_render_feedback_keeps_to_the_rules_it_follows():
    """A capable renderer met "one point, one detail" in a failed round's feedback against the rule that a habit
    question gets two instances, and a narrower band after "one option was longer" without being told why."""
    case = {"persona": zh_case.PERSONA, **zh_case._qa("distractors_render.j2", "pattern")}
    feedback = [{"round": 1, "kinds": ["key_longest", "reader_length", "reader_other"], "reason": "", "favours": False,
                 "unfaithful": False}]
    for language, same, two in (("en", "every option of this round is asked for the same length",
                                 "two instances, or the before and after, when the question asks for more than one"),
                                ("zh", "这一轮每个选项都按同样的字数写", "问的不止一件时，两个例子或前后两种状态")):
        shown = "\n".join(m["content"] for m in render("distractors_render.j2", language=language,
                                                         **{**case, "feedback": feedback}))
        assert same in shown and shown.count(two) == 2  # both reader kinds keep the rule for more than one
        assert "one point, one detail" not in shown and "只说一个要点、一个细节" not in shown


def test_options_carry_no_quip_and_a_counter_seed_prompt_without_examples_has_no_as_many():
    """Pass 11's capable reader leaned to "the plainest, without the added quip the others carry" (the renderer's
    asides); pass 12's counter-seed writer met "(as many names, times and amounts)" with no statement to match."""
    render_ = {"persona": zh_case.PERSONA, **zh_case._qa("distractors_render.j2", "factual")}
    assert "Plain spoken words with no aside, quip or joke" in "\n".join(
        m["content"] for m in render("distractors_render.j2", language="en", **render_))
    assert "不加感叹、调侃或俏皮话" in "\n".join(
        m["content"] for m in render("distractors_render.j2", language="zh", **render_))
    case = {"persona": zh_case.PERSONA, **zh_case._qa("distractors_seeds.j2", "factual")}
    for language, phrase in (("en", "as many names, times and amounts"), ("zh", "同样多的人名、时间、数目")):
        def body(examples: list[str], language=language) -> str:
            return "\n".join(m["content"] for m in render("distractors_seeds.j2", language=language,
                                                           **{**case, "examples": examples}))
        assert phrase in body(["S5: thing 5"]) and phrase not in body([])


def test_the_trace_planner_may_give_a_fraction_of_an_hour():
    """Whole hours from an event at 23:30 put a note about 02:40 at 02:30, before what it tells."""
    assert "a fraction too: 2.5 is two and a half hours" in text("traces_plan.j2", "en")
    assert "可以是小数（2.5 即两个半小时）" in text("traces_plan.j2", "zh")


def test_counter_seeds_tell_what_happened_not_what_would_have():
    """A capable reader picked counterfactual keys as the one option not stating "if I had …, I would …": the
    counter-seed writer had written reflections on the hypothetical ("he wrote: had he not gone, he would …") and
    twist endings ("that very night he broke the rule"), while real evidence states what happened, plainly."""
    case = {"persona": zh_case.PERSONA, **zh_case._qa("distractors_seeds.j2", "counterfactual")}
    en, zh = ("\n".join(m["content"] for m in render("distractors_seeds.j2", language=language, **case))
              for language in ("en", "zh"))
    assert "never what would have happened or a reflection on it" in en and "no twist ending" in en
    assert "也不要写“要是……就会……”这样的设想" in zh and "反转结尾" in zh


def scripted_prompt(template: str, language: str, question_type: str = "causal", **extra) -> str:
    """Every message of `template` rendered over the scripted Chinese case of `question_type` (`extra` on top)."""
    values = zh_case._qa(template, question_type)
    return "\n".join(m["content"] for m in render(template, language=language, persona=values.pop("persona"),
                                                  **{**values, **extra}))


def test_a_question_asks_one_matter_in_at_most_two_parts():
    """Rewritten until a no-context reader could not guess them, a capable writer's questions came out in three and
    four parts ("what did he say, what happened that first day, where have you landed?"); only the key's set
    answered every part, and the multiple-choice readers picked it by that."""
    def body(language: str, **extra) -> str:
        return scripted_prompt("qa_write.j2", language, **extra)

    assert "Ask about one matter, in at most two parts" in body("en") and "问一件事，最多分两问" in body("zh")
    # the planner's outline keeps to the same rule: a capable writer was handed an outline asking three things
    plan = {language: scripted_prompt("qa_plan.j2", language) for language in ("en", "zh")}
    assert "The outline's question asks about one matter, in at most two parts" in plan["en"]
    assert "提纲里的问题问一件事，最多分两问" in plan["zh"]
    guessed = [{"question": "q", "answer": "a", "reason": "r"}]
    assert "not several at once" in body("en", guessed=guessed)
    assert "不要一次问好几处" in body("zh", guessed=guessed)
    # a rewrite asking "which occasions show the habit" still gets an answer in sentences: a capable writer read the
    # rewrite rule as inviting a list against the answer rule's "connected sentences, not a list"
    pattern = {language: scripted_prompt("qa_write.j2", language, "pattern", guessed=guessed)
               for language in ("en", "zh")}
    assert "which occasions in the records show the habit" in pattern["en"]
    assert "The answer still tells them in connected sentences" in pattern["en"]
    assert "answer 仍用连贯的句子把它们说出来" in pattern["zh"]


def test_the_options_question_asks_one_part_and_every_option_reaches_its_outcome():
    """On a measured pass, capable no-context readers named the key as the one option that answered both of the
    question's parts ("题干分两种情境…D 明确分两段作答") or the one that reached the step the question takes as done
    ("唯一真正走到'跟家里说了'的选项"): sets from other moments answered one part and stopped short. The multiple-choice
    question is edited to one part; every rendering, true or not, closes on the outcome the question names."""
    def body(template: str, language: str) -> str:
        return scripted_prompt(template, language)

    assert "One matter and one part" in body("distractors_question.j2", "en")
    assert "只问一件事、一个分问" in body("distractors_question.j2", "zh")
    assert "closes on that outcome" in body("distractors_render.j2", "en")
    assert "最后用几个字落到那个结果上" in body("distractors_render.j2", "zh")


def test_a_rewritten_question_keeps_its_types_reasoning():
    """Asked for "one thing no one could guess", capable writers turned guessable pattern, causal, inference and
    counterfactual questions into factual ones (a quoted detail): the particular asked for is the type's own."""
    guessed = [{"question": "q", "answer": "a", "reason": "r"}]
    for question_type, en, zh in (("pattern", "which occasions in the records show the habit", "哪几次显出这个习惯"),
                                  ("counterfactual", "which real consequence", "哪个真实的后果"),
                                  ("inference", "what the person did or said that shows it", "显出了这一点")):
        values = zh_case._qa("qa_write.j2", question_type)
        persona = values.pop("persona")
        for language, wanted in (("en", en), ("zh", zh)):
            text = "\n".join(m["content"] for m in render("qa_write.j2", language=language, persona=persona,
                                                          **{**values, "guessed": guessed}))
            assert wanted in text, (question_type, language)
            plain = "\n".join(m["content"] for m in render("qa_write.j2", language=language, persona=persona, **values))
            assert wanted not in plain, "only a rewrite is told"


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_counter_seed_prompt_points_at_examples_only_when_it_shows_some(language):
    """A counter-seed writer was told "in the same form as the statements above" with no statement shown."""
    above = "statements above" if language == "en" else "上面的陈述"
    case = {"persona": zh_case.PERSONA, **zh_case._qa("distractors_seeds.j2", "causal")}

    def body(examples: list[str]) -> str:
        return "\n".join(m["content"] for m in render("distractors_seeds.j2", language=language,
                                                       **{**case, "examples": examples}))
    assert above not in body([])
    assert above in body(["She met Joanne at the bakery on 3 March."])


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_re_render_about_names_keeps_the_naming_rule(language):
    """A renderer read the round's "name only the people of its own set" as looser than the system rule "name only
    those the question names": the advice keeps to the set's people, named as the rules say."""
    case = {"persona": zh_case.PERSONA, **zh_case._qa("distractors_render.j2", "causal")}
    case["feedback"] = [{"round": 1, "kinds": ["key_entity_central", "reader_names"], "reason": "",
                         "favours": False, "unfaithful": False}]
    body = "\n".join(m["content"] for m in render("distractors_render.j2", language=language, **case))
    said = "as the rules above say" if language == "en" else "称呼照上面的规则"
    assert body.count(said) == 2
    assert "name only the people of its own set" not in body


def test_a_name_the_event_has_the_person_note_down_is_given():
    """A capable writer had to record "the programme's name" in a note: its own event had her write the name of a
    day programme in her notebook, and no prompt gave it. The events prompt asks for such a name in the text."""
    assert "A name the description has the person write down, look up or learn (a programme, a shop, a course) " \
           "is given in it" in text("events_generate.j2", "en")
    assert "描述里此人记下、打听到或查到的名字（一个项目、一家店、一门课）要写出来" in text("events_generate.j2", "zh")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_each_arc_of_a_moment_stands_on_its_own_line(language):
    """A capable writer found the moving arc's note run straight into the registry's heading ("…不以这个状态为准）后来
    出现的人和地点"): a line ending in a block tag lost its newline, so two arcs shared a line too."""
    values = (en_case.variables("traces_plan.j2", "en") if language == "en"
              else {"persona": zh_case.PERSONA, **zh_case._generation("traces_plan.j2")})
    state = {"label": "guarded", "description": "keeps to herself", "trigger": "t", "cues": ["short replies"]}
    values["moment_arcs"] = [{"id": "a1", "label": "Trust", "index": 0, "state": state, "moving": True},
                             {"id": "a2", "label": "Work", "index": 0, "state": state, "moving": False}]
    values["people"] = [{"kind": "person", "name": "Dr Okafor", "relation": "consultant", "description": "brisk"}]
    text = "\n".join(m["content"] for m in render("traces_plan.j2", language=language, **values))
    lines = text.splitlines()
    opening = ('- "Trust" at', '- "Work" at') if language == "en" else ("- 「Trust」", "- 「Work」")
    assert all(sum(line.startswith(o) for line in lines) == 1 for o in opening), text
    arc_lines = [line for line in lines if line.startswith(opening)]
    assert all("Dr Okafor" not in line and line.count("guarded") == 1 for line in arc_lines)


JOINED = re.compile(r"[。．.!?！？)）」\]”\"：:]- \S|[。.)）：:]---")


@pytest.mark.parametrize("name", zh_case.templates())
def test_no_list_item_or_field_runs_into_the_line_before(name):
    """Trace writers were shown their evidence as one line ("- A。- B。- C。此人以前…") and planners the schema's fields
    run together ("…就填 feasible 为 false。- temporal_scope：…"): a line ending in a block tag loses its newline
    under trim_blocks. Every scripted render, in both languages, keeps each item on its own line."""
    for values in zh_case.scripted(name):
        for language in ("en", "zh"):
            text = "\n".join(m["content"] for m in render(name, language=language, **values))
            joined = [line for line in text.splitlines() if JOINED.search(line)]
            assert not joined, f"prompts/{name} ({language}): {joined[0][:160]}"


def test_the_events_prompt_says_who_counts_as_there_for_a_call_or_messages():
    """A capable writer asked whether the friend who sent a voice message, or the advisor on the other end of a
    chat, is a participant ("在场的人"): the rules of traces (words said aloud to someone present) read it as there."""
    def body(language: str) -> str:
        values = ({"persona": zh_case.PERSONA, **zh_case._generation("events_generate.j2")} if language == "zh"
                  else en_case.variables("events_generate.j2", "en"))
        return "\n".join(m["content"] for m in render("events_generate.j2", language=language, **values))

    assert "someone reached only by a call or by messages is not there, and the description names them" in body("en")
    assert "只通过电话或消息联系的人不算在场，在描述里写出是谁" in body("zh")
