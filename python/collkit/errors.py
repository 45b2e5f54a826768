"""Errors a user can cause. The CLI prints their message on one line and exits 2."""


class UserError(Exception):
    """Bad input or a missing prerequisite that the user can fix."""
