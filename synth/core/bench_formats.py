"""LongMemEval's and LoCoMo's field names, synth's question-type mappings onto theirs, and their date styles: what
the exports write (synth.release) and the readers expect (synth.eval), in the one place both may import."""

from __future__ import annotations

import datetime as dt
import re

# The block of synth's own fields (its question type, dimension, options, evidence grouping, trace ids and media)
# that the exports add beside the format's fields; harnesses ignore it, synth's reader uses it when present.
SYNTH_KEY = "synth"

# ---------------------------------------------------------------------------------------------- LongMemEval

LME_FIELDS = ("question_id", "question_type", "question", "answer", "question_date", "haystack_session_ids",
              "haystack_dates", "haystack_sessions", "answer_session_ids")
LME_TURN_FIELDS = ("role", "content")  # plus `has_answer: true` on the turns that carry the evidence
LME_TYPES = ("single-session-user", "single-session-assistant", "single-session-preference", "temporal-reasoning",
             "knowledge-update", "multi-session")
ABS_SUFFIX = "_abs"  # LongMemEval marks an abstention (unanswerable) question by this end of its id
# LongMemEval's retrieval code takes a session for gold when its id contains "answer" (and only then): an instance
# names its evidence sessions `answer_<trace id>` (a trace id, a uuid, never contains the word)
ANSWER_PREFIX = "answer_"
# synth's type → LongMemEval's; a type not listed (one added later) is multi-session
LME_TYPE_OF = {
    "factual": "single-session-user", "comparison": "multi-session", "trajectory": "knowledge-update",
    "pattern": "multi-session", "causal": "multi-session", "counterfactual": "single-session-preference",
    "inference": "single-session-preference", "unanswerable": "single-session-user",
    "temporal_duration": "temporal-reasoning", "profile_style": "single-session-preference",
    "written_spoken": "multi-session", "relation_complementary_all": "multi-session",
    "relation_complementary_any": "multi-session", "relation_nuanced_temporal": "knowledge-update",
    "relation_nuanced_contextual": "single-session-preference", "relation_contradictory": "knowledge-update",
}
LME_DEFAULT_TYPE = "multi-session"
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_LME_DATE = re.compile(r"^\s*(\d{4})/(\d{1,2})/(\d{1,2})\s*(?:\([A-Za-z]{3}\))?\s*(?:(\d{1,2}):(\d{2}))?\s*$")

# ---------------------------------------------------------------------------------------------------- LoCoMo

LOCOMO_SAMPLE_FIELDS = ("sample_id", "conversation", "qa", "event_summary", "session_summary")
LOCOMO_CONVERSATION_FIELDS = ("speaker_a", "speaker_b")  # plus session_<N> and session_<N>_date_time
LOCOMO_TURN_FIELDS = ("speaker", "dia_id", "text")
LOCOMO_QA_FIELDS = ("question", "answer", "evidence", "category")  # category 5 adds `adversarial_answer`
# the category numbers as the released data uses them
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ADVERSARIAL = 5
LOCOMO_CATEGORY_OF = {
    "factual": 4, "comparison": 1, "trajectory": 2, "pattern": 1, "causal": 1, "counterfactual": 3, "inference": 3,
    "unanswerable": ADVERSARIAL, "temporal_duration": 2, "profile_style": 3, "written_spoken": 1,
    "relation_complementary_all": 1, "relation_complementary_any": 1, "relation_nuanced_temporal": 2,
    "relation_nuanced_contextual": 3, "relation_contradictory": 2,
}
LOCOMO_DEFAULT_CATEGORY = 1
SESSION_KEY = re.compile(r"^session_(\d+)$")
DIA_ID = re.compile(r"^D(\d+):(\d+)$")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_LOCOMO_DATE = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.I)


def lme_type(synth_type: str) -> str:
    return LME_TYPE_OF.get(synth_type, LME_DEFAULT_TYPE)


def locomo_category(synth_type: str) -> int:
    return LOCOMO_CATEGORY_OF.get(synth_type, LOCOMO_DEFAULT_CATEGORY)


def lme_date(when: dt.datetime) -> str:
    """LongMemEval's style, `2023/05/30 (Tue) 23:40` (English day names whatever the locale)."""
    return f"{when:%Y/%m/%d} ({_DAYS[when.weekday()]}) {when:%H:%M}"


def parse_lme_date(text: object) -> dt.datetime | None:
    match = _LME_DATE.match(str(text)) if text is not None else None
    if not match:
        return None
    y, mo, d, h, mi = match.groups()
    try:
        return dt.datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0))
    except ValueError:
        return None


def locomo_date(when: dt.datetime) -> str:
    """LoCoMo's style, `1:56 pm on 8 May, 2023`."""
    return f"{when.hour % 12 or 12}:{when:%M} {'am' if when.hour < 12 else 'pm'} on {when.day} " \
           f"{_MONTHS[when.month - 1]}, {when.year}"


def locomo_day(when: dt.datetime) -> str:
    """The date alone as LoCoMo's event summaries write it, `8 May, 2023`."""
    return f"{when.day} {_MONTHS[when.month - 1]}, {when.year}"


def parse_locomo_date(text: object) -> dt.datetime | None:
    match = _LOCOMO_DATE.match(str(text)) if text is not None else None
    if not match:
        return None
    h, mi, half, d, month, y = match.groups()
    names = [m.lower() for m in _MONTHS]
    key = month.lower()
    index = next((i for i, name in enumerate(names) if name == key or name[:3] == key[:3]), None)
    if index is None or not 1 <= int(h) <= 12:
        return None
    hour = int(h) % 12 + (12 if half.lower() == "pm" else 0)
    try:
        return dt.datetime(int(y), index + 1, int(d), hour, int(mi))
    except ValueError:
        return None
