"""The real calendar dated prompts show: each date's weekday and the public holidays of the persona's country."""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from functools import lru_cache

# the holidays package names holidays in these languages (its default otherwise)
_HOLIDAY_LANGUAGE = {"zh": "zh_CN", "en": "en_US"}


def as_date(value: object) -> dt.date:
    """A date from a date, a datetime or an ISO string (a datetime's date part)."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])


def country_of(persona: object, countries: dict, language: str) -> str:
    """Whose public holidays a persona's prompts show: its own `country` (a seed may set it: a Chicago lawyer is
    US, not GB), else the language's default (`holiday_countries`)."""
    return getattr(persona, "country", "") or countries.get(language, "")


def weekday(value: object) -> int:
    """Monday 0 … Sunday 6: templates name the day in their own language."""
    return as_date(value).weekday()


@lru_cache(maxsize=64)
def _country_holidays(country: str, language: str, years: tuple[int, ...]) -> dict[dt.date, str]:
    import holidays

    lang = _HOLIDAY_LANGUAGE.get(language)
    code, _, subdiv = country.partition("-")  # "CA-ON": Ontario's holidays (Family Day, Thanksgiving), not Canada's few
    table = holidays.country_holidays(code, subdiv=subdiv or None, years=years)
    if lang in getattr(table, "supported_languages", ()):
        table = holidays.country_holidays(code, subdiv=subdiv or None, years=years, language=lang)
    return dict(table.items())


def known_country(country: str) -> bool:
    """Whether the `holidays` package knows `country` ("US", or with its region: "CA-ON")."""
    try:
        _country_holidays(country.upper(), "en", (2022,))
    except (NotImplementedError, KeyError):
        return False
    return True


# a make-up day off, as the holidays package names it ("休息日（由 2022-01-29 调休）", "Day off (substituted from …)")
_MAKE_UP = ("调休", "substituted", "Day off")
# the eve of the Spring Festival's first day, which the package leaves as a make-up day
_EVE = {"zh": ("春节", "除夕"), "en": ("Chinese New Year", "Chinese New Year's Eve")}


def _festival(day: dt.date, table: dict[dt.date, str], language: str) -> str:
    """The festival a make-up day off belongs to: the eve of the Spring Festival, or the nearest named holiday
    within three days (its name first, so "2022-01-31" reads 除夕, not only as a day off)."""
    festival, eve = _EVE.get(language, _EVE["en"])
    following = table.get(day + dt.timedelta(days=1), "")
    if festival in following and festival not in table.get(day - dt.timedelta(days=1), ""):
        return eve
    for distance in (1, 2, 3):
        for other in (day + dt.timedelta(days=distance), day - dt.timedelta(days=distance)):
            name = table.get(other, "")
            if name and not any(mark in name for mark in _MAKE_UP):
                return name
    return ""


_SOURCE = re.compile(r"(\d{4})-(\d{2})-(\d{2})|(\d{2})/(\d{2})/(\d{4})")
_WORKDAY = {"zh": "调休上班日（{}）", "en": "make-up working day ({})"}
_BREAK = {"zh": "{}假期（周末）", "en": "{} break (weekend)"}


def _source_day(name: str) -> dt.date | None:
    """The working day a make-up day off was moved from, as its name gives it (2022-01-29, 01/29/2022)."""
    found = _SOURCE.search(name)
    if found is None:
        return None
    if found.group(1):
        return dt.date(int(found.group(1)), int(found.group(2)), int(found.group(3)))
    return dt.date(int(found.group(6)), int(found.group(4)), int(found.group(5)))


def _base(name: str) -> str:
    """A holiday's festival without its qualifier ("国庆节（补假）" → 国庆节, "Chinese New Year (Spring Festival)" →
    Chinese New Year)."""
    return re.split(r"，|;|（| \(", name, maxsplit=1)[0].strip()


def _runs(table: dict[dt.date, str]) -> list[list[dt.date]]:
    """The days off of `table` in runs of consecutive days."""
    runs: list[list[dt.date]] = []
    for day in sorted(table):
        if runs and day - runs[-1][-1] == dt.timedelta(days=1):
            runs[-1].append(day)
        else:
            runs.append([day])
    return runs


def _named(table: dict[dt.date, str], language: str) -> tuple[dict[dt.date, str], dict[dt.date, str]]:
    """(every day off by its festival first, each make-up working day → its break's festival). A break arranged
    with make-up days (the Spring Festival week) also holds the weekend days next to it, named as that break's —
    unless such a day is itself a make-up working day."""
    out: dict[dt.date, str] = {}
    for day, name in table.items():
        festival = _festival(day, table, language) if any(mark in name for mark in _MAKE_UP) else ""
        out[day] = (f"{festival}，{name}" if language == "zh" else f"{festival}; {name}") if festival else name
    working: dict[dt.date, str] = {}
    for run in _runs(table):
        moved = {d: src for d in run if any(m in table[d] for m in _MAKE_UP) and (src := _source_day(table[d]))}
        if not moved:
            continue
        bases = [_base(table[d]) for d in run if not any(m in table[d] for m in _MAKE_UP)] or [_base(out[run[0]])]
        festival = max(sorted(set(bases)), key=bases.count)
        for src in moved.values():
            working[src] = festival
        for step, edge in ((1, run[-1]), (-1, run[0])):
            day = edge + dt.timedelta(days=step)
            while day.weekday() >= 5 and day not in table and day not in working:
                out[day] = _BREAK.get(language, _BREAK["en"]).format(festival)
                day += dt.timedelta(days=step)
    return out, working


def holidays_between(country: str, language: str, start: object, end: object, workdays: bool = False) -> list[dict]:
    """The public holidays of `country` from `start` to `end` (inclusive), oldest first, as {date, name}; days of
    one holiday that share a name are kept (a week of Spring Festival is seven dated lines, its weekend included).
    A make-up day off is named by its festival first ("除夕，休息日（由 2022-01-29 调休）"). With `workdays`, the
    make-up working days the span holds are listed too, as {date, name, workday: True} ("调休上班日（春节）"): a
    dated plan must not put a day off there. An unknown country gives none."""
    first, last = as_date(start), as_date(end)
    if not country or last < first:
        return []
    try:
        table = _country_holidays(country.upper(), language, tuple(range(first.year - 1, last.year + 2)))
    except (NotImplementedError, KeyError):
        return []
    named, working = _named(table, language)
    out = [{"date": day.isoformat(), "name": name} for day, name in sorted(named.items()) if first <= day <= last]
    if workdays:
        out += [{"date": day.isoformat(), "name": _WORKDAY.get(language, _WORKDAY["en"]).format(festival),
                 "workday": True} for day, festival in working.items() if first <= day <= last and day not in table]
        out.sort(key=lambda h: h["date"])
    return out


# weekday names, one place for every check that reads them (gaps, QA outlines, phase and event prompts)
EN_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
ZH_DAYS = "一二三四五六日"
_EN_WEEKDAY = re.compile(r"\b(" + "|".join(EN_WEEKDAYS) + r")s?\b", re.IGNORECASE)
ZH_WEEKDAY = re.compile(r"(?:星期|礼拜|周)([一二三四五六日天])")


def weekdays_named(text: str) -> set[int]:
    """The weekdays (Monday 0 … Sunday 6) a text names: "on their Sunday call", "Fridays", "每周六", "礼拜天"."""
    named = {EN_WEEKDAYS.index(m.group(1).lower()) for m in _EN_WEEKDAY.finditer(text)}
    return named | {ZH_DAYS.index("日" if m.group(1) == "天" else m.group(1)) for m in ZH_WEEKDAY.finditer(text)}


_WEEKEND = re.compile(r"\bweekends?\b|周末", re.IGNORECASE)


# words of what someone means to do, not yet done ("plans to", 打算): shared by `days_needed` and the traces stage's
# next-day reading (`synth.stages.trace_write.INTENDED`), each adding its own
MEANT_WORDS = r"will|would|plans?|planning|intends?|going to|means? to|wants? to|hopes? to|tomorrow"
MEANT_ZH = "打算|准备|计划|想着|要去|明天"
# a clause that plans, puts off or calls off what it names ("she has to skip their weekend walk", 打算周六去): the
# day it names is to come, not a day the stretch holds
_PLANNED = re.compile(rf"\b(?:{MEANT_WORDS}|has to|have to|needs? to|next\s+week\w*|skip\w*|cancel\w*"
                      rf"|put(?:s|ting)? off|postpon\w*)\b|{MEANT_ZH}|下周|下礼拜|下个|推掉|取消|改到", re.IGNORECASE)


def days_needed(text: str) -> list[set[int]]:
    """The days a text says its stretch holds, each as the weekdays that would do: one set per weekday named, and
    Saturday-or-Sunday for "the weekend" / "周末" — in clauses that tell what happens, not in one that plans, puts
    off or calls it off (a capable writer's Tuesday-to-Friday phase, "she has to skip their weekend walk", was
    stretched to the Saturday, a day it told nothing of)."""
    told = " ".join(c for c in re.split(r"[.;!?,。；！？，、\n]", text) if not _PLANNED.search(c))
    return [{d} for d in sorted(weekdays_named(told))] + ([{5, 6}] if _WEEKEND.search(told) else [])


def weekdays_between(first: dt.date, last: dt.date) -> set[int]:
    """The weekdays the days from `first` to `last` (inclusive) fall on."""
    return {(first + dt.timedelta(days=n)).weekday() for n in range(min(7, (last - first).days + 1))}


MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
_MON = "|".join(m[:3].capitalize() + f"(?:{m[3:]})?" for m in MONTHS)
# an English day of a month ("March 5", "Mar. 5th", "31 January", "the 5th of March"): a month name alone is not
# that precise
EN_DATE = re.compile(rf"\b(?:({_MON})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?|(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MON}))\b")
# a Chinese month (and day) in digits or numerals, however spaced or padded: "3 月 4 日", "03月04号", "３月４日",
# "三月四日" → "3月4日" (a capable writer's "九月九日" was refused against evidence saying "9月9日")
_ZH_NUMBER = r"[0-9０-９]{1,2}|[一二三四五六七八九十]{1,3}"
ZH_DATE = re.compile(rf"({_ZH_NUMBER})\s*月(?:\s*({_ZH_NUMBER})\s*[日号])?")
_ZH_DIGITS = {c: n for n, c in enumerate("一二三四五六七八九", 1)}
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")


def zh_int(written: str) -> int:
    """A month or day as a number, from digits (any width) or Chinese numerals up to 三十一 ("十二" → 12)."""
    written = unicodedata.normalize("NFKC", written)
    if written.isdigit():
        return int(written)
    tens, _, ones = written.rpartition("十")
    if "十" not in written:
        return _ZH_DIGITS.get(written, 0)
    return (_ZH_DIGITS.get(tens, 0) if tens else 1) * 10 + _ZH_DIGITS.get(ones, 0)


def days_named(text: str, near: dt.date) -> list[dt.date]:
    """The calendar days a text names ("31 January", "March 5th", "1月31日", "2022-01-31"), a day without its year
    in the year that puts it nearest `near`; a month without a day, or a day that does not exist, is left out."""
    found: list[tuple[int, int, int | None]] = [(int(y), int(m), int(d)) for y, m, d in _ISO_DATE.findall(text)]
    for m in EN_DATE.finditer(_ISO_DATE.sub(" ", text)):
        month, day = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        found.append((0, next(n for n, x in enumerate(MONTHS, 1) if x.startswith(month[:3].lower())), int(day)))
    found += [(0, zh_int(m.group(1)), zh_int(m.group(2))) for m in ZH_DATE.finditer(text) if m.group(2)]
    days = []
    for year, month, day in found:
        options = [year] if year else [near.year - 1, near.year, near.year + 1]
        dated = []
        for y in options:
            try:
                dated.append(dt.date(y, month, day))
            except ValueError:
                continue
        if dated:
            days.append(min(dated, key=lambda d: abs((d - near).days)))
    return days
