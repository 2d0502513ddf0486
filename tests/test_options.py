"""Options from the person's own life: seeds chosen per question type, rendered blind to the key, re-rendered on
failure; counter-seeds marked invented in the data and never in a prompt."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pytest
from test_qa_stages import ANSWER, PID, World, hand_qa, key_letter, world  # noqa: F401  (the fixture)

from synth.llm.base import LLMRequest, ProviderResponse, Usage
from synth.records import MCQ, QA, Event, Evidence, EvidenceRef, OptionSeed
from synth.stages import distractors as distractors_stage
from synth.stages.options import render, seeds

DOCS = Path(__file__).resolve().parent.parent / "docs" / "options.md"
T0 = dt.datetime(2022, 1, 1, 9)


# ------------------------------------------------------------------------------------- seed selection

def life() -> tuple[list[Evidence], dict[str, dt.datetime], dict[str, Event]]:
    """Arc A and arc B, an event every 5 days for 100 days (one statement each, alternating arcs); the even
    events have Xiaomei in them."""
    evidence, seen, events = [], {}, {}
    for k in range(20):
        when = T0 + dt.timedelta(days=5 * k)
        event = Event(id=f"e{k}", persona_id=PID, phase_id="ph", time=when, title="t", description="d",
                      location="home", participant_ids=["xiaomei"] if k % 2 == 0 else [f"p{k}"])
        events[event.id] = event
        e = Evidence(id=f"v{k}", persona_id=PID, event_id=event.id, kind="fact", statement=f"S{k}: thing {k}",
                     arc_ids=["A" if k % 2 == 0 else "B"])
        evidence.append(e)
        seen[e.id] = when + dt.timedelta(hours=3)
    return evidence, seen, events


def item(question_type: str, ids: list[int], asked_day: int = 90) -> QA:
    ev, seen, _ = life()
    refs = [EvidenceRef(statement=ev[k].statement, evidence_id=ev[k].id, digital_trace_ids=["t"]) for k in ids]
    return QA(id=f"q-{question_type}", persona_id=PID, question_type=question_type, dimension="experience",
              arc_id="A", question_time=T0 + dt.timedelta(days=asked_day), question="What happened?",
              answer=ANSWER, evidence=refs, digital_trace_ids=["t"], window_end=dt.date(2022, 4, 1))


def chosen(question_type: str, ids: list[int], asked_day: int = 90) -> tuple[OptionSeed, list[int]]:
    ev, seen, events = life()
    key, found = seeds.select(item(question_type, ids, asked_day), ev, seen, events)
    return key, [int(i[1:]) for s in found for i in s.evidence_ids]


def test_every_seed_is_other_real_evidence_seen_by_the_question_time():
    for question_type in seeds.SEED_RULES:
        key, picked = chosen(question_type, [8, 10], asked_day=62)
        assert key.role == "key" and key.statements == ["S8: thing 8", "S10: thing 10"] and not key.invented
        assert picked and not {8, 10} & set(picked), question_type  # never the item's own evidence
        assert all(5 * k <= 62 for k in picked), question_type  # never seen after the question
        assert len(picked) == 6  # three seeds of as many statements as the key's


@pytest.mark.parametrize("question_type,holds", [
    # the same arc (A: even events) at another time than the item's window (days 40–50)
    ("comparison", lambda k: k % 2 == 0 and not 8 <= k <= 10),
    ("trajectory", lambda k: k % 2 == 0 and not 8 <= k <= 10),
    # other arcs (B: odd events) in the same window
    ("inference", lambda k: k % 2 == 1 and 6 <= k <= 12),
    ("pattern", lambda k: k % 2 == 1 and 6 <= k <= 12),
    # real events before the effect (day 50)
    ("causal", lambda k: k < 10),
    # a real consequence from another arc
    ("counterfactual", lambda k: k % 2 == 1),
    # the same people (Xiaomei: even events)
    ("factual", lambda k: k % 2 == 0),
])
def test_seed_selection_per_type(question_type, holds):
    """The type's first tier fills the seeds first; only when it runs out do the next tiers fill the rest."""
    _, picked = chosen(question_type, [8, 10])
    fitting = [k for k in range(19) if k not in (8, 10) and holds(k)]
    assert len(fitting) >= 2
    assert sum(holds(k) for k in picked) == min(len(fitting), len(picked)), (question_type, picked)


def test_a_life_too_thin_gives_fewer_seeds_and_excluded_evidence_is_not_chosen_again():
    _, picked = chosen("comparison", [0], asked_day=6)  # by day 6 only event 1 is seen besides the key's
    assert picked == [1]
    ev, seen, events = life()
    _, found = seeds.select(item("factual", [8]), ev, seen, events, excluded={"v0", "v2"})
    assert not {"v0", "v2"} & {i for s in found for i in s.evidence_ids}


def test_the_per_type_table_in_the_docs_is_the_code_table():
    text = DOCS.read_text(encoding="utf-8")
    for question_type, rule in seeds.SEED_RULES.items():
        assert f"| {question_type} | {rule.says} |" in text


# ------------------------------------------------------------------------------------- key-blind rendering

def four(statements: list[str], key: int) -> list[OptionSeed]:
    return [OptionSeed(role="key" if n == key else "distractor", statements=[s], evidence_ids=[f"v{n}"],
                       invented=n == 3) for n, s in enumerate(statements)]


def renderer_prompt(world: World, qa: QA, seeds_: list[OptionSeed], number: int = 1) -> str:
    from synth.config.prompts import render_text
    from synth.records import LifeArc, Persona

    ordered = render.shuffled(qa, seeds_, number)
    [persona] = world.read("persona.jsonl", Persona)
    return render_text("distractors_render.j2", language="en", **render.render_variables(
        qa, persona, world.read("arcs.jsonl", LifeArc), ordered, []))


def test_the_renderer_prompt_is_the_same_whichever_seed_is_true_or_invented(world):
    qa = item("causal", [8])
    texts = ["He moved out in March.", "He quit the choir.", "He bought a bike.", "He called his sister."]
    prompts = {renderer_prompt(world, qa, four(texts, key)) for key in range(4)}
    assert len(prompts) == 1  # no mark of the true seed (nor of the invented one) anywhere in it
    prompt = prompts.pop()
    assert ANSWER not in prompt and "invented" not in prompt.lower() and "correct" not in prompt.lower()
    # the true seed's number is spread over the items, not fixed
    places = {[n for n, s in enumerate(render.shuffled(qa.model_copy(update={"id": f"q{i}"}), four(texts, 0), 1))
               if s.role == "key"][0] for i in range(40)}
    assert places == {0, 1, 2, 3}
