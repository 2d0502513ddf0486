"""Lenient readers of the fields of a hand-editable record, for `synth validate`: a value of the wrong shape reads
as None, an empty list or 0 instead of raising, so a corrupted file is still checked as far as it can be."""

from __future__ import annotations

import datetime as dt
from typing import Any


def as_date(value: Any) -> dt.date | None:
    if not isinstance(value, str):
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        try:
            return dt.datetime.fromisoformat(value).date()
        except ValueError:
            return None


def as_datetime(value: Any) -> dt.datetime | None:
    """A comparable datetime: aware values in UTC with the zone dropped, so naive and aware never meet in `<`."""
    if not isinstance(value, str):
        return None
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment.astimezone(dt.timezone.utc).replace(tzinfo=None) if moment.tzinfo else moment


def day_of(value: Any) -> dt.date | None:
    """The calendar day a datetime names, in its own zone (what the record claims, for containment in dates)."""
    if not isinstance(value, str):
        return None
    try:
        return dt.datetime.fromisoformat(value).date()
    except ValueError:
        return None


def id_list(value: Any) -> list[str]:
    """A list of ids from a field; anything else (a missing field is reported by the schema check) gives []."""
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


def dict_list(value: Any) -> list[dict]:
    return [v for v in as_list(value) if isinstance(v, dict)]


def as_int(value: Any) -> int:
    return value if isinstance(value, int) else 0
