"""Values that may reach a generated script, checked where they enter.

Batch scripts embed names, paths and option values in comments, `#SBATCH`
lines and shell words. Quoting protects a shell word but not a comment or a
directive line, so every string from a spec or platform file is refused if it
holds a control character (newline, carriage return, tab, NUL, ...), and names
that become directories, and environment variable names, are held to a safe
character set. Each refusal is one line naming the file, the key and the fix."""

from __future__ import annotations

import re

from collkit.common.errors import UserError

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,255}")


def control_character(text: str) -> str | None:
    """The first control character of text, shown escaped, or None."""
    m = _CONTROL.search(text)
    return None if m is None else repr(m.group())[1:-1]


def _at(source: str) -> str:
    return f"{source}: " if source else ""


def refuse_control(raw: object, source: str, where: str = "") -> None:
    """Walk a parsed TOML document; refuse any key or string value with a control character."""
    if isinstance(raw, dict):
        for key, value in raw.items():
            path = f"{where}.{key}" if where else str(key)
            bad = control_character(str(key))
            if bad:
                raise UserError(f"{_at(source)}key {path!r} contains a control character ({bad}); rename it")
            refuse_control(value, source, path)
    elif isinstance(raw, list):
        for i, value in enumerate(raw):
            refuse_control(value, source, f"{where}[{i}]")
    elif isinstance(raw, str):
        bad = control_character(raw)
        if bad:
            raise UserError(f"{_at(source)}{where} contains a control character ({bad}); "
                            "write the value on one line without escapes")


def check_name(value: object, source: str, what: str) -> str:
    """A name that becomes a directory or a job name: letters, digits, '.', '_', '+', '-'."""
    if not isinstance(value, str) or not SAFE_NAME.fullmatch(value):
        raise UserError(f"{_at(source)}{what} must be 1-128 letters, digits, '.', '_', '+' or '-', starting with a "
                        f"letter or digit, not {value!r}")
    return value


def check_env_name(value: object, source: str, what: str) -> str:
    """An environment variable name, as the shell accepts it."""
    if not isinstance(value, str) or not ENV_NAME.fullmatch(value):
        raise UserError(f"{_at(source)}{what} {value!r} is not a valid environment variable name "
                        "(letters, digits and '_', not starting with a digit)")
    return value
