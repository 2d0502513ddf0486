"""Issue 15: a lived life — everyday stretches, arc states carried by phases, the registry, the calendar, the
realism statistics; model-free parts directly, the plumbing through a fake run of the generation stages."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from kit import run_stage

from synth.config.prompts import render
from synth.core.calendar import holidays_between, weekday
from synth.core.jsonl import read_records
from synth.quality.validate import PersonaCheck
from synth.records import FILES, MajorEvent, Person
from synth.release import life_stats
from synth.release.stats import collect
from synth.stages import arcs as arcs_stage
from synth.stages import phases as phases_stage

ROOT = Path(__file__).resolve().parents[1]
_PERSONA = {"name": "N", "age": 30, "gender": "f", "occupation": "o", "personality": "p", "family_history": "f",
            "education": "e", "concerns": [], "interests": [], "backstory": "b", "end": "2024-03-01", "relations": []}


def test_gaps_between_major_events_become_everyday_stretches():
    # a 60-day timeline, events on days 5-9 and 20-21: gaps 0-4, 10-19 and 22-59 (a 2-day gap would be skipped)
    assert arcs_stage.everyday_spans([(5, 9), (20, 21)], 60, 3) == [(0, 4, -1), (10, 19, 0), (22, 59, 1)]
    assert arcs_stage.everyday_spans([(0, 9), (12, 59)], 60, 3) == [], "a 2-day gap stays a gap"


def test_phase_bounds_tile_the_event_for_every_length_and_count():
    """No off-by-one: whatever end days the model picks inside the offered bounds, the phases tile the event
    (first day 0, last day length-1, no gap, no overlap, none empty)."""
    for length in range(1, 30):
        for count in range(1, min(length, 5) + 1):
            for pick in ("low", "high"):
                start, ends = 0, []
                for k in range(count):
                    low, high = phases_stage.phase_bounds(length, count, k, start)
                    assert start <= low <= high <= length - 1, (length, count, k)
                    end = low if pick == "low" else high
                    ends.append(end)
                    start = end + 1
                assert ends[-1] == length - 1 and start == length, (length, count, pick)
    assert phases_stage.phase_bounds(22, 2, 0, 0) == (0, 20), "day 21 is left to the second phase"
    assert phases_stage.phase_bounds(22, 3, 0, 0) == (0, 19)


def test_a_later_phase_that_reaches_a_state_keeps_its_share_of_the_days():
    """A capable writer's first phase of a 10-day event took days 0-8 and left the phase due to reach a state one
    day (applying, hearing back and telling her mother on one date): a later phase that reaches a state keeps its
    fair share of the days left, and the phases still tile the event whatever the model picks."""
    assert phases_stage.phase_bounds(10, 2, 0, 0) == (0, 8), "an aftermath phase may be one day"
    assert phases_stage.phase_bounds(10, 2, 0, 0, moving_later=1) == (0, 4), "five of ten days stay for the change"
    assert phases_stage.phase_bounds(12, 3, 0, 0, moving_later=1) == (0, 6), "4 days for the change, 1 for the rest"
    assert phases_stage.phase_bounds(12, 3, 1, 3, moving_later=1) == (3, 7)
    for length in range(1, 30):
        for count in range(1, min(length, 5) + 1):
            for moving in range(count):
                for pick in ("low", "high"):
                    start = 0
                    for k in range(count):
                        later = max(0, min(moving, count - 1 - k))
                        low, high = phases_stage.phase_bounds(length, count, k, start, moving_later=later)
                        assert start <= low <= high <= length - 1, (length, count, k, moving)
                        start = (low if pick == "low" else high) + 1
                    assert start == length, (length, count, moving, pick)


def test_phases_reaching_counts_the_later_phases_the_schedule_moves():
    target = {"a": 2, "b": 1}
    first = phases_stage.states_after({"a": 0, "b": 0}, target, 0, 3)
    assert phases_stage.phases_reaching(first, target, 0, 3) == 2
    assert phases_stage.phases_reaching(target, target, 0, 3) == 0, "nothing left to move"
    assert phases_stage.phases_reaching({"a": 1, "b": 1}, target, 1, 3) == 1


def test_everyday_phases_are_never_longer_than_everyday_phase_days():
    """An everyday stretch of any length cut into ceil(length / most) phases: whatever end days the model picks
    inside the bounds (always the earliest, always the latest, or alternating), every phase lasts 1..most days and
    they tile the stretch. (A 202-day stretch on Gemma came back as phases of 103, 1 × 7, 91 and 1 days before.)"""
    for most in (1, 3, 7, 21):
        for length in range(1, 80):
            count = -(-length // most)
            for pick in ("low", "high", "zigzag"):
                start, sizes = 0, []
                for k in range(count):
                    low, high = phases_stage.phase_bounds(length, count, k, start, most)
                    assert start <= low <= high <= length - 1, (most, length, count, k)
                    end = low if pick == "low" or (pick == "zigzag" and k % 2) else high
                    sizes.append(end - start + 1)
                    start = end + 1
                assert start == length and all(1 <= n <= most for n in sizes), (most, length, pick, sizes)
    assert phases_stage.phase_bounds(202, 10, 0, 0, 21) == (12, 20), "9 later phases cover 189 days at most"
    assert phases_stage.phase_bounds(202, 10, 0, 0) == (0, 192), "without `most` (major events) the model chooses"


def test_arc_states_move_inside_phases_and_reach_the_alignment_at_the_last():
    before, target = {"a": 0, "b": 1}, {"a": 2, "b": 1}
    first = phases_stage.states_after(before, target, 0, 3)
    second = phases_stage.states_after(first, target, 1, 3)
    last = phases_stage.states_after(second, target, 2, 3)
    assert [first["a"], second["a"], last["a"]] == [1, 2, 2] and last == target, "two steps over three phases"
    assert phases_stage.states_after({"a": 2}, {"a": 2}, 0, 1) == {"a": 2}, "an everyday stretch moves nothing"


def test_validate_flags_a_state_change_no_phase_carries(tmp_path):
    directory = tmp_path / "p"
    directory.mkdir()
    check = PersonaCheck(directory)
    check.records["major_events.jsonl"] = [
        {"id": "m0", "index": 0, "start": "2022-01-01", "kind": "major", "arc_states": [{"arc_id": "a", "anchor_index": 1}]},
        {"id": "d0", "index": 1, "start": "2022-01-10", "kind": "everyday", "arc_states": [{"arc_id": "a", "anchor_index": 1}]},
        {"id": "m1", "index": 2, "start": "2022-02-01", "kind": "major", "arc_states": [{"arc_id": "a", "anchor_index": 2}]},
    ]
    phase = lambda pid, major, k: {"id": pid, "major_event_id": major, "index": 0,  # noqa: E731
                                   "arc_states": [{"arc_id": "a", "anchor_index": k}]}
    good = [phase("p0", "m0", 1), phase("p1", "d0", 1), phase("p2", "m1", 2)]
    check.records["phases.jsonl"] = good
    check.check_arc_phases()
    assert check.problems == []
    check.records["phases.jsonl"] = [phase("p0", "m0", 1), phase("p1", "d0", 2), phase("p2", "m1", 2)]
    check.check_arc_phases()
    assert any("in an everyday phase" in p for p in check.problems)
    check.problems.clear()
    check.records["phases.jsonl"] = [phase("p0", "m0", 0), phase("p1", "d0", 0), phase("p2", "m1", 2)]
    check.check_arc_phases()
    assert any("no phase carries the change" in p and "m0" in p for p in check.problems)


def test_dates_carry_their_weekday_and_the_holidays_of_the_country():
    assert weekday("2024-02-10") == 5 and weekday(dt.datetime(2024, 2, 12, 9)) == 0
    spring = holidays_between("CN", "zh", "2024-02-09", "2024-02-11")
    assert [h["date"] for h in spring] == ["2024-02-10", "2024-02-11"] and spring[0]["name"] == "春节"
    assert [h["name"] for h in holidays_between("GB", "en", "2022-12-24", "2022-12-26")] == ["Christmas Day",
                                                                                               "Boxing Day"]
    assert holidays_between("", "en", "2022-01-01", "2022-12-31") == []
    assert holidays_between("XX", "en", "2022-01-01", "2022-12-31") == [], "an unknown country gives none"
    day = render("phases_init.j2", language="zh", persona={**_PERSONA, "start": "2024-02-10"}, arcs=[], moves=[],
                 event={"kind": "everyday", "start": "2024-02-10", "end": "2024-02-12"})
    assert "2024-02-10（周六）" in day[1]["content"]


def test_realism_statistics_are_computed_from_the_text():
    assert life_stats.distinct_2(["a b a b", "c d"]) == 3 / 4  # (a,b) (b,a) (a,b) (c,d): 3 distinct of 4
    assert life_stats.distinct_2(["今天很好", "今天很好"]) == 0.5
    texts = ["Dear diary today was long and", "Dear diary today was long but fine", "Something else entirely here"]
    assert life_stats.repeated_openings(texts) == 2 / 3
    times = [dt.datetime(2022, 1, 2, 9), dt.datetime(2022, 1, 2, 20), dt.datetime(2022, 1, 15, 8)]
    assert life_stats.gaps(times, dt.date(2022, 1, 1), dt.date(2022, 1, 20)) == [1, 12, 5]
    assert life_stats.month_counts(times, dt.date(2022, 1, 1), dt.date(2022, 3, 31)) == [3, 0, 0]
    mix = life_stats.media_mix({"zh": __import__("collections").Counter({"wechat_chat": 3, "diary": 1})},
                               {"zh": {"wechat_chat": 1, "diary": 1}})
    assert mix["zh"]["wechat_chat"] == {"share": 0.75, "target": 0.5}
    spoken = life_stats.media_mix({"en": __import__("collections").Counter({"diary": 3, "email": 1, "group_chat": 4})},
                                  {"en": {"diary": 3, "email": 1}})
    assert spoken["en"]["diary"] == {"share": 0.75, "target": 0.75}, "written media measured against the written mix"
    assert spoken["en"]["group_chat"] == {"share": 0.5, "target": None}, "spoken: share of all traces, no target"


def test_a_fake_run_lives_every_new_path(tmp_path):
    """Plumbing only (the fake provider): everyday stretches get phases, events and traces; arc states move only
    inside phases; the registry grows and its people take part in events; `synth stats` reports the figures."""
    config = tmp_path / "c.toml"
    # one medium only, so later waves find earlier traces of the same medium (the voice reference)
    others = "\n".join(f"{m} = 0" for m in ("social_post", "message_thread", "email", "note", "todo_list",
                                              "calendar_entry", "search_history", "voice_memo_transcript",
                                              "photo_caption"))
    config.write_text("[arcs]\nmin_major_events = 3\neveryday_min_days = 1\n[phases]\nnew_people = 2\n"
                      f"[traces]\nvoice_wave_days = 7\n[traces.media.en]\ndiary = 1\n{others}\n")
    fake = run_stage(tmp_path, ["persona", "arcs", "phases", "events", "traces"], config=config)
    d = tmp_path / "p01_maya"
    majors = read_records(d / "major_events.jsonl", MajorEvent)
    phases = read_records(d / "phases.jsonl", FILES["phases.jsonl"])
    people = read_records(d / "people.jsonl", Person)
    events = read_records(d / "events.jsonl", FILES["events.jsonl"])
    everyday = {m.id for m in majors if m.kind == "everyday"}
    assert everyday and any(p.major_event_id in everyday for p in phases), "everyday stretches have phases"
    assert all(p.arc_states for p in phases)
    introduced = [p for p in people if p.origin == "introduced"]
    assert introduced and all(p.first_phase_id for p in introduced), "phases added people or places"
    assert any(p.first_event_id for p in people), "events added people or places too"
    evidence = read_records(d / "evidence.jsonl", FILES["evidence.jsonl"])
    assert {e.private for e in evidence} == {True, False}, "the fake marks some evidence private"
    relations = {p.id for p in people if p.origin == "relation"}
    assert relations and {i for e in events for i in e.participant_ids} - relations <= {p.id for p in introduced}
    check = PersonaCheck(d)
    problems = check.run()
    assert not [p for p, k in zip(problems, check.kinds, strict=True)
                if k in ("arc_phases", "references", "duplicates", "privacy")], problems
    life = collect(tmp_path)["life"]["p01_maya"]
    assert 0 < life["everyday_share"] < 1 and life["cast_end"] >= life["cast_start"]
    assert 0 < life["distinct_2"] <= 1
    writes = [r for r in fake.seen if r.task == "traces" and set(r.json_schema["properties"]) == {"content"}]
    voiced = [r for r in writes if "Earlier records of this person in the same medium" in r.messages[-1]["content"]]
    assert voiced and len(voiced) < len(writes), "later waves read earlier traces; the first wave has none"
    assert any("Public holidays" in r.messages[-1]["content"] or "(Monday)" in r.messages[-1]["content"]
               for r in writes), "dates carry weekdays"


def test_voice_waves_and_reference_read_only_earlier_traces():
    from synth.records import Event, Trace
    from synth.stages import traces as traces_stage

    start = dt.date(2022, 1, 1)
    event = lambda eid, day: Event(id=eid, persona_id="p", phase_id="ph", time=dt.datetime(2022, 1, 1 + day, 9),  # noqa: E731
                                   title="t", description="d", location="l", participant_ids=[])
    from synth.stages.trace_voice import wave_index

    assert wave_index([event("c", 20), event("a", 0), event("b", 6)], start, 7) == {"a": 0, "b": 0, "c": 2}
    trace = lambda tid, day, medium: Trace(id=tid, persona_id="p", event_id="e", evidence_ids=[], medium=medium,  # noqa: E731
                                           time=dt.datetime(2022, 1, 1 + day, 9), intent="i", audience="a",
                                           content=f"text {tid} " * 20)
    written = [trace("t1", 1, "diary"), trace("t2", 3, "email"), trace("t3", 5, "diary"), trace("t4", 9, "diary")]
    voice = traces_stage.voice_reference(written, "diary", dt.datetime(2022, 1, 8), 2, 12)
    assert [v["content"] for v in voice] == ["text t1…", "text t3…"], "latest two before, oldest first"
    # cut after a whole sentence, never mid-quote (a writer was shown a diary stopping at "从来没被问过，“以后”里")
    diary = written[0].model_copy(update={"content": "我下班后一个人去了江滩走了很久。可我好像从来没被问过，“以后”里有没有我想要的。"})
    [cut] = traces_stage.voice_reference([diary], "diary", dt.datetime(2022, 1, 8), 1, 24)
    assert cut["content"] == "我下班后一个人去了江滩走了很久。…"
    assert traces_stage.voice_reference(written, "diary", dt.datetime(2022, 1, 8), 0, 12) == []


def test_an_empty_trace_is_asked_again_never_kept():
    """The local model once wrote `"content": ""`: the schema's minLength binds a grammar-constrained model, and the
    writer's check refuses whitespace so the client repairs it."""
    from synth.engine.stage import schema_of
    from synth.stages.traces import TraceText, has_content

    assert schema_of(TraceText)["properties"]["content"]["minLength"] >= 1
    with pytest.raises(ValueError):
        TraceText(content="")
    with pytest.raises(ValueError, match="content: empty"):
        has_content(TraceText(content=" \n\t" * 10))
    has_content(TraceText(content="Long shift; Dr. Okafor stayed late again."))
