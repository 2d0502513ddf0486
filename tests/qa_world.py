"""A hand-built persona (p_qa, not in personas/) with traces, for the qa, distractors, filter and export stages:
`QAWorld` writes its directory and runs stages on it through the kit with one `Scripted` model."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from handmade import write_records
from kit import Scripted, run_stage

from synth.config import conf
from synth.config.personas import PersonaSeed
from synth.core.jsonl import read_records, write_atomic
from synth.llm.base import LLMRequest
from synth.records import (
    CANNOT_DETERMINE,
    MCQ,
    QA,
    QUESTION_TYPES,
    AnchorState,
    ArcState,
    BigFive,
    Choice,
    Event,
    Evidence,
    EvidenceRef,
    LifeArc,
    MajorEvent,
    Persona,
    Phase,
    Relation,
    Snapshot,
    Trace,
    mint_id,
)
from synth.stages import STAGES
from synth.stages.distractors import balanced_positions

START = dt.date(2022, 1, 1)
END = dt.date(2022, 6, 30)
PID = "p_qa"

CONFIG = conf.deep_merge(conf.preset_config("small"), {
    "temperature": 0.5, "max_tokens": 512,
    "qa": {"window_days": 60, "stride_days": 30, "types": list(QUESTION_TYPES), "target_per_type": 2,
           "plans_per_type": 3, "max_segment_evidence": 12},
    "distractors": {"rounds": 3},
    "mcq": {"length_ratio": 1.5},
    "filter": {"dedup_threshold": 0.85},
})


def major_events_and_phases(arcs: list[LifeArc]) -> tuple[list[MajorEvent], list[Phase]]:
    """Two major events of one phase each, January–March and April–June; every arc moves from state 0 to 1."""
    still = Snapshot(energy=5, stress=5, dominant_emotion="calm", focus="work", arc_status={})
    spans = [(START, dt.date(2022, 3, 31)), (dt.date(2022, 4, 1), END)]
    majors = [MajorEvent(id=f"m{i}", persona_id=PID, index=i, title=f"major {i}", description="d", start=lo, end=hi,
                         arc_states=[ArcState(arc_id=a.id, anchor_index=i) for a in arcs])
              for i, (lo, hi) in enumerate(spans)]
    phases = [Phase(id=f"ph{i}", persona_id=PID, major_event_id=f"m{i}", index=0, title=f"phase {i}",
                    description="d", start=lo, end=hi, snapshot_before=still, snapshot_after=still)
              for i, (lo, hi) in enumerate(spans)]
    return majors, phases


def build_persona_dir(root: Path, language: str = "en") -> Path:
    """persona, 3 arcs, an event every 9 days with 2 evidence and 1–2 traces (the second one 3 days later); the
    events of January–March under a first major event, the rest under a second (every arc's state 0, then 1)."""
    persona = Persona(
        id=PID, persona_id=PID, language=language, scale="100k", start=START, end=END,
        big_five=BigFive(openness=.6, conscientiousness=.4, extraversion=.3, agreeableness=.7, neuroticism=.6),
        name="Lin Wei", age=41, gender="male", personality="reserved", family_history="two sisters",
        education="MBA", occupation="marketing director", concerns=["career"], interests=["fishing"],
        backstory="moved to the city in 2010",
        relations=[Relation(id=mint_id(PID, "relation", 0), name="Xiaomei", relation="wife", description="teacher")],
    )
    arcs = [LifeArc(id=mint_id(PID, "arc", i), persona_id=PID, dimension=dim, title=f"{dim} arc",
                    description=f"how his {dim} changes",
                    anchor_states=[AnchorState(label=f"state {k}", description="d", trigger="t", cues=["c"])
                                   for k in range(3)])
            for i, dim in enumerate(("experience", "emotion", "opinion"))]
    events, evidence, traces = [], [], []
    for k in range(20):
        when = dt.datetime.combine(START + dt.timedelta(days=9 * k), dt.time(10))
        event = Event(id=mint_id(PID, "event", k), persona_id=PID, phase_id=f"ph{int(when.month > 3)}", time=when,
                      title=f"event {k}",
                      description="d", location="home", participant_ids=[])
        found = [Evidence(id=mint_id(event.id, "evidence", j), persona_id=PID, event_id=event.id,
                          kind=("fact", "emotion", "opinion")[(k + j) % 3],
                          statement=f"Statement {k}.{j}: he did thing {k} and felt {j}",
                          arc_ids=[arcs[(k + j) % 3].id]) for j in range(2)]
        events.append(event)
        evidence += found
        traces.append(Trace(id=mint_id(event.id, "trace", 0), persona_id=PID, event_id=event.id,
                            evidence_ids=[e.id for e in found], medium="diary", time=when + dt.timedelta(hours=11),
                            intent="vent", audience="self", content=f"SECRET TRACE {k}: diary about thing {k}",
                            tokens=40))
        if k % 2 == 0:
            traces.append(Trace(id=mint_id(event.id, "trace", 1), persona_id=PID, event_id=event.id,
                                evidence_ids=[found[0].id], medium="message_thread",
                                time=when + dt.timedelta(days=3, hours=2), intent="tell", audience="Xiaomei",
                                content=f"SECRET TRACE {k}b: message about thing {k}", tokens=30))
    majors, phases = major_events_and_phases(arcs)
    return write_records(root / PID, {"persona.jsonl": [persona], "arcs.jsonl": arcs, "major_events.jsonl": majors,
                                      "phases.jsonl": phases, "events.jsonl": events, "evidence.jsonl": evidence,
                                      "traces.jsonl": traces})


class QAWorld:
    """p_qa's directory under `root`, its config (a copy of CONFIG, edit it before a run) and the model (a
    `Scripted` of seed 3 unless one is given) that answers every `run`."""

    def __init__(self, root: Path, language: str = "en", config: dict | None = None,
                 model: Scripted | None = None) -> None:
        self.root = root
        self.dir = build_persona_dir(root, language)
        self.seed = PersonaSeed(id=PID, language=language, start=START, end=END,
                                big_five={"openness": .6, "conscientiousness": .4, "extraversion": .3,
                                          "agreeableness": .7, "neuroticism": .6})
        self.config = json.loads(json.dumps(config or CONFIG))
        self.model = model or Scripted(seed=3)

    def run(self, stage: str) -> Scripted:
        return run_stage(self.root, stage, seed=self.seed, config=self.config, replies=self.model)

    def read(self, name: str, model):
        return read_records(self.dir / name, model)

    def traces(self) -> dict[str, Trace]:
        return {t.id: t for t in self.read("traces.jsonl", Trace)}


# ------------------------------------------------------------------------------------------ items and judges

ANSWER = "I stopped hiding in the car and told Xiaomei everything about work and Mom."
WRONG = [
    "Xinyu's drawing of our family made me cry, so I apologised to everyone that night.",
    "My boss sent me to a counsellor, and the sessions taught me how to talk at home.",
    "I took the branch job out of town, and the distance let us calm down and talk again.",
]


def make_item(traces: list[Trace], evidence: Evidence, *, number: int = 0, question_type: str = "causal",
              question: str = "Lin, what made you open up to Xiaomei back then?", answer: str = ANSWER,
              asked: dt.datetime | None = None, wrong: list[str] | None = None, correct: str = "B") -> MCQ:
    carrying = [t.id for t in traces if evidence.id in t.evidence_ids]
    unanswerable = question_type == "unanswerable"
    texts = list(wrong or WRONG)
    if unanswerable:
        texts = [*texts, "I chose the Shanghai consulting firm my classmate runs and start next month."]
        correct = "E"
    else:
        texts.insert("ABCD".index(correct), answer)
    choices = [Choice(id=c, text=t) for c, t in zip("ABCDE", [*texts, CANNOT_DETERMINE["en"]], strict=True)]
    return MCQ(
        id=mint_id(PID, "item", number), persona_id=PID, question_type=question_type, dimension="emotion",
        arc_id=evidence.arc_ids[0], question_time=asked or dt.datetime(2022, 6, 1, 20), question=question,
        answer=CANNOT_DETERMINE["en"] if unanswerable else answer,
        evidence=[] if unanswerable else [EvidenceRef(statement=evidence.statement, evidence_id=evidence.id,
                                                      digital_trace_ids=carrying)],
        digital_trace_ids=[] if unanswerable else carrying, window_end=dt.date(2022, 6, 1), choices=choices,
        correct_choice_id=correct,
    )


def judges(correct: dict[str, str], answers: dict[str, str] | None = None) -> Scripted:
    """The filter's judges answering by rule (`correct`: question text → correct option's text; `answers`: question
    text → its reference answer): unsupported when the question says UNSUPPORTED; the blind judge picks the key
    (wherever a sample shows it) when the question says GUESSABLE, a wrong option otherwise; the open reader's free
    guess is the reference when the question says OPEN; the options-only reader always picks A."""
    answers = answers or {}

    def answer(request: LLMRequest) -> dict:
        prompt = request.messages[-1]["content"]
        if request.task == "filter_choices_only":  # no question to go by: always the first option
            return {"choice": "A", "reason": "longest"}
        question = next(q for q in correct if q in prompt)
        if request.task == "filter_open_blind":  # OPEN: the free guess is the reference
            return {"answer": answers.get(question, "") if "OPEN" in question else "no idea at all"}
        if request.task == "filter_open_judge":
            return {"matches": "OPEN" in question, "reason": "same point"}
        if request.task == "filter_sufficiency":
            return {"supported": "UNSUPPORTED" not in question, "reason": "checked"}
        if request.task == "filter_unique":  # ANOTHER: another record answers it differently
            return {"only_answer": "ANOTHER" not in question, "reason": "the other dinner in the notes"}
        if request.task == "filter_inference":  # LOOKUP: the second statement states the answer outright
            return {"states_answer": [2] if "LOOKUP" in question else [], "reason": "statement 2 says it"}
        shown = {line[0]: line[3:] for line in prompt.splitlines() if line[:3] in {f"{c}. " for c in "ABCDE"}}
        right = next(c for c, text in shown.items() if text == correct[question])
        # ONE-TRACE: any one of its traces gives the key away; GUESSABLE: the blind judge finds the key
        cue = "ONE-TRACE" if request.task == "filter_single_trace" else "GUESSABLE"
        pick = right if cue in question else next(c for c in "ABCD" if c != right)
        return {"choice": pick, "confidence": 0.95, "reason": "one record" if cue == "ONE-TRACE" else "cue"}

    return Scripted({task: answer for task in STAGES["filter"].tasks}, seed=3)


# ------------------------------------------------------------------------------------- a hand-made QA item

HAND_ANSWER = "I finally told Xiaomei how lost I felt, after weeks of hiding in the car downstairs."  # hand_qa's reference answer


def hand_qa(world: QAWorld, question_type: str = "causal") -> QA:
    traces = list(world.traces().values())
    evidence = world.read("evidence.jsonl", Evidence)
    first = evidence[0]
    carrying = [t.id for t in traces if first.id in t.evidence_ids]
    unanswerable = question_type == "unanswerable"
    qa = QA(id=mint_id(PID, "qa", question_type), persona_id=PID, question_type=question_type,
            dimension="emotion", arc_id=first.arc_ids[0], question_time=dt.datetime(2022, 3, 1, 20),
            question="Lin, which thing changed how you felt back then?",
            answer=CANNOT_DETERMINE["en"] if unanswerable else HAND_ANSWER,
            evidence=[] if unanswerable else [EvidenceRef(statement=first.statement, evidence_id=first.id,
                                                          digital_trace_ids=carrying)],
            digital_trace_ids=[] if unanswerable else carrying, window_end=dt.date(2022, 3, 1))
    write_atomic(world.dir / "qa.jsonl", [qa])
    return qa


def key_letter(qa: QA) -> str:
    return "ABCD"[balanced_positions([qa.id])[qa.id]]


def not_key(qa: QA) -> str:
    return next(c for c in "ABCD" if c != key_letter(qa))
