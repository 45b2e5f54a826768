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
exit $status
