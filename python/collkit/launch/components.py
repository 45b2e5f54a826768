"""The `component` field of a library point's record: which of the library's own
components (Open MPI's coll/tuned, han, self, ...) serves its collective in that
launch. The backend answers (MPIBackend.serving_components), by a launch of its own
at the group's rank count and environment, asked once per such group."""

from __future__ import annotations

from collkit import backends
from collkit.campaign.platform import PlatformMPI
from collkit.campaign.points import Point
from collkit.common.errors import UserError


class Components:
    """Per (MPI, rank count, environment): collective -> serving component."""

    def __init__(self) -> None:
        self._known: dict[tuple, dict[str, str]] = {}

    def annotate(self, pm: PlatformMPI, sample: Point):
        """An annotate(point, launch) for watch.run_group: the component of every
        library point (not libcollkit's: it runs on point-to-point), or no field
        where the library cannot say."""
        key = (pm.name, sample.ranks, sample.env)
        if key not in self._known:
            try:
                self._known[key] = backends.backend_for(pm.install).serving_components(
                    pm.install, sample.ranks, dict(sample.env), pm.bench)
            except UserError:
                # the campaign's own launch will report what is wrong; a record without
                # the field says "not known", as on a library that has no components
                self._known[key] = {}
        served = self._known[key]

        def fields(point: Point, launch: int) -> dict:  # noqa: ARG001
            name = served.get(point.collective, "") if point.backend == "mpi" else ""
            return {"component": name} if name else {}
        return fields
