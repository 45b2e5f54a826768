"""Library: libcollkit's algorithm registry and the MPI installs on this machine."""
