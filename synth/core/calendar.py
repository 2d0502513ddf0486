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


def holidays_between(country: str, language: str, start: object, end: object) -> list[dict]:
    """The public holidays of `country` from `start` to `end` (inclusive), oldest first, as {date, name}; days of
    one holiday that share a name are kept (a week of Spring Festival is seven dated lines). An unknown country
    gives none."""
    first, last = as_date(start), as_date(end)
    if not country or last < first:
        return []
    try:
        table = _country_holidays(country.upper(), language, tuple(range(first.year, last.year + 1)))
    except (NotImplementedError, KeyError):
        return []
    return [{"date": day.isoformat(), "name": name} for day, name in sorted(table.items()) if first <= day <= last]
