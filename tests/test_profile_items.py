"""EverMemBench's profile family (`profile_style`): the model-free 2×2 check, which members and dimensions an item
tests, a scripted draft that fails the check and its re-ask, the options placed by the distractors stage and
checked by the filter, `synth validate` against groups.jsonl, and the rates in `synth stats`."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from kit import Scripted, run_stage

from synth.core.jsonl import read_records
from synth.quality import rules
from synth.quality.validate import validate_dataset
from synth.records import FILES, ChatDay, Group, GroupMember, SpokenCheck, Utterance
from synth.release import stats
from synth.stages.qa.profile import marked_dimensions, profile_anchors, wrong_level

ROOT = Path(__file__).resolve().parents[1]
PID = "p01_maya"
CONFIG = ('sources = ["written", "group_chat", "lifelog"]\n[qa]\ntypes = ["profile_style"]\nprofile_min_days = 1\n'
          '[filter]\nblind_samples = 1\n')


def option(cell: str, text: str, fact: str, style: dict[str, int], choice_id: str = "") -> dict:
    return {"cell": cell, "text": text, "fact": fact, "style": style, "choice_id": choice_id}


def clean_profile() -> dict:
    stored = {"emoji": 5, "formality": 1}
    wrong = {"emoji": 1, "formality": 5}
    return {"style": stored, "options": [
        option("both_right", "plumber fixed the sink 🎉", "plumber fixed the sink", stored, "B"),
        option("style_wrong", "The plumber has repaired the sink.", "plumber fixed the sink today", wrong, "A"),
        option("fact_wrong", "boiler blew up again lol 😅 calling someone", "the boiler broke down", stored, "C"),
        option("both_wrong", "The boiler has broken down again.", "the boiler broke down", wrong, "D")]}


def test_the_2x2_check_passes_a_clean_item_and_names_each_broken_rule():
    profile = clean_profile()
    assert rules.profile_problems(profile, "B") == []
    assert rules.profile_text_problems(profile, [("A", "The plumber has repaired the sink."),
                                                 ("B", "plumber fixed the sink 🎉"),
                                                 ("C", "boiler blew up again lol 😅 calling someone"),
                                                 ("D", "The boiler has broken down again.")]) == []
    broken = clean_profile()
    broken["options"][0]["style"] = {"emoji": 5, "formality": 3}  # the key's style is not the member's
    broken["options"][1]["style"] = {"emoji": 4, "formality": 5}  # a wrong style too close to the stored one
    broken["options"][3]["text"] = "The boiler has broken down again 👍"  # emoji 1 claimed, one in the text
    broken["options"][2]["fact"] = "plumber fixed the sink"  # a fact-wrong option with the key's fact
    broken["options"][3]["choice_id"] = "B"
    assert rules.profile_problems(broken, "C") == [
        "both_right: claims formality 3, the member's stored level is 1",
        "style_wrong: claims emoji 4, too close to the stored 5 for a wrong style",
        "style_wrong: claims emoji 4 but its text has none",
        "fact_wrong: its fact should differ from the key's (word overlap 1.00)",
        "both_wrong: claims emoji 1 but its text has 1",
        "the options stand at ['B', 'A', 'C', 'B'], not at four distinct letters of A–D",
        "the both-right option stands at 'B', the key is 'C'"]
    missing = clean_profile()
    missing["options"][3]["cell"] = "both_right"
    assert rules.profile_problems(missing)[0].startswith("the options' cells are")
    assert rules.profile_text_problems(clean_profile(), [("A", "x")])[0] == "both_right: the text at B is not this option's"


def test_the_marked_dimensions_are_the_most_marked_and_wrong_levels_are_far():
    style = {"formality": 3, "verbosity": 2, "humour": 5, "jargon": 3, "emoji": 1, "directness": 4, "warmth": 3,
             "questioning": 3}
    assert marked_dimensions(style, 3) == ("humour", "emoji", "verbosity")
    assert [wrong_level(v) for v in (1, 2, 3, 4, 5)] == [5, 4, 5, 2, 1]
    assert all(abs(wrong_level(v) - v) >= rules.STYLE_GAP for v in range(1, 6))


def test_anchors_are_members_who_spoke_on_enough_days_with_their_newest_evidence_line():
    style = {d: 3 for d in ("formality", "emoji")}
    group = Group(id="g", persona_id=PID, kind="family", members=[
        GroupMember(person_id=PID, name="Maya", role="self", style=style),
        GroupMember(person_id="r1", name="Sam", role="partner", style=style)])

    def day(d: int, lines: list[tuple[str, str, list[str]]]) -> ChatDay:
        return ChatDay(id=f"c{d}", persona_id=PID, group_id="g", date=dt.date(2022, 1, d), event_ids=["e"],
                       evidence_ids=[], summary="", check=SpokenCheck(),
                       utterances=[Utterance(speaker=s, speaker_id=i, time=dt.datetime(2022, 1, d, 10), text=f"{s} {d}",
                                             evidence_ids=ev) for s, i, ev in [(n, {"Maya": PID, "Sam": "r1"}[n], e)
                                                                              for n, _, e in lines]])

    chats = [day(1, [("Sam", "", ["v1"]), ("Maya", "", [])]), day(2, [("Sam", "", ["v2"])]), day(3, [("Maya", "", [])])]
    from synth.stages.qa.profile import chat_trace_id

    traces = {chat_trace_id(c) for c in chats}
    anchors = profile_anchors([group], chats, traces, 5, 2, 10)
    assert [(a.member.name, a.evidence_id, a.trace_id) for a in anchors] == [("Sam", "v2", chat_trace_id(chats[1]))], \
        "Maya spoke on two days but never carried evidence"
    [sam] = anchors
    assert [u.text for u in sam.lines] == ["Sam 1", "Sam 2"] and sam.style_trace_ids == tuple(chat_trace_id(c) for c in chats[:2])
    assert profile_anchors([group], chats, traces, 5, 3, 10) == [], "Sam spoke on 2 days, fewer than 3"
    assert profile_anchors([group], chats, traces - {chat_trace_id(chats[1])}, 5, 1, 10)[0].evidence_id == "v1", \
        "a chat day without its trace does not count"


# ------------------------------------------------------------------------------------------ a scripted run

def session_run(out: Path, stages: list[str], replies: dict | None = None, force: bool = False) -> Scripted:
    """Stages for p01_maya with the profile config (written beside the dataset) on the kit's scripted model."""
    config = out.parent / f"{out.name}.toml"
    config.write_text(CONFIG)
    return run_stage(out, stages, config=config, replies=replies, force=force)


def load(directory: Path, name: str) -> list:
    return read_records(directory / name, FILES[name])


def draft(dims: tuple[str, ...], stored: dict[str, int], key_style: dict[str, int]) -> dict:
    wrong = {d: wrong_level(stored[d]) for d in dims}

    def text(style: dict[str, int], body: str) -> str:
        return body + (" 🎉" if style.get("emoji", 3) >= 4 else "")

    return {"question": "How would Sam put it in the family chat if the sink came up?",
            "both_right": {"text": text(key_style, "sink works again"), "fact": "the sink works again", "style": key_style},
            "style_wrong": {"text": text(wrong, "The sink works again now."), "fact": "the sink works again now",
                            "style": wrong},
            "fact_wrong": {"text": text(stored, "the roof leaks, someone has to call"), "fact": "the roof leaks badly",
                           "style": stored},
            "both_wrong": {"text": text(wrong, "The roof leaks; someone must call."), "fact": "the roof leaks badly",
                           "style": wrong}}


def test_a_scripted_profile_item_is_re_asked_placed_checked_and_validated(tmp_path):
    out = tmp_path / "p"
    session_run(out, ["persona", "arcs", "phases", "events", "chats", "lifelog", "traces"])
    directory = out / PID
    groups, chats = load(directory, "groups.jsonl"), load(directory, "chats.jsonl")
    traces = {t.id for t in load(directory, "traces.jsonl")}
    [anchor] = profile_anchors(groups, chats, traces, 1, 1, 12)
    dims = marked_dimensions(anchor.member.style, 3)
    stored = {d: anchor.member.style[d] for d in dims}
    off = {**stored, dims[0]: wrong_level(stored[dims[0]])}  # the first draft's key claims a wrong level
    fake = session_run(out, ["qa"], {"qa_write": [draft(dims, stored, off), draft(dims, stored, stored)]},
                       force=True)
    assert [r.task for r in fake.seen] == ["qa_write", "qa_write"] and not fake.unused()
    schema = fake.seen[0].json_schema["$defs"]["StyleClaim"]["properties"]
    assert list(schema) == list(dims) and all(p["minimum"] == 1 and p["maximum"] == 5 for p in schema.values())
    first_problem = f"both_right: claims {dims[0]} {off[dims[0]]}, the member's stored level is {stored[dims[0]]}"
    assert first_problem in fake.seen[1].messages[-1]["content"], "the re-ask shows what the check found"
    [item] = load(directory, "qa.jsonl")
    assert item.question_type == "profile_style" and item.answer.startswith("sink works again")
    profile = item.profile
    assert profile.first_problems[0] == first_problem and profile.problems == [] and profile.rewrites == 1
    assert profile.style == stored and profile.member_id == anchor.member.person_id
    assert item.digital_trace_ids == [anchor.trace_id] and item.evidence[0].evidence_id == anchor.evidence_id
    assert set(profile.style_trace_ids) <= traces and anchor.trace_id in profile.style_trace_ids

    # the no-context validator misses the key (scripted, so the round goes on to the verify judge)
    blind = {"choice": "E", "needs_memory": True, "reason": "needs the chats"}
    fake = session_run(out, ["distractors", "filter"], {"distractors_validate": [blind]})
    assert "distractors" not in [r.task for r in fake.seen], "the 2×2 options are not rewritten by the writer"
    verify = [r.messages[-1]["content"] for r in fake.seen if r.task == "distractors_verify"]
    assert len(verify) == 1
    for prompt in verify:  # the verify judge knows style counts, and reads the chat days where the member spoke
        assert f"This item asks how {anchor.member.name} usually talks in the group" in prompt
        assert prompt.count("--- group_chat ·") == len(set(profile.style_trace_ids) | {anchor.trace_id})
    [mcq] = load(directory, "mcq.jsonl")
    letters = {o.cell: o.choice_id for o in mcq.profile.options}
    assert letters["both_right"] == mcq.correct_choice_id and sorted(letters.values()) == list("ABCD")
    assert {c.id: c.text for c in mcq.choices}[letters["style_wrong"]].startswith("The sink works again now")
    [decided] = load(directory, "final.jsonl") + load(directory, "rejected.jsonl")
    assert next(v for v in decided.verdicts if v.filter == "profile_2x2").passed
    rates = stats.collect(out)["profile_check"]
    assert rates["items"] == 1 and rates["first_draft_fail_rate"] == 1.0 and rates["fail_rate"] == 0.0
    assert rates["rewrites"] == 1

    assert validate_dataset(out) == []
    # a stored level that no longer matches groups.jsonl, and a final item whose cells no longer hold
    raw = json.loads((directory / "mcq.jsonl").read_text())
    raw["profile"]["style"][dims[0]] = wrong_level(stored[dims[0]])
    (directory / "mcq.jsonl").write_text(json.dumps(raw) + "\n")
    final = {**raw, "blind_choice": "", "blind_confidence": 0.0, "blind_votes": [], "verdicts": []}
    final["profile"]["options"][0]["choice_id"] = "E"
    (directory / "final.jsonl").write_text(json.dumps(final) + "\n")
    problems = validate_dataset(out)
    assert any(f"profile.style: {dims[0]} {wrong_level(stored[dims[0]])}, groups.jsonl stores {stored[dims[0]]}" in p
               for p in problems)
    assert any("final.jsonl" in p and "profile: the options stand at" in p for p in problems)
