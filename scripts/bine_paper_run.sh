#!/usr/bin/env bash
# The Bine paper's Tables 3-5 on one simulated machine (issue #53;
# docs/experiments/bine-paper-tables.md): every platform variant of the machine
# (examples/experiments/bine-paper/MACHINE-VARIANT.toml, from the plain machine to
# all of the paper's conditions, one setting added at a time, then "fastlocal": local
# copies and reductions 10x faster, an experiment outside the paper) times every spec
# (vector and blocks, 4-512 nodes; with --1024 also the 1,024-node specs), then
# one table per variant (with the traffic reduction of every node count).
#
#   bash scripts/bine_paper_run.sh MACHINE OUT [--1024]
#
# MACHINE: lumi, leonardo or marenostrum5. OUT must not exist. Host time of each
# campaign (GNU time: wall, user, sys) goes to OUT/host-time.txt, the tables to
# OUT/table-VARIANT.md and OUT/table-VARIANT.csv, all variants side by side to OUT/steps.md, every
# simulated time to OUT/times.csv.xz.
set -euo pipefail
usage() { echo "usage: bash scripts/bine_paper_run.sh lumi|leonardo|marenostrum5 OUT [--1024]" >&2; exit 2; }
[[ $# -eq 2 || $# -eq 3 ]] || usage
machine=$1 out=$2 big=${3:-}
[[ -z $big || $big == --1024 ]] || { echo "bine_paper_run.sh: unknown option '$big'; the only option is --1024" >&2; exit 2; }
case $machine in
    lumi|leonardo) variants=(block drawn loggp glat full fastlocal) ;;
    marenostrum5) variants=(block drawn loggp fastlocal) ;;   # the fat tree has no global-link keys
    *) echo "bine_paper_run.sh: unknown machine '$machine'; choose lumi, leonardo or marenostrum5" >&2; exit 2 ;;
esac
[[ ! -e $out ]] || { echo "bine_paper_run.sh: $out already exists; give a new directory" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/examples/experiments/bine-paper
specs=(vector blocks)
[[ -z $big ]] || specs+=(vector-1024 blocks-1024)
collkit=$root/.venv/bin/collkit
source "$root/scripts/bine_paper_campaign.sh"
mkdir -p "$out"
out=$(cd "$out" && pwd)
for v in "${variants[@]}"; do
    campaigns=()
    for s in "${specs[@]}"; do
        bine_campaign "$machine-$v $s" "$dir/$s.toml" "$dir/$machine-$v.toml" "$out/$v/$s" "$v-$s.log"
        campaigns+=("$out/$v/$s")
    done
    "$root/.venv/bin/python" "$root/scripts/bine_paper_tables.py" "${campaigns[@]}" \
        --by-nodes --csv "$out/table-$v.csv" > "$out/table-$v.md"
done
steps=()
for v in "${variants[@]}"; do steps+=("$v=$out/table-$v.csv"); done
"$root/.venv/bin/python" "$root/scripts/bine_paper_steps.py" "${steps[@]}" > "$out/steps.md"
"$root/.venv/bin/python" "$root/scripts/bine_paper_times.py" "$out" "$out/times.csv.xz"
echo "== done $(date -u +%T): tables in $out/table-*.md, the settings one at a time in $out/steps.md"
