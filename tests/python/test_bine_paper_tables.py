"""collkit.report.bine_paper and scripts/bine_paper_tables.py: the Bine paper's Tables 3-5
arithmetic on tiny synthetic campaigns, every expected figure worked out by hand."""

from __future__ import annotations

import csv
import importlib.util
import json
import lzma
import sys
from pathlib import Path

import pytest

import needs
from collkit.analysis.results import COLUMNS
from collkit.report import bine_paper as bp
from collkit.topology import synthetic

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("bine_paper_tables", REPO / "scripts" / "bine_paper_tables.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bine_paper_tables"] = mod
    spec.loader.exec_module(mod)
    return mod


def write_campaign(d: Path, machine: synthetic.Machine, rows: list[tuple], placement: list | dict | None = None,
                   allocation_file: str = "", message_costs="none") -> Path:
    """A campaign directory in `collkit run`'s layout, cut to what the table reads:
    results.csv (rows: collective, algorithm, ranks, n in bytes, time_us, status) and
    metadata.json's platform and simgrid settings (the shape of bine-sim/issue21's)."""
    d.mkdir(parents=True)
    with open(d / "results.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for coll, alg, ranks, n, t, status in rows:
            # block collectives record one rank's block; n is the p blocks together
            size = n if coll in ("bcast", "reduce", "allreduce") else n // ranks
            rec = {c: "" for c in COLUMNS}
            rec.update(collective=coll, backend="collkit", mpi="smpi", algorithm=alg, ranks=ranks, count=size,
                       bytes=size, dtype="int8", op="sum", root=0, in_place=0, status=status,
                       iterations=1 if status == "ok" else 0, time_median_us="" if t is None else t)
            w.writerow(rec)
    meta = {"platform": {"name": f"sim:{machine.name}", "source": f"sim:{machine.name}"},
            "simgrid": {"settings": {"machine": machine.describe(), "ppn": 1, "placement": "block",
                                     "allocation_file": allocation_file, "network_model": "CM02",
                                     "crosstraffic": False, "extra_cfg": [], "message_costs": message_costs}}}
    if placement is not None:
        meta["placement"] = placement
    (d / "metadata.json").write_text(json.dumps(meta))
    return d


LUMI = synthetic.preset("lumi-like")
MIB = 1 << 20

# allreduce on sim:lumi-like (-> the paper's lumi); the pairs are bine_latency vs
# recursive_doubling and bine_bandwidth vs rabenseifner
TIMES = [
    # (8, 64 B): 8 vs 10 -> win, t_base / t_bine = 1.25. ring and bine_bandwidth_seg are
    # faster but in no pair: they must not count.
    ("allreduce", "bine_latency", 8, 64, 8.0, "ok"),
    ("allreduce", "recursive_doubling", 8, 64, 10.0, "ok"),
    ("allreduce", "ring", 8, 64, 1.0, "ok"),
    ("allreduce", "bine_bandwidth_seg", 8, 64, 1.0, "ok"),
    # (8, 1 MiB): both pairs ran; fastest Bine = bine_bandwidth 100, fastest base =
    # recursive_doubling 200 -> win, ratio 2.0
    ("allreduce", "bine_latency", 8, MIB, 500.0, "ok"),
    ("allreduce", "recursive_doubling", 8, MIB, 200.0, "ok"),
    ("allreduce", "bine_bandwidth", 8, MIB, 100.0, "ok"),
    ("allreduce", "rabenseifner", 8, MIB, 300.0, "ok"),
    # (16, 64 B): 20 vs 10 -> loss, t_bine / t_base = 2.0
    ("allreduce", "bine_latency", 16, 64, 20.0, "ok"),
    ("allreduce", "recursive_doubling", 16, 64, 10.0, "ok"),
    # (16, 1 MiB): 100.5 vs 100, 0.5 % apart -> neither
    ("allreduce", "bine_bandwidth", 16, MIB, 100.5, "ok"),
    ("allreduce", "rabenseifner", 16, MIB, 100.0, "ok"),
    # (16, 2 KiB): only the Bine side ran (its counterpart failed) -> left out
    ("allreduce", "bine_latency", 16, 2048, 50.0, "ok"),
    ("allreduce", "recursive_doubling", 16, 2048, None, "failed"),
]


def test_win_loss_gain_by_hand(tmp_path):
    c = bp.open_campaign(write_campaign(tmp_path / "c", LUMI, TIMES), {})
    assert c.machine == "lumi"
    configs, left = bp.configurations([c])
    assert [(x.nodes, x.n, x.outcome) for x in configs] == [
        (8, 64, "win"), (8, MIB, "win"), (16, 64, "loss"), (16, MIB, "neither")]
    assert [(x.nodes, x.n, x.ran) for x in left] == [(16, 2048, ("bine_latency",))]
    (row,) = bp.summarise(configs, left)
    assert (row.configs, row.left_out) == (4, 1)
    assert row.win == pytest.approx(50.0)      # 2 of 4
    assert row.loss == pytest.approx(25.0)     # 1 of 4; the 0.5 % one is neither
    # geometric mean of 1.25 and 2.0 = sqrt(2.5) = 1.5811388 -> 58.11388 %
    assert row.gain_avg == pytest.approx(58.11388, abs=1e-4)
    assert row.gain_max == pytest.approx(100.0)
    assert row.drop_avg == pytest.approx(100.0)
    assert row.drop_max == pytest.approx(100.0)


def test_script_csv_and_markdown(tmp_path, script, capsys):
    d = write_campaign(tmp_path / "c", LUMI, TIMES)
    out = tmp_path / "tables.csv"
    assert script.main([str(d), "--no-traffic", "--csv", str(out)]) == 0
    text = capsys.readouterr().out
    assert "### lumi" in text
    assert "| allreduce | bine_latency vs recursive_doubling<br>bine_bandwidth vs rabenseifner | 4 | 1 | " \
           "67 / 50.0 | 7 / 58.1 | 67 / 100.0 | 14 / 25.0 |" in text
    assert "lumi allreduce 16 nodes, n = 2048 B: only bine_latency" in text
    with open(out, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["machine", "collective", "paper_win", "sim_win", "paper_loss", "sim_loss", "paper_gain_avg",
                       "sim_gain_avg", "paper_traffic_red_avg", "sim_traffic_red_avg"]
    by = {(r[0], r[1]): r for r in rows[1:]}
    assert len(by) == 8      # every collective of the machine, the paper's figures beside
    # paper: lumi allreduce 67 % win, 14 % loss, 7 % gain, 11 % traffic reduction (data/bine-paper/tables.csv)
    assert by["lumi", "allreduce"] == ["lumi", "allreduce", "67", "50.0", "14", "25.0", "7", "58.1", "11", ""]
    # no configuration of bcast: the simulated cells stay empty
    assert by["lumi", "bcast"] == ["lumi", "bcast", "67", "", "27", "", "25", "", "88", ""]


# A tiny fat tree: two pods of four nodes (XGFT(2; 4,2; 1,1)), node i in pod i // 4.
TINY = synthetic.from_table({"kind": "fattree", "down": [4, 2], "up": [1, 1], "link_bw": 1e9,
                             "link_lat": 1e-6, "name": "tiny-pods"}, "test")
# reduce/binomial_doubling runs bcast/binomial_halving's tree backwards, and reduce/bine
# bcast/bine's: the same links crossed as the bcast traces below, in the other direction
REDUCE = [("reduce", alg, p, 64, t, "ok") for p in (4, 8) for alg, t in (("bine", 1.0), ("binomial_doubling", 2.0))]


@needs.ck_trace
def test_traffic_by_hand(tmp_path):
    """Bytes crossing pods, reduce to rank 0: the bcast trees backwards (bcast traces:
    binomial_halving sends 0->4, 0->2, 0->1, 2->3, 4->6, 4->5, 6->7 at 8 ranks and 0->2,
    0->1, 2->3 at 4; bine 0->3, 0->7, 0->1, 3->4, 3->2, 4->5, 7->6 at 8 and 0->3, 0->1,
    3->2 at 4; reduce/binomial_doubling and reduce/bine send the same pairs the other way;
    every message n bytes).

    Block placement (no recorded map): 8 ranks on nodes 0-7, pods {0-3} {4-7}:
    binomial_doubling crosses once (4->0), bine twice (7->0, 4->3): reduction 1 - 2/1 =
    -100 %. 4 ranks sit in pod 0: not counted.

    Allocation file node0,node4,node1,node5,node2,node6,node3,node7 (rank r in pod r % 2):
    at 4 ranks binomial_doubling crosses in 1->0 and 3->2 (2n), bine in all three (3n):
    -50 %; at 8 ranks binomial_doubling crosses in 1->0, 3->2, 5->4, 7->6 (4n), bine in all
    seven (7n): -75 %. Block placement would have given -100 % and nothing at 4 ranks, so
    the allocation is what was counted."""
    block = write_campaign(tmp_path / "block", TINY, REDUCE)
    alloc = tmp_path / "alloc.txt"
    alloc.write_text("".join(f"node{i}\n" for i in (0, 4, 1, 5, 2, 6, 3, 7)))
    other = synthetic.from_table({"kind": "fattree", "down": [4, 2], "up": [1, 1], "link_bw": 1e9,
                                  "link_lat": 1e-6, "name": "tiny-alloc"}, "test")
    on_alloc = write_campaign(tmp_path / "alloc", other, REDUCE, allocation_file=str(alloc))
    names = bp.parse_machine_names(["lumi=sim:tiny-pods", "leonardo=sim:tiny-alloc"], {"lumi", "leonardo"})
    campaigns = [bp.open_campaign(block, names), bp.open_campaign(on_alloc, names)]
    configs, left = bp.configurations(campaigns)
    red = bp.traffic_reductions(campaigns, configs)
    got = {(c.machine, c.nodes): v for c, v in red.items()}
    assert got == {("lumi", 8): pytest.approx(-100.0), ("leonardo", 4): pytest.approx(-50.0),
                   ("leonardo", 8): pytest.approx(-75.0)}
    rows = {r.machine: r for r in bp.summarise(configs, left, red)}
    assert (rows["lumi"].traffic_avg, rows["lumi"].traffic_max, rows["lumi"].traffic_configs) == (
        pytest.approx(-100.0), pytest.approx(-100.0), 1)
    assert (rows["leonardo"].traffic_avg, rows["leonardo"].traffic_max) == (
        pytest.approx(-62.5), pytest.approx(-50.0))
    by = bp.traffic_by_nodes(red)
    assert by == {("lumi", "reduce"): {8: pytest.approx(-100.0)},
                  ("leonardo", "reduce"): {4: pytest.approx(-50.0), 8: pytest.approx(-75.0)}}
    text = bp.traffic_by_nodes_markdown(by)
    assert "| reduce | -50.0 | -75.0 |" in text and "| reduce | -100.0 |" in text


def test_recorded_rank_map_is_the_placement(tmp_path):
    """A campaign whose metadata records where its ranks ran (here packed away by
    scripts/pack_experiment_data.py into the data root's placements/) is placed on those
    hosts, not by block order: rank r on node 7 - r, so ranks 0-3 sit in pod 1 (nodes
    4-7) and ranks 4-7 in pod 0."""
    hosts = [f"node{7 - r}" for r in range(8)]
    root = tmp_path / "data"
    (root / "placements").mkdir(parents=True)
    (root / "placements" / "abc.json.xz").write_bytes(
        lzma.compress(json.dumps([{"mpi": "smpi", "ranks": 8, "hosts": sorted(hosts), "rank_to_host": hosts}]).encode()))
    d = write_campaign(root / "bine-sim" / "c", TINY, REDUCE, placement={"packed": "placements/abc.json.xz"})
    c = bp.open_campaign(d, {"tiny-pods": "lumi"})
    assert c.rank_hosts == {8: tuple(hosts)}
    topo, pl = bp.job_placement(c, 8)
    assert [topo.nodes[i].name for i in pl.rank_node] == hosts
    assert list(topo.node_group[pl.rank_node]) == [1, 1, 1, 1, 0, 0, 0, 0]
    # without the record, the launcher's block order: rank r on node r
    topo, pl = bp.job_placement(bp.open_campaign(write_campaign(tmp_path / "b", TINY, REDUCE), {"tiny-pods": "lumi"}), 8)
    assert list(topo.node_group[pl.rank_node]) == [0, 0, 0, 0, 1, 1, 1, 1]


# ----------------------------------------------------------------------------- bad input

def _fails(script, capsys, argv, *words):
    assert script.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    for w in words:
        assert w in err, err


def test_not_a_campaign(tmp_path, script, capsys):
    d = tmp_path / "empty"
    d.mkdir()
    _fails(script, capsys, [str(d), "--no-traffic"], str(d), "not a campaign directory", "collkit run --out")


def test_no_bine_pair(tmp_path, script, capsys):
    d = write_campaign(tmp_path / "c", LUMI, [("allreduce", "recursive_doubling", 8, 64, 1.0, "ok"),
                                              ("allreduce", "ring", 8, 64, 2.0, "ok")])
    _fails(script, capsys, [str(d), "--no-traffic"], "no Bine pair", str(d), "allreduce: bine_latency vs recursive_doubling")


def test_a_pair_swapped_in_counts_its_algorithms(tmp_path, script, capsys):
    """--pair allreduce=bine_latency:ring, by hand from TIMES: ring ran only at (8, 64),
    where bine_latency's 8.0 against ring's 1.0 is a loss (drop 8 / 1 - 1 = 700 %); the
    three other configurations where bine_latency ran have no ring point and are left out;
    (16, 1 MiB) ran neither."""
    d = write_campaign(tmp_path / "c", LUMI, TIMES)
    assert script.main([str(d), "--no-traffic", "--pair", "allreduce=bine_latency:ring"]) == 0
    text = capsys.readouterr().out
    assert ("| allreduce | bine_latency vs ring | 1 | 3 | 67 / 0.0 | 7 / 0.0 | 67 / 0.0 | 14 / 100.0 | "
            "9 / 700.0 | 13 / 700.0 |") in text


@pytest.mark.parametrize("pair", ["allreduce", "allreduce=bine_latency", "fft=bine:ring", "allreduce=bine latency:ring",
                                  "allreduce=:ring"])
def test_a_malformed_pair(tmp_path, script, capsys, pair):
    d = write_campaign(tmp_path / "c", LUMI, TIMES)
    _fails(script, capsys, [str(d), "--no-traffic", "--pair", pair], f"--pair {pair!r}", "COLLECTIVE=BINE:BASE")


def test_unknown_machine_name(tmp_path, script, capsys):
    d = write_campaign(tmp_path / "c", LUMI, TIMES)
    _fails(script, capsys, [str(d), "--no-traffic", "--machine-name", "fugaku=sim:lumi-like"],
           "--machine-name fugaku=sim:lumi-like", "choose one of leonardo, lumi, marenostrum5")


def test_machine_the_paper_does_not_have(tmp_path, script, capsys):
    d = write_campaign(tmp_path / "c", synthetic.preset("dragonfly-small"), TIMES)
    _fails(script, capsys, [str(d), "--no-traffic"], str(d), "dragonfly-small", "--machine-name NAME=sim:dragonfly-small")


def test_two_models_of_one_machine(tmp_path, script, capsys):
    a = write_campaign(tmp_path / "a", LUMI, TIMES)
    b = write_campaign(tmp_path / "b", LUMI, TIMES, message_costs={"model": "loggp"})
    _fails(script, capsys, [str(a), str(b), "--no-traffic"], str(a), str(b), "one table per model")


def test_paper_figures_are_data():
    """The paper's figures come from data/bine-paper/tables.csv: 3 machines x 8 collectives."""
    paper = bp.read_paper(REPO / "data" / "bine-paper" / "tables.csv")
    assert len(paper) == 24
    assert paper["leonardo", "bcast"]["win_pct"] == 94
    assert paper["marenostrum5", "gather"]["traffic_red_avg_pct"] == -8


@pytest.mark.parametrize("script, args, message", [
    ("run", ["fugaku", "OUT"], "unknown machine 'fugaku'; choose lumi, leonardo or marenostrum5"),
    ("run", ["lumi", "OUT", "--2048"], "unknown option '--2048'; the only option is --1024"),
    ("run", ["lumi", "EXISTS"], "already exists; give a new directory"),
    ("run", ["lumi"], "usage: bash scripts/bine_paper_run.sh"),
    ("seeds", ["fugaku", "OUT", "1"], "unknown machine 'fugaku'; choose lumi, leonardo or marenostrum5"),
    ("seeds", ["lumi", "OUT"], "usage: bash scripts/bine_paper_seeds.sh"),
    ("seeds", ["lumi", "OUT", "1", "x2"], "seed 'x2' is not a whole number from 0 to 2147483647"),
    ("seeds", ["lumi", "OUT", "2147483648"], "seed '2147483648' is not a whole number"),
    ("seeds", ["lumi", "OUT", "3", "3"], "seed 3 is given twice"),
    ("seeds", ["lumi", "EXISTS", "1"], "already exists; give a new directory"),
])
def test_the_run_scripts_refuse_bad_input_in_one_line(tmp_path, script, args, message):
    """scripts/bine_paper_run.sh and bine_paper_seeds.sh (the documented reproductions)
    check their input before they run anything: one line on stderr, exit status 2,
    nothing written."""
    import subprocess
    (tmp_path / "exists").mkdir()
    argv = [str(tmp_path / "out") if a == "OUT" else str(tmp_path / "exists") if a == "EXISTS" else a for a in args]
    got = subprocess.run(["bash", str(REPO / "scripts" / f"bine_paper_{script}.sh"), *argv], capture_output=True,
                         text=True, timeout=60)
    assert got.returncode == 2
    assert got.stderr.count("\n") == 1 and message in got.stderr, got.stderr
    assert not (tmp_path / "out").exists()


def test_the_settings_one_at_a_time(tmp_path):
    """scripts/bine_paper_steps.py: each step's figures beside the paper's, and how many
    collectives' % win lie within 15 points of the paper's (by hand: lumi allreduce 67,
    bcast 67; step a 30.0 and 60.0 -> 1 of 2; step b 66.0 and 82.0 -> 2 of 2)."""
    def table(path, allreduce, bcast):
        rows = [",".join(bp.CSV_COLUMNS),
                f"lumi,allreduce,67,{allreduce},14,10.0,7,5.0,11,4.0",
                f"lumi,bcast,67,{bcast},27,20.0,25,30.0,88,5.0"]
        path.write_text("\n".join(rows) + "\n")
        return bp.read_side_by_side(path)
    text = bp.steps_markdown([("a", table(tmp_path / "a.csv", "30.0", "60.0")),
                              ("b", table(tmp_path / "b.csv", "66.0", "82.0"))])
    assert "| allreduce | % win | 67 | 30.0 | 66.0 |" in text
    assert "| bcast | traffic red. | 88 | 5.0 | 5.0 |" in text
    assert "| **% win within 15 points** | | | 1 of 2 | 2 of 2 |" in text
    (tmp_path / "bad.csv").write_text("machine,collective\nlumi,bcast\n")
    with pytest.raises(bp.UserError, match="not a table bine_paper_tables.py wrote"):
        bp.read_side_by_side(tmp_path / "bad.csv")


def test_the_median_over_draws(tmp_path):
    """scripts/bine_paper_steps.py --median: each simulated figure's median over draws
    (by hand, lumi allreduce's % win over three seeds 30.0, 66.0, 40.0 -> 40.0; bcast's
    60.0, 82.0, 70.0 -> 70.0, within 15 of 67; allreduce's 40.0 is not: 1 of 2 on the
    median, where the seeds give 1, 2 and 1 of 2); a draw without a traffic figure is
    left out of that figure's median (5.0 and 7.0 -> 6.0)."""
    import subprocess

    def table(name, allreduce, bcast, traffic):
        path = tmp_path / f"{name}.csv"
        path.write_text("\n".join([",".join(bp.CSV_COLUMNS),
                                   f"lumi,allreduce,67,{allreduce},14,10.0,7,5.0,11,{traffic}",
                                   f"lumi,bcast,67,{bcast},27,20.0,25,30.0,88,{traffic}"]) + "\n")
        return f"{name}={path}"
    args = [table("s1", "30.0", "60.0", "5.0"), table("s2", "66.0", "82.0", "7.0"), table("s3", "40.0", "70.0", "")]
    got = subprocess.run([sys.executable, str(REPO / "scripts" / "bine_paper_steps.py"), "--median", *args],
                         capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    assert "| allreduce | % win | 67 | 30.0 | 66.0 | 40.0 | 40.0 |" in got.stdout
    assert "| bcast | % win | 67 | 60.0 | 82.0 | 70.0 | 70.0 |" in got.stdout
    assert "| bcast | traffic red. | 88 | 5.0 | 7.0 | – | 6.0 |" in got.stdout
    assert "| **% win within 15 points** | | | 1 of 2 | 2 of 2 | 1 of 2 | 1 of 2 |" in got.stdout
    bad = subprocess.run([sys.executable, str(REPO / "scripts" / "bine_paper_steps.py"), args[0], "--median"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--median" in bad.stderr, bad.stderr


def test_the_times_file_keeps_every_ok_time(tmp_path):
    """scripts/bine_paper_times.py: the compact record of a run's simulated times."""
    import subprocess
    write_campaign(tmp_path / "run" / "full" / "vector", LUMI, TIMES)
    got = subprocess.run([sys.executable, str(REPO / "scripts" / "bine_paper_times.py"), str(tmp_path / "run"),
                          str(tmp_path / "t.csv.xz")], capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    rows = list(csv.DictReader(lzma.decompress((tmp_path / "t.csv.xz").read_bytes()).decode().splitlines()))
    ok = [t for t in TIMES if t[5] == "ok"]
    assert len(rows) == len(ok) and {r["variant"] for r in rows} == {"full"} and {r["spec"] for r in rows} == {"vector"}
    assert sorted(float(r["time_us"]) for r in rows) == sorted(float(t[4]) for t in ok)
    bad = subprocess.run([sys.executable, str(REPO / "scripts" / "bine_paper_times.py"), str(tmp_path / "none"),
                          str(tmp_path / "u.csv.xz")], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "holds no VARIANT/SPEC/results.csv" in bad.stderr
