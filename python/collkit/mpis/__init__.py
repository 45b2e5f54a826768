"""The MPIs collkit knows on this machine: one registry, one home.

Every command that names an MPI (`--mpi NAME`, a spec's `mpi = [...]`, a
platform's `[mpi.NAME]`, `tuned:` files, traffic's tracer) resolves it here.
A known MPI is an MPI installation (its compiler wrapper and launcher) plus a
build of collkit's C parts against it, an install prefix whose
collkit-build.json manifest names every program (cmake/CollkitManifest.cmake).
Builds come from two places:

* the package's own (``collkit/native/``), made by ``pip install`` against the
  MPI of MPICC or the mpicc on PATH;
* the build cache (:func:`known.cache_root`), filled by ``collkit build``, one
  registration per name (``mpis/NAME.json``).

Modules: ``identity`` (what an MPI is: its version string, family, build key),
``install`` (how to launch it; where a build's programs are), ``known`` (the
registry), ``build`` (``collkit build``), ``command`` (``collkit build`` and
``collkit mpis`` on the command line)."""
