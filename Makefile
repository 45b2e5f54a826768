# The two commands of the README, and a few conveniences.
.PHONY: setup run test check-full check-preload-full clean

setup:
	bash scripts/setup.sh

# Main job: the quickstart campaign (examples/quickstart.toml), then its summary.
run: setup
	.venv/bin/collkit run examples/quickstart.toml

# Everything CI runs.
test:
	bash scripts/test.sh

# The exhaustive sweep (level full, both MPIs, p = 1..32): hours, run before resolving.
check-full: setup
	bash scripts/check_full.sh

# libcollkit-preload: every algorithm forced alone on every program, p = 1..8 (hours).
check-preload-full: setup
	bash scripts/check_preload_full.sh

clean:
	rm -rf build
