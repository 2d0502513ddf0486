"""The pure functions of the generation stages persona → arcs → phases → events, called directly: template
variables in and records out, on hand-built inputs, with no pipeline, journal or model in between."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pytest

from synth.config import conf
from synth.config.personas import PersonaSeed
from synth.config.prompts import render
from synth.config.settings import ArcsSettings, EventsSettings
from synth.life.seedpool import SeedConcept
from synth.records import (
    AnchorState,
    ArcState,
    BigFive,
    EventSeed,
    LifeArc,
    MajorEvent,
    Persona,
    Phase,
    Relation,
    Snapshot,
    mint_id,
)
from synth.stages import arcs as arcs_stage
from synth.stages import events as events_stage
from synth.stages import persona as persona_stage
from synth.stages import phases as phases_stage
from synth.stages.common import persona_and_arcs

PID = "p01_maya"
START, END = dt.date(2022, 1, 1), dt.date(2022, 2, 11)  # 42 days
FIVE = BigFive(openness=.8, conscientiousness=.3, extraversion=.6, agreeableness=.7, neuroticism=.5)
STATE = AnchorState(label="guarded", description="d", trigger="t", cues=["c"])


def persona(language: str = "en") -> Persona:
    return Persona(
        id=PID, persona_id=PID, language=language, big_five=FIVE, start=START, end=END, scale="100k",
        name="Maya", age=34, gender="f", personality="p", family_history="f", education="e", occupation="o",
        concerns=["c"], interests=["i"], backstory="b",
        relations=[Relation(id="r1", name="Sam", relation="partner", description="d"),
                   Relation(id="r2", name="Sam", relation="cousin", description="d"),
                   Relation(id="r3", name="Priya", relation="colleague", description="d")],
    )


def arcs(count: int = 2, states: int = 3) -> list[LifeArc]:
    dims = ["experience", "emotion", "opinion"]
    return [LifeArc(id=f"arc{i}", persona_id=PID, dimension=dims[i % 3], title="Trust" if i < 2 else f"Arc {i}",
                    description="d", anchor_states=[STATE] * states) for i in range(count)]


def major(index: int, start: dt.date, end: dt.date, arcs_: list[LifeArc]) -> MajorEvent:
    return MajorEvent(id=f"m{index}", persona_id=PID, index=index, title=f"M{index}", description="d", start=start,
                      end=end, arc_states=[ArcState(arc_id=a.id, anchor_index=1) for a in arcs_])


def snapshot(tag: str) -> Snapshot:
    return Snapshot(energy=5, stress=4, dominant_emotion=tag, focus=f"focus {tag}",
                    arc_status={"arc0": f"{tag} 0", "arc1": f"{tag} 1"})


# ------------------------------------------------------------------------------------------ persona

SEED = PersonaSeed(id=PID, language="en", note="a nurse", start=START, end=dt.date(2022, 12, 31), big_five=FIVE)


def test_timeline_is_the_seeds_unless_overridden():
    assert persona_stage.timeline(SEED, 0) == (START, dt.date(2022, 12, 31))
    assert persona_stage.timeline(SEED, 42) == (START, END), "both ends inclusive: 42 days end on Feb 11"
    assert persona_stage.timeline(SEED, 1) == (START, START)


def test_persona_variables():
    assert persona_stage.persona_variables(SEED, START, END, 4) == {
        "big_five": {"openness": .8, "conscientiousness": .3, "extraversion": .6, "agreeableness": .7,
                     "neuroticism": .5},
        "note": "a nurse", "start": "2022-01-01", "end": "2022-02-11", "min_relations": 4, "max_relations": 7,
    }


def test_build_persona_strips_names_and_mints_relation_ids():
    answer = persona_stage.persona_answer(2).model_validate({
        "name": " Maya Holt ", "age": 34, "gender": " female ", "personality": "warm", "family_history": "Hull",
        "education": "BSc", "occupation": "nurse", "concerns": ["money", "health"], "interests": ["art", "hiking"],
        "backstory": "moved", "relations": [{"name": "Ruth", "relation": " mother ", "description": " d "},
                                            {"name": " Ruth ", "relation": "aunt", "description": "e"},
                                            {"name": "Ruth", "relation": "friend", "description": "f"}],
    })
    built = persona_stage.build_persona(SEED, START, END, answer)
    assert (built.id, built.persona_id, built.language, built.scale) == (PID, PID, "en", "100k")
    assert (built.name, built.gender, built.start, built.end) == ("Maya Holt", "female", START, END)
    assert built.big_five == FIVE
    assert [r.name for r in built.relations] == ["Ruth", "Ruth (2)", "Ruth (3)"]
    assert [r.id for r in built.relations] == [mint_id(PID, "relation", i) for i in range(3)]
    assert (built.relations[0].relation, built.relations[0].description) == ("mother", "d")


def test_persona_variables_render_the_template():
    messages = render("persona_enrich.j2", language="zh", **persona_stage.persona_variables(SEED, START, END, 4))
    assert "2022-02-11" in messages[-1]["content"]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_profile_prompt_says_how_many_people_the_schema_takes(language):
    """A capable writer read "at least 5 people" beside "every relative the profile mentions is one of them" while
    the schema capped the list: the prompt says the range the answer is validated against."""
    variables = persona_stage.persona_variables(SEED, START, END, 4)
    prompt = "\n".join(m["content"] for m in render("persona_enrich.j2", language=language, **variables))
    most = persona_stage.persona_answer(4).model_json_schema()["properties"]["relations"]["maxItems"]
    assert (f"list 4 to {most} people" if language == "en" else f"列出 4 到 {most} 位") in prompt


# ------------------------------------------------------------------------------------------ arcs

POOL = [SeedConcept(name=f"s{i}", title=f"Seed {i}", title_zh=f"种子{i}", category="c", description=f"about {i}",
                    description_zh=f"关于{i}") for i in range(4)]
ARCS_SECTION = ArcsSettings(arcs_per_dimension=1, everyday_min_days=3, anchor_states=3, added_seeds=2, max_kept_seeds=10,
                            major_events_per_year=12, min_major_events=2)


def seeds() -> list[EventSeed]:
    return [EventSeed(id=f"seed-{name}", persona_id=PID, name=name, title=name.title(), description="d",
                      origin="predefined") for name in ("s0", "s2", "walk")]


def test_kept_seed_limit_is_capped_by_the_pool_and_the_setting():
    assert arcs_stage.kept_seed_limit(POOL, ARCS_SECTION) == 4
    assert arcs_stage.kept_seed_limit(POOL, ARCS_SECTION.model_copy(update={"max_kept_seeds": 3})) == 3
    assert arcs_stage.kept_seed_limit([], ARCS_SECTION) == 1


@pytest.mark.parametrize("language, title, description", [("en", "Seed 1", "about 1"), ("zh", "种子1", "关于1")])
def test_seed_pool_variables_speak_the_persona_language(language, title, description):
    variables = arcs_stage.seed_pool_variables(persona(language), POOL, language, 3, 2)
    assert list(variables) == ["persona", "pool", "keep_max", "added", "days"]
    label = "s1" if language == "en" else title  # a zh prompt offers the seed by its native title
    assert variables["pool"][1] == {"name": "s1", "label": label, "title": title, "description": description}
    assert (variables["keep_max"], variables["added"]) == (3, 2)
    assert variables["persona"]["name"] == "Maya" and variables["persona"]["start"] == "2022-01-01"


def test_build_seeds_keeps_pool_order_and_names_added_seeds_uniquely():
    model = arcs_stage.seed_answer(tuple(s.name for s in POOL), 1, 4, 3)
    answer = model.model_validate({"keep": ["s3", "s1", "s3"], "added": [
        {"name": "s1", "title": " Again ", "description": " d "},
        {"name": "Night Walk!", "title": "t", "description": "d"},
        {"name": "??", "title": "", "description": "d"}]})
    built = arcs_stage.build_seeds(persona(), POOL, answer)
    assert [s.name for s in built] == ["s1", "s3", "s1_2", "night_walk", "added_3"]
    assert [s.origin for s in built] == ["predefined", "predefined", "added", "added", "added"]
    assert [s.id for s in built] == [mint_id(PID, "seed", s.name) for s in built]
    assert (built[0].title, built[2].title, built[2].description) == ("Seed 1", "Again", "d")


def test_arc_plan_variables_and_build_arcs():
    variables = arcs_stage.arc_plan_variables(persona(), seeds(), 1, 3)
    assert list(variables) == ["persona", "seeds", "per_dimension", "states"]
    assert [s["name"] for s in variables["seeds"]] == ["s0", "s2", "walk"]
    draft = {"title": " T ", "description": " D ", "seeds": ["walk", "s0", "walk"], "anchor_states": [
        STATE.model_dump()] * 3}
    answer = arcs_stage.arc_answer(("s0", "s2", "walk"), 1, 3).model_validate(
        {"experience": [draft], "emotion": [{**draft, "seeds": ["s2"]}], "opinion": [draft]})
    built = arcs_stage.build_arcs(persona(), seeds(), answer)
    assert [(a.dimension, a.id) for a in built] == [(d, mint_id(PID, "arc", d, 0))
                                                     for d in ("experience", "emotion", "opinion")]
    assert built[0].seed_ids == ["seed-walk", "seed-s0"] and built[1].seed_ids == ["seed-s2"]
    assert (built[0].title, built[0].description) == ("T", "D")


def test_major_event_count_follows_the_rate_with_a_floor():
    assert arcs_stage.major_event_count(ARCS_SECTION, 365) == 12
    assert arcs_stage.major_event_count(ARCS_SECTION, 42) == 2, "round(1.38) is under the minimum of 2"
    assert arcs_stage.major_event_count(ARCS_SECTION.model_copy(update={"min_major_events": 9}), 5) == 5
    # three arcs with a state to reach in three weeks: one event each, though the rate and the floor ask for one
    one = ARCS_SECTION.model_copy(update={"min_major_events": 1, "major_events_per_year": 0})
    assert arcs_stage.major_event_count(one, 21) == 1
    assert arcs_stage.major_event_count(one, 21, moving_arcs=3) == 3
    assert arcs_stage.major_event_count(one, 2, moving_arcs=3) == 2, "never more than the timeline's days"
    # three arcs of three states: six changes, each with its own trigger event (writers given three events left
    # every arc's second state beyond the timeline)
    assert arcs_stage.major_event_count(one, 75, moving_arcs=3, changes=6) == 6
    assert arcs_stage.major_event_count(ARCS_SECTION, 365, moving_arcs=6, changes=6) == 12, "the rate, when higher"


def test_major_event_variables_and_build_major_events():
    arcs_ = arcs()
    variables = arcs_stage.major_event_variables(persona(), seeds(), arcs_, 3)
    assert list(variables) == ["persona", "seeds", "arcs", "count", "days", "holidays", "gap"]
    assert (variables["count"], variables["days"]) == (3, 42)
    assert [a["label"] for a in variables["arcs"]] == ["Trust", "Trust (2)"]
    answer = arcs_stage.major_answer(("s0", "s2", "walk"), 42, 2, 3, 3).model_validate({"events": [
        {"title": " Late ", "description": "d", "seed": "walk", "start_day": 41, "end_day": 41, "arc_states": [0, 0]},
        {"title": "Early", "description": "d", "seed": "s0", "start_day": 9, "end_day": 3, "arc_states": [2, 1]},
        {"title": "Mid", "description": "d", "seed": "s2", "start_day": 8, "end_day": 20, "arc_states": [1, 2]},
    ]})
    built = arcs_stage.build_major_events(persona(), seeds(), arcs_, answer)
    assert [m.title for m in built] == ["Early", "Mid", "Late"]
    assert [m.id for m in built] == [mint_id(PID, "major_event", i) for i in range(3)]
    # Early's reversed span is flipped to 3..9, then cut short of Mid, which starts on day 8
    assert [((m.start - START).days, (m.end - START).days) for m in built] == [(3, 7), (8, 20), (41, 41)]
    assert [[s.anchor_index for s in m.arc_states] for m in built] == [[2, 1], [2, 2], [2, 2]]
    assert [m.seed_id for m in built] == ["seed-s0", "seed-s2", "seed-walk"]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_arcs_variables_render_their_templates(language):
    p = persona(language)
    for name, variables in [("arcs_seeds.j2", arcs_stage.seed_pool_variables(p, POOL, language, 3, 2)),
                            ("arcs_plan.j2", arcs_stage.arc_plan_variables(p, seeds(), 1, 3)),
                            ("arcs_major_events.j2", arcs_stage.major_event_variables(p, seeds(), arcs(), 3))]:
        text = "\n".join(m["content"] for m in render(name, language=language, **variables))
        shown = variables.get("pool") or variables["seeds"]
        assert shown[2]["label"] in text, name
        assert ("s2" in text) == (language == "en"), f"{name}: a zh prompt shows the seed's title, not its id"


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_major_events_of_a_timeline_up_to_a_year_are_planned_with_its_holidays_in_view(language):
    """A capable planner placed the Spring Festival by its own reckoning ("prompt gave no calendar facts"), and an
    event "the day before New Year's Eve" with no calendar shown: the major-events prompt names the holidays."""
    from synth.config import conf, settings

    countries = settings.parse(conf.preset_config("tiny")).holiday_countries
    p = persona(language).model_copy(update={"start": dt.date(2022, 1, 1), "end": dt.date(2022, 3, 16)})
    holidays = arcs_stage.timeline_holidays(p, countries, language)
    variables = arcs_stage.major_event_variables(p, seeds(), arcs(), 3, holidays)
    body = "\n".join(m["content"] for m in render("arcs_major_events.j2", language=language, **variables))
    assert ("除夕" in body and "春节" in body) if language == "zh" else "New Year's Day (observed)" in body
    years = p.model_copy(update={"end": dt.date(2024, 3, 16)})
    assert arcs_stage.timeline_holidays(years, countries, language) == []  # a longer plan is not crowded with them


# ------------------------------------------------------------------------------------------ phases

TEN_DAYS = major(0, dt.date(2022, 1, 1), dt.date(2022, 1, 10), arcs())


def phase(k: int, start: dt.date, end: dt.date, event: MajorEvent = TEN_DAYS) -> Phase:
    return Phase(id=mint_id(event.id, "phase", k), persona_id=PID, major_event_id=event.id, index=k, title=f"P{k}",
                 description="d", start=start, end=end, snapshot_before=snapshot("a"), snapshot_after=snapshot("b"))


def test_phase_slot_leaves_room_for_later_phases_and_ends_with_the_event():
    first = phases_stage.phase_slot(TEN_DAYS, 0, 3, None)
    assert (first.start, first.low, first.high) == (0, 0, 7)
    second = phases_stage.phase_slot(TEN_DAYS, 1, 3, phase(0, dt.date(2022, 1, 1), dt.date(2022, 1, 4)))
    assert (second.start, second.low, second.high) == (4, 4, 8)
    last = phases_stage.phase_slot(TEN_DAYS, 2, 3, phase(1, dt.date(2022, 1, 5), dt.date(2022, 1, 7)))
    assert (last.start, last.low, last.high) == (7, 9, 9)
    # the previous phase of another event does not move the first phase of this one
    other = phase(4, dt.date(2021, 12, 1), dt.date(2021, 12, 31), major(9, dt.date(2021, 12, 1),
                                                                         dt.date(2021, 12, 31), arcs()))
    assert phases_stage.phase_slot(TEN_DAYS, 0, 3, other).start == 0


def test_phase_count_never_exceeds_the_event_days():
    assert phases_stage.phase_count(TEN_DAYS, 3) == 3
    assert phases_stage.phase_count(major(1, START, dt.date(2022, 1, 2), arcs()), 3) == 2
    # at least `min_days` a phase: a phase of one or two days is no gradual stretch of change
    assert phases_stage.phase_count(TEN_DAYS, 3, None, 3) == 3
    assert phases_stage.phase_count(major(1, START, dt.date(2022, 1, 7), arcs()), 3, None, 3) == 2
    assert phases_stage.phase_count(major(1, START, dt.date(2022, 1, 5), arcs()), 3, None, 3) == 1
    assert phases_stage.phase_count(major(1, START, START, arcs()), 3, None, 3) == 1, "at least one"


def test_phase_variables_show_the_previous_phase_and_the_new_context():
    previous = phase(0, dt.date(2022, 1, 1), dt.date(2022, 1, 4))
    slot = phases_stage.phase_slot(TEN_DAYS, 1, 3, previous)
    variables = phases_stage.phase_variables(persona(), arcs(), slot, snapshot("a"), previous, [], [], [], 2)
    assert list(variables) == ["persona", "arcs", "event", "snapshot", "k", "count", "start_day", "low", "high",
                               "start_date", "low_date", "high_date", "previous", "moves", "people", "holidays", "newcomers"]
    assert (variables["k"], variables["count"], variables["start_day"], variables["low"], variables["high"]) == (
        1, 3, 4, 4, 8)
    assert variables["start_date"] == "2022-01-05"
    assert variables["previous"]["title"] == "P0" and variables["snapshot"]["focus"] == "focus a"
    assert [s["arc"] for s in variables["event"]["states"]] == ["Trust", "Trust (2)"]
    # the phase before is shown even from another event (continuity); the slot of a first phase ignores it
    first = phases_stage.phase_slot(TEN_DAYS, 0, 3, None)
    assert phases_stage.phase_variables(persona(), arcs(), first, snapshot("a"), None, [], [], [], 2)["previous"] is None


def test_phase_view_clamps_the_end_into_the_slot_and_build_phase_mints_the_id():
    slot = phases_stage.phase_slot(TEN_DAYS, 0, 3, None)  # may end on days 0..7
    draft = phases_stage.phase_answer(0, 9).model_validate({"title": " Nights ", "description": " d ",
                                                            "end_day": 9})
    view = phases_stage.phase_view(draft, slot)
    assert view == {"title": "Nights", "description": "d", "start": "2022-01-01", "end": "2022-01-08"}
    update = phases_stage.update_variables(persona(), arcs(), TEN_DAYS, snapshot("a"), view, [])
    assert list(update) == ["persona", "arcs", "event", "snapshot", "phase", "moves"] and update["phase"] is view
    built = phases_stage.build_phase(persona(), slot, view, snapshot("a"), snapshot("b"))
    assert (built.id, built.major_event_id, built.index) == (mint_id("m0", "phase", 0), "m0", 0)
    assert (built.start, built.end) == (dt.date(2022, 1, 1), dt.date(2022, 1, 8))
    assert (built.snapshot_before.focus, built.snapshot_after.focus) == ("focus a", "focus b")


def test_a_phase_naming_a_weekday_its_days_leave_out_ends_later_to_take_it_in():
    """A capable writer's phase ran Monday to Friday and said "周末去培训机构": its events could not be dated there."""
    slot = phases_stage.phase_slot(TEN_DAYS, 0, 3, None)  # Saturday 2022-01-01, may end on days 0..7
    answer = phases_stage.phase_answer(0, 9)

    def end(description: str, end_day: int, on: phases_stage.PhaseSlot = slot) -> str:
        draft = answer.model_validate({"title": "t", "description": description, "end_day": end_day})
        return phases_stage.phase_view(draft, on)["end"]
    assert end("On Friday she finally called him.", 2) == "2022-01-07"  # day 6, the first Friday
    assert end("周五晚上给他打了电话", 2) == "2022-01-07"
    assert end("She called him at the weekend.", 2) == "2022-01-03"  # Saturday is already in
    assert end("She called him.", 2) == "2022-01-03"
    short = phases_stage.PhaseSlot(event=TEN_DAYS, k=0, count=3, start=2, low=2, high=4)  # Monday to Wednesday
    assert end("周末去培训机构", 2, short) == "2022-01-03"  # no weekend within reach: the end stays
    # a day it plans, puts off or calls off is to come: the end stays (a capable writer's phase ending Friday,
    # "she tells Priya by text she has to skip their weekend walk", was stretched to the Saturday)
    weekdays = phases_stage.PhaseSlot(event=TEN_DAYS, k=0, count=3, start=3, low=3, high=8)  # Tuesday on
    assert end("She tells Priya by text she has to skip their weekend walk.", 6, weekdays) == "2022-01-07"
    assert end("She spends the weekend at her mother's.", 6, weekdays) == "2022-01-08"
    assert end("他打算周六再去一趟培训机构", 6, weekdays) == "2022-01-07"
    assert end("周六他去了一趟培训机构", 6, weekdays) == "2022-01-08"


def test_to_snapshot_maps_statuses_to_arcs_in_order():
    answer = phases_stage.snapshot_answer(2).model_validate({"energy": 3, "stress": 9, "dominant_emotion": " fear ",
                                                             "focus": " rent ", "arc_status": [" x ", "y"]})
    assert phases_stage.to_snapshot(answer, arcs()) == Snapshot(energy=3, stress=9, dominant_emotion="fear",
                                                                focus="rent", arc_status={"arc0": "x", "arc1": "y"})


def test_phases_run_chains_every_phase_to_the_one_before():
    later = major(1, dt.date(2022, 1, 15), dt.date(2022, 1, 16), arcs())
    ctx = SimpleNamespace(persona=persona(), arcs=arcs(), major_events=[later, TEN_DAYS], language="en",
                          settings=SimpleNamespace(holiday_countries={}),
                          section=SimpleNamespace(phases_per_event=3, everyday_phase_days=21, min_phase_days=1))
    run = phases_stage.PhasesRun(ctx)
    chain = run.chain()
    keys = [key for key, _ in chain]
    assert keys == [mint_id("m0", "phase", k) for k in range(3)] + [mint_id("m1", "phase", k) for k in range(2)]
    args = [unit.args for _, unit in chain]
    assert [(event.id, k, count) for event, k, count, _ in args] == [
        ("m0", 0, 3), ("m0", 1, 3), ("m0", 2, 3), ("m1", 0, 2), ("m1", 1, 2)]
    # each unit reads the one before it by position: one chain across events
    assert [position for *_, position in args] == list(range(5)) and run.keys == keys
    # `min_phase_days` reaches the count: the two-day event is one phase
    ctx.section.min_phase_days = 3
    assert [count for _, unit in phases_stage.PhasesRun(ctx).chain() for count in unit.args[2:3]] == [3, 3, 3, 1]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_phases_variables_render_their_templates(language):
    p, previous = persona(language), phase(0, dt.date(2022, 1, 1), dt.date(2022, 1, 4))
    slot = phases_stage.phase_slot(TEN_DAYS, 1, 3, previous)
    view = {"title": "Nights", "description": "d", "start": "2022-01-05", "end": "2022-01-08"}
    for name, variables in [
        ("phases_init.j2", phases_stage.init_variables(p, arcs(), TEN_DAYS)),
        ("phases_generate.j2", phases_stage.phase_variables(p, arcs(), slot, snapshot("a"), previous, [], [], [], 2)),
        ("phases_update.j2", phases_stage.update_variables(p, arcs(), TEN_DAYS, snapshot("a"), view, [])),
    ]:
        text = "\n".join(m["content"] for m in render(name, language=language, **variables))
        assert "Trust (2)" in text, name


# ------------------------------------------------------------------------------------------ events

# the shipped defaults, with the values these tests reason about spelled out
EVENTS_SECTION = EventsSettings(**{**conf.recorded_section({}, "events"), "events_per_week": 3, "min_events": 2,
                                   "max_events": 8, "min_evidence": 2, "max_evidence": 4, "everyday_share": 0.33,
                                   "max_gap_days": 10, "recent_phases": 3, "new_people": 1, "gap_room_days": 2,
                                   "fill_gaps": True, "travel_seeds": [], "date_words": []})


def test_event_quota_is_proportional_to_the_phase_length_within_bounds():
    counts = {days: events_stage.event_quota(EVENTS_SECTION, days).count for days in (1, 3, 7, 12, 14, 60)}
    assert counts == {1: 2, 3: 2, 7: 3, 12: 5, 14: 6, 60: 8}


def test_everyday_quotas_take_the_share_and_keep_the_gap():
    # 20 major events at a third: 10 everyday ones, shared 1:3 by length; a 30-day phase needs 3 for the gap
    quotas = events_stage.everyday_quotas(EVENTS_SECTION, 20, [10, 30])
    # round(0.33 / 0.67 * 20) = 10 over [2.5, 7.5]: the tie's remainder goes to the first
    assert [q.count for q in quotas] == [3, 7] and all(q.min_evidence == 1 for q in quotas)
    none = events_stage.everyday_quotas(EVENTS_SECTION.model_copy(update={"everyday_share": 0}), 20, [10, 31])
    assert [q.count for q in none] == [1, 4], "no share: only the longest-gap floor"


def test_event_quota_keeps_the_evidence_range_non_empty():
    section = EVENTS_SECTION.model_copy(update={"events_per_week": 4, "min_evidence": 3, "max_evidence": 2})
    assert events_stage.event_quota(section) == events_stage.EventQuota(4, 3, 3)
    assert events_stage.event_quota(section.model_copy(update={"max_evidence": 5})) == events_stage.EventQuota(4, 3, 5)


def test_events_variables():
    quota = events_stage.EventQuota(2, 1, 3)
    ph = phase(1, dt.date(2022, 1, 5), dt.date(2022, 1, 8))
    variables = events_stage.events_variables(persona(), arcs(), TEN_DAYS, ph, quota, ["Sam", "Sam (2)"])
    assert variables == {**persona_and_arcs(persona(), arcs()), "event": variables["event"],
                         "phase": ph.model_dump(mode="json"), "window": {"start": "2022-01-05", "end": "2022-01-08"},
                         "days": 4, "count": 2, "min_evidence": 1,
                         "max_evidence": 3, "people": ["Sam", "Sam (2)"], "moves": [], "introduced": [],
                         "recent": [], "holidays": [], "newcomers": 0, "filler": False, "written": []}
    assert variables["event"]["id"] == "m0" and len(variables["event"]["states"]) == 2
    text = "\n".join(m["content"] for m in render("events_generate.j2", language="en", **variables))
    assert "Sam (2)" in text


def test_build_events_sorts_by_time_clamps_days_and_maps_labels():
    ph = phase(1, dt.date(2022, 1, 5), dt.date(2022, 1, 6))  # two days
    people = {"Sam": "r1", "Sam (2)": "r2"}
    arc_ids = {"Trust": "arc0", "Trust (2)": "arc1"}
    model = events_stage.events_answer(9, tuple(people), tuple(arc_ids), 2, 1, 2)
    answer = model.model_validate({"events": [
        {"title": " late ", "description": "d", "location": " ward ", "day": 8, "hour": 7, "minute": 0,
         "participants": ["Sam (2)", "Sam", "Sam (2)"],
         "evidence": [{"kind": "fact", "statement": " s ", "arcs": ["Trust (2)", "Trust", "Trust (2)"],
                       "private": False}]},
        {"title": "early", "description": "d", "location": "home", "day": 0, "hour": 21, "minute": 15,
         "participants": [], "evidence": [{"kind": "emotion", "statement": "a", "arcs": ["Trust"], "private": True},
                                          {"kind": "fact", "statement": "b", "arcs": ["Trust (2)"], "private": False}]},
    ]})
    out = events_stage.build_events(persona(), ph, people, arc_ids, answer)
    events, evidence = out["events.jsonl"], out["evidence.jsonl"]
    assert [e.title for e in events] == ["early", "late"]
    assert [e.id for e in events] == [mint_id(ph.id, "event", i) for i in range(2)]
    assert events[0].time == dt.datetime(2022, 1, 5, 21, 15)
    assert events[1].time == dt.datetime(2022, 1, 6, 7, 0), "day 8 of a two-day phase is its last day"
    assert (events[1].location, events[1].participant_ids) == ("ward", ["r2", "r1"])
    assert [(v.event_id, v.id) for v in evidence] == [(events[0].id, mint_id(events[0].id, "evidence", 0)),
                                                      (events[0].id, mint_id(events[0].id, "evidence", 1)),
                                                      (events[1].id, mint_id(events[1].id, "evidence", 0))]
    assert evidence[2].arc_ids == ["arc1", "arc0"] and evidence[2].statement == "s"


def test_a_gap_fillers_events_spread_over_its_days_whatever_days_the_answer_chose():
    """A filler of 73 days whose model put its eight events in the first weeks left a 25-day stretch (a small fake
    run's `no trace for 14 days`): the filler is there to cover its days."""
    from synth.life.gaps import open_gaps
    from synth.stages.events import events_answer, spread_days

    model = events_answer(72, ("Ann",), ("arc",), 8, 1, 1)
    draft = {"title": "t", "description": "d", "location": "home", "hour": 9, "minute": 0, "participants": [],
             "evidence": [{"kind": "fact", "statement": "s", "arcs": ["arc"], "private": False}]}
    answer = model.model_validate({"events": [{**draft, "day": d} for d in (3, 0, 5, 1, 2, 4, 6, 7)]})
    spread = spread_days(answer, 72)
    days = [e.day for e in spread.events]
    assert days == sorted(days) and days[0] < 9 and days[-1] >= 72 - 9
    start = dt.date(2022, 7, 22)
    dates = [start + dt.timedelta(days=d) for d in days]
    assert open_gaps(dates, start, start + dt.timedelta(days=71), 8) == []
    assert open_gaps([start + dt.timedelta(days=d) for d in range(8)], start, start + dt.timedelta(days=71), 8)


def test_a_spread_filler_event_keeps_the_weekday_or_date_its_text_names():
    """A capable writer put a filler event on day 8, a Tuesday, and wrote "周二凌晨"; spread, it landed on a Sunday."""
    from synth.stages.events import events_answer, spread_days

    model = events_answer(13, ("Ann",), ("arc",), 2, 1, 1)
    draft = {"title": "t", "location": "home", "hour": 0, "minute": 30, "participants": [],
             "evidence": [{"kind": "fact", "statement": "s", "arcs": ["arc"], "private": False}]}
    answer = model.model_validate({"events": [{**draft, "day": 2, "description": "在家发呆"},
                                              {**draft, "day": 8, "description": "周二凌晨十二点半和王晨吐槽"}]})
    plain, pinned = sorted(spread_days(answer, 13).events, key=lambda d: d.day)
    assert plain.day == 3  # the first of two over 13 days
    assert pinned.day % 7 == 8 % 7 and pinned.day == 8  # the nearest Tuesday to day 9 is day 8 itself
    dated = answer.model_copy(update={"events": [answer.events[0], answer.events[1].model_copy(
        update={"day": 4, "description": "1月14日去医院复查", "evidence": answer.events[1].evidence})]})
    assert sorted(d.day for d in spread_days(dated, 13).events) == [3, 4]  # "1月14日" keeps its day
    said = answer.model_copy(update={"events": [answer.events[0], answer.events[1].model_copy(
        update={"day": 1, "description": "吐槽", "evidence": [answer.events[1].evidence[0].model_copy(
            update={"statement": "She said on Saturday night she was done."})]})]})
    assert sorted(d.day for d in spread_days(said, 13).events) == [1, 9]  # its evidence's "Saturday" pins it too
