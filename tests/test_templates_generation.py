"""Golden renders of the generation templates (persona → traces) in English and Chinese, under StrictUndefined."""

from __future__ import annotations

import pytest
from template_cases_en import (  # noqa: F401
    ARC,
    ARCS,
    CJK,
    DETAILED,
    EVENT_VIEW,
    EVIDENCE,
    HOLIDAYS,
    MOVES,
    NEWCOMER,
    OPEN,
    PHASE,
    SEEDS,
    SNAP,
    SNAP_JSON,
    STATE,
    TRACE_CONTEXT,
    VARIABLES,
    _persona,
    variables,
)

from synth.config.prompts import render
from synth.core.errors import InputError


@pytest.mark.parametrize("name", sorted(VARIABLES))
@pytest.mark.parametrize("language", ["en", "zh"])
def test_template_renders_a_system_prefix_and_a_task(name, language):
    messages = render(name, language=language, **variables(name, language))
    assert [m["role"] for m in messages] == ["system", "user"]
    text = "\n".join(m["content"] for m in messages)
    assert "{{" not in text and "{%" not in text
    if language == "zh":
        assert "简体中文" in messages[0]["content"], "a zh render must ask for Simplified Chinese output"
        assert len(CJK.findall(messages[1]["content"])) > 20, "the zh task is written in Chinese"
    else:
        assert not CJK.search(text), "an English render carries no Chinese"


@pytest.mark.parametrize("name", sorted(VARIABLES))
def test_a_missing_variable_is_an_error(name):
    values = variables(name, "en")
    missing = sorted(VARIABLES[name])[0]
    del values[missing]
    with pytest.raises(InputError, match="undefined"):
        render(name, language="en", **values)


@pytest.mark.parametrize("stage", [["phases_init.j2", "phases_generate.j2", "phases_update.j2"],
                                   ["traces_plan.j2", "traces_write.j2", "traces_write_all.j2"],
                                   ["arcs_seeds.j2", "arcs_plan.j2", "arcs_major_events.j2"]])
def test_a_stage_keeps_one_cacheable_system_prefix(stage):
    systems = {render(name, language="en", **variables(name, "en"))[0]["content"] for name in stage}
    assert len(systems) == 1


def test_renders_carry_the_record_details():
    text = render("traces_write.j2", language="en", **variables("traces_write.j2", "en"))[1]["content"]
    assert "Maya felt uneasy at handover." in text and "[Photo: …]" in text and "80-320 words" in text
    zh = render("traces_write.j2", language="zh", **variables("traces_write.j2", "zh"))[1]["content"]
    assert "[照片：…]" in zh and "80–320" in zh
    schema = render("events_generate.j2", language="en", **variables("events_generate.j2", "en"))[1]["content"]
    assert "day 0 is 2022-01-03" in schema and "Sam" in schema


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_persona_media_sit_in_every_traces_prompts_cacheable_prefix(language):
    """The media list is the same for every traces request of a persona: in the prefix (cacheable, and long enough
    to pass a provider's cache minimum), not after the moment."""
    for name in ("traces_plan.j2", "traces_write.j2", "traces_write_all.j2"):
        system, task = (m["content"] for m in render(name, language=language, **variables(name, language)))
        marker = "目标占比" if language == "zh" else "target share of all their records"
        assert marker in system and marker not in task, name
