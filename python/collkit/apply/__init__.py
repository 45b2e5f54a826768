"""Applying collkit's answers to programs that already exist: ``collkit preload``
runs an unmodified MPI program on libcollkit's algorithms (docs/preload.md)."""
