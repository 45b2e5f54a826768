"""collkit: design, verify, benchmark and tune MPI collective algorithms."""

__version__ = "0.1.0"
