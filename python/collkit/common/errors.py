"""Errors a user can cause. The CLI prints their message on one line and exits 2."""

import difflib


class UserError(Exception):
    """Bad input or a missing prerequisite that the user can fix."""


def closest(word: str, choices) -> str | None:
    """The choice most like ``word`` (difflib's default cut-off), or None."""
    hint = difflib.get_close_matches(str(word), list(choices), n=1)
    return hint[0] if hint else None


def did_you_mean(word: str, choices) -> str:
    """`` (did you mean 'x'?)`` for the closest choice, or "" when none is close."""
    hint = closest(word, choices)
    return f" (did you mean '{hint}'?)" if hint else ""
