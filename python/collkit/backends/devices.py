"""The device backends (backends/device.py), and which one answers for a key.

Like families.py for the MPI families, this is the only place that lists them: the
spec's [backends] keys and tables, the planner, labels, metadata, `collkit run`,
`collkit list --parameters` and `collkit mpis` loop over DEVICE_BACKENDS, so that no
module outside backends/ names one. It imports no campaign module that imports it back
(a device backend builds its points through plan.py's maker: device.py)."""

from __future__ import annotations

from collkit.backends.device import DeviceBackend
from collkit.backends.nccl import NCCLBackend

DEVICE_BACKENDS: tuple[DeviceBackend, ...] = (NCCLBackend(),)


def keys() -> tuple[str, ...]:
    """Their [backends] keys, in list order."""
    return tuple(d.key for d in DEVICE_BACKENDS)


def tables() -> tuple[str, ...]:
    """The spec's top-level tables they read, in list order."""
    return tuple(t for d in DEVICE_BACKENDS for t in d.tables)


def by_key(key: str) -> DeviceBackend | None:
    """The device backend of a [backends] key (a point's or record's `backend`), or None."""
    return next((d for d in DEVICE_BACKENDS if d.key == key), None)


def by_parameter_table(table: str) -> DeviceBackend | None:
    """The device backend whose [parameters.NAME] table this is, or None (an MPI's)."""
    return next((d for d in DEVICE_BACKENDS if d.parameter_table == table), None)


def chosen(selected) -> tuple[DeviceBackend, ...]:
    """The device backends a spec's [backends] (any mapping or collection of keys) names."""
    return tuple(d for d in DEVICE_BACKENDS if d.key in selected)
