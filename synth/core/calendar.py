"""The real calendar dated prompts show: each date's weekday and the public holidays of the persona's country."""

from __future__ import annotations

import datetime as dt
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


def weekday(value: object) -> int:
    """Monday 0 … Sunday 6: templates name the day in their own language."""
    return as_date(value).weekday()


@lru_cache(maxsize=64)
def _country_holidays(country: str, language: str, years: tuple[int, ...]) -> dict[dt.date, str]:
    import holidays

    lang = _HOLIDAY_LANGUAGE.get(language)
    table = holidays.country_holidays(country, years=years)
    if lang in getattr(table, "supported_languages", ()):
        table = holidays.country_holidays(country, years=years, language=lang)
    return dict(table.items())


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


def holidays_between(country: str, language: str, start: object, end: object) -> list[dict]:
    """The public holidays of `country` from `start` to `end` (inclusive), oldest first, as {date, name}; days of
    one holiday that share a name are kept (a week of Spring Festival is seven dated lines). A make-up day off is
    named by its festival first ("除夕，休息日（由 2022-01-29 调休）"). An unknown country gives none."""
    first, last = as_date(start), as_date(end)
    if not country or last < first:
        return []
    try:
        table = _country_holidays(country.upper(), language, tuple(range(first.year - 1, last.year + 2)))
    except (NotImplementedError, KeyError):
        return []
    out = []
    for day, name in sorted(table.items()):
        if first <= day <= last:
            festival = _festival(day, table, language) if any(mark in name for mark in _MAKE_UP) else ""
            if festival:
                name = f"{festival}，{name}" if language == "zh" else f"{festival}; {name}"
            out.append({"date": day.isoformat(), "name": name})
    return out
