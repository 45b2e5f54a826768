"""A real one-node Slurm on localhost for the tests (Debian's slurm-wlm + munge).

start() writes a slurm.conf with free ports and every state/spool/log/pid file
under a temporary directory, makes sure munged answers (starting it as user
munge, with a generated key if there is none), starts slurmctld and slurmd in the
foreground as our own children, and waits until `sinfo` shows the node idle.
stop() ends exactly the processes start() began, by their pids; munged only if
start() started it. Client commands find the cluster through SLURM_CONF."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SBIN = ("/usr/sbin", "/sbin", "/usr/bin")


def _which(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for d in SBIN:
        if os.access(Path(d) / name, os.X_OK):
            return str(Path(d) / name)
    return None


def unavailable() -> str:
    """Why a local Slurm cannot be started here ('' when it can)."""
    if os.geteuid() != 0:
        return "a local Slurm needs root (slurmd runs jobs as any user)"
    missing = [n for n in ("slurmctld", "slurmd", "sbatch", "sinfo", "scontrol", "scancel", "munged", "munge")
               if _which(n) is None]
    if missing:
        return f"Slurm/munge not installed (missing {', '.join(missing)}): apt-get install slurm-wlm munge"
    try:
        pwd.getpwnam("munge")
    except KeyError:
        return "no 'munge' user (the munge package creates it)"
    return ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _munge_works() -> bool:
    try:
        cred = subprocess.run([_which("munge"), "-n"], capture_output=True, timeout=30)
        if cred.returncode != 0:
            return False
        back = subprocess.run([_which("unmunge")], input=cred.stdout, capture_output=True, timeout=30)
        return back.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@dataclass
class LocalSlurm:
    root: Path
    conf: Path
    node: str
    partition: str = "debug"
    procs: list[subprocess.Popen] = field(default_factory=list)
    munged_pid: int | None = None

    def env(self) -> dict[str, str]:
        return dict(os.environ, SLURM_CONF=str(self.conf))

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
        self.procs.clear()
        if self.munged_pid:
            try:
                os.kill(self.munged_pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            self.munged_pid = None


def _start_munged() -> int:
    """Start munged as user munge; returns its pid. Creates the key if none."""
    user = pwd.getpwnam("munge")
    key = Path("/etc/munge/munge.key")
    for d in (Path("/etc/munge"), Path("/run/munge"), Path("/var/lib/munge"), Path("/var/log/munge")):
        d.mkdir(parents=True, exist_ok=True)
        os.chown(d, user.pw_uid, user.pw_gid)
    if not key.exists():
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        os.chown(key, user.pw_uid, user.pw_gid)
    # munged daemonizes; --force lets it start over a stale socket left behind.
    subprocess.run(["runuser", "-u", "munge", "--", _which("munged"), "--force"], check=True,
                   capture_output=True, timeout=15)
    pidfile = Path("/run/munge/munged.pid")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if pidfile.exists() and pidfile.read_text().strip().isdigit() and _munge_works():
            return int(pidfile.read_text().strip())
        time.sleep(0.1)
    raise RuntimeError("munged did not come up")


def start(root: Path, cpus: int = 2, timeout: float = 300.0) -> LocalSlurm:
    root.mkdir(parents=True, exist_ok=True)
    node = socket.gethostname().split(".")[0]
    for d in ("state", "spool", "log"):
        (root / d).mkdir(exist_ok=True)
    conf = root / "slurm.conf"
    conf.write_text("\n".join([
        "ClusterName=collkit-test",
        f"SlurmctldHost={node}",
        f"SlurmctldPort={_free_port()}",
        f"SlurmdPort={_free_port()}",
        "AuthType=auth/munge",
        "SlurmUser=root",
        f"StateSaveLocation={root / 'state'}",
        f"SlurmdSpoolDir={root / 'spool'}",
        f"SlurmctldPidFile={root / 'slurmctld.pid'}",
        f"SlurmdPidFile={root / 'slurmd.pid'}",
        f"SlurmctldLogFile={root / 'log' / 'slurmctld.log'}",
        f"SlurmdLogFile={root / 'log' / 'slurmd.log'}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "ReturnToService=2",
        "MpiDefault=none",
        "JobCompType=jobcomp/none",
        "AccountingStorageType=accounting_storage/none",
        # Finished jobs stay visible to scontrol long enough for the launcher to see their end state.
        "MinJobAge=300",
        f"NodeName={node} CPUs={cpus} RealMemory=2000 State=UNKNOWN",
        f"PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE",
        "",
    ]))
    cluster = LocalSlurm(root=root, conf=conf, node=node)
    try:
        if not _munge_works():
            cluster.munged_pid = _start_munged()
        env = cluster.env()
        for daemon in ("slurmctld", "slurmd"):
            # -D: foreground, so the process we hold is the daemon and its pid is ours to stop.
            args = [_which(daemon), "-D", "-f", str(conf)]
            if daemon == "slurmctld":
                args.append("-i")  # ignore state a previous run may have left (there is none: fresh dir)
            log = open(root / "log" / f"{daemon}.stdout", "wb")
            cluster.procs.append(subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                                  stderr=subprocess.STDOUT, start_new_session=True))
            log.close()
            if daemon == "slurmctld":
                _wait(lambda: subprocess.run([_which("scontrol"), "ping"], env=env, capture_output=True,
                                             text=True, timeout=10).stdout.count("UP") > 0, timeout,
                      "slurmctld did not answer scontrol ping", cluster)
        _wait(lambda: subprocess.run([_which("sinfo"), "-h", "-N", "-o", "%T"], env=env, capture_output=True,
                                     text=True, timeout=10).stdout.strip() == "idle", timeout,
              "the node did not become idle in sinfo", cluster)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _wait(ready, timeout: float, what: str, cluster: LocalSlurm) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for proc in cluster.procs:
            if proc.poll() is not None:
                raise RuntimeError(f"{what}: {Path(proc.args[0]).name} exited with {proc.returncode}; "
                                   f"logs in {cluster.root / 'log'}")
        try:
            if ready():
                return
        except subprocess.TimeoutExpired:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{what} within {timeout:g} s; logs in {cluster.root / 'log'}")
