"""Planning-the-life prompts a capable model could follow: one view of the people and places per event (named
relatives, the unlisted kept unnamed, home a location like any other), a gap's filler that shows its phase with
the phase's own bounds, and the rules a bridged run found contradictory in the arcs, phases and events prompts."""

from __future__ import annotations

import datetime as dt

import pytest
from pydantic import ValidationError
from test_prompt_lint import text

from synth.config.prompts import render
from synth.stages import events as events_stage
from synth.stages import persona as persona_stage

PLACE = {"kind": "place", "name": "Ward 7", "relation": "ward", "description": "her ward"}
ZH_PLACE = {"kind": "place", "name": "七病区", "relation": "病区", "description": "她的病区"}


# ---- one registry view per event

def test_home_is_a_location_even_when_regular_places_are_listed():
    """"location must be a regular place listed above" left an event at home (never registered) no answer."""
    assert "at home" in text("events_generate.j2", "en", introduced=[PLACE])
    assert "在家" in text("events_generate.j2", "zh", introduced=[ZH_PLACE])
    assert "at home" in text("events_generate.j2", "en", introduced=[])


def test_a_relative_has_a_name_and_one_the_profile_leaves_unnamed_stays_unnamed():
    """A relative listed as "the sister" while the prompt said "name only the people listed above"."""
    with pytest.raises(ValidationError):
        persona_stage.RelationDraft(name="", relation="sister", description="d")
    values = {"big_five": {k: 0.5 for k in ("openness", "conscientiousness", "extraversion", "agreeableness",
                                           "neuroticism")}, "note": "", "start": "2022-01-01", "end": "2022-03-15",
              "min_relations": 4}
    en = "\n".join(m["content"] for m in render("persona_enrich.j2", language="en", **values))
    zh = "\n".join(m["content"] for m in render("persona_enrich.j2", language="zh", **values))
    assert "not \"the sister\"" in en and "不要只写“姐姐”" in zh
    for language, unnamed in (("en", "unnamed"), ("zh", "不要给他们起名字")):
        body = text("phases_generate.j2", language)
        assert unnamed in body, language
    assert "Name only the people listed above." not in text("phases_generate.j2", "en")


# ---- a gap's filler

def test_a_gap_filler_shows_its_phase_with_the_phases_own_bounds():
    """A filler's prompt showed "this phase 1" as 01-12..01-22 while the phase's own prompt had said 01-01..01-22."""
    from test_stage_functions_generation import TEN_DAYS, arcs, persona, phase

    whole = phase(0, dt.date(2022, 1, 1), dt.date(2022, 1, 22))
    window = whole.model_copy(update={"start": dt.date(2022, 1, 12)})
    quota = events_stage.EventQuota(2, 1, 2)
    variables = events_stage.events_variables(persona(), arcs(), TEN_DAYS, whole, quota, ["Sam"], window=window)
    assert variables["days"] == 11
    body = "\n".join(m["content"] for m in render("events_generate.j2", language="en", **variables))
    assert "2022-01-01 (Saturday) to 2022-01-22 (Saturday)" in body, "the phase keeps its own bounds"
    assert "only the events of 2022-01-12 (Wednesday) to 2022-01-22" in body
    assert "day 0 is 2022-01-12" in body
    plain = events_stage.events_variables(persona(), arcs(), TEN_DAYS, whole, quota, ["Sam"])
    assert "only the events of" not in "\n".join(m["content"] for m in render("events_generate.j2", language="en",
                                                                               **plain))
