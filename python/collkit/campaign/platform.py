"""Platform descriptors: which MPI libraries exist here and how to launch them.

Without a file, the platform is this machine: every MPI collkit knows here
(collkit.mpis.known, `collkit mpis`), with the collkit-bench built for each.
A TOML file describes another machine:

    name = "workstation"

    [mpi.openmpi]
    mpirun = "/opt/openmpi/bin/mpirun"
    args = ["--bind-to", "core"]
    env = { OMPI_MCA_btl = "^openib" }
    bench = "/opt/collkit/openmpi/bin/collkit-bench"

Tables under ``mpi`` are keyed by MPI name: a known MPI's name takes its
launcher, environment and build as defaults; another name needs ``mpirun``
and ``bench`` (its family then follows the name: ``openmpi``, ``mpich``, or
none, which runs the library's default algorithms only).

A ``[slurm]`` table makes the platform a Slurm cluster: campaigns are submitted
as batch jobs (collkit.launch.slurm) and the ``[mpi.<lib>]`` tables then give the
paths of mpirun and collkit-bench *on the cluster*, or, instead of ``bench``,
how to get the MPI: collkit builds collkit-bench for it on the login node, into
the build cache, the first time a campaign uses it (collkit.mpis.remote):

    [mpi.openmpi]
    modules = ["module load openmpi/4.1.6"]   # run before building, and in each job
    mpicc = "mpicc"                           # optional: the mpicc on PATH after the lines
    # bench = "/path/collkit-bench"           # an override: nothing is built

    [slurm]
    partition = "boost_usr_prod"
    account = "myproject"
    qos = "normal"
    time_limit = "00:30:00"          # per job
    setup = ["module load openmpi/4.1.6"]
    launcher = ["srun", "--mpi=pmix"]   # or ["mpirun", "--bind-to", "core"]
    tasks_per_node = 32
    gpus = 4                          # optional: --gpus-per-node
    sbatch_flags = ["--exclusive"]
    poll_s = 10"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from collkit.common.safe import check_env_name, check_name, refuse_control
from collkit.common.errors import UserError, did_you_mean
from collkit.mpis import known, remote
from collkit.mpis.identity import FAMILIES, check_name as check_mpi_name
from collkit.mpis.install import LAUNCH_DEFAULTS, MPIInstall
from collkit.simulation import settings as sim, simgrid_install
from collkit.simulation.settings import SimSettings


@dataclass(frozen=True)
class PlatformMPI:
    install: MPIInstall
    bench: Path
    # Slurm: shell lines that make the MPI usable in a job ([mpi.NAME] modules),
    # run in each batch script after [slurm] setup
    modules: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.install.name


MPI_KEYS = ("mpirun", "args", "env", "bench", "modules", "mpicc")
SLURM_KEYS = ("partition", "account", "qos", "time_limit", "setup", "launcher", "tasks_per_node", "gpus",
              "sbatch_flags", "poll_s")
LAUNCHERS = ("srun", "mpirun")


@dataclass(frozen=True)
class SlurmSettings:
    partition: str = ""
    account: str = ""
    qos: str = ""
    time_limit: str = ""
    setup: tuple[str, ...] = ()
    launcher: tuple[str, ...] = ("srun",)       # program ("srun" | "mpirun") then its arguments
    tasks_per_node: int = 0                     # 0: every rank of a job on one node
    gpus: int = 0
    sbatch_flags: tuple[str, ...] = ()
    poll_s: float = 10.0

    def nodes(self, ranks: int) -> int:
        per = self.tasks_per_node or ranks
        return -(-ranks // per)


@dataclass(frozen=True)
class Platform:
    name: str
    source: str                                  # "detected" or the file it came from
    mpis: dict[str, PlatformMPI] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)   # library -> why it is absent
    slurm: SlurmSettings | None = None                      # set: a Slurm cluster, jobs via sbatch
    simgrid: SimSettings | None = None                      # set: a simulated machine, runs via smpirun
    unbuilt: dict[str, "Unbuilt"] = field(default_factory=dict)  # Slurm: MPIs built on first use

    def mpi(self, name: str) -> PlatformMPI:
        if name in self.mpis:
            return self.mpis[name]
        if name in self.unbuilt:
            # Built when a campaign first asks for it (planning, at the latest
            # before sbatch): reading a platform file builds nothing, and a file
            # naming several MPIs builds only those a spec uses.
            self.mpis[name] = self.unbuilt[name].build()
            return self.mpis[name]
        if name in self.missing:
            raise UserError(self.missing[name])
        have = [*self.mpis, *(n for n in self.unbuilt if n not in self.mpis)]
        extra = did_you_mean(name, have)
        raise UserError(f"MPI '{name}' is not on platform {self.name}{extra}; "
                        f"it has: {', '.join(have) or 'none'}")


@dataclass(frozen=True)
class Unbuilt:
    """An [mpi.NAME] table of a Slurm platform that gives modules or mpicc and
    no bench: what its table says, to be built on first use."""
    request: remote.ClusterBuild
    mpirun: Path | None                 # the table's, else the build's
    args: tuple[str, ...] | None        # the table's, else the launch defaults of the MPI's kind
    env: dict[str, str] | None
    launcher: str                       # [slurm] launcher's program: srun or mpirun

    def build(self) -> PlatformMPI:
        req = self.request
        k = remote.ready(req)
        flags, env = LAUNCH_DEFAULTS.get(k.kind, ((), {}))
        mpirun = self.mpirun or (Path(k.mpirun) if k.mpirun else None)
        if mpirun is None:
            if self.launcher == "mpirun":
                raise UserError(f"{req.where} needs mpirun: [slurm] launcher is mpirun and there is none beside "
                                f"{k.mpicc}; give mpirun = PATH, or launch with srun")
            # srun launches; the MPI's own tools (ompi_info, mpivars) are looked for beside its launcher
            mpirun = Path(k.mpicc).parent / "mpirun"
        install = MPIInstall(name=req.name, mpirun=mpirun, flags=self.args if self.args is not None else flags,
                             env=dict(self.env if self.env is not None else env), family=k.family, kind=k.kind)
        return PlatformMPI(install, k.part("bench"), modules=req.modules)


INSTR_SUFFIX = "-instr"


def instr_bench(bench: Path) -> Path:
    """The instrumented collkit-bench sits beside the plain one, named <bench>-instr
    (build/<mpi>/bench/collkit-bench-instr), on this machine and on a cluster alike."""
    return bench.with_name(bench.name + INSTR_SUFFIX)


def with_bench(platform: "Platform", mpis: tuple[str, ...], program: Callable[[Path], Path],
               missing: Callable[[str, Path], str]) -> "Platform":
    """The same platform launching another build of collkit-bench for the given
    libraries: program(plain bench) is its path, missing(mpi, path) the one-line
    error when it is not built. On a Slurm platform the paths are the cluster's
    and are not checked here."""
    chosen = dict(platform.mpis)
    for name in mpis:
        pm = platform.mpi(name)
        bench = program(pm.bench)
        if platform.slurm is None and not bench.exists():
            raise UserError(missing(name, bench))
        chosen[name] = replace(pm, bench=bench)
    return replace(platform, mpis=chosen)


def instrumented(platform: "Platform", mpis: tuple[str, ...]) -> "Platform":
    """The same platform launching collkit-bench-instr for the given libraries."""
    return with_bench(platform, mpis, instr_bench,
                      lambda name, bench: f"instrument = true needs {bench.name} for {name}, and {bench} is "
                                          f"missing: rebuild it (collkit build --mpi {name} ..., or pip install again)")


def detect() -> Platform:
    mpis: dict[str, PlatformMPI] = {}
    missing: dict[str, str] = {}
    for name, k in sorted(known.known().items()):
        try:
            mpis[name] = PlatformMPI(k.install(), k.part("bench"))
        except UserError as exc:
            missing[name] = str(exc)
    return Platform(name="this machine", source="detected", mpis=mpis, missing=missing)


def _strings(value: object, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UserError(f"{what} must be a list of strings")
    return tuple(value)


def simulated(name: str, source: str, settings: SimSettings) -> Platform:
    """A SimGrid platform: the smpi library (and openmpi/mpich as SMPI with their
    selection logic) launched through smpirun (collkit.simulation.settings)."""
    # SimGrid and collkit-bench for it are built here when first needed (minutes, once per machine)
    simgrid_install.ensure_programs()
    bench = sim.bench_path()
    mpis = {lib: PlatformMPI(MPIInstall(name=lib, mpirun=settings.smpirun), bench) for lib in sim.MPI_NAMES}
    missing: dict[str, str] = {}
    return Platform(name=name, source=source, mpis=mpis, missing=missing, simgrid=settings)


def for_campaign(platform_file: Path | None, recorded_source: str = "") -> Platform:
    """The platform a campaign runs on: the file (or sim:NAME) given; else, on
    resume, the simulated machine the campaign recorded (a simulated campaign
    knows its machine); else this machine."""
    if platform_file is None and sim.is_sim(recorded_source):
        platform_file = Path(recorded_source)
    return load(platform_file) if platform_file else detect()


def spec_entry(name: str, spec_dir: Path) -> tuple[str, Path]:
    """A platform named in a spec's `platforms` list: (the label of its campaign
    directory, what to load: sim:NAME as is, a file relative to the spec)."""
    if sim.is_sim(name):
        return name[len(sim.SIM_PREFIX):], Path(name)
    return Path(name).stem, Path(name) if Path(name).is_absolute() else spec_dir / name


def load(path: Path) -> Platform:
    if sim.is_sim(path):   # --platform sim:NAME, a preset machine with default settings (sim:NAME+loggp: per-message costs)
        return simulated(str(path), str(path), sim.from_name(str(path)))
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"cannot read platform file {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not a UTF-8 text file; a platform file is TOML text") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"platform file {path} is not valid TOML: {exc}") from None
    refuse_control(raw, str(path))
    for key in raw:
        if key not in ("name", "mpi", "slurm", "simgrid"):
            raise UserError(f"{path}: unknown key '{key}'; allowed: name, mpi, slurm, simgrid")
    if "simgrid" in raw:
        if "slurm" in raw or "mpi" in raw:
            raise UserError(f"{path}: a [simgrid] platform takes no [slurm] or [mpi.*] tables "
                            "(it runs smpirun here with SimGrid's MPI)")
        return simulated(check_name(raw.get("name", path.stem), str(path), "name"), str(path),
                         sim.from_table(raw["simgrid"], path))
    slurm = _slurm(raw["slurm"], path) if "slurm" in raw else None
    tables = raw.get("mpi", {})
    if not isinstance(tables, dict) or not tables:
        raise UserError(f"{path}: needs at least one [mpi.<library>] table")
    mpis: dict[str, PlatformMPI] = {}
    unbuilt: dict[str, Unbuilt] = {}
    base = path.parent
    for lib, t in tables.items():
        check_mpi_name(lib, f"{path}: [mpi.{lib}]:")
        if not isinstance(t, dict):
            raise UserError(f"{path}: mpi.{lib} must be a table ([mpi.{lib}] with {', '.join(MPI_KEYS)}), "
                            f"not {t!r}")
        for key in t:
            if key not in MPI_KEYS:
                raise UserError(f"{path}: unknown key '{key}' in [mpi.{lib}]{did_you_mean(key, MPI_KEYS)}; "
                                f"allowed: {', '.join(MPI_KEYS)}")
        for key in ("mpirun", "bench"):
            if key in t and (not isinstance(t[key], str) or not t[key]):
                raise UserError(f"{path}: [mpi.{lib}] {key} must be a path (a non-empty string), not {t[key]!r}")
        if "mpicc" in t and (not isinstance(t["mpicc"], str) or not t["mpicc"].strip()):
            raise UserError(f"{path}: [mpi.{lib}] mpicc must be the MPI's compiler wrapper, a name on PATH or a "
                            f"path (a non-empty string), not {t['mpicc']!r}")
        modules = remote.check_lines(t["modules"], f"{path}: [mpi.{lib}] modules") if "modules" in t else ()
        if slurm is None and ("modules" in t or "mpicc" in t):
            # Refused rather than built: local launches run mpirun in collkit's
            # own environment, not in a shell where module lines take effect, so
            # a build made with their environment would run without it. On this
            # machine the MPI becomes known once, from the shell that loaded it
            # (collkit build), and its table then needs neither key.
            key = "modules" if "modules" in t else "mpicc"
            raise UserError(f"{path}: [mpi.{lib}] {key} is for Slurm platforms (a [slurm] table): here, load the "
                            f"MPI in your shell and run collkit build --mpi {lib} --mpicc mpicc; [mpi.{lib}] then "
                            "needs no bench")
        env_given = t.get("env")
        if "env" in t:
            if not isinstance(env_given, dict) or not all(isinstance(v, str) for v in env_given.values()):
                raise UserError(f"{path}: [mpi.{lib}] env must be a table of strings")
            for key in env_given:
                check_env_name(key, str(path), f"[mpi.{lib}] env key")
        args_given = _strings(t["args"], f"{path}: [mpi.{lib}] args") if "args" in t else None
        if slurm is not None and "bench" not in t and ("modules" in t or "mpicc" in t):
            # collkit builds collkit-bench for it when a campaign first uses it
            # (Platform.mpi); an explicit bench skips that (mpicc is then unused).
            unbuilt[lib] = Unbuilt(
                request=remote.ClusterBuild(name=lib, source=str(path), setup=slurm.setup, modules=modules,
                                            mpicc=t.get("mpicc", "")),
                mpirun=Path(t["mpirun"]) if "mpirun" in t else None, args=args_given,
                env=dict(env_given) if env_given is not None else None, launcher=slurm.launcher[0])
            continue
        mine = known.known().get(lib)
        try:
            default = mine.install() if mine else None
        except UserError:
            default = None
        mpirun = Path(t["mpirun"]) if "mpirun" in t else (default.mpirun if default else None)
        if mpirun is None:
            raise UserError(f"{path}: [mpi.{lib}] needs mpirun (none found on this machine)")
        env = env_given if env_given is not None else (dict(default.env) if default else {})
        args = args_given if args_given is not None else (default.flags if default else ())
        if "bench" in t:
            bench = Path(t["bench"])
        elif mine is not None and mine.build is not None:
            bench = mine.build.part("bench")
        else:
            how = (", or modules (module load ...) / mpicc for collkit to build it on this login node"
                   if slurm is not None else "")
            raise UserError(f"{path}: [mpi.{lib}] needs bench (the path of collkit-bench){how}: no MPI named "
                            f"'{lib}' is known here ({known.BUILD_HINT})")
        if not bench.is_absolute():
            bench = (base / bench).resolve()
        family = mine.family if mine else (lib if lib in FAMILIES else "")
        kind = mine.kind if mine else family
        mpis[lib] = PlatformMPI(MPIInstall(name=lib, mpirun=mpirun, flags=args, env=dict(env), family=family,
                                           kind=kind), bench, modules=modules)
    name = check_name(raw.get("name", path.stem), str(path), "name")
    return Platform(name=str(name), source=str(path), mpis=mpis, slurm=slurm, unbuilt=unbuilt)


def _slurm(t: object, path: Path) -> SlurmSettings:
    if not isinstance(t, dict):
        raise UserError(f"{path}: slurm must be a table ([slurm])")
    for key in t:
        if key not in SLURM_KEYS:
            extra = did_you_mean(key, SLURM_KEYS)
            raise UserError(f"{path}: unknown key '{key}' in [slurm]{extra}; allowed: {', '.join(SLURM_KEYS)}")
    for key in ("partition", "account", "qos", "time_limit"):
        if key in t and not isinstance(t[key], str):
            raise UserError(f"{path}: [slurm] {key} must be a string")
    launcher = _strings(t["launcher"], f"{path}: [slurm] launcher") if "launcher" in t else ("srun",)
    if not launcher or launcher[0] not in LAUNCHERS:
        raise UserError(f"{path}: [slurm] launcher must start with one of {', '.join(LAUNCHERS)}, "
                        f"e.g. [\"srun\", \"--mpi=pmix\"]")
    ints = {}
    for key in ("tasks_per_node", "gpus"):
        value = t.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise UserError(f"{path}: [slurm] {key} must be a non-negative integer")
        ints[key] = value
    poll = t.get("poll_s", 10.0)
    if isinstance(poll, bool) or not isinstance(poll, (int, float)) or not 0 < poll <= 3600:
        raise UserError(f"{path}: [slurm] poll_s must be a positive number of seconds, at most 3600, "
                        f"not {poll!r}")
    # shell by intent, like [mpi.NAME] modules: run in each batch script (and on this node before a build)
    setup = remote.check_lines(t["setup"], f"{path}: [slurm] setup") if "setup" in t else ()
    return SlurmSettings(partition=t.get("partition", ""), account=t.get("account", ""), qos=t.get("qos", ""),
                         time_limit=t.get("time_limit", ""), setup=setup, launcher=launcher,
                         sbatch_flags=_strings(t["sbatch_flags"], f"{path}: [slurm] sbatch_flags") if "sbatch_flags" in t
                         else (), poll_s=float(poll), **ints)
