"""Running ck_trace, and the trace cache.

Traces are cached by (collective, algorithm, p, count, root, dtype, format,
library version) in memory and on disk under ``<build cache>/trace-cache/`` (collkit.mpis.known.cache_root)
(``COLLKIT_TRACE_CACHE`` elsewhere),
one ``.npz`` file per trace. The library version is collkit's version plus a
hash of the ck_trace binary, which contains the algorithms' code: any rebuild
that changes an algorithm starts a new cache directory."""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from collkit import __version__
from collkit.common import machine
from collkit.common.errors import UserError
from collkit.mpis import known
from collkit.traffic.trace import (
    Trace,
    TraceFailure,
    TraceFormatError,
    TraceKey,
    parse_traces,
    validate,
)

EXIT_USAGE = 2    # ck_trace: bad arguments or unknown algorithm
EXIT_REFUSED = 3  # ck_trace: the algorithm refused (its constraints)

# One ck_trace --batch run covers at most about this many messages, so that the
# text of a run stays a few tens of MB.
BATCH_MESSAGES = 2_000_000
# Traces above PROBE_ABOVE ranks are sized first (Tracer.size_refusal), by
# tracing at PROBE_RANKS; a message costs about BYTES_PER_MESSAGE held twice.
PROBE_ABOVE = 4096
PROBE_RANKS = (256, 512)
BYTES_PER_MESSAGE = 48
# Messages kept in the in-memory cache (about 18 bytes each; least recently used go first).
MEMORY_MESSAGES = 4_000_000


def find_binary() -> Path:
    """ck_trace runs libcollkit against a stand-in for MPI: any build's will do."""
    return known.any_build("trace")


def library_version(binary: Path) -> str:
    digest = hashlib.sha256()
    with open(binary, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return f"{__version__}-{digest.hexdigest()[:16]}"


def _estimate(key: TraceKey) -> int:
    """A rough message count, only to size batches."""
    p = max(key.ranks, 2)
    return p * max(p.bit_length(), 1) * 2


class Tracer:
    """Traces by key: memory, then disk, then ck_trace."""

    def __init__(self, binary: Path | None = None, cache_root: Path | None = None, disk: bool = True):
        self._binary = binary
        self._version: str | None = None
        self._cache_root = cache_root
        self.disk = disk
        self._memory: OrderedDict[TraceKey, Trace] = OrderedDict()
        self._memory_messages = 0
        self.generated = 0   # traces made by ck_trace in this process
        self.loaded = 0      # traces read from the disk cache

    @property
    def binary(self) -> Path:
        if self._binary is None:
            self._binary = find_binary()
        return self._binary

    @property
    def version(self) -> str:
        if self._version is None:
            self._version = library_version(self.binary)
        return self._version

    @property
    def cache_dir(self) -> Path:
        env = os.environ.get("COLLKIT_TRACE_CACHE")
        root = self._cache_root or (Path(env) if env else known.cache_root() / "trace-cache")
        return root / self.version

    # ------------------------------------------------------------------ disk

    def _path(self, key: TraceKey) -> Path:
        # alltoall/fattree_opt's schedule depends on COLLKIT_FATTREE: a trace
        # made under one tree must not answer for another.
        tree = os.environ.get("COLLKIT_FATTREE", "")
        tree = f"-ft{tree}" if tree.replace(",", "").isdigit() else ("-ftbad" if tree else "")
        # node-aware algorithms depend on COLLKIT_RANKS_PER_NODE the same way
        k = os.environ.get("COLLKIT_RANKS_PER_NODE", "")
        k = f"-k{k}" if k.isdigit() else ("-kbad" if k else "")
        return (self.cache_dir / key.collective / key.algorithm
                / f"p{key.ranks}-c{key.count}-r{key.root}-{key.dtype}-{key.fmt}{tree}{k}.npz")

    def _load(self, key: TraceKey) -> Trace | None:
        if not self.disk:
            return None
        path = self._path(key)
        try:
            with np.load(path) as z:
                meta = z["meta"]
                trace = Trace(key, int(meta[0]), int(meta[1]), z["src"].astype(np.int32),
                              z["dst"].astype(np.int32), z["nbytes"].astype(np.int64),
                              z["step"].astype(np.int32) if "step" in z.files else None)
        except FileNotFoundError:
            return None
        except (OSError, KeyError, ValueError):
            return None  # a damaged entry is made again
        self.loaded += 1
        return trace

    def _store(self, trace: Trace) -> None:
        if not self.disk:
            return
        path = self._path(trace.key)
        path.parent.mkdir(parents=True, exist_ok=True)
        small = np.uint16 if trace.key.ranks <= 1 << 16 else np.int32
        arrays = {
            "meta": np.array([trace.bytes_per_element, trace.messages], dtype=np.int64),
            "src": trace.src.astype(small),
            "dst": trace.dst.astype(small),
            "nbytes": trace.nbytes.astype(np.uint32 if trace.nbytes.size and trace.nbytes.max() < 1 << 32
                                          else np.int64),
        }
        if trace.step is not None:
            arrays["step"] = trace.step.astype(small)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, **arrays)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    # ---------------------------------------------------------------- memory

    def _remember(self, trace: Trace) -> None:
        self._memory[trace.key] = trace
        self._memory_messages += trace.src.size
        while self._memory_messages > MEMORY_MESSAGES and len(self._memory) > 1:
            _, old = self._memory.popitem(last=False)
            self._memory_messages -= old.src.size

    # ----------------------------------------------------------------- size

    def message_count(self, key: TraceKey) -> int | None:
        """How many messages a trace holds, asked of ck_trace (its header line);
        None when the algorithm refuses the case."""
        try:
            done = subprocess.run([str(self.binary), *key.args()], capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UserError(f"cannot run {self.binary}: {exc}") from None
        head = done.stdout.split("\n", 1)[0]
        for word in head.split():
            if word.startswith("messages="):
                return int(word.split("=", 1)[1])
        return None

    def size_refusal(self, collective: str, algorithm: str, ranks: int, count_of) -> str:
        """Why tracing `algorithm` at `ranks` would not fit in this machine's
        memory, or ''. The message count is measured at two small rank counts and
        extrapolated with its growth exponent (p log p, p^2, ...): a trace keeps
        about BYTES_PER_MESSAGE per message in ck_trace and again in Python."""
        if ranks <= PROBE_ABOVE:
            return ""
        small, large = PROBE_RANKS
        m1 = self.message_count(TraceKey(collective, algorithm, small, count_of(small)))
        m2 = self.message_count(TraceKey(collective, algorithm, large, count_of(large)))
        if not m1 or not m2:
            return ""   # refused or silent at small p: tracing will say why
        exponent = max(1.0, math.log(m2 / m1) / math.log(large / small))
        messages = m2 * (ranks / large) ** exponent
        need = messages * BYTES_PER_MESSAGE + ranks * 64
        if machine.fits(need, machine.available_memory()):
            return ""
        return (f"tracing {collective}/{algorithm} at {ranks} ranks means about {messages:.3g} messages "
                f"(measured {m1} at p = {small} and {m2} at p = {large}, growing as p^{exponent:.2f}), about "
                f"{machine.gib(need)}, above {int(machine.MARGIN * 100)}% of this machine's available memory")

    # ----------------------------------------------------------------- run

    def _start(self, keys: list[TraceKey]) -> "_Run":
        """Launch ck_trace for keys; its output goes to a temporary file so
        that the next batch can run while this one's text is parsed."""
        if len(keys) == 1:
            args, batch = keys[0].args(), None
        else:
            with tempfile.NamedTemporaryFile("w", suffix=".batch", delete=False) as f:
                f.write("".join(k.batch_line() + "\n" for k in keys))
                batch = f.name
            args = ["--batch", batch]
        out = tempfile.TemporaryFile("w+")
        err = tempfile.TemporaryFile("w+")
        try:
            proc = subprocess.Popen([str(self.binary), *args], stdout=out, stderr=err)
        except OSError as exc:
            out.close()
            err.close()
            if batch:
                os.unlink(batch)
            raise UserError(f"cannot run {self.binary}: {exc.strerror or exc}") from None
        return _Run(keys, proc, out, err, batch)

    def _finish(self, run: "_Run") -> list[Trace | TraceFailure]:
        keys = run.keys
        try:
            returncode = run.proc.wait()
            run.out.seek(0)
            stdout = run.out.read()
            run.err.seek(0)
            stderr = run.err.read().strip().splitlines()
        finally:
            run.close()
        why = stderr[-1] if stderr else f"exit status {returncode}"
        if len(keys) == 1 and returncode in (EXIT_USAGE, EXIT_REFUSED):
            return [TraceFailure(keys[0], why)]
        fmts = {k.fmt for k in keys}
        try:
            if len(fmts) != 1:
                raise TraceFormatError("one batch asks for one format")
            results = parse_traces(stdout, fmts.pop())
        except TraceFormatError as exc:
            raise UserError(f"ck_trace printed what collkit cannot read ({exc}); {why}") from None
        if len(results) != len(keys):
            raise UserError(f"ck_trace returned {len(results)} traces for {len(keys)} requests "
                            f"(exit status {returncode}): {why}")
        out: list[Trace | TraceFailure] = []
        for key, res in zip(keys, results):
            if isinstance(res, Trace):
                got = res.key
                if (got.collective, got.algorithm, got.ranks, got.count) != (
                        key.collective, key.algorithm, key.ranks, key.count):
                    raise UserError(f"ck_trace answered {got.describe()} when asked for {key.describe()}")
                try:
                    validate(res)
                except TraceFormatError as exc:
                    raise UserError(f"ck_trace: {exc}") from None
                res = Trace(key, res.bytes_per_element, res.messages, res.src, res.dst, res.nbytes, res.step)
            else:
                res = TraceFailure(key, res.reason)
            out.append(res)
        return out

    def _generate(self, keys: list[TraceKey]) -> list[Trace | TraceFailure]:
        return self._finish(self._start(keys))

    def get_many(self, keys: Iterable[TraceKey],
                 on_progress: Callable[[int, TraceKey], None] | None = None) -> dict[TraceKey, Trace | TraceFailure]:
        """Every key's trace or failure. ``on_progress(done, key)`` is called as
        traces that had to be made arrive."""
        result: dict[TraceKey, Trace | TraceFailure] = {}
        missing: list[TraceKey] = []
        for key in dict.fromkeys(keys):
            trace = self._memory.get(key)
            if trace is not None:
                self._memory.move_to_end(key)
            else:
                trace = self._load(key)
            if trace is None:
                missing.append(key)
            else:
                result[key] = trace
        done = 0
        chunks = list(_chunks(sorted(missing, key=lambda k: (k.fmt, k.ranks)), BATCH_MESSAGES))
        running = self._start(chunks[0]) if chunks else None
        try:
            for i in range(len(chunks)):
                current = running
                # ck_trace makes the next batch on the other core meanwhile.
                running = self._start(chunks[i + 1]) if i + 1 < len(chunks) else None
                for key, res in zip(chunks[i], self._finish(current)):
                    result[key] = res
                    if isinstance(res, Trace):
                        self.generated += 1
                        self._store(res)
                    done += 1
                    if on_progress:
                        on_progress(done, key)
        finally:
            if running is not None:
                running.kill()
        for res in result.values():
            if isinstance(res, Trace) and res.key not in self._memory:
                self._remember(res)
        return result

    def get(self, key: TraceKey) -> Trace:
        res = self.get_many([key])[key]
        if isinstance(res, TraceFailure):
            raise UserError(f"no trace of {key.describe()}: {res.reason}")
        return res


def _chunks(keys: list[TraceKey], budget: int) -> Iterable[list[TraceKey]]:
    chunk: list[TraceKey] = []
    size = 0
    for key in keys:
        est = _estimate(key)
        if chunk and (size + est > budget or key.fmt != chunk[0].fmt):
            yield chunk
            chunk, size = [], 0
        chunk.append(key)
        size += est
    if chunk:
        yield chunk


class _Run:
    """A ck_trace process and its temporary files."""

    def __init__(self, keys, proc, out, err, batch):
        self.keys, self.proc, self.out, self.err, self.batch = keys, proc, out, err, batch

    def close(self) -> None:
        self.out.close()
        self.err.close()
        if self.batch:
            Path(self.batch).unlink(missing_ok=True)
            self.batch = None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.close()
