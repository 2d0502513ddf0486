"""LifeDialBench's year → month → week → day plan of the lifelog: the calendar periods, the model-free parent–child
checks, a scripted plan whose day draft fails them and is re-asked, the dialogue that follows the plan, and what
`synth validate` and `synth stats` make of the plan file."""

from __future__ import annotations

import datetime as dt
import json

from spoken_world import ALL, PID, SHORT, event, fake_run, load, run, setup

from synth.life.lifelog_calendar import agenda_problems, event_problems, periods, range_problems, tree_problems
from synth.quality.validate import validate_dataset
from synth.release import stats

D = dt.date


def test_periods_are_calendar_units_that_hold_an_active_day_cut_at_month_edges():
    days = [D(2022, 1, 5), D(2022, 1, 31), D(2022, 2, 1), D(2022, 12, 30)]
    low, high = D(2022, 1, 3), D(2023, 1, 10)
    assert periods("year", low, high, days) == [(D(2022, 1, 3), D(2022, 12, 31))]
    assert periods("month", D(2022, 1, 3), D(2022, 12, 31), days) == [
        (D(2022, 1, 3), D(2022, 1, 31)), (D(2022, 2, 1), D(2022, 2, 28)), (D(2022, 12, 1), D(2022, 12, 31))]
    # 31 Jan 2022 is a Monday; its week runs into February, so it is cut at the month's end
    assert periods("week", D(2022, 1, 3), D(2022, 1, 31), days) == [(D(2022, 1, 3), D(2022, 1, 9)),
                                                                    (D(2022, 1, 31), D(2022, 1, 31))]
    assert periods("week", D(2022, 2, 1), D(2022, 2, 28), days) == [(D(2022, 2, 1), D(2022, 2, 6))]
    assert periods("day", D(2022, 1, 3), D(2022, 1, 9), days) == [(D(2022, 1, 5), D(2022, 1, 5))]


def node(level: str, start: str, end: str, events=(), **extra) -> dict:
    return {"id": f"{level}-{start}", "level": level, "start": start, "end": end, "event_ids": list(events), **extra}


def test_parent_child_checks_pass_a_consistent_node_and_name_each_broken_rule():
    week = node("week", "2022-01-03", "2022-01-09", ["e1", "e2"])
    day = node("day", "2022-01-08", "2022-01-08", ["e1"], key_event_ids=["e1"])
    days = {"e1": D(2022, 1, 8), "e2": D(2022, 1, 9), "e3": D(2022, 1, 8)}
    assert range_problems(day, week) == [] and event_problems(day, week, days) == []
    stray = node("day", "2022-01-10", "2022-01-10", ["e1", "e3"], key_event_ids=["e2"])
    assert range_problems(stray, week) == ["2022-01-10–2022-01-10 is not inside its week's 2022-01-03–2022-01-09"]
    assert event_problems(stray, week, days) == [
        "event e1 is dated 2022-01-08, outside 2022-01-10–2022-01-10",
        "event e3 is dated 2022-01-08, outside 2022-01-10–2022-01-10", "event e3 is not among its week's events",
        "its key event e2 is not among its own events"]
    assert range_problems(node("day", "2022-01-08", "2022-01-08"), None) == ["a day without its parent"]
    assert range_problems(day, node("month", "2022-01-01", "2022-01-31")) == ["a day under a month"]


def test_agenda_checks_order_coverage_times_and_rest_days():
    times = {"e1": dt.datetime(2022, 1, 8, 10), "e2": dt.datetime(2022, 1, 8, 18)}
    saturday = {"weekday": 5, "weekend": True, "holidays": []}
    good = node("day", "2022-01-08", "2022-01-08", ["e1", "e2"], calendar=saturday, agenda=[
        {"minute": 480, "kind": "routine", "text": "breakfast", "event_id": ""},
        {"minute": 610, "kind": "event", "text": "plumber", "event_id": "e1"},
        {"minute": 1080, "kind": "event", "text": "choir", "event_id": "e2"}])
    assert agenda_problems(good, times, 60) == []
    bad = {**good, "agenda": [
        {"minute": 700, "kind": "work", "text": "reports", "event_id": ""},
        {"minute": 520, "kind": "event", "text": "plumber", "event_id": "e1"},
        {"minute": 900, "kind": "event", "text": "gym", "event_id": "e9"}]}
    assert agenda_problems(bad, times, 60) == [
        "item 2: at minute 520, before the item above (700)", "item 1: work on a rest day",
        "item 3: names event e9, not one of the day's", "event e1 is on the agenda at minute 520, it happens at 10:00",
        "event e2 is not on the agenda"]
    weekday = {**bad, "calendar": {"weekday": 0, "weekend": False, "holidays": []}}
    assert "item 1: work on a rest day" not in agenda_problems(weekday, times, 60)
    holiday = {**bad, "calendar": {"weekday": 0, "weekend": False, "holidays": [{"date": "x", "name": "New Year"}]}}
    assert "item 1: work on a rest day" in agenda_problems(holiday, times, 60)


# ------------------------------------------------------------------------------------------ a scripted plan

LABEL = "01-08 Plumber visit"
NODE = {"summary": "a quiet start", "themes": ["home"], "key_events": [LABEL]}


def test_a_scripted_plan_is_checked_re_asked_and_followed_by_the_dialogue(tmp_path):
    out = tmp_path / "p"
    directory = setup(out, [event(1, dt.datetime(2022, 1, 8, 10), ["r1"])], SHORT)  # a Saturday
    day_draft = {"summary": "plumber day", "agenda": [
        {"minute": 600, "kind": "work", "text": "answer work mail", "event": "-"},
        {"minute": 540, "kind": "routine", "text": "coffee", "event": "-"}]}
    day_fixed = {"summary": "plumber day, then rest", "agenda": [
        {"minute": 540, "kind": "routine", "text": "coffee", "event": "-"},
        {"minute": 600, "kind": "event", "text": "the plumber comes", "event": LABEL},
        {"minute": 900, "kind": "leisure", "text": "a walk by the river", "event": "-"}]}
    dialogue = {"lines": [{"speaker": "Sam", "second": 5, "text": "It drips again.", "evidence": [1]},
                          {"speaker": "Maya", "second": 65, "text": "Then we call him back.", "evidence": [2]}]}
    fake = run(out, "lifelog", {"lifelog_plan": [NODE, {**NODE, "summary": "January: the flat"},
                                                 {**NODE, "summary": "a week at home"}, day_draft, day_fixed],
                                "lifelog": [dialogue]})
    assert [r.task for r in fake.seen] == ["lifelog_plan"] * 5 + ["lifelog"] and not fake.unused()
    prompts = [r.messages[-1]["content"] for r in fake.seen]
    assert "# The plan of this year: 2022-01-01 to 2022-02-11" in prompts[0]
    assert "The plan one level up (the year 2022-01-01 to 2022-02-11): a quiet start" in prompts[1]
    assert "Calendar: Saturday, weekend" in prompts[3] and "a week at home" in prompts[3]
    assert "- item 1: work on a rest day" in prompts[4] and "- event e1 is not on the agenda" in prompts[4]
    assert "10:00 [event] the plumber comes" in prompts[5], "the dialogue follows the day's agenda"
    enum = fake.seen[3].json_schema["$defs"]["AgendaLine"]["properties"]["event"]["enum"]
    assert enum == ["-", LABEL]

    plan = load(directory, "lifelog_plan.jsonl")
    assert [(n.level, n.start.isoformat(), n.end.isoformat()) for n in plan] == [
        ("year", "2022-01-01", "2022-02-11"), ("month", "2022-01-01", "2022-01-31"),
        ("week", "2022-01-03", "2022-01-09"), ("day", "2022-01-08", "2022-01-08")]
    assert [n.parent_id for n in plan] == ["", plan[0].id, plan[1].id, plan[2].id]
    assert all(n.event_ids == ["e1"] and n.key_event_ids == (["e1"] if n.level != "day" else []) for n in plan)
    day = plan[3]
    assert [(i.minute, i.kind, i.event_id) for i in day.agenda] == [(540, "routine", ""), (600, "event", "e1"),
                                                                   (900, "leisure", "")]
    assert day.check.rule_problems == ["item 2: at minute 540, before the item above (600)",
                                       "item 1: work on a rest day", "event e1 is not on the agenda"]
    assert not day.check.flagged and len(day.check.repairs) == 1 and day.calendar["weekend"]
    [talk] = load(directory, "lifelog.jsonl")
    assert talk.plan_day_id == day.id
    rates = stats.collect(out)["lifelog_plan"]
    assert rates["day"]["rule_fail_rate"] == 1.0 and rates["day"]["repaired_rate"] == 1.0
    assert rates["year"]["records"] == 1 and rates["week"]["flagged_rate"] == 0.0


def test_validate_reads_the_plan_tree(tmp_path):
    out = tmp_path / "v"
    directory = setup(out, [event(1, dt.datetime(2022, 1, 8, 10), ["r1"])], SHORT)
    run(out, "lifelog")
    rows = [json.loads(line) for line in (directory / "lifelog_plan.jsonl").read_text().splitlines()]
    assert [r["level"] for r in rows] == ["year", "month", "week", "day"]
    events = {"e1": D(2022, 1, 8)}
    assert tree_problems(rows, events) == []
    rows[3]["start"] = rows[3]["end"] = "2022-01-12"  # the day moved out of its week
    rows[2]["event_ids"] = ["e1", "e7"]
    rows[3]["agenda"] = [{"minute": 1, "kind": "event", "text": "x", "event_id": "e5"}]
    (directory / "lifelog_plan.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    problems = validate_dataset(out)
    assert any("2022-01-12–2022-01-12 is not inside its week's 2022-01-03–2022-01-09" in p for p in problems)
    assert any("event e7 is not among its month's events" in p for p in problems)
    assert any("agenda item 1: names event e5, not one of the day's" in p for p in problems)


def test_max_groups_and_max_events_cut_a_spoken_run_down(tmp_path):
    # a fake seed whose full run has more than one group that talks (which groups talk is the fake's draw)
    for seed in range(6):
        full, cut = tmp_path / f"full{seed}", tmp_path / f"cut{seed}"
        fake_run(full, "tiny", ALL, seed=seed)
        if len({c.group_id for c in load(full / PID, "chats.jsonl")}) > 1:
            break
    fake_run(cut, "tiny", ALL + "[chats]\nmax_groups = 1\n[lifelog]\nmax_events = 1\n", seed=seed)
    chats = {path: load(path / PID, "chats.jsonl") for path in (full, cut)}
    assert len({c.group_id for c in chats[full]}) > 1, "no fake seed gave the persona more than one group that talks"
    assert len({c.group_id for c in chats[cut]}) == 1
    assert chats[cut][0].group_id == chats[full][0].group_id, "the first group (family, work, friends order) is kept"
    dialogues = load(cut / PID, "lifelog.jsonl")
    assert len(load(full / PID, "lifelog.jsonl")) > 1 and len(dialogues) == 1
    first = min((e for e in load(cut / PID, "events.jsonl")
                 if any(v.event_id == e.id for v in load(cut / PID, "evidence.jsonl"))), key=lambda e: (e.time, e.id))
    assert dialogues[0].event_id == first.id
    assert [n.level for n in load(cut / PID, "lifelog_plan.jsonl")] == ["year", "month", "week", "day"]
    assert validate_dataset(cut) == []
