#!/usr/bin/env bash
# The exhaustive sweep: the full matrix (every datatype and op at every count,
# every root up to p = 8) under both MPIs for every p from 1 to 32.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
for mpi in openmpi mpich; do
    .venv/bin/collkit check --mpi "$mpi" --level full $(for p in $(seq 1 32); do echo -n "-n $p "; done) \
        || status=1
done
# The node-aware algorithms on every virtual node shape (1 to 4 ranks per node,
# uneven where k does not divide p) at every p (CI covers each p with one k).
for k in 1 2 3 4; do
    for mpi in openmpi mpich; do
        COLLKIT_RANKS_PER_NODE=$k .venv/bin/collkit check --mpi "$mpi" --level standard \
            --algorithm parallel_rings --algorithm bine_hierarchical \
            $(for p in $(seq 1 32); do echo -n "-n $p "; done) || status=1
    done
done
# Simulated times at SimGrid's default precision against those from before the
# speed work of issue #21 (tests/python/test_sim_times.py; about 30 s).
COLLKIT_FULL_TESTS=1 .venv/bin/python -m pytest -q tests/python/test_sim_times.py || status=1
exit $status
