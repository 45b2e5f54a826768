"""The cost-term table (tune/costs.py) against ck_trace: for every traced entry, a(p)
is the most messages any rank sends and b(p) n the most bytes, at several p, so the
table cannot drift from libcollkit's schedules."""

import subprocess
from collections import defaultdict

import pytest

import needs
from ck_trace_build import ck_trace
from collkit.tune import costs

RANKS = (2, 3, 4, 5, 6, 7, 8, 12, 16)
COUNT = 6720   # 2^6 * 3 * 5 * 7: every p above (and its power-of-two part) divides it


def _cases():
    for (coll, alg), e in sorted(costs.TABLE.items()):
        if not e.traced:
            continue
        for p in RANKS:
            if e.exact == "pow2" and p & (p - 1):
                continue
            yield coll, alg, p


def _busiest(lines: list[str]) -> dict[tuple, tuple[int, int]]:
    """(collective, algorithm, ranks) -> (most sends, most bytes) of any rank."""
    out, cur, per = {}, None, None
    for ln in lines:
        if ln.startswith("# trace"):
            kv = dict(x.split("=", 1) for x in ln.split()[2:])
            cur = (kv["collective"], kv["algorithm"], int(kv["ranks"]))
            per = defaultdict(lambda: [0, 0])
            out[cur] = per
        elif ln.startswith("# error"):
            raise AssertionError(ln)
        elif cur is not None and ln.strip():
            src, _dst, nbytes, _step = map(int, ln.split())
            per[src][0] += 1
            per[src][1] += nbytes
    return {k: (max(v[0] for v in d.values()), max(v[1] for v in d.values())) for k, d in out.items()}


@needs.ck_trace
def test_traced_terms_equal_ck_trace():
    cases = list(_cases())
    batch = "".join(f"{c} {a} {p} {COUNT} 0 int8 messages\n" for c, a, p in cases)
    proc = subprocess.run([str(ck_trace()), "--batch", "-"], input=batch, capture_output=True, text=True,
                          check=True)
    got = _busiest(proc.stdout.splitlines())
    wrong = []
    for coll, alg, p in cases:
        t = costs.terms(coll, alg, p)
        sends, nbytes = got[(coll, alg, p)]
        if sends != t.a or abs(nbytes / COUNT - t.b) > 1e-9:
            wrong.append(f"{coll}/{alg} p={p}: table a={t.a} b={t.b}, ck_trace {sends} sends, "
                         f"{nbytes / COUNT:g} n")
    assert not wrong, "\n".join(wrong)


def test_every_entry_gives_nonnegative_terms():
    for (coll, alg), e in costs.TABLE.items():
        for p in range(2, 40):
            t = e.terms(p)
            assert t.a >= 0 and t.b >= 0 and t.c >= 0, (coll, alg, p)
            assert (t.c > 0) == costs.reduces(coll), (coll, alg, p)


@pytest.mark.parametrize("p,a", [(2, 1), (3, 2), (4, 2), (5, 3), (8, 3), (9, 4)])
def test_lg_is_ceil_log2(p, a):
    assert costs.lg(p) == a
