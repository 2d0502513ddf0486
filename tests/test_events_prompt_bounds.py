"""Bounded events prompts: however long the registry of people met so far, a late phase's events prompt is longer
than an early one's by no more than `[events] registry_tokens`, and whoever the phase names is always in it."""

from __future__ import annotations

import datetime as dt

from handmade import PID, phase_inputs
from kit import run_stage

from synth.core.jsonl import write_atomic
from synth.core.tokens import estimate_tokens
from synth.records import Person, Phase, Snapshot

SNAP = Snapshot(energy=5, stress=5, dominant_emotion="calm", focus="work", arc_status={})
SAM = Person(id="r1", persona_id=PID, kind="person", name="Sam", relation="partner", description="d",
             origin="relation")
NAMED = 7  # the late phase's description names this newcomer, met on the first day


def newcomer(k: int) -> Person:
    return Person(id=f"n{k}", persona_id=PID, kind="person", name=f"Newcomer{k} Surname{k}",
                  relation="a friend met at the club", description="talks about gardening and old films",
                  origin="introduced", first_phase_id="ph0", first_date=dt.date(2022, 1, 1 + k % 13))


def prompts(tmp_path, budget: int) -> dict[str, str]:
    """The events prompt of the early and the late phase, with 300 people met in the first two weeks."""
    d = tmp_path / PID
    _, majors = phase_inputs(d)
    described = {0: "an ordinary start", 1: f"long evenings with Newcomer{NAMED} Surname{NAMED}"}
    phases = [Phase(id=f"ph{m.index}", persona_id=PID, major_event_id=m.id, index=0, title=f"phase {m.index}",
                    description=described[m.index], start=m.start, end=m.end, snapshot_before=SNAP,
                    snapshot_after=SNAP, arc_states=m.arc_states) for m in majors]
    write_atomic(d / "phases.jsonl", phases)
    write_atomic(d / "phase_people.jsonl", [SAM, *(newcomer(k) for k in range(300))])
    config = tmp_path / "c.toml"
    config.write_text(f"[events]\nmin_events = 1\nmax_events = 1\nregistry_days = 90\nregistry_tokens = {budget}\n")
    fake = run_stage(tmp_path, "events", config=config)
    texts = ["\n".join(m["content"] for m in r.messages) for r in fake.seen if r.task == "events"]
    assert len(texts) == 2
    return {"1" if "long evenings" in t else "0": t for t in texts}


def test_a_late_events_prompt_grows_no_more_than_the_registry_budget(tmp_path):
    budget = 300
    shown = prompts(tmp_path / "bounded", budget)
    early, late = estimate_tokens(shown["0"]), estimate_tokens(shown["1"])
    assert late - early <= budget + 40, (early, late)  # 40: the late phase's longer description
    assert f"Newcomer{NAMED} Surname{NAMED}" in shown["1"], "the phase names them: shown whatever the budget"
    unbounded = estimate_tokens(prompts(tmp_path / "unbounded", 10**6)["1"])
    assert unbounded - early > 5 * budget, (early, unbounded)
