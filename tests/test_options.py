"""Options from the person's own life: seeds chosen per question type, rendered blind to the key, re-rendered on
failure; counter-seeds marked invented in the data and never in a prompt."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from kit import Scripted
from qa_world import HAND_ANSWER as ANSWER
from qa_world import PID, QAWorld, hand_qa, key_letter

from synth.core.jsonl import write_atomic
from synth.llm.base import LLMRequest
from synth.records import MCQ, QA, Event, Evidence, EvidenceRef, OptionSeed
from synth.stages import STAGES
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
        # three seeds of as many statements as the key's; a type kept to its arc or people finds two here
        assert len(picked) == (6 if seeds.SEED_RULES[question_type].tiers[-1] == (seeds._any,) else 4), question_type


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
    _, picked = chosen("inference", [0], asked_day=6)  # by day 6 only event 1 (arc B) is seen besides the key's
    assert picked == [1]
    # a comparison stays on its arc: arc B's event is another matter, so no real seed (counter-seeds follow)
    assert chosen("comparison", [0], asked_day=6)[1] == []
    ev, seen, events = life()
    _, found = seeds.select(item("factual", [8]), ev, seen, events, excluded={"v0", "v2"})
    assert not {"v0", "v2"} & {i for s in found for i in s.evidence_ids}


def strand(name: str, text: str, *people: str) -> tuple[OptionSeed, frozenset[str]]:
    return OptionSeed(role="distractor", statements=[text], evidence_ids=[name]), frozenset(people)


def test_the_three_seeds_chosen_leave_the_key_no_more_central_than_another():
    """Each seed in the type's order shares one strand with the key (a person, a place), so the first three meet
    at the key: chosen among more, the three share with one another as much as with the key."""
    key = OptionSeed(role="key", statements=["Lunch at the harbour cafe with Ana, then Ben drove me home"],
                     evidence_ids=["k"])
    pairs = [strand("d1", "Ana showed me the harbour in the rain", "ana"),
             strand("d2", "Ben drove to the garage about the brakes", "ben"),
             strand("d3", "The cafe had closed for the holidays", "cleo"),
             strand("d4", "Dev and Ana argued about the garage rent", "dev", "ana"),
             strand("d5", "Dev booked the garage for the rent talk with Ana", "dev", "ana"),
             strand("d6", "Ana and Dev split the rent for the garage", "dev", "ana")]
    found = [seed for seed, _ in pairs]
    people = {seed.evidence_ids[0]: folk for seed, folk in pairs} | {"k": frozenset({"ana", "ben"})}

    def of(seed: OptionSeed) -> frozenset[str]:
        return people[seed.evidence_ids[0]]

    first = found[:3]
    assert all(lead > 0 for lead in seeds.key_leads(key, first, of))  # in order, the key is the centroid
    chosen = seeds.balanced(key, found, of)
    assert len(chosen) == 3 and all(seed in found for seed in chosen)
    assert all(lead <= 0 for lead in seeds.key_leads(key, chosen, of))
    # sets that already leave the key off-centre keep the type's order; fewer than four candidates are kept as given
    assert seeds.balanced(key, found[3:], of) == found[3:]
    assert seeds.balanced(key, first, of) == first


def test_the_per_type_table_in_the_docs_is_the_code_table():
    text = DOCS.read_text(encoding="utf-8")
    for question_type, rule in seeds.SEED_RULES.items():
        assert f"| {question_type} | {rule.says} |" in text


# ------------------------------------------------------------------------------------- key-blind rendering

def four(statements: list[str], key: int) -> list[OptionSeed]:
    return [OptionSeed(role="key" if n == key else "distractor", statements=[s], evidence_ids=[f"v{n}"],
                       invented=n == 3) for n, s in enumerate(statements)]


def renderer_prompts(world: QAWorld, qa: QA, seeds_: list[OptionSeed], number: int = 1) -> list[str]:
    """The renderer's prompts of one round, one per seed, in the drawn order."""
    from synth.config.prompts import render_text
    from synth.records import Persona

    ordered = render.shuffled(qa, seeds_, number)
    [persona] = world.read("persona.jsonl", Persona)
    return [render_text("distractors_render.j2", language="en", **render.render_variables(qa, persona, seed, [], 180))
            for seed in ordered]


def test_the_renderer_prompt_is_the_same_whichever_seed_is_true_or_invented(tmp_path):
    world = QAWorld(tmp_path / "out")
    qa = item("causal", [8])
    texts = ["He moved out in March.", "He quit the choir.", "He bought a bike.", "He called his sister."]
    rounds = {tuple(renderer_prompts(world, qa, four(texts, key))) for key in range(4)}
    assert len(rounds) == 1  # no mark of the true seed (nor of the invented one) anywhere in them
    prompts = rounds.pop()
    for prompt, text in zip(prompts, [s.statements[0] for s in render.shuffled(qa, four(texts, 0), 1)], strict=True):
        assert ANSWER not in prompt and "invented" not in prompt.lower() and "correct" not in prompt.lower()
        # one set per call: the renderer never sees the other three (a renderer writing all four to one question
        # recombined what the sets share, and readers picked the key as the rendered answers' hub)
        assert text in prompt and sum(other in prompt for other in texts) == 1
    from synth.records import LifeArc

    arcs = world.read("arcs.jsonl", LifeArc)
    assert arcs and not any(s.label in p for p in prompts for a in arcs for s in a.anchor_states[1:]), \
        "no arc's later states"
    # the true seed's place is spread over the items, not fixed
    places = {[n for n, s in enumerate(render.shuffled(qa.model_copy(update={"id": f"q{i}"}), four(texts, 0), 1))
               if s.role == "key"][0] for i in range(40)}
    assert places == {0, 1, 2, 3}


def test_an_option_is_asked_for_one_point_however_long_the_reference_answer():
    qa = item("causal", [8])
    short = qa.model_copy(update={"answer": "x" * 100})
    chain = qa.model_copy(update={"answer": "x" * 600})  # a five-step causal chain
    assert render.band(short, 180) == (75, 125)  # around the reference answer while it is short
    assert render.band(chain, 180) == (135, 225)  # the cap, not the chain: one point, not the records' list


def test_counter_seeds_must_have_as_many_statements_as_the_key():
    from pydantic import ValidationError

    model = render.counter_seeds_model(2, 3)
    full = {"seeds": [{"statements": ["a", "b", "c"]}, {"statements": ["d", "e", "f"]}]}
    assert [len(s.statements) for s in model.model_validate(full).seeds] == [3, 3]
    with pytest.raises(ValidationError):  # a set one statement short would be the one the renderer pads
        model.model_validate({"seeds": [{"statements": ["a", "b", "c"]}, {"statements": ["d", "e"]}]})
    with pytest.raises(ValidationError):
        model.model_validate({"seeds": [{"statements": ["a", "b", "c"]}]})


# ------------------------------------------------------------------------------------- the stage, scripted

KEY_MARK = "Statement 0.0"  # the hand-made item's evidence (test_qa_stages.hand_qa)
NEUTRAL = "NEUTRAL-QUESTION: what went on for you back then?"  # the scripted key-blind rewrite of the question


def rendering_round(prompt: str) -> int:
    """The round a renderer prompt is for: one more than the rounds it says were sent back."""
    return 1 + len(re.findall(r"^- round \d+:", prompt, flags=re.M))


class ByRule:
    """Answers by task: the renderer writes each statement set as an answer (tagged with its round); the reader
    picks the key's rendering in the first `key_picks` rounds, another option after; the verify judge agrees."""

    def __init__(self, key_picks: int = 1, also_true_once: bool = False, restate_once: str = "",
                 written: tuple[str, ...] = ()) -> None:
        self.key_picks = key_picks
        self.also_true_once = also_true_once
        self.restate_once = restate_once  # the first counter-seed set restates this (a key statement)
        self.written = written  # the counter-seed sets' statements, in order (default: canal walks)
        self.seen: list[LLMRequest] = []
        self.renders = 0

    def reply(self, request: LLMRequest) -> dict:
        prompt = request.messages[-1]["content"]
        if request.task == "distractors_question":
            return {"question": NEUTRAL}
        if request.task == "distractors_render":
            self.renders += 1
            body = re.search(r"Statement set:\n((?:- .*\n)+)", prompt).group(1)
            return {"answer": f"Round {rendering_round(prompt)}, honestly it came down to this: "
                    + " and ".join(line[2:] for line in body.strip().splitlines()) + ".", "cannot_answer": False}
        if request.task == "distractors_seeds":
            need, size = map(int, re.search(r"Write (\d) statement sets? of (\d)", prompt).groups())
            sets = [{"statements": [f"Other 9{k}.{n}: a walk by the canal on day {k} with cousin {n}"
                                    for n in range(size)]} for k in range(need)]
            for k, line in enumerate(self.written[:need]):
                sets[k]["statements"] = [line] * size
            if self.restate_once and sum(r.task == "distractors_seeds" for r in self.seen) == 1:
                sets[0]["statements"][0] = self.restate_once.replace("felt", "then felt")
            return {"seeds": sets}
        shown = {line[0]: line[3:] for line in prompt.splitlines() if line[:3] in {f"{c}. " for c in "ABCD"}}
        key = next(c for c, text in shown.items() if KEY_MARK in text)
        if request.task == "distractors_validate":
            picks_key = sum(r.task == "distractors_validate" for r in self.seen) <= self.key_picks
            return {"choice": key if picks_key else next(c for c in "ABCD" if c != key), "needs_memory": True,
                    "reason": "READER-REASON: only one answer fits the premise and it is the longest"}
        other = next(c for c in "ABCD" if c != key)
        holds_too = self.also_true_once and sum(r.task == "distractors_verify" for r in self.seen) == 1
        return {"key_supported": True, "others_ruled_out": not holds_too, "question_favours_option": False,
                "notes": [{"option": other, "problem": "ALSO-TRUE"}] if holds_too else [], "reason": "checked"}

    def answer(self, request: LLMRequest) -> dict:
        self.seen.append(request)
        return self.reply(request)

    def model(self) -> Scripted:
        """The kit's scripted model answering every distractors task by these rules."""
        return Scripted({task: self.answer for task in STAGES["distractors"].tasks}, seed=3)


def prompts_of(provider: ByRule, task: str) -> list[str]:
    return [" ".join(m["content"] for m in r.messages) for r in provider.seen if r.task == task]


def test_a_failed_round_re_renders_all_four_blind_to_the_key(tmp_path):
    provider = ByRule(key_picks=1)
    world = QAWorld(tmp_path / "out", model=provider.model())
    qa = hand_qa(world)  # causal: a seeded type
    world.run("distractors")
    [mcq] = world.read("mcq.jsonl", MCQ)
    assert [r.task for r in provider.seen] == ["distractors_question"] + (
        ["distractors_render"] * 4 + ["distractors_validate"]) * 2 + ["distractors_verify"]
    assert [(r.round, r.too_easy, r.blind_correct) for r in mcq.refinement] == [(1, True, True), (2, False, False)]
    # the key is the second round's rendering of the true seed, at the item's balanced position; the free-text
    # answer stays the QA writer's
    assert mcq.correct_choice_id == key_letter(qa) and mcq.answer == ANSWER
    key_text = next(c.text for c in mcq.choices if c.id == mcq.correct_choice_id)
    assert key_text.startswith("Round 2,") and KEY_MARK in key_text
    assert all(c.text.startswith("Round 2,") for c in mcq.choices[:4])  # all four re-rendered, none kept
    placed = {s.choice_id: s for s in mcq.option_seeds}
    assert sorted(placed) == list("ABCD") and placed[mcq.correct_choice_id].role == "key"
    assert all(not s.invented and s.evidence_ids for s in mcq.option_seeds)
    renders = prompts_of(provider, "distractors_render")
    # the reader's own words (which describe the option it picked: the key's content, when it was right) never
    # reach the renderer; the kinds of cue it named do, as advice for all four
    assert not any("READER-REASON" in r for r in renders)
    assert all("picked one by the question's premise" in r and "by its length or detail" in r for r in renders[4:])
    assert not any("picked one by" in r for r in renders[:4])
    for prompt in [*renders, *prompts_of(provider, "distractors_validate")]:
        # no mark of the true option: not the reference answer, not the reader's hit, no records
        assert ANSWER not in prompt and "picked the correct" not in prompt and "SECRET TRACE" not in prompt
        assert "marked correct" not in prompt
    for prompt in renders:
        assert prompt.count("Statement set:") == 1 and "correct" not in prompt.lower()
    assert sum(KEY_MARK in prompt for prompt in renders) == 2  # the key's set: one call of each round
    lo, hi = render.band(qa, 180)  # the preset's [distractors] option_chars for English
    assert all(f"{lo}–{hi} characters" in prompt for prompt in renders[:4])
    # the reader named length: the second round's four share one band, around the first round's median length
    bands = {re.search(r"(\d+)–(\d+) characters", prompt).groups() for prompt in renders[4:]}
    assert len(bands) == 1 and bands != {(str(lo), str(hi))}


def distractor_sets(provider: ByRule) -> list[set[str]]:
    """Per round, the statement sets rendered for options other than the key (the key's set carries KEY_MARK)."""
    rounds: list[set[str]] = []
    for prompt in prompts_of(provider, "distractors_render"):
        body = re.search(r"Statement set:\n((?:- .*\n)+)", prompt).group(1)
        number = int(rendering_round(prompt))
        while len(rounds) < number:
            rounds.append(set())
        if KEY_MARK not in body:
            rounds[number - 1].add(body)
    return rounds


@pytest.mark.parametrize("redraw", [True, False])
def test_a_round_whose_reader_found_the_key_draws_new_distractor_seeds(tmp_path, redraw):
    """The reader picks the key from how the life's sets fit the question, which a re-rendering of the same four
    keeps: the next round renders other sets of the life (or counter-seeds) in place of the lost round's three."""
    provider = ByRule(key_picks=1)
    world = QAWorld(tmp_path / "out", model=provider.model())
    world.config["distractors"]["redraw"] = redraw
    hand_qa(world)
    world.run("distractors")
    first, second = distractor_sets(provider)
    assert len(first) == 3 and len(second) == 3
    if redraw:
        assert not first & second
    else:
        assert first == second


@pytest.mark.parametrize("balance", [True, False])
def test_the_stage_chooses_its_three_seeds_among_more_to_leave_the_key_off_centre(tmp_path, monkeypatch, balance):
    """With `[distractors] balance` the stage hands `seeds.balanced` more candidates than three and renders the
    three it returns (here, the last three it was given); without, the first three in the type's order."""
    given: list[list[OptionSeed]] = []

    def last_three(key, found, people, count=seeds.DISTRACTORS):
        given.append(found)
        assert all(isinstance(people(seed), frozenset) for seed in found)
        return found[-count:]

    monkeypatch.setattr(seeds, "balanced", last_three)
    provider = ByRule(key_picks=0)
    world = QAWorld(tmp_path / "out", model=provider.model())
    world.config["distractors"]["balance"] = balance
    hand_qa(world)
    world.run("distractors")
    [rendered] = distractor_sets(provider)
    if balance:
        assert given and len(given[0]) > seeds.DISTRACTORS
        expected = given[0][-seeds.DISTRACTORS:]
    else:
        key, found = seeds.select(*world_selection(world))
        expected = found
    assert rendered == {"".join(f"- {line}\n" for line in seed.statements) for seed in expected}


def world_selection(world: QAWorld) -> tuple:
    """What the stage's first choice selects from: the item, the life's evidence, first sightings, events."""
    from synth.records import Trace
    from synth.stages.common import first_seen

    [qa] = world.read("qa.jsonl", QA)
    events = {e.id: e for e in world.read("events.jsonl", Event)}
    return qa, world.read("evidence.jsonl", Evidence), first_seen(world.read("traces.jsonl", Trace)), events


def question_prompt(world: QAWorld, qa: QA, seeds_: list[OptionSeed]) -> str:
    from synth.config.prompts import render_text
    from synth.records import Persona

    [persona] = world.read("persona.jsonl", Persona)
    return render_text("distractors_question.j2", language="en",
                       **render.question_variables(qa, persona, render.shuffled(qa, seeds_, 1)))


def test_the_question_is_rewritten_over_all_four_sets_blind_to_the_key(tmp_path):
    """Capable no-context readers picked the key as the one option that fits the question: the question was written
    from the key. One call sees the four sets, in the drawn order and unmarked, and rewrites the question so that
    each answers it; its prompt is the same whichever set is true or invented."""
    world = QAWorld(tmp_path / "out")
    qa = item("causal", [8])
    texts = ["He moved out in March.", "He quit the choir.", "He bought a bike.", "He called his sister."]
    prompts = {question_prompt(world, qa, four(texts, key)) for key in range(4)}
    assert len(prompts) == 1
    prompt = prompts.pop()
    assert all(text in prompt for text in texts) and qa.question in prompt
    assert ANSWER not in prompt and "invented" not in prompt.lower() and "correct" not in prompt.lower()
    order = [s.statements[0] for s in render.shuffled(qa, four(texts, 0), 1)]
    assert [prompt.index(text) for text in order] == sorted(prompt.index(text) for text in order)


def test_the_rewritten_question_is_the_one_rendered_judged_and_kept(tmp_path):
    provider = ByRule(key_picks=1)
    world = QAWorld(tmp_path / "out", model=provider.model())
    qa = hand_qa(world)
    world.run("distractors")
    [mcq] = world.read("mcq.jsonl", MCQ)
    assert mcq.question == NEUTRAL and mcq.question_written == qa.question and mcq.answer == ANSWER
    [asked_once] = prompts_of(provider, "distractors_question")  # once for the item, not once per round
    assert qa.question in asked_once and ANSWER not in asked_once
    later = [*prompts_of(provider, "distractors_render"), *prompts_of(provider, "distractors_validate"),
             *prompts_of(provider, "distractors_verify")]
    assert later and all(NEUTRAL in p and qa.question not in p for p in later)


def test_the_rewrite_is_off_with_the_knob_and_asked_again_when_the_judge_finds_it_favours_one(tmp_path):
    provider = ByRule(key_picks=0)
    world = QAWorld(tmp_path / "a", model=provider.model())
    world.config.setdefault("distractors", {})["neutral_question"] = False
    qa = hand_qa(world)
    world.run("distractors")
    [mcq] = world.read("mcq.jsonl", MCQ)
    assert mcq.question == qa.question and mcq.question_written == ""
    assert not prompts_of(provider, "distractors_question")

    class Favours(ByRule):
        def reply(self, request: LLMRequest) -> dict:
            answer = super().reply(request)
            if request.task == "distractors_verify" and sum(r.task == "distractors_verify" for r in self.seen) == 1:
                answer["question_favours_option"] = True
            return answer

    provider = Favours(key_picks=0)
    world = QAWorld(tmp_path / "b", model=provider.model())
    hand_qa(world)
    world.run("distractors")
    [mcq] = world.read("mcq.jsonl", MCQ)
    assert [r.question_favours for r in mcq.refinement] == [True, False]
    assert len(prompts_of(provider, "distractors_question")) == 2  # rewritten again over the second round's sets


def test_a_seed_the_verify_judge_finds_also_true_is_replaced(tmp_path):
    provider = ByRule(key_picks=0, also_true_once=True)
    world = QAWorld(tmp_path / "out", model=provider.model())
    hand_qa(world)
    world.run("distractors")
    [mcq] = world.read("mcq.jsonl", MCQ)
    first, second = mcq.refinement
    assert first.supported is False and first.also_true and second.supported is True
    renders = prompts_of(provider, "distractors_render")
    dropped = re.search(rf"{first.also_true[0]}\. Round 1, honestly it came down to this: (.*)\.",
                        prompts_of(provider, "distractors_verify")[0]).group(1)
    assert any(dropped in r for r in renders[:4]) and not any(dropped in r for r in renders[4:])


def test_a_thin_life_gets_counter_seeds_marked_invented_in_the_data_only(tmp_path):
    provider = ByRule(key_picks=0)
    world = QAWorld(tmp_path / "out", model=provider.model())
    qa = hand_qa(world)
    from synth.core.jsonl import write_atomic

    # asked the day after the first event: no other event seen yet, so all three seeds are written
    write_atomic(world.dir / "qa.jsonl", [qa.model_copy(update={"question_time": dt.datetime(2022, 1, 2, 20)})])
    world.run("distractors")
    [mcq] = world.read("mcq.jsonl", MCQ)
    assert [r.task for r in provider.seen][:6] == ["distractors_seeds", "distractors_question"] + [
        "distractors_render"] * 4
    assert sorted(s.invented for s in mcq.option_seeds) == [False, True, True, True]
    assert all(not s.evidence_ids for s in mcq.option_seeds if s.invented)
    render_prompts = prompts_of(provider, "distractors_render")
    assert len(render_prompts) == 4
    assert not any("invented" in r.lower() or "counter" in r.lower() for r in render_prompts)
    # the counter-seeds read like any other statement set
    assert any(re.search(r"Statement set:\n- Other 90\.0", r) for r in render_prompts)
    # the counter-seed writer is never shown the key: sets written around the true one orbit it (a capable writer
    # put its dates one day either side of the key's)
    [seeds_prompt] = prompts_of(provider, "distractors_seeds")
    assert all(ref.statement not in seeds_prompt for ref in qa.evidence)
    assert "You are not told the true answer" in seeds_prompt
    # room for statements as long as the key's: a flat 60 tokens each cut a Chinese writer's sets short
    [seeds_request] = [r for r in provider.seen if r.task == "distractors_seeds"]
    from synth.stages.options import statement_tokens
    per = statement_tokens([ref.statement for ref in qa.evidence])
    assert seeds_request.settings.max_tokens >= 3 * len(qa.evidence) * per


def test_spare_counter_seeds_let_the_stage_leave_the_key_off_centre(tmp_path):
    """In 75-day lives 21 of 26 items had no fitting real distractor seed: all three were written, each sharing a
    strand with the key, and capable readers picked the key as the options' overlap ("most overlap: battery quip
    with A, son with D"). Two sets more than needed are written, and the three kept leave the key no more central
    than another; without `balance`, the three written are kept as they come."""
    world = QAWorld(tmp_path / "out")
    qa = hand_qa(world)  # the key: "Statement 0.0: he did thing 0 and felt 0" (content words statement, thing, felt)
    written = ("felt walrus quince", "thing heron mango", "otter cobalt lima", "badger amber oslo", "lynx ivory rome")
    plain = seeds.OptionSeed(role="key", statements=[ref.statement for ref in qa.evidence])
    nobody = lambda seed: frozenset()  # noqa: E731 - written sets have no events, hence no people
    strands = [seeds.OptionSeed(role="distractor", statements=[line], invented=True) for line in written]
    assert seeds.key_leads(plain, strands[:3], nobody)[0] > 0  # the first three make the key the centre
    for balance in (True, False):
        provider = ByRule(key_picks=0, written=written)
        world = QAWorld(tmp_path / f"out{balance}", model=provider.model())
        world.config["distractors"]["balance"] = balance
        write_atomic(world.dir / "qa.jsonl", [qa.model_copy(update={"question_time": dt.datetime(2022, 1, 2, 20)})])
        world.run("distractors")
        [mcq] = world.read("mcq.jsonl", MCQ)
        key = next(s for s in mcq.option_seeds if s.role == "key")
        kept = [s for s in mcq.option_seeds if s.role != "key"]
        assert all(s.invented for s in kept) and len(kept) == 3
        [asked] = [r.messages[-1]["content"] for r in provider.seen if r.task == "distractors_seeds"]
        if balance:
            assert f"Write {3 + seeds.SPARE} statement sets" in asked
            assert seeds.key_leads(key, kept, nobody)[0] <= 0
        else:
            assert "Write 3 statement sets" in asked
            assert sorted(s.statements[0] for s in kept) == sorted(written[:3])


def test_counter_seed_room_follows_the_longest_statement_it_must_match():
    from synth.core.tokens import estimate_tokens
    from synth.stages.options import STATEMENT_TOKENS, statement_tokens

    long_zh = "8月6日，周予安收到香港理工大学交互设计硕士项目的招生邮件，第一轮截止日为9月10日，她当天报名了8月20日的机考雅思。"
    assert statement_tokens([long_zh, "短句。"]) == estimate_tokens(long_zh) * 3 // 2 > STATEMENT_TOKENS
    assert statement_tokens(["A short one."]) == STATEMENT_TOKENS


@pytest.mark.parametrize("balance", [False, True])
def test_a_counter_seed_restating_a_key_statement_is_written_again(tmp_path, balance):
    """A counter-seed for a comparison item copied the key's first statement word for word: that half of the key
    stood in three of the four options, and a capable reader picked the centre. It is left out: written again, or,
    with spares written (`[distractors] balance`), replaced by one of them."""
    world = QAWorld(tmp_path / "out")
    qa = hand_qa(world)
    provider = ByRule(key_picks=0, restate_once=qa.evidence[0].statement)
    world = QAWorld(tmp_path / "out", model=provider.model())
    world.config["distractors"]["balance"] = balance
    write_atomic(world.dir / "qa.jsonl", [qa.model_copy(update={"question_time": dt.datetime(2022, 1, 2, 20)})])
    world.run("distractors")
    [mcq] = world.read("mcq.jsonl", MCQ)
    asked = [r for r in provider.seen if r.task == "distractors_seeds"]
    if balance:
        assert len(asked) == 1 and f"Write {3 + seeds.SPARE} statement sets of 1" in asked[0].messages[-1]["content"]
    else:
        assert len(asked) == 2 and "Write 1 statement set of 1" in asked[1].messages[-1]["content"]
    invented = [s for s in mcq.option_seeds if s.invented]
    assert len(invented) == 3 and not any("then felt" in line for s in invented for line in s.statements)


def test_the_counter_seed_writer_sees_the_form_of_other_records_seen_by_the_question_time():
    from synth.stages.options.render import form_examples

    ev, seen, _ = life()
    qa = item("causal", [8, 10], asked_day=62)
    shown = form_examples(ev, seen, qa, {"v11"}, 3)
    # the latest three seen by day 62 (events every 5 days) of the other arc (B: odd events), without a used
    # seed's (11): nothing of the item's own arc A, which may state the answer
    assert shown == ["S5: thing 5", "S7: thing 7", "S9: thing 9"]
    # nor one about the question's matter, from whichever arc: a writer found the bedtime a question asked for in
    # an example said not to answer it
    ev[9] = ev[9].model_copy(update={"statement": "S9: the night he went back online he was asleep by eleven"})
    about = qa.model_copy(update={"question": "Lin, how late were you up the night you went back online?"})
    assert form_examples(ev, seen, about, {"v11"}, 3, "Lin") == ["S3: thing 3", "S5: thing 5", "S7: thing 7"]
    assert form_examples(ev, seen, qa, {"v11"}, 3, "Lin")[-1].startswith("S9: the night")  # another question


def test_unanswerable_items_keep_the_written_inventions(tmp_path):
    provider = ByRule()
    world = QAWorld(tmp_path / "out")
    hand_qa(world, "unanswerable")
    world.run("distractors")
    [mcq] = world.read("mcq.jsonl", MCQ)
    assert mcq.correct_choice_id == "E" and not mcq.option_seeds
    assert {r.task for r in world.model.seen} >= {"distractors"} and provider.seen == []


# ------------------------------------------------------------------------------------- formats in synth eval

def test_eval_asks_the_choice_only_of_mcq_valid_items_and_scores_free_text_only_on_open_valid_ones():
    from synth.eval.data import _question
    from synth.eval.metrics import question_metrics

    raw = {"id": "q", "question": "What happened?", "question_type": "causal", "answer": "x",
           "choices": [{"id": c, "text": c * 5} for c in "ABCDE"], "correct_choice_id": "B"}
    assert _question(raw, "p").choices and _question(raw, "p").formats == ("open", "mcq")  # data without: both
    open_only = _question({**raw, "formats": ["open"]}, "p")
    assert open_only.choices == () and open_only.correct_choice_id is None
    row = {"correct": True, "judge": {"truthfulness": 2, "consistency": 3, "memory_recall": 1.0}}
    both = question_metrics({**row, "formats": ["open", "mcq"]})
    assert both["choice_accuracy"] == 1.0 and both["qa_consistency"] == 1.0
    mcq_only = question_metrics({**row, "formats": ["mcq"]})
    assert mcq_only["choice_accuracy"] == 1.0 and mcq_only["qa_consistency"] is None
    assert mcq_only["hallucination_rate"] is None and mcq_only["memory_recall"] == 1.0


def test_a_reader_reason_reaches_the_renderer_as_kinds_of_cue_only():
    from synth.records import RefinementRound
    from synth.stages.options import reader_cues, render_feedback

    reason = "Only C fits the premise: the client's general counsel asking about their warehouse leases"
    verdict = RefinementRound(round=1, too_easy=True, reason=reason, validator_choice="C")
    sent = render_feedback(verdict)
    assert sent["reason"] == "" and "warehouse" not in str(sent) and "reader_premise" in sent["kinds"]
    assert reader_cues("D is the longest and most detailed") == ["reader_length"]
    assert reader_cues("只有这个选项符合前提") == ["reader_premise"]
    assert reader_cues("no idea") == ["reader_other"]


def test_a_round_lost_to_length_narrows_every_option_to_its_median_length():
    """The key was the longest option in nearly half of a measured pass: within one wide band the true set, which
    holds the most, is written at its top. After a round lost to length every renderer gets the same narrow band
    around that round's median length — the same for all four, so nothing in it says which set is true."""
    from synth.records import RefinementRound
    from synth.stages.options import render_feedback

    qa = item("causal", [8]).model_copy(update={"answer": "x" * 200})
    assert render.band(qa, 180) == (135, 225)
    texts = ["a" * 210, "b" * 150, "c" * 160, "d" * 170]  # the key at the top of the band
    lost = render_feedback(RefinementRound(round=1, too_easy=True, reason="", validator_choice="", guard="key_longest"), texts)
    assert lost["chars"] == 165
    assert render.band_after(qa, 180, [lost]) == (148, 182)
    seed = OptionSeed(role="distractor", statements=["He quit the choir."])
    variables = render.render_variables(qa, None, seed, [lost], 180)
    assert (variables["min_chars"], variables["max_chars"]) == (148, 182)
    # a round lost to a reader that named length narrows too; one lost to anything else keeps the band
    by_reader = render_feedback(RefinementRound(round=1, too_easy=True, reason="D is the longest", validator_choice="D"), texts)
    assert by_reader["chars"] == 165
    other = render_feedback(RefinementRound(round=2, too_easy=True, reason="only C fits the premise", validator_choice="C"), texts)
    assert other["chars"] == 0 and render.band_after(qa, 180, [other]) == (135, 225)
    # the latest length target stands; a median outside the band is clipped into it
    assert render.band_after(qa, 180, [lost, other]) == (148, 182)
    short = render_feedback(RefinementRound(round=1, too_easy=True, reason="", validator_choice="", guard="key_too_long"), ["x" * 60] * 4)
    assert render.band_after(qa, 180, [short]) == (135, 225)  # nothing of the band left: the band stands


def test_a_seed_that_shares_nothing_with_the_question_is_left_for_a_counter_seed():
    q = "What did their general counsel want to talk about at the Lakeshore pitch?"
    fits = OptionSeed(role="distractor", statements=["At the Lakeshore pitch Mark asked about billing rates."])
    misfit = OptionSeed(role="distractor", statements=["Lena missed the indemnity carve-out again."])
    assert seeds.fitting([fits, misfit], q, "Daniel Okafor") == [fits]
    assert seeds.fitting([misfit], "?", "Daniel Okafor") == [misfit], "a question with no content word keeps all"


def test_a_seed_touching_the_question_far_less_than_the_key_is_left_for_a_counter_seed():
    q = "What did their general counsel want to talk about at the Lakeshore pitch?"
    key = OptionSeed(role="key", statements=["The general counsel wanted to talk about the pitch's warehouse leases."])
    # the key shares general, counsel, talk, pitch: a seed must share at least two
    once = OptionSeed(role="distractor", statements=["Mark asked about billing rates at the Lakeshore office."])
    twice = OptionSeed(role="distractor", statements=["At the Lakeshore pitch Mark asked about billing rates."])
    assert seeds.fitting([once, twice], q, "Daniel Okafor", key) == [twice]
    assert seeds.fitting([once, twice], q, "Daniel Okafor") == [once, twice]  # without a key: one word is enough


def test_a_distractor_seed_matches_a_six_statement_key():
    """A key-blind renderer saw a true set of six statements against seeds of four: the sizes alone marked it."""
    ev, seen, events = life()
    key, found = seeds.select(item("inference", [0, 2, 4, 6, 8, 10], asked_day=99), ev, seen, events)
    assert len(key.statements) == 6 and found
    assert [len(s.statements) for s in found] == [6] * len(found)


@pytest.mark.parametrize("question_type, other_arc", [("trajectory", False), ("comparison", False),
                                                      ("factual", False), ("inference", True)])
def test_a_type_kept_to_its_arc_takes_no_seed_from_another_matter(question_type, other_arc):
    """A money saga's options were rendered from a heart scare's evidence (the last-resort tier): only the key
    answered the question. Asked on day 22, arc A has one other evidence (too few for a seed of two); arc B's two
    are another matter."""
    _, picked = chosen(question_type, [0, 2], asked_day=22)
    assert (1 in picked) is other_arc and (not picked) is (not other_arc)


# ------------------------------------------------------------------------------------- a multi-point item's 2×2

def test_a_key_over_two_records_is_cut_between_them_and_crossed_with_one_seed():
    """A capable judge answered comparison and trajectory items from their newest record alone: each distractor
    differed from the key in every point. Crossed, one record of the key leaves two options standing."""
    ev, seen, _ = life()
    qa = item("comparison", [8, 10])
    assert seeds.cut(qa, seen) == 0  # one record carries both points: nothing to cross
    split = qa.model_copy(update={"evidence": [r.model_copy(update={"digital_trace_ids": [f"t{n}"]})
                                               for n, r in enumerate(qa.evidence)]})
    assert seeds.cut(split, seen) == 1
    shared = [r.model_copy(update={"digital_trace_ids": ["t0", "t1"] if n else ["t0"]})
              for n, r in enumerate(qa.evidence)]
    assert seeds.cut(qa.model_copy(update={"evidence": shared}), seen) == 0  # the later record holds both
    key = seeds.key_seed(split, seen)
    other = OptionSeed(role="distractor", statements=["S2: thing 2", "S4: thing 4"], evidence_ids=["v2", "v4"])
    options = seeds.cross(key, other, 1)
    assert options[0] == key and options[3] == other
    assert [o.statements for o in options[1:3]] == [["S8: thing 8", "S4: thing 4"], ["S2: thing 2", "S10: thing 10"]]
    assert [o.crossed for o in options] == [False, True, True, False]
    assert options[1].evidence_ids == ["v8", "v4"] and all(o.role == "distractor" for o in options[1:])
    for statement in [*key.statements, *other.statements]:  # every half stands in exactly two options
        assert sum(statement in o.statements for o in options) == 2
    written = other.model_copy(update={"evidence_ids": [], "invented": True})
    assert seeds.cross(key, written, 1)[1].evidence_ids == ["v8"] and seeds.cross(key, written, 1)[1].invented


class Crossing(ByRule):
    """ByRule for a two-statement key: the key is the option holding both; the first verify finds a crossed
    option (one of the two only) also true when `crossed_true`."""

    def __init__(self, marks: tuple[str, str], crossed_true: bool = False) -> None:
        super().__init__(key_picks=0)
        self.marks, self.crossed_true = marks, crossed_true

    def reply(self, request: LLMRequest) -> dict:
        if request.task in ("distractors_render", "distractors_seeds", "distractors_question"):
            return super().reply(request)
        prompt = request.messages[-1]["content"]
        shown = {line[0]: line[3:] for line in prompt.splitlines() if line[:3] in {f"{c}. " for c in "ABCD"}}
        key = next(c for c, text in shown.items() if all(m in text for m in self.marks))
        if request.task == "distractors_validate":
            return {"choice": next(c for c in "ABCD" if c != key), "needs_memory": True, "reason": "no cue"}
        holds = self.crossed_true and sum(r.task == "distractors_verify" for r in self.seen) == 1
        half = [c for c, text in shown.items() if c != key and self.marks[0] in text][:1] if holds else []
        return {"key_supported": True, "others_ruled_out": not holds, "question_favours_option": False,
                "notes": [{"option": c, "problem": "ALSO-TRUE"} for c in half], "reason": "checked"}


def two_record_qa(world: QAWorld, question_type: str = "comparison") -> QA:
    """The hand item over two evidence of one arc, in two events whose records share none."""
    from synth.core.jsonl import write_atomic
    from synth.records import mint_id

    traces, evidence = world.traces(), world.read("evidence.jsonl", Evidence)
    asked = dt.datetime(2022, 3, 1, 20)

    def carrying(e: Evidence) -> list[str]:
        return [t.id for t in traces.values() if e.id in t.evidence_ids]

    first = evidence[0]
    later = next(e for e in evidence if e.event_id != first.event_id and first.arc_ids[0] in e.arc_ids
                 and not set(carrying(e)) & set(carrying(first)) and all(traces[t].time < asked for t in carrying(e)))
    refs = [EvidenceRef(statement=e.statement, evidence_id=e.id, digital_trace_ids=carrying(e)) for e in (first, later)]
    qa = QA(id=mint_id(PID, "qa", question_type), persona_id=PID, question_type=question_type, dimension="emotion",
            arc_id=first.arc_ids[0], question_time=asked, question="Lin, which thing changed how you felt back then?",
            answer=ANSWER, evidence=refs, digital_trace_ids=[*carrying(first), *carrying(later)],
            window_end=dt.date(2022, 3, 1))
    write_atomic(world.dir / "qa.jsonl", [qa])
    return qa


def test_a_comparison_over_two_records_gets_the_2x2_and_loses_it_when_half_answers(tmp_path):
    world = QAWorld(tmp_path / "out", model=None)
    qa = two_record_qa(world)
    marks = tuple(r.statement.split(":")[0] for r in qa.evidence)
    provider = Crossing(marks)
    world = QAWorld(tmp_path / "out", model=provider.model())
    world.run("distractors")
    [mcq] = world.read("mcq.jsonl", MCQ)
    assert len(mcq.refinement) == 1 and sorted(s.crossed for s in mcq.option_seeds) == [False, False, True, True]
    statements = [line for s in mcq.option_seeds for line in s.statements]
    assert all(statements.count(line) == 2 for line in statements)
    key = next(s for s in mcq.option_seeds if s.role == "key")
    assert key.choice_id == mcq.correct_choice_id and [r.statement for r in qa.evidence] == key.statements

    provider = Crossing(marks, crossed_true=True)
    world = QAWorld(tmp_path / "again", model=provider.model())
    two_record_qa(world)
    world.run("distractors")
    [mcq] = world.read("mcq.jsonl", MCQ)
    assert len(mcq.refinement) == 2 and not any(s.crossed for s in mcq.option_seeds)
    statements = [line for s in mcq.option_seeds for line in s.statements]
    assert all(statements.count(line) == 1 for line in statements)  # plain seeds: no half repeated


class Unfit(ByRule):
    """ByRule whose first rendering finds every set without the key's mark unable to answer the question."""

    def __init__(self, times: int = 1) -> None:
        super().__init__(key_picks=0)
        self.times = times  # how many renderings in a row flag every set
        self.flagged: list[list[str]] = []

    def key_renders(self, request: LLMRequest) -> int:
        """Which rendering of the round this call belongs to: the key's set is rendered once in each, last (the
        tests put it last, `key_last`)."""
        return 1 + sum(KEY_MARK in r.messages[-1]["content"] for r in self.seen[:-1] if r.task == "distractors_render")


    def reply(self, request: LLMRequest) -> dict:
        answer = super().reply(request)
        if request.task == "distractors_render" and self.key_renders(request) <= self.times:
            body = re.search(r"Statement set:\n((?:- .*\n)+)", request.messages[-1]["content"]).group(1)
            self.flagged.append([line[2:] for line in body.strip().splitlines()])
            # every set flagged, the key's too: the key's set is never replaced
            answer["cannot_answer"] = True
        return answer


@pytest.fixture
def key_last(monkeypatch):
    """The renderer's calls with the key's set last in each rendering, so a scripted renderer can tell the
    renderings apart (the calls are one per set; the drawn order is tested on its own)."""
    drawn = render.shuffled
    monkeypatch.setattr(render, "shuffled", lambda qa, seeds_, number: sorted(
        drawn(qa, seeds_, number), key=lambda s: s.role == "key"))


def test_replacements_found_unable_to_answer_are_replaced_again(tmp_path, key_last):
    """A capable renderer found a walk question's replacement sets without the walk it asks about too; they stood
    in the options, and a reader set them aside by the question alone."""
    provider = Unfit(times=2)
    world = QAWorld(tmp_path / "out", model=provider.model())
    hand_qa(world)
    world.run("distractors")
    [mcq] = world.read("mcq.jsonl", MCQ)
    # three renderings in the round (the key's set is rendered once in each)
    assert len(mcq.refinement) == 1 and sum(KEY_MARK in r for r in prompts_of(provider, "distractors_render")) == 3
    flagged = {line for body in provider.flagged for line in body if KEY_MARK not in line}
    final = {line for s in mcq.option_seeds for line in s.statements}
    assert flagged and not flagged & final


def test_a_set_the_renderer_finds_unable_to_answer_is_replaced_in_the_same_round(tmp_path, key_last):
    """A capable renderer was given "who reached out to check on you" with sets about investor calls: a reader
    sets such options aside by the question alone. The round chooses again, without them, and renders again."""
    provider = Unfit()
    world = QAWorld(tmp_path / "out", model=provider.model())
    hand_qa(world)
    world.run("distractors")
    [mcq] = world.read("mcq.jsonl", MCQ)
    tasks = [r.task for r in provider.seen]
    first_read = tasks.index("distractors_validate")
    assert set(tasks[:first_read]) <= {"distractors_render", "distractors_seeds", "distractors_question"}
    before = [r for r in provider.seen[:first_read] if r.task == "distractors_render"]
    assert sum(KEY_MARK in r.messages[-1]["content"] for r in before) == 2  # rendered twice before the first read
    assert len(mcq.refinement) == 1  # the same round
    first = {line for body in provider.flagged for line in body if KEY_MARK not in line}
    final = {line for s in mcq.option_seeds for line in s.statements}
    assert first and not first & final  # none of the flagged distractor sets came back
    key = next(s for s in mcq.option_seeds if s.role == "key")
    assert any(KEY_MARK in line for line in key.statements)  # the key's set stays, flagged or not
    renders = prompts_of(provider, "distractors_render")
    assert all("cannot_answer:" in r for r in renders) and all("correct" not in r.lower() for r in renders)
    # "what numbers did you throw back": readers picked the one option with several numbers
    assert all("give two of them (one when the set has only one)" in r for r in renders)
    # readers picked the option whose date fell just before the question's moment, or the one date three options
    # shared: an option's one detail is no date unless the question asks when
    assert all("no date or weekday unless the question asks when" in r for r in renders)




def test_a_distractor_seed_spans_as_many_events_as_the_key():
    """A pattern's key holds two occasions; seeds of one event each were rendered as one scene beside it, and a
    capable reader picked "the one giving two instances". Each event here holds two statements."""
    ev, seen, events = life()
    twins = []
    for e in ev:
        twin = e.model_copy(update={"id": e.id + "b", "statement": e.statement + " (again)"})
        twins += [e, twin]
        seen[twin.id] = seen[e.id]
    refs = [EvidenceRef(statement=e.statement, evidence_id=e.id, digital_trace_ids=["t"]) for e in twins
            if e.event_id in ("e8", "e10") and not e.id.endswith("b")]
    qa = item("pattern", [8, 10]).model_copy(update={"evidence": refs})
    _, found = seeds.select(qa, twins, seen, events)

    def spans(seed: OptionSeed) -> int:
        return len({i.removesuffix("b") for i in seed.evidence_ids})

    assert found and [spans(s) for s in found] == [2] * len(found)
    # a key from one event keeps its seeds to one event each
    one = item("pattern", [8]).model_copy(update={"evidence": [
        EvidenceRef(statement=e.statement, evidence_id=e.id, digital_trace_ids=["t"]) for e in twins
        if e.event_id == "e8"]})
    _, found = seeds.select(one, twins, seen, events)
    assert found and [spans(s) for s in found] == [1] * len(found)
