"""The [gpu] table of a spec: which GPU each rank of the nccl backend uses.

Its own module because both sides need it: spec.py parses the table, and
backends/nccl.py (which builds points, so imports campaign.points and through
it spec.py) passes the result on to collkit-bench-nccl. Kept here, the imports
point one way: backends.nccl -> campaign.points -> campaign.spec -> here."""

from __future__ import annotations

from collkit.common.errors import UserError, did_you_mean

GPU_KEYS = ("device",)


def parse_device(raw: object) -> str:
    """[gpu] device: "local_rank" or a non-empty list of device numbers, as
    collkit-bench-nccl's COLLKIT_BENCH_DEVICE."""
    if raw == "local_rank":
        return "local_rank"
    if (isinstance(raw, list) and raw and
            all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1024 for d in raw)):
        return ",".join(str(d) for d in raw)
    raise UserError(f"gpu.device must be \"local_rank\" or a list of device numbers (0..1023), not {raw!r}")


def parse_gpu_table(raw: object) -> str:
    if not isinstance(raw, dict):
        raise UserError("[gpu] must be a table, e.g. [gpu] device = \"local_rank\"")
    for key in raw:
        if key not in GPU_KEYS:
            extra = did_you_mean(key, GPU_KEYS)
            raise UserError(f"unknown key '{key}' in [gpu]{extra}; allowed: {', '.join(GPU_KEYS)}")
    return parse_device(raw.get("device", "local_rank"))
