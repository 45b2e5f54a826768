# The two commands of the README, and a few conveniences.
.PHONY: setup setup-tests run test test-full check-full check-preload-full clean

# collkit and its C parts for Open MPI and MPICH (`collkit build`, build/collkit-cache).
setup:
	bash scripts/setup.sh

# Also what the tests need: Slurm, SimGrid, the ctest trees (build/openmpi, build/mpich).
setup-tests:
	bash scripts/setup.sh --tests

# Main job: the quickstart campaign (examples/quickstart.toml), then its summary.
run: setup
	.venv/bin/collkit run examples/quickstart.toml

# Everything CI runs (12 to 15 minutes on 2 cores once set up, 2026-11-30; docs/testing.md).
test:
	bash scripts/test.sh

# make test and what it leaves out: every rank count of the ctest lists, each
# preload algorithm forced alone, the long program runs. Run before resolving an issue.
test-full:
	bash scripts/test.sh --full

# The exhaustive sweep (level full, both MPIs, p = 1..32): hours, run before resolving.
check-full: setup-tests
	bash scripts/check_full.sh

# libcollkit-preload: every algorithm forced alone on every program, p = 1..8 (hours).
check-preload-full: setup-tests
	bash scripts/check_preload_full.sh

clean:
	rm -rf build
