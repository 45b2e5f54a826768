# The two commands of the README, and a few conveniences.
.PHONY: setup run test check-full clean

setup:
	bash scripts/setup.sh

# Main job: the correctness matrix of every algorithm at 8 ranks under Open MPI.
run: setup
	.venv/bin/collkit check -n 8

# Everything CI runs.
test:
	bash scripts/test.sh

# The exhaustive sweep (level full, both MPIs, p = 1..32): hours, run before resolving.
check-full: setup
	bash scripts/check_full.sh

clean:
	rm -rf build
