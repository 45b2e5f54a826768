"""Launchers: how collkit-bench gets started on a platform (local mpirun today)."""
