"""`collkit list`: what this platform offers.

For backend ``mpi``, each MPI library found here and, per collective, every
algorithm it can be forced to run (canonical name, native name and id, the
conditions it needs) after a line for the library's default. For backend
``collkit``, libcollkit's registry. With ``--parameters [TEXT]``, instead, the
parameters a spec's ``[parameters.NAME]`` may sweep (backends/parameters.py): each
MPI's as its tool lists them and NCCL's documented ones, those whose name contains
TEXT (any case)."""

from __future__ import annotations

import json
import sys

from collkit import backends
from collkit.common.errors import UserError
from collkit.common.table import render
from collkit.library import registry
from collkit.mpis import known
from collkit.library.registry import COLLECTIVES

BACKENDS = ("mpi", "collkit")


def _offers(mpi: str | None) -> tuple[list[backends.LibraryOffer], list[tuple[str, str]]]:
    """Offers of the requested MPI (its absence is an error) or of every MPI found."""
    if mpi:
        return [backends.discover(known.find_install(mpi))], []
    offers, missing = [], []
    for name in known.names():
        try:
            offers.append(backends.discover(known.find_install(name)))
        except UserError as exc:
            missing.append((name, str(exc)))
    return offers, missing


def _mpi_rows(offer: backends.LibraryOffer, collective: str | None) -> list[list[str]]:
    rows = []
    for coll in COLLECTIVES:
        if collective and coll != collective:
            continue
        if coll in offer.defaults:
            native, native_id = offer.default_native.get(coll, ("", ""))
            rows.append([coll, "* default", native, native_id, offer.defaults[coll]])
        for alg in offer.for_collective(coll):
            needs = ", ".join(backends.REQUIREMENTS[r] for r in alg.requires)
            notes = "; ".join(x for x in (f"needs {needs}" if needs else "", alg.note) if x)
            native_id = "" if alg.native_id == alg.native else alg.native_id
            rows.append([coll, alg.name, alg.native, native_id, notes])
    return rows


def _parameter_rows(params, text: str) -> list[list[str]]:
    rows = []
    for p in sorted(params.values(), key=lambda p: p.name):
        if text.lower() in p.name.lower():
            notes = "; ".join(x for x in ("forced algorithms only" if p.forced_only else "",
                                          "" if p.readable else "not read back") if x)
            rows.append([p.name, p.describe(), notes])
    return rows


def parameters(mpi: str | None, text: str, as_json: bool) -> int:
    """`collkit list --parameters [TEXT]`: what [parameters.NAME] may name, per library."""
    from collkit.backends import devices
    offers, missing = _offers(mpi)
    tables = [(f"{o.library} (read from {o.tool})", o.mpi, o.parameters) for o in offers]
    if mpi is None:
        tables += [(d.parameters_title, d.parameter_table, d.parameters()) for d in devices.DEVICE_BACKENDS]
    if as_json:
        print(json.dumps({"parameters": [{"library": lib, "parameters": [
            {"name": n, "kind": k, "values": r, "notes": x} for n, r, x in _parameter_rows(ps, text)
            for k in (ps[n].kind,)]} for _, lib, ps in tables],
            "unavailable": [{"mpi": n, "error": why} for n, why in missing]}, indent=2))
        return 0
    out = []
    for title, _, params in tables:
        rows = _parameter_rows(params, text)
        if rows:
            # names and values whole, to be copied into a spec: only the notes wrap
            out += [title, render(["parameter", "values", "notes"], rows, nowrap={0, 1}), ""]
    if not out:
        out.append(f"no parameter name contains '{text}'")
    out += [f"{name}: not available: {why}\n" for name, why in missing]
    sys.stdout.write("\n".join(out).rstrip("\n") + "\n")
    return 0


def run(backend: str | None, collective: str | None, mpi: str | None, as_json: bool) -> int:
    coll = registry.check_collective(collective) if collective else None
    show = [backend] if backend else list(BACKENDS)
    out: dict = {}
    text: list[str] = []

    if "mpi" in show:
        offers, missing = _offers(mpi)
        if as_json:
            entries = []
            for offer in offers:
                data = offer.to_json()
                if coll:
                    data["algorithms"] = [a for a in data["algorithms"] if a["collective"] == coll]
                    data["defaults"] = {c: d for c, d in data["defaults"].items() if c == coll}
                    data["excluded"] = [e for e in data["excluded"] if e["collective"] == coll]
                entries.append({"available": True, **data})
            entries += [{"mpi": name, "available": False, "error": why} for name, why in missing]
            out["mpi"] = entries
        for offer in offers:
            text.append(f"{offer.library} ({offer.mpi}; read from {offer.tool})")
            text.append(render(["collective", "algorithm", "native", "id", "notes"],
                               _mpi_rows(offer, coll)))
            text.append("")
        for name, why in missing:
            text.append(f"{name}: not available: {why}")
            text.append("")

    if "collkit" in show:
        algs = registry.load()
        if coll:
            algs = [a for a in algs if a.collective == coll]
        out["collkit"] = [a.to_json() for a in algs]
        text.append("libcollkit")
        text.append(render(["collective", "algorithm", "constraints", "traits", "origin"],
                           [[a.collective, a.name, a.constraints.describe(), a.traits.describe(), a.origin]
                            for a in algs]))

    if as_json:
        print(json.dumps(out, indent=2))
    else:
        sys.stdout.write("\n".join(text).rstrip("\n") + "\n")
    return 0
