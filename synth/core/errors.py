"""The domain errors every layer raises; the CLI turns each into one line and its exit code."""

from __future__ import annotations


class SynthError(Exception):
    """A domain error: the CLI prints its message on one line and exits with `exit_code`."""

    exit_code = 1


class InputError(SynthError):
    """Bad input from the user (a file, a flag, a missing stage): exit code 2, nothing written."""

    exit_code = 2


class BudgetExceeded(SynthError):
    """The next request would exceed --budget-usd or --max-tokens."""

    exit_code = 3
