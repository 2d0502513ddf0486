"""Public media never reveal what the person hides (synth.quality.privacy): the model-free check in English and Chinese, the
traces stage's repairs (re-plan, code re-route, rewrite) with scripted answers, `synth validate` and `synth stats`."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from types import SimpleNamespace

from handmade import PID, trace_inputs
from kit import run_stage

from synth.core.jsonl import read_records, write_atomic
from synth.quality.privacy import CommonTerms, LeakRule, PrivacyIndex, trace_leaks, word_leak
from synth.quality.validate import PersonaCheck, privacy_warnings
from synth.records import Event, Evidence, Trace
from synth.release.stats import collect
from synth.stages.traces import plan_privacy_problems, route_private

RULE = LeakRule.of({})  # the shipped defaults: social posts, photo captions, Moments and Weibo are public
HIDDEN = "Maya sobbed in the supply cupboard after Sister Hughes refused her transfer to paediatrics."
ERRAND = "Maya bought oat milk at the corner shop before the night shift."
LEAKING = ("Not my best week. Sobbed in the supply cupboard after Sister Hughes refused my transfer to "
           "paediatrics. #nurselife #tired")
CLEAN = "Oat milk, a quiet corner shop and the long walk home before the night shift. #nightshift #smallthings"


def test_a_public_trace_repeating_a_private_statement_is_caught_and_a_clean_one_passes():
    common = CommonTerms([HIDDEN, ERRAND], RULE.common_share)
    assert word_leak(LEAKING, HIDDEN, common, RULE) >= RULE.overlap
    assert word_leak(CLEAN, HIDDEN, common, RULE) == 0.0
    # what the trace may say (the evidence it carries) is not distinctive of the hidden statement
    assert "corner" not in common.distinctive(HIDDEN, [ERRAND])
    leaks = trace_leaks("social_post", LEAKING, [("e1", ERRAND, False)], [("e2", HIDDEN)], common, RULE)
    assert [(x.evidence_id, x.how) for x in leaks] == [("e2", "words")]
    assert trace_leaks("diary", LEAKING, [("e1", ERRAND, False)], [("e2", HIDDEN)], common, RULE) == [], \
        "a private medium may say anything"
    listed = trace_leaks("moments", CLEAN, [("e2", HIDDEN, True)], [("e2", HIDDEN)], common, RULE)
    assert [(x.evidence_id, x.how) for x in listed] == [("e2", "carried")], "listing a private evidence is a leak"


def test_the_check_reads_chinese_by_character_bigrams():
    hidden = "林晓梅开完会在车里哭了一场，觉得自己带不好新团队。"
    other = "林晓梅周末和陈露去西湖边喝茶。"
    common = CommonTerms([hidden, other], RULE.common_share)
    assert word_leak("今天开完会，在车里哭了一场。总觉得带不好新团队。", hidden, common, RULE) >= RULE.overlap
    assert word_leak("周末去西湖边喝茶，天气真好。", hidden, common, RULE) == 0.0


def test_terms_in_many_statements_are_not_distinctive():
    statements = [f"Maya worked a shift on the ward with patient {n}." for n in range(40)] + [HIDDEN]
    common = CommonTerms(statements, 0.05)
    assert {"maya", "ward", "shift", "patient"} <= common.common
    assert {"sobb", "cupboard", "paediatric"} <= common.distinctive(HIDDEN)


def _plan(medium: str, evidence: list[int]) -> SimpleNamespace:
    return SimpleNamespace(medium=medium, evidence=evidence)


def test_plan_problems_and_the_code_reroute():
    public = RULE.public_media
    plans = [_plan("social_post", [1, 2]), _plan("diary", [3])]
    assert plan_privacy_problems(plans, frozenset({2}), public) == [{"trace": 1, "medium": "social_post",
                                                                       "evidence": 2}]
    routed, changed = route_private(plans, 3, frozenset({2}), public, "diary")
    assert changed and routed == [(0, "social_post", [1]), (1, "diary", [2, 3])], "the private one moves"
    only_public = [_plan("social_post", [1]), _plan("photo_caption", [2])]
    assert plan_privacy_problems(only_public, frozenset({2}), public)[-1]["trace"] == 0
    routed, changed = route_private(only_public, 2, frozenset({2}), public, "diary")
    assert changed and routed == [(0, "social_post", [1]), (1, "diary", [2])], "the plan listing it changes medium"
    routed, changed = route_private(plans[1:], 3, frozenset(), public, "diary")
    assert not changed and routed == [(0, "diary", [1, 2, 3])], "no private evidence: only the usual carry-all"


# --------------------------------------------------------------------------- the traces stage, scripted answers

# the judge off: the model-free paths alone (the judge has its own test below)
CONFIG = "[traces]\ntraces_per_event = 1\nprivacy_repairs = 1\nvoice_wave_days = 21\nprivacy_judge = false\n"


def _inputs(directory, early: list[Evidence], late: list[Evidence]) -> tuple[list[Event], list[Evidence]]:
    events, _ = trace_inputs(directory)
    evidence = [*early, *late]
    write_atomic(directory / "evidence.jsonl", evidence)
    return events, evidence


def _evidence(eid: str, event: str, statement: str, private: bool) -> Evidence:
    return Evidence(id=eid, persona_id=PID, event_id=event, kind="emotion" if private else "fact",
                    statement=statement, arc_ids=["arc0"], private=private)


def _plans(medium: str, evidence: list[int]) -> str:
    return json.dumps({"traces": [{"reasons": "r", "medium": medium, "intent": "i", "audience": "a",
                                   "key_information": "k", "evidence": evidence, "delay_hours": 2}]})


def _text(content: str) -> str:
    return json.dumps({"content": content})


def _per_event(quiet: list[str], late: list[str]):
    """The traces replies per event, in order within each: the stage plans and writes events concurrently (a trace
    waits only for the traces its voice reference reads), so one queue for both would depend on scheduling. A
    request is the late event's when it holds the late event's evidence (ERRAND); the quiet event never sees it."""
    queues = {True: list(late), False: list(quiet)}

    def reply(request):
        return queues[ERRAND in request.messages[-1]["content"]].pop(0)

    reply.queues = queues
    return reply


def _late_writes(fake) -> list:
    return [r for r in fake.seen if r.task == "traces" and "content" in r.json_schema["properties"]
            and ERRAND in r.messages[-1]["content"]]


def test_a_public_plan_of_private_evidence_is_replanned_then_rerouted_by_code(tmp_path):
    _inputs(tmp_path / PID, [], [_evidence("ev1", "e_late", ERRAND, False), _evidence("ev2", "e_late", HIDDEN, True)])
    stubborn = _plans("social_post", [1, 2])
    fake = run_stage(tmp_path, "traces", config=CONFIG,
                     replies={"traces": [stubborn, stubborn, _text("Dear diary, a long shift again today.")]})
    plans = [r for r in fake.seen if "traces" in r.json_schema["properties"]]
    assert len(plans) == 2 and plans[1].sample == 1
    assert "carries private evidence 2" in plans[1].messages[-1]["content"], "the re-plan names the problem"
    assert "(private: the person keeps this to themself" in plans[0].messages[-1]["content"]
    (trace,) = read_records(tmp_path / PID / "traces.jsonl", Trace)
    assert (trace.medium, trace.evidence_ids, trace.privacy_plan) == ("diary", ["ev1", "ev2"], "rerouted")
    check = PersonaCheck(tmp_path / PID)
    check.run()
    assert "privacy" not in check.kinds


def test_a_public_trace_that_gives_away_a_private_statement_is_rewritten(tmp_path):
    early = [_evidence("ev1", "e_quiet", HIDDEN, True)]
    late = [_evidence("ev2", "e_late", ERRAND, False)]
    _inputs(tmp_path / PID, early, late)
    script = _per_event([_plans("diary", [1]), _text("Dear diary: " + HIDDEN)],  # the quiet event: a private diary
                        [_plans("social_post", [1]), _text(LEAKING), _text(CLEAN)])  # the late one: leaks once
    fake = run_stage(tmp_path, "traces", config=CONFIG, replies={"traces": script})
    assert not any(script.queues.values())
    draft, rewrite = _late_writes(fake)
    assert rewrite.sample == 1 and HIDDEN in rewrite.messages[-1]["content"], "the rewrite names what to keep hidden"
    assert HIDDEN not in draft.messages[-1]["content"], "a first draft is not primed with the secret"
    traces = {t.event_id: t for t in read_records(tmp_path / PID / "traces.jsonl", Trace)}
    post = traces["e_late"]
    assert (post.medium, post.content, post.privacy_rewrites) == ("social_post", CLEAN, 1)
    assert traces["e_quiet"].privacy_rewrites == 0

    check = PersonaCheck(tmp_path / PID)
    check.run()
    assert "privacy" not in check.kinds, check.problems
    figures = collect(tmp_path)["privacy"][PID]
    assert figures["leak_rate"] == 0.0 and figures["rewritten_rate"] == 1.0 and figures["public_traces"] == 1

    # the leak put back by hand: validate warns (the word check is a heuristic), stats counts it
    rows = [t.model_copy(update={"content": LEAKING}) if t.event_id == "e_late" else t for t in traces.values()]
    write_atomic(tmp_path / PID / "traces.jsonl", rows)
    check = PersonaCheck(tmp_path / PID)
    check.run()
    assert "privacy" not in check.kinds and len(check.warnings) == 1
    assert "private evidence ev1" in check.warnings[0] and "social_post is public" in check.warnings[0]
    assert privacy_warnings(tmp_path) == check.warnings
    assert collect(tmp_path)["privacy"][PID]["words_rate"] == 1.0
    # a public trace that lists the private evidence is a violation
    rows = [t.model_copy(update={"evidence_ids": ["ev1", "ev2"]}) if t.event_id == "e_late" else t for t in rows]
    write_atomic(tmp_path / PID / "traces.jsonl", rows)
    check = PersonaCheck(tmp_path / PID)
    problems = check.run()
    found = [p for p, k in zip(problems, check.kinds, strict=True) if k == "privacy"]
    assert len(found) == 1 and "carries private evidence ev1" in found[0]
    assert collect(tmp_path)["privacy"][PID]["carried_rate"] == 1.0


def test_the_index_exposes_the_phase_and_recent_secrets_up_to_the_trace():
    """What a public trace could give away: its phase's private evidence up to its time, then that of any phase in
    the lookback (newest first); never a later event's, never one older than the lookback."""
    days = [("a", "p1", dt.date(2022, 1, 2)), ("b", "p1", dt.date(2022, 1, 9)), ("c", "p2", dt.date(2022, 1, 3)),
            ("d", "p0", dt.date(2021, 11, 20)), ("old", "p0", dt.date(2021, 6, 1))]
    events = [Event(id=e, persona_id=PID, phase_id=ph, time=dt.datetime.combine(day, dt.time(9)), title=e,
                    description="d", location="l", participant_ids=[]) for e, ph, day in days]
    evidence = [_evidence(f"v{e}", e, f"{HIDDEN} ({e})", True) for e, _, _ in days]
    trace = Trace(id="t", persona_id=PID, event_id="a", evidence_ids=[], medium="social_post",
                  time=dt.datetime(2022, 1, 5, 9), intent="i", audience="a", content=LEAKING)
    assert RULE.lookback_days == 90
    assert [i for i, _ in PrivacyIndex(events, evidence, RULE).exposed(trace)] == ["va", "vc", "vd"], \
        "the phase's first, then the lookback's newest first; not b (later), not old (beyond 90 days)"
    own_phase = dataclasses.replace(RULE, lookback_days=0)
    assert [i for i, _ in PrivacyIndex(events, evidence, own_phase).exposed(trace)] == ["va"]


def test_a_secret_of_an_earlier_phase_retold_in_a_post_is_a_leak_and_the_judge_reads_a_capped_list(tmp_path):
    """A doubt hidden in one phase and posted in the next is caught by the word check (lookback), and with the
    lookback at 0 it is not; the judge is shown at most `privacy_judge_statements` statements."""
    events = [Event(id=e, persona_id=PID, phase_id=ph, time=dt.datetime(2022, 1, day, 9), title=e, description="d",
                    location="l", participant_ids=[]) for e, ph, day in [("e1", "p1", 2), ("e2", "p2", 20)]]
    evidence = [_evidence("v1", "e1", HIDDEN, True), _evidence("v2", "e2", ERRAND, False)]
    post = Trace(id="t", persona_id=PID, event_id="e2", evidence_ids=["v2"], medium="social_post",
                 time=dt.datetime(2022, 1, 20, 12), intent="i", audience="a", content=LEAKING)
    assert [(x.evidence_id, x.how) for x in PrivacyIndex(events, evidence, RULE).leaks(post)] == [("v1", "words")]
    assert PrivacyIndex(events, evidence, dataclasses.replace(RULE, lookback_days=0)).leaks(post) == []


def test_the_judge_catches_a_paraphrase_the_word_check_misses(tmp_path):
    """A post that retells the secret in other words passes the lexical check; the judge (scripted) names it, the
    post is rewritten with the secret named as hidden, and the judge's verdict on the kept text is recorded."""
    early = [_evidence("ev1", "e_quiet", HIDDEN, True)]
    late = [_evidence("ev2", "e_late", ERRAND, False)]
    _inputs(tmp_path / PID, early, late)
    paraphrase = "Rough week: broke down at work after my request to move to the children's ward was turned down."
    verdict = lambda revealed: json.dumps({"revealed": revealed, "reason": "r"})  # noqa: E731
    traces = _per_event([_plans("diary", [1]), _text("Dear diary: " + HIDDEN)],
                        [_plans("social_post", [1]), _text(paraphrase), _text(CLEAN)])
    script = {"traces": traces, "traces_privacy": [verdict([1]), verdict([])]}
    config = CONFIG.replace("privacy_repairs = 1", "privacy_repairs = 2").replace("judge = false", "judge = true")
    fake = run_stage(tmp_path, "traces", config=config, replies=script)
    assert not fake.unused() and not any(traces.queues.values())
    judges = [r for r in fake.seen if r.task == "traces_privacy"]
    assert len(judges) == 2 and HIDDEN in judges[0].messages[-1]["content"]
    assert paraphrase in judges[0].messages[-1]["content"] and judges[0].settings.temperature == 0.0
    # the post's own public evidence is shown as what it is meant to tell (no leak where it touches a secret: a
    # capable writer was sent back twice for a required line overlapping a private one)
    shown = judges[0].messages[-1]["content"]
    assert "meant to tell" in shown and ERRAND in shown.split("What the person keeps private")[0]
    assert not [r for r in fake.seen if r.task == "traces_privacy" and "Dear diary" in r.messages[-1]["content"]], \
        "a private medium is never judged"
    rewrite = _late_writes(fake)[-1]
    assert HIDDEN in rewrite.messages[-1]["content"]
    post = next(t for t in read_records(tmp_path / PID / "traces.jsonl", Trace) if t.event_id == "e_late")
    assert (post.content, post.privacy_rewrites, post.privacy_judged, post.privacy_flagged) == (CLEAN, 1, True, [])
    figures = collect(tmp_path)["privacy"][PID]
    assert figures["judged"] == 1 and figures["judge_flagged_rate"] == 0.0


def test_the_judge_reads_at_most_privacy_judge_statements(tmp_path):
    """Two secrets before a post, the judge capped at one: it is shown one statement and its answer may name only
    that one (the verdict's enum follows the list)."""
    second = "Maya has been hiding a letter from the nursing council about a complaint against her."
    _inputs(tmp_path / PID, [_evidence("ev1", "e_quiet", HIDDEN, True), _evidence("ev3", "e_quiet", second, True)],
            [_evidence("ev2", "e_late", ERRAND, False)])
    script = {"traces": [_plans("diary", [1, 2]), _text("Dear diary: " + HIDDEN + " " + second),
                         _plans("social_post", [1]), _text(CLEAN)],
              "traces_privacy": [{"revealed": [], "reason": "r"}]}
    config = CONFIG.replace("judge = false", "judge = true") + "privacy_judge_statements = 1\n"
    fake = run_stage(tmp_path, "traces", config=config, replies=script)
    assert not fake.unused()
    (judge,) = [r for r in fake.seen if r.task == "traces_privacy"]
    shown = [s for s in (HIDDEN, second) if s in judge.messages[-1]["content"]]
    assert len(shown) == 1, "one statement, not both"
    assert judge.json_schema["properties"]["revealed"]["maxItems"] == 1


def test_a_trace_plan_that_tells_of_the_next_morning_is_written_then(tmp_path):
    """The writer is told the trace's time after what its key information tells, whatever delay the plan gave."""
    events, _ = _inputs(tmp_path / PID, [], [_evidence("ev1", "e_late", ERRAND, False)])
    plan = json.loads(_plans("diary", [1]))
    plan["traces"][0].update(key_information="the errand, and her brother's reply the next morning", delay_hours=1)
    run_stage(tmp_path, "traces", config=CONFIG,
              replies={"traces": [json.dumps(plan), _text("Dear diary, he answered this morning at last.")]})
    (trace,) = read_records(tmp_path / PID / "traces.jsonl", Trace)
    start = next(e for e in events if e.id == "e_late").time
    assert trace.time == dt.datetime.combine(start.date() + dt.timedelta(days=1), dt.time(8))
