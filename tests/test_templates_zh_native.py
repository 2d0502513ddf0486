"""Every Chinese prompt reads as Chinese: rendered with a scripted Chinese persona, no English word is left outside
the JSON field names the model must answer with, an id shown beside its native label (`日记（diary）`), numbers and
names; no doubled full stop; no generic 他/她 when the gender is known; no "取 7 到 7"."""

from __future__ import annotations

import re

import pytest

# Words the model must read literally: JSON field names of the output schemas and JSON literals. An English word
# outside this list (or an id not shown beside its native label) is a leftover.
from template_cases_zh import (  # noqa: F401
    ARC_RECORDS,
    ARCS,
    CHAT_DAY,
    CHOICES,
    DETAILED,
    EVENT_VIEW,
    EVIDENCE,
    FIELD_NAMES,
    GROUP,
    HOLIDAYS,
    LANGUAGE_FREE,
    MEDIA,
    MOVES,
    NEWCOMER,
    OPEN,
    PERSONA,
    PHASE,
    QA_EVIDENCE,
    QUESTION,
    SEEDS,
    SNAP,
    STATE,
    STATES,
    STYLE,
    TRACE_CONTEXT,
    TRACES,
    VARIANT,
    VARIANT_TEMPLATES,
    VARIANTS,
    WORD,
    _generation,
    _qa,
    leftovers,
    renders,
    templates,
)

from synth.config.prompts import label, render, sentence
from synth.life.relations import RELATIONS


@pytest.mark.parametrize("name", templates())
def test_a_chinese_prompt_has_no_english_leftovers(name):
    for text in renders(name):
        assert not leftovers(text), f"prompts/{name}: English words in the zh render: {sorted(leftovers(text))}"
        assert "。。" not in text, f"prompts/{name}: a doubled full stop"
        assert "他/她" not in text, f"prompts/{name}: the generic 他/她 although the persona's gender is known"
        assert not re.search(r"取 (\d+) 到 \1\b", text), f"prompts/{name}: a range whose ends are equal"
    for messages in renders(name, joined=False):
        # the fake provider answers in Chinese when the system prefix asks for it (synth.llm.fake.respond)
        assert len(messages) == 1 or "简体中文" in messages[0]["content"], f"prompts/{name}: no 简体中文 rule"


def test_the_check_catches_what_it_is_for():
    # The detector itself: a raw id, an English gloss, and an id beside its label are caught (the answer schema
    # offers native labels; the client maps them back to the ids).
    assert leftovers("题型：trajectory") == {"trajectory"}
    assert leftovers("标准记忆（ground-truth memory）") == {"ground", "truth", "memory"}
    assert leftovers("可选：日记（diary）、邮件（email）") == {"diary", "email"}
    assert sentence("销售总监。", "zh") == "销售总监。" and sentence("销售总监", "zh") == "销售总监。"


def test_labels_show_native_names_and_keep_unknown_ids():
    assert label("experience", "dimension", "zh") == "经历"
    assert label("comparison", "question_type", "zh") == "比较"
    assert label("voice_memo_transcript", "medium", "zh") == "语音备忘录"
    assert label("experience", "dimension", "en") == "experience"  # English prompts show the id
    assert label("brand_new_medium", "medium", "zh") == "brand_new_medium"
    text = renders("qa_plan.j2")[0]
    assert "维度：经历" in text and "题型：比较" not in text and "题型：单点事实" in text
    assert "林晓梅，38 岁，女，杭州一家茶叶公司的销售总监。\n" in text


def test_the_pronoun_follows_the_gender_and_equal_ends_say_one_number():
    text = renders("phases_generate.j2")[0]
    assert "跟踪她的内在状态" in text and "取 7，即" in text
    male = render("phases_init.j2", language="zh", persona={**PERSONA, "gender": "男"}, arcs=ARCS,
                  event=EVENT_VIEW, moves=MOVES)[0]["content"]
    assert "跟踪他的内在状态" in male
    wide = render("phases_generate.j2", language="zh", persona=PERSONA,
                  **{**_generation("phases_generate.j2"), "high": 12})[1]["content"]
    assert "取 7 到 12 之间的整数" in wide


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize("name", sorted(VARIANT_TEMPLATES))
def test_variant_templates_read_as_chinese_under_every_relation(name, relation):
    text = "\n".join(m["content"] for m in render(name, language="zh", persona=PERSONA,
                                                    **{**VARIANTS, **VARIANT_TEMPLATES[name], "relation": relation}))
    assert not leftovers(text), sorted(leftovers(text))
