#!/usr/bin/env bash
# The Bine paper's table on one simulated machine under all of the paper's conditions,
# once per allocation draw (issue #53; docs/experiments/bine-paper-tables.md, "Several
# draws"): the machine's fullest platform variant (lumi-full, leonardo-full,
# marenostrum5-loggp) with `seed = S` for each SEED, the vector and blocks specs
# (4-512 nodes), one table per seed, and OUT/seeds.md: every seed's figures side by
# side with their median and how many collectives' % win lies within 15 points of
# the paper's, per seed and on the median.
#
#   bash scripts/bine_paper_seeds.sh MACHINE OUT SEED...
#
# MACHINE: lumi, leonardo or marenostrum5; OUT must not exist; each SEED a whole number
# from 0 to 2^31-1, given once. Host time per campaign goes to OUT/host-time.txt.
set -euo pipefail
usage() { echo "usage: bash scripts/bine_paper_seeds.sh lumi|leonardo|marenostrum5 OUT SEED..." >&2; exit 2; }
[[ $# -ge 3 ]] || usage
machine=$1 out=$2
shift 2
case $machine in
    lumi|leonardo) variant=full ;;
    marenostrum5) variant=loggp ;;   # the fat tree has no global-link keys
    *) echo "bine_paper_seeds.sh: unknown machine '$machine'; choose lumi, leonardo or marenostrum5" >&2; exit 2 ;;
esac
declare -A seen=()
for s in "$@"; do
    [[ $s =~ ^(0|[1-9][0-9]{0,9})$ ]] && (( s <= 2147483647 )) || {
        echo "bine_paper_seeds.sh: seed '$s' is not a whole number from 0 to 2147483647" >&2; exit 2; }
    [[ -z ${seen[$s]:-} ]] || { echo "bine_paper_seeds.sh: seed $s is given twice" >&2; exit 2; }
    seen[$s]=1
done
[[ ! -e $out ]] || { echo "bine_paper_seeds.sh: $out already exists; give a new directory" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/examples/experiments/bine-paper
base=$dir/$machine-$variant.toml
grep -Eq '^allocation = \{ draw = "scheduler", seed = [0-9]+' "$base" || {
    echo "bine_paper_seeds.sh: $base has no 'allocation = { draw = \"scheduler\", seed = N' line to vary" >&2; exit 2; }
collkit=$root/.venv/bin/collkit
source "$root/scripts/bine_paper_campaign.sh"
mkdir -p "$out"
out=$(cd "$out" && pwd)
steps=()
for s in "$@"; do
    platform=$out/$machine-$variant-seed$s.toml
    sed -E "s/^(allocation = \{ draw = \"scheduler\", seed = )[0-9]+/\1$s/; s/^name = \"(.*)\"/name = \"\1-seed$s\"/" \
        "$base" > "$platform"
    campaigns=()
    for spec in vector blocks; do
        bine_campaign "$machine-$variant seed $s $spec" "$dir/$spec.toml" "$platform" "$out/seed$s/$spec" \
            "seed$s-$spec.log"
        campaigns+=("$out/seed$s/$spec")
    done
    "$root/.venv/bin/python" "$root/scripts/bine_paper_tables.py" "${campaigns[@]}" \
        --csv "$out/table-seed$s.csv" > "$out/table-seed$s.md"
    steps+=("seed $s=$out/table-seed$s.csv")
done
"$root/.venv/bin/python" "$root/scripts/bine_paper_steps.py" --median "${steps[@]}" > "$out/seeds.md"
echo "== done $(date -u +%T): $out/seeds.md"
