"""The English template contexts the template tests and the prompt lint render: one set of variables per generation template."""

from __future__ import annotations

import datetime as dt
import re

from synth.records import AnchorState, BigFive, LifeArc, Persona, Phase, Relation, Snapshot
from synth.stages.trace_context import moment_arcs

CJK = re.compile(r"[\u4e00-\u9fff]")


def _persona(language: str) -> dict:
    return Persona(
        id="p", persona_id="p", language=language,
        big_five=BigFive(openness=.8, conscientiousness=.3, extraversion=.6, agreeableness=.7, neuroticism=.5),
        start=dt.date(2022, 1, 1), end=dt.date(2022, 12, 31), scale="100k", name="Maya Holt", age=34,
        gender="female", personality="warm", family_history="Hull", education="BSc", occupation="nurse",
        concerns=["money"], interests=["painting"], backstory="moved to Leeds",
        relations=[Relation(id="r1", name="Sam", relation="partner", description="kind")],
    ).model_dump(mode="json")


ARC = LifeArc(id="a1", persona_id="p", dimension="emotion", title="Trust", description="learning to trust",
              anchor_states=[AnchorState(label="guarded", description="d", trigger="t", cues=["c"])] * 2)
ARCS = [{**ARC.model_dump(mode="json"), "label": "Trust"}]
SNAP = Snapshot(energy=5, stress=6, dominant_emotion="worry", focus="work", arc_status={"a1": "wary"})
PHASE = Phase(id="ph", persona_id="p", major_event_id="m", index=0, title="Night shifts", description="d",
              start=dt.date(2022, 1, 3), end=dt.date(2022, 1, 9), snapshot_before=SNAP,
              snapshot_after=SNAP).model_dump(mode="json")
EVENT_VIEW = {"id": "m", "title": "New ward", "description": "moves ward", "start": "2022-01-01",
              "end": "2022-01-20", "kind": "major",
              "states": [{"arc": "Trust", "index": 0, "label": "guarded", "description": "d"}]}
STATE = {"label": "guarded", "description": "keeps to herself", "trigger": "a betrayal", "cues": ["short replies"]}
OPEN = {"label": "opening up", "description": "lets Sam in", "trigger": "Sam stays", "cues": ["asks for help"]}
MOVES = [{"arc": "Trust", "index": 0, "state": STATE, "reaches": [{"index": 1, "state": OPEN, "absent_days": []}]}]
NEWCOMER = {"kind": "person", "name": "Dr Okafor", "relation": "the ward's consultant", "description": "brisk, fair"}
HOLIDAYS = [{"date": "2022-01-03", "name": "New Year Holiday"}]
DETAILED = {"id": "e", "title": "Handover", "description": "d", "location": "ward", "time": "2022-01-04T08:00:00"}
EVIDENCE = [{"id": "v", "kind": "emotion", "statement": "Maya felt uneasy at handover.", "private": True,
             "added": False}]
SEEDS = [{"name": "career_change", "label": "career_change", "title": "Career change", "description": "d"}]
SNAP_JSON = SNAP.model_dump(mode="json")
TRACE_CONTEXT = {"arcs": ARCS, "moment_arcs": moment_arcs(ARCS, None), "phase": PHASE, "previous_phase": PHASE,
                 "event": DETAILED, "evidence": EVIDENCE,
                 "people": [NEWCOMER], "holidays": HOLIDAYS, "everyday": False,
                 # the persona's media: every traces prompt's prefix shows them
                 "media": ["diary", "email"], "targets": {"diary": 67, "email": 33}, "public": ["social_post"]}

VARIABLES = {
    "persona_enrich.j2": {"big_five": {"openness": .8, "conscientiousness": .3, "extraversion": .6,
                                       "agreeableness": .7, "neuroticism": .5},
                          "note": "a nurse", "start": "2022-01-01", "end": "2022-12-31", "min_relations": 5, "max_relations": 8},
    "arcs_seeds.j2": {"pool": SEEDS, "keep_max": 12, "added": 4, "days": 75},
    "arcs_plan.j2": {"seeds": SEEDS, "per_dimension": 2, "states": 4},
    "arcs_major_events.j2": {"seeds": SEEDS, "arcs": ARCS, "count": 8, "days": 365,
                           "holidays": HOLIDAYS, "gap": 14},
    "phases_init.j2": {"arcs": ARCS, "event": EVENT_VIEW, "moves": MOVES[:1]},
    "phases_generate.j2": {"arcs": ARCS, "event": EVENT_VIEW, "snapshot": SNAP_JSON, "k": 1, "count": 3,
                           "start_day": 4, "low": 4, "high": 18, "start_date": "2022-01-05", "low_date": "2022-01-05",
                           "high_date": "2022-01-19", "previous": PHASE,
                           "moves": MOVES, "people": [NEWCOMER], "holidays": HOLIDAYS, "newcomers": 2},
    "phases_update.j2": {"arcs": ARCS, "event": EVENT_VIEW, "snapshot": SNAP_JSON, "moves": MOVES,
                         "phase": {"title": "t", "description": "d", "start": "2022-01-01", "end": "2022-01-04"}},
    "events_generate.j2": {"arcs": ARCS, "event": EVENT_VIEW, "phase": PHASE, "window": PHASE, "days": 7, "count": 6,
                           "min_evidence": 2, "max_evidence": 4, "people": ["Sam"], "moves": MOVES,
                           "introduced": [NEWCOMER], "recent": [PHASE], "holidays": HOLIDAYS, "newcomers": 1},
    "traces_plan.j2": {**TRACE_CONTEXT, "count": 2, "media": ["diary", "email"], "max_delay": 48,
                       "targets": {"diary": 67, "email": 33}, "suggested": ["diary", "email"],
                       "public": ["social_post"], "problems": [{"trace": 1, "medium": "social_post", "evidence": 1}],
                       "short": [{"medium": "photo_caption", "high": 40}]},
    "traces_privacy.j2": {"medium": "social_post", "content": "Long shift, cried in the car after.",
                          "allowed": ["Maya worked a long shift on the ward."],
                          "statements": ["Maya cried in her car after the shift."]},
    "traces_write.j2": {**TRACE_CONTEXT, "medium": "social_post", "intent": "vent", "audience": "friends",
                        "key_information": "k", "carried": EVIDENCE, "time": "2022-01-04T20:00",
                        "min_words": 80, "max_words": 320,
                        "voice": [{"time": "2021-12-30T21:00", "content": "Long day again."}],
                        "hidden": ["Maya cried in her car after the shift."]},
    "traces_write_all.j2": {**TRACE_CONTEXT, "traces": [
        {"medium": "diary", "intent": "vent", "audience": "self", "key_information": "k", "carried": EVIDENCE,
         "time": "2022-01-04T20:00", "min_words": 80, "max_words": 320,
         "voice": [{"time": "2021-12-30T21:00", "content": "Long day again."}]},
        {"medium": "social_post", "intent": "share", "audience": "friends", "key_information": "k2",
         "carried": [{"id": "w", "kind": "fact", "statement": "Maya walked home by the canal.", "private": False, "added": True}],
         "time": "2022-01-05T08:00", "min_words": 20, "max_words": 60, "voice": []}]},
}


def variables(name: str, language: str) -> dict:
    out = dict(VARIABLES[name])
    if name != "persona_enrich.j2":
        out["persona"] = _persona(language)
    return out
