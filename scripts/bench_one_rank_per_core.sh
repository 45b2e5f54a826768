#!/usr/bin/env bash
# libcollkit against the libraries at one rank per core (issue #33), on a machine
# with at least as many cores as the spec's largest rank count:
#   1. collkit build for the machine's Open MPI (the mpicc on PATH) and for an
#      MPICH prefix, into a build cache of their own;
#   2. collkit-op-bench: the local reduction against MPI_Reduce_local and memcpy;
#   3. scripts/bench_same_name.py: every same-name pair of SPEC side by side,
#      with ranks bound to cores (platform file written here).
#
#   scripts/bench_one_rank_per_core.sh MPICH_PREFIX OUTDIR [SPEC] [ROUNDS]
#
# SPEC defaults to examples/experiments/same-name.toml (the eight collectives,
# 8 B to 2 MiB, at 2, 4, 8 and 16 ranks). Writes into
# OUTDIR: op.md, op.jsonl, same-name.md, same-name.json, platform.toml, and
# logs. Timings, not a test: the numbers go into docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
mpich=${1:?usage: $0 MPICH_PREFIX OUTDIR [SPEC] [ROUNDS]}
out=${2:?usage: $0 MPICH_PREFIX OUTDIR [SPEC] [ROUNDS]}
spec=${3:-examples/experiments/same-name.toml}
rounds=${4:-8}
mkdir -p "$out"
PY=${PYTHON:-python3}
export PYTHONPATH=$PWD/python COLLKIT_CACHE=${COLLKIT_CACHE:-$PWD/build/cache-one-rank-per-core}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1

t0=$SECONDS
"$PY" -m collkit build --mpi openmpi --mpicc "$(command -v mpicc)" --replace >"$out/build-openmpi.log" 2>&1
"$PY" -m collkit build --mpi mpich --prefix "$mpich" --replace >"$out/build-mpich.log" 2>&1
echo "builds: $((SECONDS - t0)) s"
"$PY" -m collkit mpis | tee "$out/mpis.txt"

# Ranks bound one per core, no progress throttling (that is for oversubscribed
# runs on small machines: MPICH's default here).
cat >"$out/platform.toml" <<'EOF'
name = "one-rank-per-core"

[mpi.openmpi]
args = ["--bind-to", "core", "--map-by", "core"]
env = { OMPI_ALLOW_RUN_AS_ROOT = "1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM = "1" }

[mpi.mpich]
args = ["-bind-to", "core"]
env = {}
EOF

field() {  # field MPI KEY: a value of `collkit mpis --json`
    "$PY" -m collkit mpis --json | "$PY" -c \
        "import json, sys; print(next(m[sys.argv[2]] for m in json.load(sys.stdin)['mpis'] if m['name'] == sys.argv[1]))" "$1" "$2"
}
for mpi in openmpi mpich; do
    t0=$SECONDS
    "$PY" scripts/bench_op.py "$(field $mpi build)/bin/collkit-op-bench" --rounds 8 --min-ms 10 \
        --launcher "$(field $mpi mpirun) -n 1" --markdown "$out/op-$mpi.md" --raw "$out/op-$mpi.jsonl" >/dev/null
    echo "op bench $mpi: $((SECONDS - t0)) s; $(head -1 "$out/op-$mpi.md")"
done

t0=$SECONDS
"$PY" scripts/bench_same_name.py "$spec" --platform "$out/platform.toml" --rounds "$rounds" --timeout 120 \
    --launches 2 --out "$out/same-name.json" --markdown "$out/same-name.md" 2> >(tee "$out/same-name.log" >&2) >/dev/null
echo "same-name: $((SECONDS - t0)) s"
sed -n 1,16p "$out/same-name.md"
