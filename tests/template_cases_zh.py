"""The Chinese template contexts the zh template tests and the prompt lint render: a zh persona, the generation and QA templates' variables, and the leftover-English finder."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from synth.config.prompts import labels, prompts_dir, render
from synth.records import CANNOT_DETERMINE, QUESTION_TYPES, AnchorState, BigFive, LifeArc, Persona, Relation, Snapshot
from synth.stages.trace_context import moment_arcs

# Words the model must read literally: JSON field names of the output schemas and JSON literals. An English word
# outside this list (or an id not shown beside its native label) is a leftover.

# Words the model must read literally: JSON field names of the output schemas and JSON literals. An English word
# outside this list (or an id not shown beside its native label) is a leftover.
FIELD_NAMES = {
    "JSON", "true", "false", "snake_case", "AI",  # AI as in "AI 分身", a loanword Chinese readers use
    # persona, arcs, phases, events, traces
    "name", "title", "description", "keep", "added", "seeds", "seed", "anchor_state", "anchor_states", "label",
    "trigger", "cues", "start_day", "end_day", "arc_states", "energy", "stress", "dominant_emotion", "focus",
    "arc_status", "day", "hour", "minute", "location", "participants", "evidence", "kind", "statement", "arcs",
    "medium", "intent", "audience", "key_information", "delay_hours", "content", "traces",
    # qa, distractors, filter, eval
    "feasible", "evidence_indices", "temporal_scope", "outline", "absent_topic", "ask_after_days", "ask_hour",
    "question", "answer", "choice", "needs_memory", "reason", "key_supported", "others_ruled_out", "notes",
    "why_wrong", "supported", "confidence", "truthfulness", "consistency", "covered_items", "helpfulness",
    "states_answer", "options",
    # options rendered blind to the key; the open question's reader and judge
    "question_favours_option", "statements", "matches", "cannot_answer",
    # the lived-life planner's fields (issue 15)
    "new_people", "new_places", "relation", "reasons", "private", "revealed", "experience", "opinion",
    # the memory systems of synth eval (issue 16)
    "memories", "summary", "scene_tags", "emotion", "pattern_type", "trait_type", "claim", "level",
    # group chats and lifelog dialogue (issue 17)
    "speaker", "text", "open_items", "second", "completion_ok", "logic_ok", "style_ok", "problems",
    "only_answer",
    # the profile family's 2×2 options (issue 17)
    "fact", "style", "both_right", "style_wrong", "fact_wrong", "both_wrong",
    # the lifelog plan's answers and agenda kinds (issue 17)
    "themes", "key_events", "agenda", "event",
    # relation-controlled variants (issue 18)
    "target", "variants", "condition", "signal", "query", "correct_answers", "wrong_answers", "recoverable",
    "implicit",
}
WORD = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z][A-Za-z_]+(?![A-Za-z0-9_])")
# Templates that take no language: the provider-level JSON-schema hint (a schema, not prose for the persona).
LANGUAGE_FREE = {"llm_json_format.j2"}

PERSONA = Persona(
    id="p-zh", persona_id="p-zh", language="zh",
    big_five=BigFive(openness=.6, conscientiousness=.7, extraversion=.8, agreeableness=.5, neuroticism=.4),
    start=dt.date(2023, 1, 1), end=dt.date(2023, 12, 31), scale="100k", name="林晓梅", age=38, gender="female",
    personality="外向务实，说话直接。", family_history="在绍兴长大，父母开小饭馆。", education="浙江工商大学市场营销本科。",
    occupation="杭州一家茶叶公司的销售总监。", concerns=["业绩", "父亲的身体"], interests=["徒步", "做饭"],
    backstory="三年前从上海回到杭州。",
    relations=[Relation(id="r1", name="周建国", relation="丈夫", description="中学老师。"),
               Relation(id="r2", name="陈露", relation="同事", description="销售经理。")],
).model_dump(mode="json")
STATES = [AnchorState(label=f"状态{n}", description="她的处境。", trigger="一次谈话。", cues=["日记里的一句话"])
          for n in "一二三"]
ARC_RECORDS = [LifeArc(id=f"a{n}", persona_id="p-zh", dimension=dim, title=title, description="这一年的变化。",
                       anchor_states=STATES).model_dump(mode="json")
               for n, (dim, title) in enumerate([("experience", "带新团队"), ("emotion", "与父亲和解"),
                                                 ("opinion", "对应酬的看法")])]
ARCS = [{**a, "label": a["title"]} for a in ARC_RECORDS]
SNAP = Snapshot(energy=6, stress=7, dominant_emotion="焦虑。", focus="季度业绩。",
                arc_status={"a0": "刚接手。"}).model_dump(mode="json")
PHASE = {"id": "ph", "index": 0, "title": "接手新团队", "description": "她开始带一个新团队。", "start": "2023-02-01",
         "end": "2023-02-20", "snapshot_before": SNAP, "snapshot_after": SNAP}
EVENT_VIEW = {"id": "m", "title": "升职", "description": "她升任销售总监。", "start": "2023-02-01",
              "end": "2023-03-31", "kind": "major",
              "states": [{"arc": "带新团队", "index": 0, "label": "状态一", "description": "刚开始。"}]}
STATE = {"label": "观望", "description": "她先看看团队。", "trigger": "接手团队。", "cues": ["话少"]}
OPEN = {"label": "放手", "description": "她开始放权。", "trigger": "陈露顶住了一个大单。", "cues": ["夸人"]}
MOVES = [{"arc": "带新团队", "index": 0, "state": STATE, "reaches": [{"index": 1, "state": OPEN, "absent_days": []}]}]
NEWCOMER = {"kind": "person", "name": "王总", "relation": "新上司", "description": "说话干脆。"}
HOLIDAYS = [{"date": "2023-01-22", "name": "春节"}]
DETAILED = {"id": "e", "title": "第一次周会", "description": "她主持了第一次周会。", "location": "公司会议室",
            "time": "2023-02-06T09:00:00"}
EVIDENCE = [{"id": f"v{n}", "kind": kind, "statement": "周会上她让每个人先说自己的困难。", "private": kind == "emotion",
             "added": False}
            for n, kind in enumerate(["fact", "emotion", "opinion"])]
SEEDS = [{"name": "promotion", "label": "升职", "title": "升职", "description": "工作上的晋升。"}]
MEDIA = sorted(labels()["zh"]["medium"])
TRACES = [{"medium": m, "time": "2023-02-06T21:00", "content": "今天的周会比我想的顺利。"} for m in MEDIA]
QA_EVIDENCE = [{"index": n + 1, "date": "2023-02-06", "kind": e["kind"], "statement": e["statement"],
                "recent": n == 0, "media": MEDIA[:2]} for n, e in enumerate(EVIDENCE)]
CHOICES = [{"id": c, "text": "我先让大家说困难。"} for c in "ABCDE"]
TRACE_CONTEXT = {"arcs": ARCS, "moment_arcs": moment_arcs(ARCS, None), "phase": PHASE, "previous_phase": PHASE,
                 "event": DETAILED, "evidence": EVIDENCE,
                 "people": [NEWCOMER], "holidays": HOLIDAYS, "everyday": False,
                 # the persona's media: every traces prompt's prefix shows them
                 "media": MEDIA, "targets": {m: 5 for m in MEDIA}, "public": ["moments", "weibo"]}
QUESTION = {"question": "周会后你对带团队的看法有什么变化？", "question_time": "2023-02-08T20:00"}
STYLE = {"formality": 3, "verbosity": 4, "humour": 2, "jargon": 1, "emoji": 3, "directness": 5, "warmth": 4,
         "questioning": 2}
GROUP = {"id": "g", "persona_id": "p-zh", "kind": "family",
         "members": [{"person_id": "p-zh", "name": "林晓梅", "role": "self", "style": STYLE},
                     {"person_id": "r1", "name": "周建国", "role": "丈夫", "style": STYLE}]}
CHAT_DAY = {"group": GROUP, "date": "2023-02-06", "weekday": 0, "holidays": HOLIDAYS,
            "events": [{"time": "09:00", "title": "第一次周会", "description": "她主持了第一次周会。",
                        "location": "公司会议室", "participants": ["周建国"]}],
            "evidence": ["周会上她让每个人先说自己的困难。"],
            "state": {"week": [{"date": "2023-02-05", "summary": "聊了周末去哪儿。"}],
                      "months": [{"month": "2023-01", "summary": "春节回绍兴。"}], "open_items": ["订火车票"]},
            "min_utterances": 6, "max_utterances": 16}


def _generation(name: str) -> dict:
    return {
        "persona_enrich.j2": {"big_five": PERSONA["big_five"], "note": "一位销售总监。", "start": "2023-01-01",
                              "end": "2023-12-31", "min_relations": 5, "max_relations": 8},
        "arcs_seeds.j2": {"pool": SEEDS, "keep_max": 12, "added": 4, "days": 75},
        "arcs_plan.j2": {"seeds": SEEDS, "per_dimension": 2, "states": 3},
        "arcs_major_events.j2": {"seeds": SEEDS, "arcs": ARCS, "count": 8, "days": 365,
                               "holidays": HOLIDAYS, "gap": 14},
        "phases_init.j2": {"arcs": ARCS, "event": EVENT_VIEW, "moves": MOVES},
        "phases_generate.j2": {"arcs": ARCS, "event": EVENT_VIEW, "snapshot": SNAP, "k": 1, "count": 3,
                               "start_day": 7, "low": 7, "high": 7, "start_date": "2023-02-08", "low_date": "2023-02-08",
                               "high_date": "2023-02-08", "previous": PHASE,
                               "moves": MOVES, "people": [NEWCOMER], "holidays": HOLIDAYS, "newcomers": 2},
        "phases_update.j2": {"arcs": ARCS, "event": EVENT_VIEW, "snapshot": SNAP, "phase": PHASE, "moves": MOVES},
        "events_generate.j2": {"arcs": ARCS, "event": EVENT_VIEW, "phase": PHASE, "window": PHASE, "days": 7, "count": 6,
                               "min_evidence": 2, "max_evidence": 4, "people": ["周建国", "陈露"], "moves": MOVES,
                               "introduced": [NEWCOMER], "recent": [PHASE], "holidays": HOLIDAYS, "newcomers": 1},
        "chats_day.j2": CHAT_DAY,
        "chats_validate.j2": {**CHAT_DAY, "lines": "[2023-02-06, 10:00:00] 周建国：周会怎么样？"},
        "chats_repair.j2": {**CHAT_DAY, "lines": [{"line": "[2023-02-06, 08:00:00] 林晓梅：还行。", "evidence": [1]}],
                            "problems": ["第 1 行：讲述的事还没有发生"]},
        "lifelog_dialogue.j2": {"event": {**DETAILED, "participants": ["陈露"]}, "start": "2023-02-06T09:00:00",
                                "end": "2023-02-06T09:20:00",
                                "calendar": {"date": "2023-02-06", "weekday": 0, "weekend": False,
                                             "holidays": HOLIDAYS},
                                "speakers": ["林晓梅", "陈露", "路人"], "evidence": ["周会上她让每个人先说自己的困难。"],
                                "similar": ["上周的例会"], "min_lines": 6, "max_lines": 18,
                                "problems": ["林晓梅一句话也没说"], "previous": "[2023-02-06, 09:00:03] 陈露：开始吧。",
                                "plan": {"month": "二月带新团队。", "week": "第一周熟悉大家。",
                                         "day": "09:00 [event] 第一次周会"}},
        "lifelog_plan.j2": {"arcs": ["带新团队", "与父亲和解"], "level": "day", "start": "2023-02-06",
                            "end": "2023-02-06",
                            "calendar": {"date": "2023-02-06", "weekday": 0, "weekend": False, "holidays": HOLIDAYS},
                            "parent": {"level": "week", "start": "2023-02-06", "end": "2023-02-12",
                                       "summary": "第一周熟悉团队。"},
                            "previous": "上一天整理了资料。",
                            "events": [{"label": "02-06 第一次周会", "time": "2023-02-06 09:00", "title": "第一次周会",
                                        "location": "公司会议室", "description": "她主持了第一次周会。"}],
                            "max_items": 10, "problems": ["第 1 项：休息日安排了工作"], "draft": "一天的安排。"},
        "traces_plan.j2": {**TRACE_CONTEXT, "count": 2, "media": MEDIA, "max_delay": 48,
                           "targets": {m: 5 for m in MEDIA}, "suggested": MEDIA[:2], "public": ["moments", "weibo"],
                           "problems": [{"trace": 1, "medium": "weibo", "evidence": 2},
                                        {"trace": 0, "medium": "", "evidence": 2}],
                           "short": [{"medium": "moments", "high": 85}]},
        "traces_privacy.j2": {"medium": "moments", "content": "今天开完会在车里坐了很久。",
                              "allowed": ["她开了一下午的会。"],
                              "statements": ["她在车里哭了一场，觉得自己带不好团队。"]},
        "traces_write.j2": {**TRACE_CONTEXT, "medium": "search_history", "intent": "查资料", "audience": "自己",
                            "key_information": "周会的安排。", "carried": EVIDENCE, "time": "2023-02-06T21:00",
                            "min_words": 80, "max_words": 320,
                            "voice": [{"time": "2023-02-01T21:00", "content": "又是忙碌的一天。"}],
                            "hidden": ["她在车里哭了一场，觉得自己带不好团队。"]},
        "traces_write_all.j2": {**TRACE_CONTEXT, "traces": [
            {"medium": "diary", "intent": "记下心情", "audience": "自己", "key_information": "周会的安排。",
             "carried": EVIDENCE, "time": "2023-02-06T21:00", "min_words": 136, "max_words": 544,
             "voice": [{"time": "2023-02-01T21:00", "content": "又是忙碌的一天。"}]},
            {"medium": "moments", "intent": "分享", "audience": "朋友", "key_information": "周末去了西湖。",
             "carried": [{"id": "w", "kind": "fact", "statement": "她周末去西湖边走了走。", "private": False, "added": True}],
             "time": "2023-02-07T08:00", "min_words": 14, "max_words": 85, "voice": []}]},
        **{name: {**VARIANTS, **values} for name, values in VARIANT_TEMPLATES.items()},
    }.get(name)


# relation-controlled variants (issue 18); tests/test_variants.py renders them under every relation
VARIANT = {"text": "她冬天在家里的跑步机上跑步。", "condition": "冬天", "signal": "冬天只在跑步机上跑"}
VARIANTS = {"relation": "nuanced_temporal", "variant": VARIANT, "target": "帮她安排明年一月的锻炼计划。",
            "variants": [VARIANT, {**VARIANT, "text": "她夏天清晨去西湖边跑步。", "condition": "夏天"}],
            "question": "帮我排一下一月份每周的锻炼安排。", "answer": "一月在家用跑步机。",
            "correct_answers": ["一月在家用跑步机。", "冬天就在跑步机上练。", "一月安排室内跑步机。"],
            "wrong_answers": ["一月清晨去西湖边跑。", "一月去健身房游泳。", "一月每天户外骑车。"]}
VARIANT_TEMPLATES = {
    "variants_set.j2": {"size": 3, "seed": {"statement": "她每周跑三次步。", "kind": "fact", "date": "2023-02-06"}},
    "variants_session.j2": {"others": ["她夏天清晨去西湖边跑步。"], "medium": "phone_memo", "time": "2023-02-06T21:00",
                            "min_words": 136, "max_words": 408, "problems": ["太隐晦：会话里没有信号的任何词"],
                            "previous": "今天下雨。"},
    "variants_check.j2": {"medium": "phone_memo", "content": "今天又在跑步机上跑了五公里，外面太冷了。"},
    "variants_item.j2": {"question_time": "2023-02-20T20:00"},
    "variants_visible.j2": {},
    "variants_judge.j2": {},
}


def _qa(name: str, question_type: str) -> dict | None:
    unanswerable = question_type == "unanswerable"
    settled = ["2023-02-06 周会: 她宣布新的排班表从下个月开始。"] if unanswerable else []
    common = {"persona": PERSONA, "arcs": ARC_RECORDS, "question_type": question_type}
    window = {"arc": ARC_RECORDS[0], "window_start": "2023-01-01", "window_end": "2023-03-01",
              "evidence": QA_EVIDENCE}
    return {
        "qa_plan.j2": {**common, **window, "max_delay_days": 23, "hours": (7, 22),
                       "planned": [{"question_type": "comparison", "outline": "周会前后的对比。",
                                    "evidence": [1], "elsewhere": 1}],
                       "settled": ["2023-02-06 周会: 她宣布新的排班表从下个月开始。"],
                       "multi_point": True, "span_days": 14, "least_evidence": 2},
        "qa_duration.j2": {**common, "arc": ARC_RECORDS[0], "question_time": "2023-02-08T20:00", "days": 5,
                           "convention": "calendar_days_between",
                           "moments": [{"statement": "周会上她让每个人先说自己的困难。", "traces": TRACES[:1]}] * 2},
        "qa_mixed.j2": {**common, "arc": ARC_RECORDS[0], "question_time": "2023-02-08T20:00",
                        "said": {**TRACES[0], "medium": "group_chat"}, "wrote": {**TRACES[0], "medium": "diary"},
                        "statements": ["周会上她让每个人先说自己的困难。"], "max_answer_chars": 120},
        "qa_profile.j2": {**common, "group_kind": "family", "member": "周建国", "is_self": False, "role": "丈夫",
                          "dimensions": [{"name": "emoji", "level": 5, "wrong": 1},
                                         {"name": "formality", "level": 2, "wrong": 4}],
                          "lines": ["[2023-02-06, 10:00:00] 周建国：周会怎么样？😀"],
                          "anchor": "[2023-02-06, 10:00:00] 周建国：周会怎么样？😀",
                          "statement": "周会上她让每个人先说自己的困难。", "question_time": "2023-02-08T20:00",
                          "max_answer_chars": 120, "problems": ["第 1 个选项的风格与此人不符"]},
        "qa_write.j2": {**common, **window, "traces": TRACES, "temporal_scope": "二月上旬。", "outline": "她的变化。",
                        "absent_topic": "奖金数额", "question_time": "2023-02-08T20:00", "max_answer_chars": 120},
        "distractors_write.j2": {**common, **QUESTION, "dimension": "opinion", "answer": "我更愿意先听。",
                                 "unanswerable": unanswerable, "cannot_determine": CANNOT_DETERMINE["zh"],
                                 "evidence": QA_EVIDENCE, "traces": TRACES, "target_chars": 20, "settled": settled,
                                 "feedback": [{"round": 1, "kinds": ["key_longest", "key_central"],
                                               "reason": "太长。", "blind_correct": True, "unsupported": "C"}]},
        "distractors_validate.j2": {**QUESTION, "choices": CHOICES},
        "distractors_render.j2": {**common, **QUESTION, "min_chars": 15, "max_chars": 25,
                                  "statements": ["周会上她让每个人先说自己的困难。"],
                                  "feedback": [{"round": 1, "kinds": ["key_longest", "key_entity_central",
                                                                      "copied_sentence"],
                                                "reason": "太长。", "favours": True, "unfaithful": True}]},
        "distractors_question.j2": {**common, **QUESTION,
                                    "sets": [["周会上她让每个人先说自己的困难。"], ["她请陈露先讲方案。"]]},
        "distractors_seeds.j2": {**common, **QUESTION, "examples": ["周会上她让每个人先说自己的困难。"],
                                 "others": [["她请陈露先讲方案。", "她周五又问了一遍。"]], "need": 2, "size": 2,
                                 "occasions": 2},
        "filter_choices_only.j2": {"choices": CHOICES},
        "filter_open_blind.j2": {**QUESTION},
        "filter_open_judge.j2": {"question": QUESTION["question"], "reference": "我更愿意先听。",
                                 "candidate": "我先听大家说。"},
        "distractors_verify.j2": {**QUESTION, "choices": CHOICES, "correct": "B", "unanswerable": unanswerable,
                                  "evidence": QA_EVIDENCE, "traces": TRACES,
                                  "style_of": "周建国" if question_type == "factual" else "", "settled": settled},
        "filter_sufficiency.j2": {**QUESTION, "persona": PERSONA, "question_type": question_type,
                                  "answer": "我更愿意先听。",
                                  "unanswerable": unanswerable, "evidence": QA_EVIDENCE, "traces": TRACES,
                                  "settled": settled},
        "filter_blind.j2": {**QUESTION, "choices": CHOICES},
        "filter_single_trace.j2": {**QUESTION, "choices": CHOICES, "traces": TRACES},
        "filter_unique.j2": {**QUESTION, "answer": "我更愿意先听。", "traces": TRACES},
        "filter_inference.j2": {**QUESTION, "answer": "我更愿意先听。", "evidence": QA_EVIDENCE},
        "eval_answer_free.j2": {**QUESTION, "name": "林晓梅", "traces": TRACES, "notes": ["我让大家先说困难。"]},
        "eval_answer_choice.j2": {**QUESTION, "name": "林晓梅", "traces": TRACES, "choices": CHOICES,
                                  "notes": ["我让大家先说困难。"]},
        "eval_judge_memory.j2": {**QUESTION, "name": "林晓梅", "traces": TRACES, "answer": "我更愿意先听。",
                                 "statements": ["周会上她让每个人先说自己的困难。"], "notes": ["我让大家先说困难。"]},
        "eval_judge_consistency.j2": {"question": QUESTION["question"], "name": "林晓梅", "answer": "我更愿意先听。",
                                      "statements": ["周会上她让每个人先说自己的困难。"], "prediction": "我先听大家说。",
                                      "unanswerable": unanswerable},
        "eval_memory_extract.j2": {"name": "林晓梅", "most": 5, "time": "2023-02-06T21:00", "medium": "diary",
                                   "content": "今天的周会比我想的顺利。"},
        "eval_tree_leaf.j2": {"name": "林晓梅", "time": "2023-02-06T21:00", "medium": "diary",
                              "content": "今天的周会比我想的顺利。"},
        "eval_tree_validate.j2": {"name": "林晓梅", "pattern": "她喜欢先听别人说。", "event": "周会上她让大家先说困难。"},
        "eval_tree_mid.j2": {"name": "林晓梅", "events": ["周会上她让大家先说困难。", "她请陈露先讲方案。"]},
        "eval_tree_root.j2": {"name": "林晓梅", "patterns": ["她喜欢先听别人说。"]},
        "eval_tree_route.j2": {"name": "林晓梅", "question": "周会后你对带团队的看法有什么变化？"},
        "llm_repair.j2": {"error": "字段缺失"},
        "translate_trace.j2": {"name": "林晓梅", "names": ["林晓梅", "周建国"], "source_language": "en",
                               "medium": "diary", "content": "今天的周会比我想的顺利。"},
        "translate_item.j2": {"name": "林晓梅", "names": ["林晓梅", "周建国"], "source_language": "en",
                              "question": "周会后你对带团队的看法有什么变化？", "answer": "我更愿意先听。",
                              "choices": [c["text"] for c in CHOICES[:4]],
                              "evidence": ["周会上她让每个人先说自己的困难。"]},
    }.get(name)


def templates() -> list[str]:
    return sorted(p.name for p in Path(prompts_dir()).glob("*.j2")
                  if not p.name.startswith("_") and p.name not in LANGUAGE_FREE)


def scripted(name: str) -> list[dict]:
    """The scripted variables a template is rendered with (one set per question type where they differ)."""
    generation = _generation(name)
    if generation is not None:
        values = [{"persona": PERSONA, **generation} if name != "persona_enrich.j2" else generation]
    else:
        values = [v for t in QUESTION_TYPES if (v := _qa(name, t)) is not None]
        values = values[:1] if values and all(v == values[0] for v in values) else values
    assert values, f"prompts/{name}: no scripted variables in this test — add them so its zh render is checked"
    return values


def renders(name: str, joined: bool = True) -> list:
    rendered = [render(name, language="zh", **v) for v in scripted(name)]
    return ["\n".join(m["content"] for m in r) for r in rendered] if joined else rendered


def leftovers(text: str) -> set[str]:
    names = {PERSONA["name"], *(r["name"] for r in PERSONA["relations"])}
    return {w for w in WORD.findall(text) if w not in FIELD_NAMES and w not in names}
