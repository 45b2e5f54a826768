"""Secrets kept out of metadata: by variable name, inside URLs, and as options.

Redaction parses rather than pattern-matches the happy case: a URL's userinfo
is everything between "scheme://" and the last "@" of its authority, so
`https://alice:p@ss@host`, `https://:token@host` and `https://token@host` all
lose the whole credential; option-style secrets (`--password=x`, `passwd=x`,
`--token x`, `?api_key=x&...`) lose their value wherever they stand in a value."""

from __future__ import annotations

import re

REDACTED = "<redacted>"

_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|PASSPHRASE|API_?KEY|PRIVATE|CREDENTIAL|AUTH|COOKIE|SESSION"
                          r"|(^|_)KEY(_|$)|SIGNATURE|CERT", re.IGNORECASE)

# The word of an option or parameter whose value is a secret.
_SECRET_WORD = r"[\w.-]*(?:passw(?:or)?d|passwd|passphrase|secret|token|api[_-]?key|credentials?|auth)[\w.-]*"
# name=value, --name=value, ?name=value&..., name:value is left alone (too many false hits: host:port).
_OPTION_EQ = re.compile(r"(?P<name>(?:^|(?<=[\s,;&?]))-{0,2}" + _SECRET_WORD + r")=(?P<value>[^\s,;&]*)",
                        re.IGNORECASE)
# --name value (an option followed by its value as the next word).
_OPTION_SPACE = re.compile(r"(?P<name>(?:^|(?<=\s))--?" + _SECRET_WORD + r")(?P<sep>\s+)(?P<value>(?!-)\S+)",
                           re.IGNORECASE)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def _redact_urls(value: str) -> str:
    out, pos = [], 0
    for m in _SCHEME.finditer(value):
        if m.start() < pos:
            continue
        start = m.end()
        end = start
        while end < len(value) and value[end] not in "/?#" and not value[end].isspace():
            end += 1
        at = value.rfind("@", start, end)
        out.append(value[pos:start])
        if at >= 0:
            out.append(REDACTED + value[at:end])
        else:
            out.append(value[start:end])
        pos = end
    out.append(value[pos:])
    return "".join(out)


def redact_value(value: str) -> str:
    """A value with URL credentials and option-style secrets replaced."""
    value = _redact_urls(value)
    value = _OPTION_EQ.sub(lambda m: f"{m['name']}={REDACTED}", value)
    return _OPTION_SPACE.sub(lambda m: f"{m['name']}{m['sep']}{REDACTED}", value)


def redact(env: dict[str, str]) -> dict[str, str]:
    """Values of secret-looking names removed; credentials cut from the rest."""
    return {name: REDACTED if is_secret_name(name) else redact_value(value) for name, value in env.items()}
