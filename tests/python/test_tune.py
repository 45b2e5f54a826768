"""collkit model / tune on synthetic campaigns whose times follow known cost models:
the fit recovers them, cutoffs fall where the models cross, the three writers follow
their formats, bad input is refused in one line, validation's regret is computed."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

import needs
from cli_runner import collkit, in_process, one_line_error
from collkit.analysis import launches
from collkit.tune import costs, data, decide, fit, replicated, validate
from collkit.tune.writers import collkit as ck_writer
from collkit.tune.writers import mpich as mpich_writer
from collkit.tune.writers import openmpi as ompi_writer

RANKS = (2, 4, 6, 8)
SIZES = (64, 1024, 16384, 262144)
# alpha (us per message), beta (us per byte): bruck is faster for small blocks, the ring for large
TRUE = {"bruck": (10.0, 0.003), "ring": (10.0, 0.001)}


def _time(alg: str, p: int, n: int) -> float:
    t = costs.terms("allgather", alg, p)
    a, b = TRUE[alg]
    return a * t.a + b * t.b * n


def _record(backend, mpi, alg, p, n, median, status="ok", seed=0):
    rng = np.random.default_rng(seed)
    times = list(median * (1 + 0.01 * rng.standard_normal(30)))
    return {"id": f"allgather/{backend}/{mpi}/{alg}/p{p}/{n}B", "collective": "allgather", "backend": backend,
            "mpi": mpi, "algorithm": alg, "ranks": p, "count": n // 4, "bytes": n, "dtype": "int32", "op": "sum",
            "root": 0, "in_place": False, "status": status, "reason": "", "iterations": 30 if status == "ok" else 0,
            "times_us": times if status == "ok" else [],
            "stats_us": {"median": float(np.median(times))} if status == "ok" else {}}


def make_campaign(path: Path, backend="collkit", with_default=True, failed=False, sizes=SIZES,
                  mpi="openmpi") -> Path:
    path.mkdir()
    (path / "spec.toml").write_text('name = "synthetic"\ncollectives = ["allgather"]\nsizes = ["64B"]\n'
                                    'ranks = [2]\ndtype = "int32"\n\n[measure]\nmin_iterations = 30\n')
    (path / "resolved.json").write_text(json.dumps({"requested": {}, "points": [], "skipped": [],
                                                    "platform": {"name": "local"}}))
    recs, seed = [], 0
    for p in RANKS:
        for n in sizes:
            for alg in TRUE:
                seed += 1
                recs.append(_record(backend, mpi, alg, p, n, _time(alg, p, n),
                                    status="failed" if failed else "ok", seed=seed))
            if with_default:
                seed += 1
                best = min(_time(a, p, n) for a in TRUE)
                recs.append(_record("mpi", mpi, "default", p, n, 1.5 * best, seed=seed))
    (path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_fit_recovers_the_models(tmp_path):
    camp = data.load([make_campaign(tmp_path / "c")])
    models, too_few = fit.fit_all(camp.points)
    assert not too_few
    for alg, (a, b) in TRUE.items():
        f = models[("local", "openmpi", "collkit", "allgather", alg)]
        assert f.alpha_us == pytest.approx(a, rel=0.05)
        assert f.beta_us_per_byte == pytest.approx(b, rel=0.05)
        assert f.median_error < 0.02


def test_fit_is_robust_to_an_outlier():
    x = np.column_stack([np.ones(12), np.arange(12.0), np.zeros(12)])
    y = 3 + 2 * np.arange(12.0)
    y[5] *= 20                                  # one point 20x too slow (a stall)
    coef = fit.robust_fit(x, y, 0.05 * y)
    assert coef[0] == pytest.approx(3, rel=0.05) and coef[1] == pytest.approx(2, rel=0.05)


def test_nnls_never_negative():
    x = np.column_stack([np.ones(5), np.arange(5.0)])
    coef = fit.nnls_small(x, 10 - np.arange(5.0))     # falling times: the slope would be negative
    assert (coef >= 0).all()


def test_tune_collkit_cutoffs_where_models_cross(tmp_path, capsys):
    camp = make_campaign(tmp_path / "c")
    out = tmp_path / "rules.txt"
    res = in_process(capsys, "tune", camp, "--format", "collkit", "--out", out)
    assert res.returncode == 0
    lines = ck_writer.parse(out.read_text())
    side = json.loads((tmp_path / "rules.txt.provenance.json").read_text())
    assert {r["source"] for r in side["rules"]} == {"measured", "model"}
    for p in RANKS[1:]:   # at 2 ranks both send one block in one step: the ring's beta wins
        # crossing of the true models: alpha (p-1-lg p) = (b_bruck - b_ring)(p-1) n
        cross = TRUE["bruck"][0] * (p - 1 - costs.lg(p)) / ((TRUE["bruck"][1] - TRUE["ring"][1]) * (p - 1))
        assert ck_writer.lookup(lines, "allgather", p, 64) == "bruck"
        assert ck_writer.lookup(lines, "allgather", p, 262144) == "ring"
        if 1024 < cross < 16384:
            assert ck_writer.lookup(lines, "allgather", p, int(cross * 0.9)) == "bruck"
            assert ck_writer.lookup(lines, "allgather", p, int(cross * 1.1)) == "ring"
    # rank counts not measured come from the models and are marked so
    assert any(r["ranks"] == 5 and r["source"] == "model" for r in side["rules"])
    assert ck_writer.lookup(lines, "allgather", 5, 64) == "bruck"
    assert ck_writer.lookup(lines, "allgather", 5, 262144) == "ring"
    # beyond the measured rank counts: the library
    assert ck_writer.lookup(lines, "allgather", 9, 64) == "library"
    assert "allgather" in res.stdout


@pytest.mark.parametrize("case,expect", [
    ("notcampaign", "is not a collkit campaign"),
    ("nodefault", "default was measured"),
    ("failed", "points that ran are ok"),
    ("format", "unknown format"),
    ("exists", "already exists"),
])
def test_tune_refusals(tmp_path, capsys, case, expect):
    if case == "notcampaign":
        d = tmp_path / "x"
        d.mkdir()
    else:
        d = make_campaign(tmp_path / "c", with_default=case != "nodefault", failed=case == "failed")
    out = tmp_path / "out.rules"
    if case == "exists":
        out.write_text("keep me\n")
    fmt = "nosuch" if case == "format" else "collkit"
    one_line_error(in_process(capsys, "tune", d, "--format", fmt, "--out", out), expect)
    if case == "exists":
        assert out.read_text() == "keep me\n"


def test_model_prints_and_refuses_too_few(tmp_path, capsys):
    res = in_process(capsys, "model", make_campaign(tmp_path / "c"))
    assert res.returncode == 0 and "bruck" in res.stdout
    few = make_campaign(tmp_path / "few", sizes=(64,))
    one_line_error(in_process(capsys, "model", few), "too few points to fit")


def _rules():
    R = decide.Rule
    return [R("allgather", 4, 0, 99, "bruck", "measured", "", 1.5), R("allgather", 4, 100, None, "default",
            "measured", "models cross", 1.0), R("allreduce", 4, 0, None, "ring", "model", "", 1.2)]


CANDS = {"allgather": [decide.Candidate("bruck", "brucks", "2")],
         "allreduce": [decide.Candidate("ring", "ring", "4")]}


def test_openmpi_writer_follows_the_classic_format():
    from collkit.backends import openmpi as ompi
    text = ompi_writer.write(_rules(), CANDS, ompi.parse(""), ["test"])
    nums = [ln.split("#", 1)[0].split() for ln in text.splitlines()]
    nums = [t for row in nums for t in row]
    assert all(t == "0" or not t.startswith("0") for t in nums), "a leading zero would be octal"
    rows = [ln.split("#", 1)[0].split() for ln in text.splitlines() if ln.split("#", 1)[0].strip()]
    assert rows[0] == ["2"]                       # two collectives
    assert rows[1] == ["0"] and rows[2] == ["3"]  # allgather: sizes 1, 4, 5
    assert rows[3] == ["1", "1"] and rows[4] == ["0", "0", "0", "0"]
    assert rows[5] == ["4", "2"]
    assert rows[6] == ["0", "2", "0", "0"]
    assert rows[7] == ["400", "0", "0", "0"]      # 100 B blocks x 4 ranks: Open MPI's total size
    assert rows[8] == ["5", "1"] and rows[9] == ["0", "0", "0", "0"]
    assert rows[10] == ["2"]                      # allreduce
    assert ["4", "4", "0", "0"] not in rows[10:] and ["0", "4", "0", "0"] in rows[10:]


def test_mpich_writer_keeps_the_builtin_tree():
    builtin = {"collective=allgather": {"comm_type=intra": {"algorithm=MPIR_Allgather_intra_ring": {}},
                                        "comm_type=inter": {"algorithm=X": {}}},
               "collective=barrier": {"algorithm=MPIR_Barrier_intra_smp": {}},
               "collective=allreduce": {"comm_type=intra": {"algorithm=MPIR_Allreduce_intra_recursive_doubling": {}}}}
    tree = json.loads(mpich_writer.write(_rules(), CANDS, builtin, []))
    assert list(tree) == list(builtin)                              # every collective still there
    assert tree["collective=barrier"] == builtin["collective=barrier"]
    intra = tree["collective=allgather"]["comm_type=intra"]
    assert list(intra) == ["comm_size<=4", "comm_size=any"]        # 'any' last
    assert intra["comm_size=any"] == builtin["collective=allgather"]["comm_type=intra"]
    sizes = intra["comm_size<=4"]
    # allgather sizes are totals: 99 B blocks x 4 ranks
    assert sizes["total_msg_size<=396"] == {"algorithm=MPIR_Allgather_intra_brucks": {}}
    assert sizes["total_msg_size=any"] == builtin["collective=allgather"]["comm_type=intra"]
    red = tree["collective=allreduce"]["comm_type=intra"]["comm_size<=4"]["avg_msg_size=any"]
    assert red["is_commutative=yes"] == {"algorithm=MPIR_Allreduce_intra_ring": {}}


def test_held_out_between_and_beyond():
    ranks, sizes = validate.held_out([2, 4, 6, 8], [8, 32, 128], 4)
    assert ranks == [3, 5, 7, 10] and 16 in sizes and 64 in sizes and max(sizes) > 128
    assert not set(sizes) & {8, 32, 128}


def _launched(alg, medians):
    return replicated.Launched(alg, {k: float(v) for k, v in enumerate(medians)})


def test_exact_mann_whitney():
    # fully separated 5 vs 5: the exact two-sided p is 2 / C(10, 5)
    assert replicated.exact_mann_whitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(2 / 252)
    assert replicated.min_p(5, 5) == pytest.approx(2 / 252)
    assert replicated.exact_mann_whitney([1, 2, 3], [1, 2, 3]) == 1.0
    # ties (midranks) stay exact: 3 vs 3 with one tie across the groups
    p = replicated.exact_mann_whitney([1, 2, 3], [3, 4, 5])
    assert 0.1 < p < 0.5
    # 3 launches a side can never reach alpha 0.01
    assert replicated.exact_mann_whitney([1, 2, 3], [10, 11, 12]) == pytest.approx(0.1)


def test_interleaving_and_split():
    assert [validate.order(k)[0] for k in range(6)] == ["default", "forced", "forced", "default", "default",
                                                         "forced"]
    sel, cmp_ = replicated.selection_repeats(6), replicated.comparison_repeats(6)
    assert sel == [0, 2, 4] and cmp_ == [1, 3, 5] and not set(sel) & set(cmp_)
    # both halves hold both orders
    assert {validate.order(k) for k in sel} == {validate.order(k) for k in cmp_} == {validate.VARIANTS,
                                                                                     validate.VARIANTS[::-1]}


def _synthetic(n_points=20, repeats=10, seed=3, tuned_scale=1.0, noise=0.05, lucky=False):
    """Points where ring is truly best (10 us), bruck equal, the default 2x slower, tuned = ring x scale."""
    rng = np.random.default_rng(seed)
    pts = {}
    for i in range(n_points):
        def draw(level):
            return level * np.exp(noise * rng.standard_normal(repeats))
        ring, bruck = draw(10.0), draw(10.0)
        if lucky:   # bruck is lucky exactly in the selection repeats, ring in the comparison ones
            bruck[0::2] *= 0.5
            ring[1::2] *= 0.5
        pts[("allreduce", 3, 64 * (i + 1))] = {
            "tuned:f": _launched("tuned:f", draw(10.0 * tuned_scale)), "default": _launched("default", draw(20.0)),
            "ring": _launched("ring", ring), "bruck": _launched("bruck", bruck)}
    return pts


def test_replicated_regret_meets_when_tuned_is_best():
    rows, s = replicated.analyse(_synthetic(), 10, lambda c, p, n: "ring")
    assert s.points == 20 and s.repeats == 10
    assert s.vs_best == pytest.approx(1.0, abs=0.06) and s.vs_best_ci[0] <= 1.0 <= s.vs_best_ci[1]
    assert s.meets_regret and s.worse_than_best == 0
    assert s.vs_default == pytest.approx(0.5, abs=0.05) and s.vs_default_ci[1] < 1
    # 10 launches a side: 2 / C(20, 10) x 20 points < 0.01, so per-point tests have power
    assert s.default_testable and s.meets_default is True
    assert all(r.vs_default.verdict == "faster" for r in rows)
    assert all(r.vs_best.verdict == "tie" for r in rows)
    assert s.chosen_points == 20 and s.chosen_differs == 0
    text = validate.report(rows, s)
    assert "criterion 1" in text and "-> MET" in text and "tie" in text and "faster*" in text


def test_replicated_regret_fails_when_tuned_is_slow():
    pts = _synthetic(tuned_scale=3.0)      # tuned 30 us: worse than best (10) and than the default (20)
    rows, s = replicated.analyse(pts, 10)
    assert s.vs_best == pytest.approx(3.0, rel=0.1) and s.vs_best_ci[0] > 1 and not s.meets_regret
    assert s.worse_than_default == 20 and s.meets_default is False
    assert all(r.vs_default.verdict == "slower" for r in rows)
    assert "NOT MET" in validate.report(rows, s)


def test_best_forced_is_chosen_on_other_launches():
    rows, s = replicated.analyse(_synthetic(lucky=True), 10)
    # selection saw bruck lucky, so bruck is "best"; compared on the other launches it is
    # not fast, and the regret is not inflated by the luck of the selection launches
    assert all(r.best == "bruck" for r in rows)
    assert s.vs_best == pytest.approx(1.0, abs=0.06)
    # choosing and comparing on the same launches picks whichever was lucky: a worse regret
    assert s.same_sample_vs_best > 1.2


def test_few_repeats_say_not_shown():
    rows, s = replicated.analyse(_synthetic(repeats=4), 4)
    assert not s.default_testable and s.meets_default is None
    assert "NOT SHOWN" in validate.report(rows, s)
    # no point can be significant, but tuned slower than the default over all points is
    rows, s = replicated.analyse(_synthetic(repeats=4, tuned_scale=3.0), 4)
    assert s.worse_than_default == 0 and s.vs_default_ci[0] > 1 and s.meets_default is False


def test_repeats_bounds(tmp_path, capsys):
    camp = make_campaign(tmp_path / "c")
    for extra in (["--validate", "--repeats", "1"], ["--validate", "--repeats", "99"], ["--repeats", "5"]):
        one_line_error(in_process(capsys, "tune", camp, "--format", "openmpi", "--out", tmp_path / "x.rules", *extra),
                       "--repeats")


def _fake_validation(tmp_path, monkeypatch, stop_at=None):
    """validate.run without a library: a fake runner writes synthetic campaigns, one
    per variant and repeat, in the order validation launches them; at launch number
    `stop_at` it returns as the runner does after Ctrl-C."""
    import tomllib
    from collkit.launch import runner
    from collkit.tune import proof
    from collkit.tune.command import Target
    camp = make_campaign(tmp_path / "c")
    tuned = tmp_path / "t.rules"
    tuned.write_text("1\n")
    launched = []

    def fake_run(spec, out, *args):
        spec_d = tomllib.loads(spec.read_text())
        variant = spec.stem
        launched.append((out.parent.name, variant))
        out.mkdir(parents=True)
        (out / "spec.toml").write_text(spec.read_text())
        (out / "resolved.json").write_text(json.dumps({"platform": {"name": "local"}}))
        if len(launched) == stop_at:
            return validate.INTERRUPTED
        algs = {"default": ["default"], "tuned": [spec_d["backends"]["mpi"][0]], "forced": ["ring", "bruck"]}
        recs = []
        for p in spec_d["ranks"]:
            for n in (int(x.rstrip("B")) for x in spec_d["sizes"]):
                for a in algs[variant]:
                    med = 20.0 if a == "default" else 10.0
                    recs.append(_record("mpi", "openmpi", a, p, n, med, seed=len(launched) * 1000 + p + n))
        (out / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
        return 0

    monkeypatch.setattr(runner, "run", fake_run)
    # the proof runs in the target's own MPI (openmpi5's file in openmpi5): another fails it
    monkeypatch.setattr(proof, "check", lambda fmt, path, ranks, mpi: proof.Proof(mpi == "openmpi", ("proof: ok",)))
    R = decide.Rule
    rules = [R("allgather", p, 0, None, "ring", "measured", at_bytes=[64, 1024]) for p in (2, 4, 6, 8)]
    target = Target("openmpi", "openmpi", "mpi", {}, "Open MPI test")
    return camp, tuned, target, rules, launched


def test_validate_runs_interleaved_repeats(tmp_path, monkeypatch, capsys):
    camp, tuned, target, rules, launched = _fake_validation(tmp_path, monkeypatch)
    assert validate.run([camp], tuned, target, rules, repeats=4) == 0
    assert [v for _, v in launched] == ["default", "tuned", "forced", "forced", "tuned", "default",
                                        "forced", "tuned", "default", "default", "tuned", "forced"]
    assert [r for r, _ in launched] == [f"repeat-{k}" for k in (1, 2, 3, 4) for _ in range(3)]
    spec = tomllib_load(tmp_path / "t.rules.validation" / "specs" / "tuned.toml")
    assert spec["ranks"] == [3, 5, 7, 10] and spec["backends"]["mpi"] == [f"tuned:{tuned.resolve()}"]
    out = capsys.readouterr().out
    assert "criterion 1" in out and (tmp_path / "t.rules.validation" / "report.txt").is_file()
    # 4 ranks x 2 sizes, tuned = ring everywhere
    assert "8 points, 4 repeats" in out
    with pytest.raises(Exception, match="already exists"):
        validate.run([camp], tuned, target, rules, repeats=4)


def test_validate_interrupted_analyses_complete_repeats(tmp_path, monkeypatch, capsys):
    camp, tuned, target, rules, launched = _fake_validation(tmp_path, monkeypatch, stop_at=8)
    assert validate.run([camp], tuned, target, rules, repeats=6) == validate.INTERRUPTED
    assert len(launched) == 8          # nothing launched after the interruption
    out = capsys.readouterr().out
    assert "8 points, 2 repeats" in out and "interrupted: 2 of 6 repeats complete" in out


def test_validate_resume_reruns_the_cut_repeat_and_goes_on(tmp_path, monkeypatch, capsys):
    from collkit.tune.writers import sidecar   # noqa: F401  (the provenance resume reads)
    camp, tuned, target, rules, launched = _fake_validation(tmp_path, monkeypatch, stop_at=8)
    (tmp_path / "t.rules.provenance.json").write_text(json.dumps({"rules": [
        {"collective": r.collective, "ranks": r.ranks, "bytes_lo": r.bytes_lo, "bytes_hi": r.bytes_hi,
         "choice": r.choice, "source": r.source} for r in rules]}))
    assert validate.run([camp], tuned, target, rules, repeats=4) == validate.INTERRUPTED
    vdir = tmp_path / "t.rules.validation"
    assert sorted(p.name for p in vdir.glob("repeat-*")) == ["repeat-1", "repeat-2", "repeat-3"]
    capsys.readouterr()
    first = len(launched)
    assert validate.resume(tuned, target, repeats=5) == 0
    again = launched[first:]
    # repeat 3 (cut after its second variant) is kept aside and run again whole, in its own order
    assert again[:3] == [("repeat-3", "forced"), ("repeat-3", "tuned"), ("repeat-3", "default")]
    assert [r for r, _ in again] == [f"repeat-{k}" for k in (3, 4, 5) for _ in range(3)]
    assert (vdir / "repeat-3.interrupted").is_dir()
    out = capsys.readouterr().out
    assert "resumed at repeat 3 of 5" in out and "8 points, 5 repeats" in out
    with pytest.raises(Exception, match="already complete"):
        validate.resume(tuned, target, repeats=5)
    with pytest.raises(Exception, match="no validation to resume"):
        validate.resume(tmp_path / "other.rules", target, repeats=5)


def tomllib_load(path):
    import tomllib
    return tomllib.loads(path.read_text())


def test_lg():
    assert costs.lg(8) == 3 and math.isclose(costs.terms("allgather", "ring", 4).b, 3)


@pytest.mark.parametrize("name", needs.each_library())
def test_library_reads_the_file_and_rejects_a_broken_copy(tmp_path, name):
    """A generated file runs the whole correctness matrix in the library; a broken
    copy fails it: the file is parsed and consulted (tune/proof.py). openmpi5: Open
    MPI 5.0.11 reads the same classic file 4.1.4 does (docs/tuning-files.md)."""
    from collkit.mpis.known import find
    from collkit.tune import proof
    from collkit.tune.command import _library_target
    fmt = find(name).family
    target = _library_target(fmt, name)
    assert target.mpi == name
    cands = {c: v for c, v in target.candidates.items() if c in ("allreduce", "bcast", "allgather")}
    pick = {c: next(x for x in v if decide._allowed(x, 3)) for c, v in cands.items()}
    R = decide.Rule
    rules = [R(c, 3, 0, 4095, decide.DEFAULT, "measured") for c in pick] + \
            [R(c, 3, 4096, None, pick[c].name, "measured") for c in pick]
    # count requirements: only from where every datatype meets them
    rules = [r for r in rules if r.choice == decide.DEFAULT or r.bytes_lo >= decide.min_bytes(pick[r.collective], 3)]
    path = tmp_path / ("t.rules" if fmt == "openmpi" else "t.json")
    if fmt == "openmpi":
        path.write_text(ompi_writer.write(rules, cands, target.extra, ["test"]))
    else:
        path.write_text(mpich_writer.write(rules, cands, target.extra[0], []))
    shown = proof.check(fmt, path, 3, timeout=240, mpi=name)
    assert shown.ok, "\n".join(shown.lines)
    assert shown.lines[0].startswith(f"{name} with t."), shown.lines[0]     # proven in that very MPI




@needs.openmpi5
def test_open_mpi_5_campaign_tuned_and_proven_in_open_mpi_5(tmp_path, capsys):
    """A campaign of openmpi5 alone gives a rules file for Open MPI 5 without --mpi
    (not for the MPI named openmpi), and the file is proven in 5.0.11 itself: the
    matrix passes with it and fails with its broken copy (what --validate runs first)."""
    from collkit.tune import proof
    camp = make_campaign(tmp_path / "c", backend="mpi", mpi="openmpi5")
    out = tmp_path / "t.rules"
    tuned = in_process(capsys, "tune", camp, "--format", "openmpi", "--out", out)
    assert tuned.returncode == 0, tuned.stderr
    assert "# for Open MPI 5.0.11;" in out.read_text()
    assert json.loads((tmp_path / "t.rules.provenance.json").read_text())["baseline"] == "openmpi5:default"
    assert "ring" in tuned.stdout                      # a rule chose the library's ring somewhere
    shown = proof.check("openmpi", out, 3, timeout=240, mpi="openmpi5")
    assert shown.ok and shown.lines[0].startswith("openmpi5 with t.rules"), "\n".join(shown.lines)


@pytest.mark.parametrize("name", [pytest.param("impi", marks=needs.impi), pytest.param("mpich", marks=needs.mpich)])
def test_an_open_mpi_rules_file_for_a_library_that_does_not_read_it_is_refused(tmp_path, capsys, name):
    """Intel MPI and MPICH would ignore an Open MPI rules file: tuning or validating one
    for them would prove nothing."""
    camp = make_campaign(tmp_path / "c", backend="mpi")
    for extra in ([], ["--validate"]):
        one_line_error(in_process(capsys, "tune", camp, "--format", "openmpi", "--mpi", name,
                                  "--out", tmp_path / "x.rules", *extra),
                       f"--mpi {name} is of the {name} family, which does not read an Open MPI rules file")
    assert not (tmp_path / "x.rules").exists()


@needs.openmpi
def test_preload_accepts_the_collkit_rules(tmp_path, capsys):
    """libcollkit-preload's own parser reads the written rules file at MPI_Init (a
    malformed line would stop the program there) and the matrix passes under it."""
    from ck_trace_build import built
    from collkit.mpis.known import find_install as find
    prog = built("openmpi", "matrix_library")
    out = tmp_path / "rules.txt"
    tuned = in_process(capsys, "tune", make_campaign(tmp_path / "c"), "--format", "collkit", "--out", out)
    assert tuned.returncode == 0, tuned.stderr
    mpi = find("openmpi")
    proc = collkit("preload", "--mpi", "openmpi", "--rules", out, "--",
                   *mpi.launch(4, prog, ["--collective", "allgather", "--algorithm", "allgather/ring", "--level",
                                         "quick", "--no-invalid"]))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "0 failed" in proc.stdout


def _m(alg, p, n, median, seed):
    """One point measured in launch 1 of campaign "c" (every point of a rank count in
    one launch, as MPICH's default and forced algorithms are)."""
    times = median * (1 + 0.01 * np.random.default_rng(seed).standard_normal(30))
    timing = launches.Timing((("c", p),), (float(np.median(times)),), (tuple(times),))
    return data.Measured("local", "mpich", "mpi", "bcast", alg, p, n, float(np.median(times)), None, timing, False,
                         alg)


def _bcast_points(default_small):
    """bcast at 2 and 4 ranks, 64 B and 64 KiB: 'binomial' and 'scatter' forced; the
    default (MPICH's device) takes default_small us at 64 B and 100 us at 64 KiB."""
    pts, seed = [], 0
    for p in (2, 4):
        for n, times in ((64, {"default": default_small, "binomial": 3.0, "scatter": 3.0}),
                         (65536, {"default": 100.0, "binomial": 60.0, "scatter": 100.0})):
            for alg, t in times.items():
                seed += 1
                pts.append(_m(alg, p, n, t, seed))
    return pts


BCAST_CANDS = {"bcast": [decide.Candidate("binomial", "binomial", "binomial"),
                         decide.Candidate("scatter", "scatter", "scatter")]}


def test_mpich_collective_left_to_the_device_where_its_default_wins():
    """A device default 3x faster than every MPIR algorithm at small sizes keeps the
    collective: taking it would lose there (docs/experiments/tuning.md, section 6)."""
    from collkit.tune import mpich_device
    owned = mpich_device.ownership(_bcast_points(default_small=1.0), BCAST_CANDS)
    assert not owned["bcast"].take and owned["bcast"].device_faster == 2 and owned["bcast"].mpir_faster == 2
    assert mpich_device.environment(owned) == {}
    assert "left to MPICH's device" in owned["bcast"].why()


def test_mpich_collective_taken_over_gets_an_mpir_algorithm_everywhere():
    from collkit.tune import mpich_device
    pts = _bcast_points(default_small=3.0)            # small sizes: a tie with the MPIR algorithms
    owned = mpich_device.ownership(pts, BCAST_CANDS)
    assert owned["bcast"].take and owned["bcast"].device_faster == 0
    assert mpich_device.environment(owned) == {"MPIR_CVAR_DEVICE_COLLECTIVES": "percoll",
                                               "MPIR_CVAR_BCAST_DEVICE_COLLECTIVE": "0"}
    # without the device, a "default" leaf would be MPIR's built-in choice, never measured:
    # every measured size gets an algorithm, the tie included
    plain = decide.Decider(pts, BCAST_CANDS, {}).measured()
    assert {d.choice for d in plain if d.bytes == 64} == {decide.DEFAULT}
    owned_rules = decide.Decider(pts, BCAST_CANDS, {}, frozenset({"bcast"})).measured()
    assert decide.DEFAULT not in {d.choice for d in owned_rules}
    assert {d.choice for d in owned_rules if d.bytes == 65536} == {"binomial"}


def test_mpich_writer_keeps_a_collective_left_to_the_default_untouched():
    builtin = {"collective=bcast": {"comm_type=intra": {"algorithm=MPIR_Bcast_intra_binomial": {}}}}
    rules = [decide.Rule("bcast", 4, 0, None, decide.DEFAULT, "measured")]
    assert json.loads(mpich_writer.write(rules, BCAST_CANDS, builtin, [])) == builtin


# Open MPI 4.1's allgather default: recursive doubling at a power of two, Bruck otherwise.
LIB_TRUE = {"bruck": (10.0, 0.003), "recursive_doubling": (5.0, 0.0008), "ring": (10.0, 0.001)}
LIB_CANDS = {"allgather": [decide.Candidate("bruck", "bruck", "2"),
                           decide.Candidate("recursive_doubling", "recursive_doubling", "3", ("pow2_ranks",)),
                           decide.Candidate("ring", "ring", "4")]}


def _lib_time(alg: str, p: int, n: int) -> float:
    t = costs.terms("allgather", alg, p)
    a, b = LIB_TRUE[alg]
    return a * t.a + b * t.b * n


def test_default_at_an_unmeasured_count_is_the_model_of_the_algorithm_it_ran(tmp_path):
    """At 7 ranks the default runs Bruck (recursive doubling needs a power of two): its
    predicted time is Bruck's model there, not the interpolation between Bruck's time at
    6 ranks and recursive doubling's at 8, which would hide how slow it is."""
    recs, seed = [], 0
    for p in RANKS:
        for n in SIZES:
            for alg in LIB_TRUE:
                if alg == "recursive_doubling" and p & (p - 1):
                    continue
                seed += 1
                recs.append(_record("mpi", "openmpi", alg, p, n, _lib_time(alg, p, n), seed=seed))
            seed += 1
            ran = "recursive_doubling" if p & (p - 1) == 0 else "bruck"
            recs.append(_record("mpi", "openmpi", "default", p, n, _lib_time(ran, p, n), seed=seed))
    camp = make_campaign(tmp_path / "c")
    (camp / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    points = data.load([camp]).points
    models, _ = fit.fit_all(points)
    by_name = {(k[3], k[4]): f for k, f in models.items()}
    d = decide.Decider(list(points), LIB_CANDS, by_name)
    assert d.identity("allgather", 6, 262144) == "bruck"
    assert d.identity("allgather", 8, 262144) == "recursive_doubling"
    decisions, default_curve = d.modelled("allgather", 7, list(RANKS), list(SIZES))
    for n in SIZES:
        assert default_curve(n) == pytest.approx(_lib_time("bruck", 7, n), rel=0.05)
    # Bruck is 3x the ring at 256 KiB: the file must not leave 7 ranks to the default there
    assert [x.choice for x in decisions if x.bytes == 262144] == ["ring"]
    # 5 ranks: neighbours 4 (recursive doubling, cannot run at 5) and 6 (Bruck)
    _, default5 = d.modelled("allgather", 5, list(RANKS), list(SIZES))
    assert default5(16384) == pytest.approx(_lib_time("bruck", 5, 16384), rel=0.05)


@pytest.mark.parametrize("extra,expect", [
    ([], "add --validate"),
    (["--validate"], "is missing"),
])
def test_resume_refusals(tmp_path, capsys, extra, expect):
    camp = make_campaign(tmp_path / "c")
    one_line_error(in_process(capsys, "tune", camp, "--format", "openmpi", "--out", tmp_path / "none.rules", "--resume",
                              *extra), expect)


def _allreduce_campaign(path: Path) -> Path:
    """allreduce at 4 and 8 ranks: bine_latency (floating-point results may differ across
    ranks) twice as fast as recursive_doubling, and the default slower than both."""
    path.mkdir()
    (path / "spec.toml").write_text('name = "synthetic"\ncollectives = ["allreduce"]\nsizes = ["64B"]\n'
                                    'ranks = [4]\ndtype = "float"\n\n[measure]\nmin_iterations = 30\n')
    (path / "resolved.json").write_text(json.dumps({"requested": {}, "points": [], "skipped": [],
                                                    "platform": {"name": "local"}}))
    recs, seed = [], 0
    for p in (4, 8):
        for n in SIZES:
            for backend, alg, t in (("collkit", "bine_latency", 5.0), ("collkit", "recursive_doubling", 10.0),
                                    ("mpi", "default", 20.0)):
                seed += 1
                r = _record(backend, "openmpi", alg, p, n, t * (1 + n / 1024), seed=seed)
                r.update(id=r["id"].replace("allgather", "allreduce"), collective="allreduce", dtype="float")
                recs.append(r)
    (path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_tune_chooses_fp_rank_variant_algorithms_only_when_allowed(tmp_path, capsys):
    """bine_latency is the fastest, but its floating-point sums may differ across ranks
    (the registry's fp_rank_variant trait): without --allow-fp-rank-variant the rules
    never name it; with it they do, and carry the setting the preload reads."""
    from collkit.library import registry
    assert next(a for a in registry.load() if a.qualified == "allreduce/bine_latency").traits.fp_rank_variant
    camp = _allreduce_campaign(tmp_path / "c")
    plain, allowed = tmp_path / "plain.rules", tmp_path / "allowed.rules"
    assert in_process(capsys, "tune", camp, "--format", "collkit", "--out", plain).returncode == 0
    text = plain.read_text()
    choices = {ln.choice for ln in ck_writer.parse(text)}
    assert "bine_latency" not in choices and "recursive_doubling" in choices
    assert not ck_writer.allows_fp_rank_variant(text)
    assert in_process(capsys, "tune", camp, "--format", "collkit", "--out", allowed,
                      "--allow-fp-rank-variant").returncode == 0
    text = allowed.read_text()
    assert ck_writer.lookup(ck_writer.parse(text), "allreduce", 4, 64) == "bine_latency"
    assert ck_writer.allows_fp_rank_variant(text)
    assert "allow_fp_rank_variant = true" in text.splitlines()


def test_tune_allow_fp_rank_variant_is_for_collkit_rules(tmp_path, capsys):
    camp = _allreduce_campaign(tmp_path / "c")
    one_line_error(in_process(capsys, "tune", camp, "--format", "openmpi", "--out", tmp_path / "x",
                              "--allow-fp-rank-variant"), "--allow-fp-rank-variant")


def test_collkit_rules_setting_line_is_checked():
    assert ck_writer.parse("allow_fp_rank_variant = true\nallreduce * * ring\n")[0].choice == "ring"
    for bad in ("allow_fp_rank_variant = yes\n", "allow_everything = true\n"):
        with pytest.raises(ValueError):
            ck_writer.parse(bad)
