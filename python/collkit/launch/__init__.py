"""Launch: running a campaign (runner) and starting collkit-bench on a platform (local, Slurm, SimGrid)."""
