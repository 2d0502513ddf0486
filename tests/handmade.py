"""Hand-built inputs shared by several test files: a dataset that passes `synth validate`, p01_maya's persona
record, and `write_records` to lay records out as a persona directory."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from synth.core.jsonl import write_atomic
from synth.records import (
    CANNOT_DETERMINE,
    MCQ,
    QA,
    AnchorState,
    ArcState,
    BigFive,
    Choice,
    Event,
    EventSeed,
    Evidence,
    EvidenceRef,
    FinalItem,
    LifeArc,
    MajorEvent,
    Persona,
    Phase,
    Rejected,
    Relation,
    Snapshot,
    Trace,
    mint_id,
)


def write_records(directory: Path, files: dict[str, list]) -> Path:
    """Each file name → its records, written atomically under `directory` (made if missing)."""
    for name, records in files.items():
        write_atomic(directory / name, records)
    return directory


PID = "p01_maya"
START, END = dt.date(2022, 1, 1), dt.date(2022, 2, 11)  # the tiny preset's 42-day timeline of p01_maya
LATE = dt.datetime(2022, 2, 10, 20, 59)  # trace_inputs' late event, a day before the end


# Agreeable and unconscientious: her chat style sits at the ends of its scales (warmth 5, formality 1).
TRAITS = BigFive(openness=.9, conscientiousness=.1, extraversion=.5, agreeableness=1.0, neuroticism=.5)


def maya(**changes) -> Persona:
    """p01_maya's persona record on the tiny preset's 42-day timeline, one partner (r1 Sam); `changes` override."""
    fields = dict(
        id=PID, persona_id=PID, language="en",
        big_five=BigFive(openness=.5, conscientiousness=.5, extraversion=.5, agreeableness=.5, neuroticism=.5),
        start=START, end=END, scale="100k", name="Maya", age=34, gender="f",
        personality="p", family_history="f", education="e", occupation="o", concerns=["c"], interests=["i"],
        backstory="b", relations=[Relation(id="r1", name="Sam", relation="partner", description="d")],
    )
    return Persona(**{**fields, **changes})


# ------------------------------------------------------------------------------------------ stage inputs

def phase_inputs(directory: Path) -> tuple[list[LifeArc], list[MajorEvent]]:
    """p01_maya ready for the phases stage: 2 arcs, major events Jan 1-10 and Jan 15-20 (arc states 0, then 1)."""
    state = AnchorState(label="s", description="d", trigger="t", cues=["c"])
    arcs = [LifeArc(id=f"arc{i}", persona_id=PID, dimension=dim, title=f"Arc {i}", description="d",
                    anchor_states=[state, state]) for i, dim in enumerate(["experience", "emotion"])]
    majors = [MajorEvent(id=f"m{i}", persona_id=PID, index=i, title=f"M{i}", description="d",
                         start=start, end=end, arc_states=[ArcState(arc_id=a.id, anchor_index=i) for a in arcs])
              for i, (start, end) in enumerate([(dt.date(2022, 1, 1), dt.date(2022, 1, 10)),
                                                (dt.date(2022, 1, 15), dt.date(2022, 1, 20))])]
    directory.mkdir(parents=True)
    write_records(directory, {"persona.jsonl": [maya()], "arcs.jsonl": arcs, "major_events.jsonl": majors})
    return arcs, majors


def trace_inputs(directory: Path) -> tuple[list[Event], list[Evidence]]:
    """p01_maya ready for the traces stage: 3 arcs, one phase, a quiet event (no evidence) and a late one
    (LATE, 3 evidence); the directory must not exist yet."""
    state = AnchorState(label="s", description="d", trigger="t", cues=["c"])
    arcs = [LifeArc(id=f"arc{i}", persona_id=PID, dimension=dim, title=f"Arc {i}", description="d",
                    anchor_states=[state, state]) for i, dim in enumerate(["experience", "emotion", "opinion"])]
    major = MajorEvent(id="m0", persona_id=PID, index=0, title="M", description="d", start=START, end=END,
                       arc_states=[])
    snap = Snapshot(energy=5, stress=5, dominant_emotion="calm", focus="work", arc_status={})
    phase = Phase(id="ph0", persona_id=PID, major_event_id="m0", index=0, title="P", description="d",
                  start=START, end=END, snapshot_before=snap, snapshot_after=snap)
    events = [Event(id=eid, persona_id=PID, phase_id="ph0", time=time, title=eid, description="d",
                    location="home", participant_ids=["r1"])
              for eid, time in [("e_quiet", dt.datetime(2022, 1, 5, 9)), ("e_late", LATE)]]
    evidence = [Evidence(id=f"ev{j}", persona_id=PID, event_id="e_late", kind="fact", statement=f"fact {j}",
                         arc_ids=[f"arc{j - 1}"]) for j in (1, 2, 3)]
    directory.mkdir(parents=True)
    write_records(directory, {"persona.jsonl": [maya()], "arcs.jsonl": arcs, "major_events.jsonl": [major],
                              "phases.jsonl": [phase], "events.jsonl": events, "evidence.jsonl": evidence,
                              "people.jsonl": []})
    return events, evidence


# ------------------------------------------------------------------------------------------ a valid dataset

PERSONA_ID = "p_test"


def _snapshot(energy: int, arcs: list[LifeArc]) -> Snapshot:
    return Snapshot(energy=energy, stress=10 - energy, dominant_emotion="calm", focus="work",
                    arc_status={a.id: f"state {energy}" for a in arcs})


def build_dataset(root: Path) -> Path:
    """A small dataset that satisfies every invariant of `synth validate`, written with the real record models:
    2 major events × 1 phase × 2 events × 2 evidence, one trace per event, 2 questions (factual, unanswerable)."""
    pid = PERSONA_ID
    relations = [Relation(id=mint_id(pid, "relation", i), name=f"R{i}", relation="friend", description="d")
                 for i in range(2)]
    persona = Persona(id=pid, persona_id=pid, language="en", scale="100k", start=START,
                      end=START + dt.timedelta(days=41),
                      big_five=BigFive(openness=.5, conscientiousness=.5, extraversion=.5, agreeableness=.5,
                                       neuroticism=.5),
                      name="Test", age=30, gender="f", personality="p", family_history="f", education="e",
                      occupation="o", concerns=["c"], interests=["i"], backstory="b", relations=relations)
    seeds = [EventSeed(id=mint_id(pid, "seed", 0), persona_id=pid, name="move", title="Move", description="d",
                       origin="predefined")]
    arcs = [LifeArc(id=mint_id(pid, "arc", i), persona_id=pid, dimension=dim, title=dim, description="d",
                    anchor_states=[AnchorState(label=f"s{k}", description="d", trigger="t", cues=["c"])
                                   for k in range(3)], seed_ids=[seeds[0].id])
            for i, dim in enumerate(("experience", "emotion", "opinion"))]
    spans = [(START, START + dt.timedelta(days=19)), (START + dt.timedelta(days=20), persona.end)]
    majors = [MajorEvent(id=mint_id(pid, "major", m), persona_id=pid, index=m, title=f"M{m}", description="d",
                         start=s, end=e, arc_states=[ArcState(arc_id=a.id, anchor_index=m) for a in arcs],
                         seed_id=seeds[0].id)
              for m, (s, e) in enumerate(spans)]
    snaps = [_snapshot(k + 3, arcs) for k in range(3)]
    phases = [Phase(id=mint_id(me.id, "phase", 0), persona_id=pid, major_event_id=me.id, index=0, title="P",
                    description="d", start=me.start, end=me.end, snapshot_before=snaps[m], snapshot_after=snaps[m + 1])
              for m, me in enumerate(majors)]
    events, evidence, traces = [], [], []
    for phase in phases:
        for k in range(2):
            # spread so that no stretch of more than 10 days (max_gap_days) is without a trace
            when = dt.datetime.combine(phase.start + dt.timedelta(days=5 + 9 * k), dt.time(9, 0))
            event = Event(id=mint_id(phase.id, "event", k), persona_id=pid, phase_id=phase.id, time=when,
                          title="E", description="d", location="home", participant_ids=[relations[k].id])
            found = [Evidence(id=mint_id(event.id, "evidence", j), persona_id=pid, event_id=event.id,
                              kind="fact", statement=f"fact {j}", arc_ids=[arcs[j].id]) for j in range(2)]
            events.append(event)
            evidence.extend(found)
            traces.append(Trace(id=mint_id(event.id, "trace", 0), persona_id=pid, event_id=event.id,
                                evidence_ids=[e.id for e in found], medium="diary",
                                time=when + dt.timedelta(hours=2), intent="i", audience="self", content="text"))
    asked = dt.datetime.combine(persona.end, dt.time(20, 0))
    common = dict(persona_id=pid, dimension="experience", arc_id=arcs[0].id, question_time=asked,
                  window_end=persona.end)
    qa = [
        QA(id=mint_id(pid, "qa", 0), question_type="factual", question="q?", answer="a",
           evidence=[EvidenceRef(statement="fact 0", evidence_id=evidence[0].id, digital_trace_ids=[traces[0].id])],
           digital_trace_ids=[traces[0].id], **common),
        QA(id=mint_id(pid, "qa", 1), question_type="unanswerable", question="q?", answer="unknown", evidence=[],
           digital_trace_ids=[], **common),
    ]
    texts = ["w", "x", "y", "z", CANNOT_DETERMINE["en"]]
    choices = [Choice(id=c, text=t) for c, t in zip("ABCDE", texts, strict=True)]
    mcq = [MCQ(**q.model_dump(), choices=choices, correct_choice_id="A" if q.question_type != "unanswerable" else "E")
           for q in qa]
    final = [FinalItem(**mcq[0].model_dump())]
    rejected = [Rejected(**mcq[1].model_dump(), filter="blind", reason="guessable")]
    files = {
        "persona.jsonl": [persona], "seeds.jsonl": seeds, "arcs.jsonl": arcs, "major_events.jsonl": majors,
        "phases.jsonl": phases, "events.jsonl": events, "evidence.jsonl": evidence, "traces.jsonl": traces,
        "qa.jsonl": qa, "mcq.jsonl": mcq, "final.jsonl": final, "rejected.jsonl": rejected,
    }
    write_records(root / pid, files)
    return root


# A persona file (personas/*.toml) that loads: format `id`, then break one field to test a refusal.
GOOD = """\
id = "{id}"
language = "en"
scale = "100k"
note = "a test persona"

[timeline]
start = 2022-01-01
years = 1

[big_five]
openness = 0.5
conscientiousness = 0.5
extraversion = 0.5
agreeableness = 0.5
neuroticism = 0.5
"""
