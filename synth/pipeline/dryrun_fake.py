"""The dry run's fake answers, shaped like a real model's: the registry grows at a configured rate of newcomers per
month, names are a couple of words, and free text is as long as `dry_run.output_tokens` says — so the estimate is
driven by realistic prompt sizes, not by the plain fake's maximal registry and placeholder lengths."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from synth.core.tokens import estimate_tokens
from synth.llm.base import LLMRequest, ProviderResponse, Usage
from synth.llm.fake import FakeProvider, seeded_rng

DAYS_PER_MONTH = 30.44
SIZED_APART = ("content", "name")  # `content`: the configured trace length (content_words); `name`: two words
# Words a capable model wrote in each field (the medians of its English answers through the bridge, every stage of a
# tiny run and the QA of a small one, 2026-11-26): a real profile's concerns are a few words each, a snapshot's arc
# status a sentence; fields not listed share the rest of the task's `output_tokens`
FIELD_WORDS = {"title": 5, "label": 3, "relation": 4, "dominant_emotion": 4, "focus": 24, "medium": 1,
               "audience": 4, "intent": 21, "location": 3, "question": 22, "answer": 55, "kind": 1, "reason": 70,
               "reasons": 42, "key_information": 49, "arc_status": 25, "concerns": 10, "interests": 5, "cues": 7,
               "trigger": 12, "statement": 25, "statements": 24, "outline": 105, "temporal_scope": 5, "text": 6,
               "why_wrong": 11, "keep": 2, "seeds": 2, "seed": 4, "personality": 69, "backstory": 76,
               "family_history": 47, "education": 20, "occupation": 17, "newcomer_description": 16,
               # a description's length depends on what it describes: a relation, an arc, an event, a phase
               "persona.description": 16, "arcs.description": 21, "events.description": 80, "phases.description": 100}
NEWCOMERS = ("new_people", "new_places")
# How often a capable model's judge said yes, where that decides whether more calls follow (the plain fake says yes
# three times in four): the no-context reader's free answer matched the reference in 5 of 18 open-question checks in
# `synth qa` and 1 of 14 in `synth filter` (the 75-day bridge run of 2026-11-27, en and zh); the option renderer
# found its one statement set unable to answer in 9 of 196 calls (pass 6, 2026-11-27) — each such set is replaced
# and the round rendered again; the options' verify judges of passes 4-6 (43 rounds, en and zh) found the key
# supported in 37, every other option ruled out in 42, and the question's wording favouring an option in none (a
# "no" sends the round back: the plain fake's yes three times in four failed nearly every round)
TRUE_RATES = {("qa_open_judge", "matches"): 5 / 18, ("filter_open_judge", "matches"): 1 / 14,
              ("distractors_render", "cannot_answer"): 9 / 196,
              ("distractors_verify", "key_supported"): 37 / 43, ("distractors_verify", "others_ruled_out"): 42 / 43,
              ("distractors_verify", "question_favours_option"): 0 / 43}
# Items a capable model put in a list field (same run): an evidence statement touches about one arc, an event has
# about one participant
LIST_ITEMS = {"arcs": 1, "participants": 1}
LONGEST = 150  # words of one long field at most: the prompts ask for a few sentences, not pages
# Words the dry run's free text is drawn from: thousands, as a real model's are. The plain fake's few dozen make any
# two of its texts share most of their words, so every word-overlap rule of the pipeline fires on it (a QA outline
# "repeats" every statement of its segment and pulls all of them into the prompts: `relied_on`), which a real run's
# texts do not do.
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
# two and three syllables, 4.7 letters a word on average as in English prose (a token estimate counts characters)
_POOL_EN = [_SYLLABLES[i % 70] + _SYLLABLES[i // 70] for i in range(70 * 70)] + [
    _SYLLABLES[i % 70] + _SYLLABLES[i // 70] + _SYLLABLES[i * 31 % 70] for i in range(0, 70 * 70, 2)][:1700]
_HANZI = ("的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而"
          "方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它"
          "合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没"
          "结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少"
          "图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口")
_POOL_ZH = sorted(set(_HANZI))  # one character a word, as the sizing counts (a statement is matched by its bigrams)


def _resolve(schema: dict, root: dict) -> dict:
    while "$ref" in schema:
        node: Any = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = {**node, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _free_text(schema: dict) -> bool:
    return schema.get("type") == "string" and not {"enum", "const", "format"} & schema.keys()


def _walk(value: Any, schema: dict, root: dict, name: str, visit) -> Any:
    """`value` rebuilt with every free-text string leaf (and its field name) passed through `visit`."""
    schema = _resolve(schema, root)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            kinds = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}
            wanted = kinds.get(type(value))
            options = [_resolve(o, root) for o in schema[key]]
            schema = next((o for o in options if o.get("type") == wanted or ("properties" in o and wanted == "object")),
                          options[0])
    if isinstance(value, dict):
        props = schema.get("properties", {})
        # a newcomer's description is a line, not an event's: named apart
        child = {k: "newcomer_description" if name in NEWCOMERS and k == "description" else k for k in value}
        return {k: _walk(v, props.get(k, {}), root, child[k], visit) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, schema.get("items", {}), root, name, visit) for v in value]
    if isinstance(value, str) and _free_text(schema):
        return visit(value, name, schema)
    return value


class DryRunFake(FakeProvider):
    """The fake provider of `synth run --dry-run`. An events answer brings `people_per_month` people and
    `places_per_month` places per month of the days it covers (its `day` bound), spread over its events; a phase
    brings none (a real run's phases and events share the rate). Free text fills `output_tokens[task]`."""

    def __init__(self, output_tokens: dict[str, int], people_per_month: float, places_per_month: float,
                 default_tokens: int, seed: int = 0, content_words: int | None = None,
                 public_media: frozenset[str] = frozenset()) -> None:
        super().__init__(seed=seed, content_words=content_words)
        self.public_media = public_media
        self.output_tokens = output_tokens
        self.rates = {"new_people": people_per_month, "new_places": places_per_month}
        self.default_tokens = default_tokens
        self.names: set[str] = set()
        # id(request) → tokens of an answer that is text of configured length and nothing else (a trace's
        # `content`, or a list of them): the pricing takes its size from here, not from the task's table
        self.text_tokens: dict[int, int] = {}

    async def complete(self, request: LLMRequest, model: str) -> ProviderResponse:
        response = await super().complete(request, model)
        if not request.json_schema or not response.text.startswith("{"):
            return response
        rng = seeded_rng("dry-run", request.task, request.messages, request.sample, self.seed)
        data = self.newcomers(json.loads(response.text), request.json_schema, rng)
        data = _trimmed(data, request.json_schema, request.json_schema)
        data = self.sized(data, request, rng)
        data = self.private_kept(data, request)
        data = _rated(data, request.task, rng)
        text = json.dumps(data, ensure_ascii=False)
        if _texts_only(request.json_schema):
            self.text_tokens[id(request)] = estimate_tokens(text)
        return ProviderResponse(text=text, usage=Usage(input_tokens=response.usage.input_tokens,
                                                       output_tokens=estimate_tokens(text)))

    def private_kept(self, data: Any, request: LLMRequest) -> Any:
        """A trace plan that keeps evidence marked private out of public media, as a capable model's plans did (none
        of theirs through the bridge broke the rule): the plain fake picks media at random, and every re-plan it
        provoked was priced as if a real run made it."""
        plans = data.get("traces") if isinstance(data, dict) and request.task == "traces" else None
        if not (isinstance(plans, list) and plans and isinstance(plans[0], dict) and "medium" in plans[0]):
            return data
        task = request.messages[-1].get("content", "")
        private = {int(n) for n in _PRIVATE_LINE.findall(task)}
        closed = [m for m in _medium_enum(request.json_schema) if m not in self.public_media]
        if not private or not closed:
            return data
        for plan in plans:
            if plan["medium"] in self.public_media and private & set(plan.get("evidence", [])):
                plan["medium"] = closed[0]
        if all(plan["medium"] in self.public_media for plan in plans):
            plans[0]["medium"] = closed[0]
        return data

    def newcomers(self, data: Any, schema: dict, rng) -> Any:
        """Empties every `new_people` / `new_places` list, then refills an events answer's at the configured rate."""
        holders = [d for d in _dicts(data) if "new_people" in d or "new_places" in d]
        for holder in holders:
            for key in self.rates:
                if key in holder:
                    holder[key] = []
        days = _covered_days(data, schema)
        if not days or not holders:
            return data
        zh = _is_zh(data)
        for key, rate in self.rates.items():
            expected = rate * days / DAYS_PER_MONTH
            count = math.floor(expected + rng.random())  # the expectation is exact, the count whole
            order = rng.sample(holders, len(holders))
            cap = _event_field(schema, key).get("maxItems", 1)  # the events' schema bound per event
            for i in range(min(count, cap * len(order))):
                order[i % len(order)][key].append(self.newcomer(rng, key == "new_places", zh))
        return data

    def newcomer(self, rng, place: bool, zh: bool) -> dict:
        """A new name (two words, a place's with a suffix), a short relation and a one-sentence description."""
        for _ in range(50):
            name = (_words(rng, 3, True) if zh else " ".join(_words(rng, 1, False).capitalize() for _ in range(2)))
            name += ("路" if zh else " Street") if place else ""
            if name not in self.names:
                break
        self.names.add(name)
        return {"name": name, "relation": _words(rng, 3, zh), "description": _words(rng, 12, zh)}

    def sized(self, data: Any, request: LLMRequest, rng) -> Any:
        """Free text resized so the whole answer is about `output_tokens[task]` tokens: content, names and the
        fields of measured length (`FIELD_WORDS`) apart, the rest sharing what is left, at most `LONGEST` words
        each."""
        root = request.json_schema
        zh = any("简体中文" in m.get("content", "") for m in request.messages[:1])
        slots: list[int] = []

        def measured(name: str) -> int | None:
            return FIELD_WORDS.get(f"{request.task}.{name}", FIELD_WORDS.get(name))

        def blank(text: str, name: str, schema: dict) -> str:
            if name in SIZED_APART:
                return text if name == "content" else _words(rng, 2, zh)
            if measured(name) is not None:
                return _bounded(_words(rng, measured(name), zh), schema)
            slots.append(1)
            return ""

        skeleton = _walk(data, root, root, "", blank)
        target = int(self.output_tokens.get(request.task, self.default_tokens))
        room = target - estimate_tokens(json.dumps(skeleton, ensure_ascii=False))
        per_word = 1.0 if zh else 1.3
        words = min(LONGEST, max(2, int(room / max(1, len(slots)) / per_word)))

        def fill(text: str, name: str, schema: dict) -> str:
            if name in SIZED_APART or measured(name) is not None:
                return text
            return _bounded(_words(rng, rng.randint(max(1, words * 3 // 4), words * 5 // 4 + 1), zh), schema)

        return _walk(skeleton, root, root, "", fill)


def _texts_only(schema: dict) -> bool:
    """An answer that is trace text and nothing else: {"content"} (one trace), or one list of {"content"} items
    (an event's traces written together), priced at the length of its texts."""
    props = schema.get("properties", {})
    if set(props) == {"content"}:
        return True
    if len(props) != 1:
        return False
    (field,) = props.values()
    field = _resolve(field, schema)
    return field.get("type") == "array" and set(_resolve(field.get("items", {}), schema).get("properties", {})) == {
        "content"}


# an evidence line of the trace plan prompt that is marked private (prompts/traces_plan.j2, en and zh)
_PRIVATE_LINE = re.compile(r"^(\d+)\. \[.*?(?:\(private:|（私密：)", re.MULTILINE)


def _medium_enum(schema: dict) -> list[str]:
    """The media a trace plan answer may name (its schema's enum)."""
    plans = _resolve(schema.get("properties", {}).get("traces", {}), schema)
    plan = _resolve(plans.get("items", {}), schema)
    return list(_resolve(plan.get("properties", {}).get("medium", {}), schema).get("enum", []))


def _rated(data: Any, task: str, rng) -> Any:
    """`data` with each boolean of `TRUE_RATES` drawn at its measured rate for this task."""
    if isinstance(data, dict):
        for (rated, field), rate in TRUE_RATES.items():
            if rated == task and isinstance(data.get(field), bool):
                data[field] = rng.random() < rate
    return data


def _trimmed(value: Any, schema: dict, root: dict) -> Any:
    """`value` with each list field of `LIST_ITEMS` cut to its measured length (never below the schema's
    minItems); an answer's `arcs` list is its evidence's, not the events answer's arc list (that is `arc_states`)."""
    schema = _resolve(schema, root)
    if isinstance(value, dict):
        props = schema.get("properties", {})
        out = {}
        for key, item in value.items():
            sub = _resolve(props.get(key, {}), root)
            if key in LIST_ITEMS and isinstance(item, list):
                item = item[:max(LIST_ITEMS[key], int(sub.get("minItems", 0)))]
            out[key] = _trimmed(item, sub, root)
        return out
    if isinstance(value, list):
        return [_trimmed(v, schema.get("items", {}), root) for v in value]
    return value


def _bounded(text: str, schema: dict) -> str:
    """`text` within the schema's minLength and maxLength."""
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    text = text + (" x" * low if len(text) < low else "")
    return text[:high] if high else text


def _words(rng, count: int, zh: bool) -> str:
    pool = _POOL_ZH if zh else _POOL_EN
    return ("" if zh else " ").join(rng.choice(pool) for _ in range(count))


def _is_zh(value: Any) -> bool:
    text = json.dumps(value, ensure_ascii=False)
    return sum(1 for c in text if "\u4e00" <= c <= "\u9fff") > 20


def _dicts(value: Any):
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _dicts(v)
    elif isinstance(value, list):
        for v in value:
            yield from _dicts(v)


def _event_field(schema: dict, name: str) -> dict:
    """The schema of one field of an events answer's events ({} for any other answer)."""
    events = _resolve(schema.get("properties", {}).get("events", {}), schema)
    item = _resolve(events.get("items", {}), schema)
    return _resolve(item.get("properties", {}).get(name, {}), schema)


def _covered_days(data: Any, schema: dict) -> int:
    """The days an events answer covers: the bound of its events' `day` (0 for any other answer)."""
    if not (isinstance(data, dict) and isinstance(data.get("events"), list)):
        return 0
    day = _event_field(schema, "day")
    return int(day["maximum"]) + 1 if "maximum" in day else 0
