"""The multiple-choice rules, written once: the filter stage, `synth validate`, the distractor guard and the stats
all call these, so a rule and its wording cannot drift between them.

Rules work on plain values (ids, texts, question type, language) so they apply both to parsed records and to the
raw dicts `synth validate` reads from a possibly corrupted file. Each returns problems as short sentences; an
empty list (or "") means the item passes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from synth.config import question_types
from synth.records import CANNOT_DETERMINE, CHOICE_IDS, PROFILE_CELLS, SPOKEN_MEDIA

POSITIONS = CHOICE_IDS[:4]  # where a correct answer to an answerable question may stand


def norm_option(text: str) -> str:
    """An option's text for equality: case and runs of whitespace do not make two options different."""
    return " ".join(str(text).lower().split())


def answerable(question_type: str) -> bool:
    """Whether the type's key is a right answer (its spec says; not "cannot be determined")."""
    return question_types.answerable(question_type)


def choice_text(choices: Iterable[tuple[str, str]], choice_id: str) -> str:
    return next((text for cid, text in choices if cid == choice_id), "")


def distractors_of(choices: Iterable[tuple[str, str]], correct: str) -> list[str]:
    """The A–D options that are not the correct one."""
    return [text for cid, text in choices if cid in POSITIONS and cid != correct]


def needed_traces(digital_trace_ids: Iterable[str], evidence_trace_ids: Iterable[Iterable[str]]) -> list[str]:
    """Every trace an item needs: its own list and each evidence statement's, in first-seen order, once each."""
    ids = [*digital_trace_ids, *(t for group in evidence_trace_ids for t in group)]
    return list(dict.fromkeys(ids))


def shape_problems(choices: Sequence[tuple[Any, Any]], correct: Any, question_type: str, language: str | None) -> list[str]:
    """The contract of every multiple-choice file (DESIGN.md): options A–E in order, E the fixed "cannot be
    determined" text of the persona's language, a correct id among them, E correct for unanswerable questions."""
    problems = []
    ids = [cid for cid, _ in choices]
    last = next((text for cid, text in choices if cid == "E"), None)
    allowed = [CANNOT_DETERMINE[language]] if language in CANNOT_DETERMINE else list(CANNOT_DETERMINE.values())
    if last is None:
        problems.append('no option E ("cannot be determined")')
    elif ids != list(CHOICE_IDS):
        problems.append(f"choices are {ids}, not A–E in order, exactly once each")
    if last is not None and last not in allowed:
        problems.append(f"option E reads {last!r}, not {' / '.join(map(repr, allowed))}")
    if correct not in ids:
        problems.append(f"correct_choice_id {correct!r} is not among the choices")
    elif not answerable(question_type) and correct != "E":
        problems.append(f"an unanswerable question must have answer E (has {correct!r})")
    return problems


def option_problems(choices: Sequence[tuple[str, str]], correct: str, question: str, answer: str,
                    question_type: str, min_option_chars: int, key_seed_at: str | None = None) -> list[str]:
    """What makes a well-shaped item unusable: empty or repeated text, stub options that give it away, E as the
    answer of an answerable question, a correct option that is not the answer — or, for options rendered from
    seeds (`key_seed_at`: the letter the key's seed was rendered at), a key that is not the key seed's rendering."""
    problems = []
    if not question.strip() or not answer.strip():
        problems.append("empty question or answer")
    elif norm_option(question) == norm_option(answer):
        problems.append("the answer repeats the question")
    if any(not text.strip() for _, text in choices):
        problems.append("an empty option")
    if len({norm_option(text) for _, text in choices}) < len(choices):
        problems.append("two options have the same text")
    stub = next(((cid, text) for cid, text in choices if cid in POSITIONS and 0 < len(norm_option(text)) < min_option_chars), None)
    if stub is not None:  # "1", "B", "?": a stub option gives the item away
        problems.append(f"option {stub[0]} ({stub[1].strip()!r}) is too short to be a real answer")
    if answerable(question_type):
        if correct == "E":
            problems.append("E must be correct exactly for unanswerable questions")
        elif key_seed_at is not None:
            if key_seed_at != correct:
                problems.append(f"the correct option is {correct}, but the key's seed was rendered at {key_seed_at}")
        elif norm_option(choice_text(choices, correct)) != norm_option(answer):
            problems.append("the correct option is not the answer")
    return problems


def repeated_option(answer: str, distractors: Iterable[str], cannot_determine: str) -> bool:
    """A distractor that says what the answer, option E or another distractor already says."""
    seen = {norm_option(answer), norm_option(cannot_determine)}
    for text in distractors:
        if norm_option(text) in seen:
            return True
        seen.add(norm_option(text))
    return False


def length_problem(correct_text: str, distractors: Sequence[str], ratio: float) -> str:
    """The correct option much longer than every distractor is a give-away."""
    others = [len(t) for t in distractors]
    if others and len(correct_text) > ratio * max(others):
        return (f"the correct option has {len(correct_text)} characters, more than {ratio:g}× the longest "
                f"distractor ({max(others)})")
    return ""


def correct_is_longest(correct_text: str, distractors: Sequence[str]) -> bool:
    """The correct option is strictly longer than every other A–D option."""
    return bool(distractors) and len(correct_text) > max(len(t) for t in distractors)


# ------------------------------------------------------------------------------ model-free give-aways

_CJK = re.compile(r"[\u4e00-\u9fff]")


def option_words(text: str) -> set[str]:
    """Word set of an option for overlap (Chinese: character bigrams) — the same as the outside MCQ-bias script (mcq_bias.py),
    so `synth stats` and that outside measure agree."""
    text = str(text).lower()
    if _CJK.search(text):
        return {text[i:i + 2] for i in range(len(text) - 1) if text[i:i + 2].strip()}
    return set(re.findall(r"[a-z0-9']+", text))


def overlap_centrality(units: dict[Any, set[str]]) -> dict[Any, float]:
    """Each member's mean Jaccard overlap with the other members' unit sets (words, people, …)."""
    out = {}
    for cid in units:
        others = [o for o in units if o != cid]
        out[cid] = sum(len(units[cid] & units[o]) / max(1, len(units[cid] | units[o])) for o in others) / max(1, len(others))
    return out


def centrality(options: dict[str, str]) -> dict[str, float]:
    """Each A–D option's mean Jaccard word overlap with the other A–D options. When distractors are perturbations
    of the key (one detail swapped each), the key shares the most with every other option: it is the centroid."""
    return overlap_centrality({cid: option_words(text) for cid, text in options.items()})


def key_is_most_central(options: dict[str, str], key: str) -> bool:
    """The key's centrality is the highest (ties count, as in mcq_bias.py); chance is 1 in 4."""
    scores = centrality({cid: text for cid, text in options.items() if cid in POSITIONS})
    return key in scores and len(scores) > 1 and scores[key] == max(scores.values())


def key_is_longest(options: dict[str, str], key: str) -> bool:
    """The key is at least as long as every other A–D option (ties count, as in mcq_bias.py)."""
    lengths = {cid: len(text) for cid, text in options.items() if cid in POSITIONS}
    return key in lengths and len(lengths) > 1 and lengths[key] == max(lengths.values())


_MONTHS = "January|February|March|July|September|October|November|December|Feb|Apr|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
# months that are also given names or words ("May I…", "June said…"): a date only in a date-like context
_NAME_MONTHS = "May|June|April|August|Jan|Jun|Mar"
_WEEKDAYS = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|Mondays|Tuesdays|Wednesdays|Thursdays|Fridays|Saturdays|Sundays"
_DATE_PATTERNS = (
    ("an ISO date", re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b")),
    ("a numeric date", re.compile(r"\b\d{1,2}[/.]\d{1,2}[/.](?:\d{2}|\d{4})\b")),
    ("a year", re.compile(r"(?<![\d.,])(?:19|20)\d{2}(?![\d.,]\d)")),
    ("a month name", re.compile(rf"\b(?:{_MONTHS})\b\.?")),
    ("a month name", re.compile(rf"(?:\b(?:in|of|early|late|mid|since|until|by|during|last|next|this)\s+|-)"
                                rf"(?:{_NAME_MONTHS})\b|\b(?:{_NAME_MONTHS})\.?\s+\d")),
    ("a weekday", re.compile(rf"\b(?:{_WEEKDAYS})\b")),
    ("a date", re.compile(r"[0-9０-９一二三四五六七八九十两]+\s*月\s*[0-9０-９一二三四五六七八九十]+\s*[日号]")),
    ("a month", re.compile(r"(?:[0-9０-９]{1,2}|[一二三四五六七八九十]|十[一二])\s*月(?!份?[的]?[0-9])")),
    ("a weekday", re.compile(r"(?:星期|礼拜|周)[一二三四五六日天]")),
)


def explicit_dates(text: str) -> list[str]:
    """Every explicit date, year, month or weekday in a text, as written (the patterns of `explicit_date`)."""
    return [found.group(0).strip() for _, pattern in _DATE_PATTERNS for found in pattern.finditer(text)]


def explicit_date(question: str) -> str:
    """The first explicit date, year, month or weekday in a question ("" if none): a question that names its time
    tells the reader where to look, and the prompt forbids it."""
    for what, pattern in _DATE_PATTERNS:
        found = pattern.search(question)
        if found:
            return f"{what} ({found.group(0).strip()!r})"
    return ""


def centrality_margin(options: dict[str, str], key: str) -> float:
    """How far the key's centrality stands above the most central other A–D option (negative: it does not)."""
    scores = centrality({cid: text for cid, text in options.items() if cid in POSITIONS})
    others = [score for cid, score in scores.items() if cid != key]
    return scores.get(key, 0.0) - max(others) if others else 0.0


_LATIN_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:\s[A-Z][a-z]+)?")
_CJK_NAME = re.compile(r"[小老阿][\u4e00-\u9fff]")
_NOT_NAMES = {"I", "I'm", "I've", "I'd", "The", "My", "We", "It", "But", "And", "Then", "So"}


def option_entities(text: str, names: Iterable[str] = ()) -> set[str]:
    """The people and places an option names: the registry's names found in it (`names`, from people.jsonl and
    the relations), else a heuristic — capitalised words inside an English sentence, 小/老/阿 + a character in
    Chinese (小何, 老张). Readers spot the names the key shares with every distractor; word overlap does not."""
    known = {n for n in names if n and n in text}
    if known:
        return known
    found = {m.group(0) for m in _LATIN_NAME.finditer(text)} - _NOT_NAMES
    return found | set(_CJK_NAME.findall(text))


def entity_overlap(options: dict[str, str], names: Iterable[str] = ()) -> dict[str, int]:
    """Each A–D option's count of (entity, other option) pairs it shares: the entity centroid scores highest."""
    names = list(names)
    ents = {cid: option_entities(text, names) for cid, text in options.items() if cid in POSITIONS}
    return {cid: sum(len(ents[cid] & ents[o]) for o in ents if o != cid) for cid in ents}


def entity_margin(options: dict[str, str], key: str, names: Iterable[str] = ()) -> int:
    """How many shared-entity pairs the key has above the next A–D option (≤ 0: it is not the entity centroid)."""
    scores = entity_overlap(options, names)
    others = [v for cid, v in scores.items() if cid != key]
    return scores.get(key, 0) - max(others) if others else 0


def key_is_entity_central(options: dict[str, str], key: str, names: Iterable[str] = ()) -> bool:
    """The key shares the most people/places with the other options, strictly and at least one pair."""
    return entity_margin(options, key, names) > 0


def giveaways(options: dict[str, str], key: str, question_type: str, cannot_determine: str,
              length_ratio: float, centrality_margin_min: float, entity_margin_min: int = 0,
              names: Iterable[str] = ()) -> list[tuple[str, str]]:
    """Model-free give-aways of one arrangement, as (kind, description), in the order the refinement loop asks the
    writer to fix them; the kinds name the feedback the writer's template renders (no prompt text here)."""
    texts = [text for cid, text in options.items() if cid in POSITIONS]
    distractors = [text for cid, text in options.items() if cid in POSITIONS and cid != key]
    if len({norm_option(t) for t in [*texts, cannot_determine]}) < len(texts) + 1:
        return [("repeated_option", "two options say the same thing (or repeat option E)")]
    found = []
    if not answerable(question_type):
        target = len(cannot_determine)
        odd = [t for t in texts if not 0.5 * target <= len(t) <= 2.0 * target]
        if odd:
            found.append(("unanswerable_length", f"{len(odd)} of the invented answers are not about as long as "
                                                  f"option E ({target} characters)"))
        return found
    problem = length_problem(options[key], distractors, length_ratio)
    if problem:
        found.append(("key_too_long", problem))
    elif correct_is_longest(options[key], distractors):
        # strictly: an option as long as the key is what the prompt asks for, never a give-away
        found.append(("key_longest", f"the correct option ({len(options[key])} characters) is the longest"))
    lead = centrality_margin(options, key)
    if lead > 0 and lead >= centrality_margin_min:
        found.append(("key_central", f"the correct option is the most central (overlap {lead:+.2f} above the next)"))
    ahead = entity_margin(options, key, names)
    if entity_margin_min and ahead >= entity_margin_min:
        found.append(("key_entity_central", f"the correct option shares the most people/places with the other "
                                            f"options ({ahead} more shared than the next)"))
    return found


# LifeDialBench's rewrite: explicit timestamps out of questions. The spoken traces print `[yyyy-mm-dd, HH:MM:SS]`
# on every line, which a question writer may copy; a clock time or an ISO date-time tells the reader where to look.
_STAMP = r"(?:\[\d{4}-\d{2}-\d{2},\s*\d{1,2}:\d{2}(?::\d{2})?\]|\b\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}(?::\d{2})?\b" \
         r"|\b\d{1,2}:\d{2}(?::\d{2})?(?:\s*[ap]\.?m\.?)?(?![\d:]))"
_TIMESTAMP = re.compile(rf"(?:\s*\b(?:on|at|around|by|since|from)\s+)?{_STAMP}|[在于]?{_STAMP}", re.I)


def strip_timestamps(question: str) -> tuple[str, int]:
    """The question without its explicit timestamps (and the preposition leading into one), and how many went."""
    text, count = _TIMESTAMP.subn("", question)
    if not count:
        return question, 0
    text = re.sub(r"\s+([,.;:?!，。？！])", r"\1", re.sub(r"\s{2,}", " ", text)).strip()
    return text, count


# ------------------------------------------------------------------------------ profile items (EverMemBench 2×2)

# A style-right option claims each tested level within STYLE_TOLERANCE of the member's stored one; a style-wrong
# option claims each at least STYLE_GAP away. Fact-right options convey the same fact (word overlap ≥ FACT_OVERLAP),
# fact-wrong ones another (overlap with the key's fact below it).
STYLE_TOLERANCE = 1
STYLE_GAP = 2
FACT_OVERLAP = 0.5
_EMOJI = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B50\u2764]")


def emoji_count(text: str) -> int:
    return len(_EMOJI.findall(str(text)))


def _overlap(a: str, b: str) -> float:
    x, y = option_words(a), option_words(b)
    return len(x & y) / len(x | y) if x | y else 0.0


def _style_problems(cell: str, claims: dict, stored: dict[str, int], text: str) -> list[str]:
    """One option's claimed levels against the stored ones, as its cell wants them, and its emoji claim against its
    text."""
    style_right = PROFILE_CELLS[cell][1]
    problems = []
    for dim, level in stored.items():
        claim = claims.get(dim)
        if not isinstance(claim, int):
            problems.append(f"{cell}: no claimed {dim} level")
        elif style_right and abs(claim - level) > STYLE_TOLERANCE:
            problems.append(f"{cell}: claims {dim} {claim}, the member's stored level is {level}")
        elif not style_right and abs(claim - level) < STYLE_GAP:
            problems.append(f"{cell}: claims {dim} {claim}, too close to the stored {level} for a wrong style")
    emoji, found = claims.get("emoji"), emoji_count(text)
    if "emoji" in stored and isinstance(emoji, int):
        if emoji >= 4 and not found:
            problems.append(f"{cell}: claims emoji {emoji} but its text has none")
        elif emoji <= 2 and found:
            problems.append(f"{cell}: claims emoji {emoji} but its text has {found}")
    return problems


def _fact_problem(cell: str, fact: str, key_fact: str) -> str:
    alike = _overlap(fact, key_fact)
    if PROFILE_CELLS[cell][0] and alike < FACT_OVERLAP:
        return f"{cell}: its fact should be the key's (word overlap {alike:.2f} < {FACT_OVERLAP:g})"
    if not PROFILE_CELLS[cell][0] and alike >= FACT_OVERLAP:
        return f"{cell}: its fact should differ from the key's (word overlap {alike:.2f})"
    return ""


def _placement_problems(by_cell: dict[str, dict], correct: str) -> list[str]:
    letters = [o.get("choice_id") for o in by_cell.values()]
    problems = []
    if len(set(letters)) != 4 or not set(letters) <= set(POSITIONS):
        problems.append(f"the options stand at {letters}, not at four distinct letters of A–D")
    if by_cell["both_right"].get("choice_id") != correct:
        problems.append(f"the both-right option stands at {by_cell['both_right'].get('choice_id')!r}, the key is "
                        f"{correct!r}")
    return problems


def profile_problems(profile: dict, correct: str | None = None) -> list[str]:
    """The model-free check of a profile item (a `profile` record as a dict): the four options are the four cells
    of the 2×2, each once; each option's claimed style agrees with its cell against the stored levels (right: every
    tested level within STYLE_TOLERANCE; wrong: every one at least STYLE_GAP away); a claimed emoji level agrees
    with the text (high: an emoji in it, low: none); the fact-right options convey the key's fact and the
    fact-wrong ones do not. With `correct` (the arranged item), exactly one option — the both-right one — stands
    at the correct letter, each option at its own letter."""
    stored = {k: v for k, v in (profile.get("style") or {}).items() if isinstance(v, int)}
    options = [o for o in profile.get("options") or [] if isinstance(o, dict)]
    cells = [o.get("cell") for o in options]
    if sorted(map(str, cells)) != sorted(PROFILE_CELLS):
        return [f"the options' cells are {cells}; the 2×2 needs each of {sorted(PROFILE_CELLS)} once"]
    if not stored:
        return ["no stored style levels to check the options against"]
    by_cell = {o["cell"]: o for o in options}
    key_fact = str(by_cell["both_right"].get("fact", ""))
    problems: list[str] = []
    for option in options:
        cell = option["cell"]
        problems += _style_problems(cell, option.get("style") or {}, stored, str(option.get("text", "")))
        if cell != "both_right" and (found := _fact_problem(cell, str(option.get("fact", "")), key_fact)):
            problems.append(found)
    return problems + (_placement_problems(by_cell, correct) if correct is not None else [])


def profile_text_problems(profile: dict, choices: Iterable[tuple[str, str]]) -> list[str]:
    """Each arranged option's text is the text of its cell (the letters recorded on the profile are the item's)."""
    texts = {cid: text for cid, text in choices}
    return [f"{o.get('cell')}: the text at {o.get('choice_id')} is not this option's"
            for o in profile.get("options") or [] if isinstance(o, dict) and texts.get(o.get("choice_id")) != o.get("text")]


# ------------------------------------------------------------------------------ written and spoken together

def is_spoken(medium: str) -> bool:
    return medium in SPOKEN_MEDIA


def medium_span_problem(media: Iterable[str]) -> str:
    """A `written_spoken` item's needed traces (their media) must include a spoken and a written one."""
    found = list(media)
    if not any(is_spoken(m) for m in found):
        return f"its traces ({', '.join(sorted(set(found))) or 'none'}) include no spoken one"
    if all(is_spoken(m) for m in found):
        return f"its traces ({', '.join(sorted(set(found)))}) include no written one"
    return ""
