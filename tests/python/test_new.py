"""`collkit new`: the interactive spec builder driven in a real terminal (tmux: keys
in, screen out), the non-interactive path, and bad input. A written spec is
proved by `collkit run --dry-run` (a Slurm platform file: the campaign and its
batch scripts are written, nothing is submitted, no Slurm is needed) and by
loading and planning it as `collkit run` does."""

import re
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from collkit.campaign import plan as planner
from collkit.campaign import platform as platforms
from collkit.campaign import spec as specs
from collkit.library import registry
from collkit.specbuild import choices
import cli_runner
import needs
from cli_runner import collkit, one_line_error

# the interactive builder is tested in a real terminal: tmux (needs.tmux)
TMUX = shutil.which("tmux")
OPENMPI = platforms.detect().mpis.get("openmpi")
# Guards against a hang only: a loaded machine may take long to draw a screen.
DEADLINE_S = 180


def slurm_platform(tmp_path: Path) -> Path:
    """A Slurm platform file: `collkit run --dry-run` accepts specs for it without a Slurm."""
    path = tmp_path / "cluster.toml"
    path.write_text(f'name = "cluster"\n[mpi.openmpi]\nbench = "{OPENMPI.bench}"\n'
                    '[slurm]\nlauncher = ["mpirun"]\ntime_limit = "5"\n')
    return path


class Terminal:
    """`collkit new` in a detached tmux session of its own server (a private socket),
    without tmux's status line, so the program has the whole COLSxLINES."""

    def __init__(self, cwd: Path, args: list[str], cols: int = 80, lines: int = 24):
        self.dir = Path(tempfile.mkdtemp(prefix="ck-tmux-"))   # short: a socket path has a length limit
        self.sock = str(self.dir / "s")
        conf = self.dir / "tmux.conf"
        conf.write_text("set -g status off\n")
        command = shlex.join([*cli_runner.COMMAND, "new", *args]) + "; echo EXIT=$?; sleep 3600"
        subprocess.run([TMUX, "-S", self.sock, "-f", str(conf), "new-session", "-d", "-x", str(cols), "-y",
                        str(lines), "-c", str(cwd), command], check=True, timeout=60)

    def keys(self, *keys: str) -> None:
        subprocess.run([TMUX, "-S", self.sock, "send-keys", *keys], check=True, timeout=60)

    def type(self, text: str) -> None:
        subprocess.run([TMUX, "-S", self.sock, "send-keys", "-l", text], check=True, timeout=60)

    def screen(self) -> str:
        return subprocess.run([TMUX, "-S", self.sock, "capture-pane", "-p"], check=True, capture_output=True,
                              text=True, timeout=60).stdout

    def wait(self, text: str) -> str:
        """The screen once it shows `text` (wrapped lines joined), or a failure showing the screen."""
        end = time.monotonic() + DEADLINE_S
        while True:
            screen = self.screen()
            if text in screen.replace("\n", ""):
                return screen
            if time.monotonic() > end:
                pytest.fail(f"the screen never showed {text!r}; it shows:\n{screen}")
            time.sleep(0.2)

    def close(self) -> None:
        subprocess.run([TMUX, "-S", self.sock, "kill-server"], capture_output=True, timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def terminals():
    opened: list[Terminal] = []

    def open_(*args, **kw) -> Terminal:
        opened.append(Terminal(*args, **kw))
        return opened[-1]
    yield open_
    for t in opened:
        t.close()


def set_field(term: Terminal, text: str) -> None:
    """Replace a focused text field's contents (Emacs keys: end of line, kill to its start)."""
    term.keys("C-e", "C-u")
    term.type(text)


def written_points(spec_file: Path) -> int:
    m = re.search(r"^# When written: (\d+) points? to run", spec_file.read_text(), re.M)
    assert m, spec_file.read_text()
    return int(m.group(1))


@needs.tmux
@needs.openmpi
def test_builder_in_a_terminal_writes_a_spec_collkit_run_accepts(tmp_path, terminals):
    cluster = slurm_platform(tmp_path)
    term = terminals(tmp_path, ["--platform", cluster.name, "--out", "spec.toml"])
    # Nothing chosen yet: the loader says what is missing, on the screen.
    term.wait("refused: spec.toml: missing required key 'collectives'")
    term.keys(*["Down"] * registry.collective_names().index("allreduce"), "Space")
    term.wait("points to run")
    term.keys("C-n")                                     # page 2: the libraries' forcible algorithms
    term.wait("allreduce/ring (openmpi")
    term.keys("Down", "Space")                           # "all"
    term.wait("[*] all")
    term.keys("C-n", "Down")                             # page 3: libcollkit; its first allreduce algorithm
    first = next(a for a in registry.load() if a.collective == "allreduce")
    term.wait(first.description[:30])                    # the highlighted entry's description, below the list
    term.keys("C-n")                                     # page 4: the call
    term.wait("sizes")
    set_field(term, "8B..4KiB x8")
    term.keys("Tab")
    set_field(term, "2, 4")
    term.keys("C-n")                                     # page 5: measurement
    term.wait("time_budget_s")
    term.keys("Tab", "Tab", "Tab")
    set_field(term, "0.001")
    term.keys("C-n")                                     # page 6: write
    term.wait("campaign name")
    set_field(term, "from_tui")
    term.wait("points to run")
    term.keys("C-w")
    screen = term.wait("EXIT=0")
    assert "wrote spec.toml" in screen.replace("\n", "")

    spec_file = tmp_path / "spec.toml"
    spec = specs.load(spec_file)
    assert (spec.name, spec.collectives, spec.sizes, spec.ranks) == ("from_tui", ("allreduce",), (8, 64, 512, 4096),
                                                                      (2, 4))
    assert spec.backends == {"mpi": ("default", "all"), "collkit": ("all",)}
    assert spec.measure.time_budget_s == 0.001 and spec.platforms == ("cluster.toml",)
    # `collkit run` takes the file unchanged: its platforms entry, a dry run on it.
    run = collkit("run", "spec.toml", "--dry-run", "--out", "campaign", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    m = re.search(r"— (\d+) of (\d+) points to run", run.stderr)
    assert m and int(m.group(2)) == written_points(spec_file), run.stderr

    # The command line is the same builder: the same choices write the same spec.
    flags = collkit("new", "--non-interactive", "--platform", cluster.name, "--out", "flags.toml",
                    "--name", "from_tui", "--collectives", "allreduce", "--sizes", "8B..4KiB x8", "--ranks", "2, 4",
                    "--mpi", "openmpi", "--backend-mpi", "default,all", "--backend-collkit", "all",
                    "--measure", "time_budget_s=0.001", cwd=tmp_path)
    assert flags.returncode == 0, flags.stderr
    drop_name = lambda text: [line for line in text.splitlines() if not line.startswith("# Run it with")]  # noqa: E731
    assert drop_name((tmp_path / "flags.toml").read_text()) == drop_name(spec_file.read_text())


@needs.tmux
def test_invalid_choices_are_refused_on_the_screen_and_never_written(tmp_path, terminals):
    term = terminals(tmp_path, ["--out", "spec.toml", "--collectives", "allreduce"])
    term.wait("points to run")
    term.keys("C-n", "C-n", "C-n")                       # page 4: the call; the sizes field has the focus
    term.wait("rank counts")
    set_field(term, "6")                                 # not a whole number of int32 elements
    term.wait("refused: spec.toml: size 6 B is not a whole number of int32 elements (4 B each)")
    term.keys("C-w")
    term.wait("not written: spec.toml: size 6 B")
    set_field(term, "8")
    term.wait("points to run")
    term.keys("Tab")
    set_field(term, "0")                                 # a rank count of 0
    term.wait("refused: spec.toml: ranks must be at least 1, not 0")
    term.keys("C-w")
    term.wait("not written: spec.toml: ranks must be at least 1, not 0")
    assert not (tmp_path / "spec.toml").exists()
    term.keys("C-c")
    screen = term.wait("EXIT=1")
    assert "quit; nothing written" in screen and not (tmp_path / "spec.toml").exists()


@needs.tmux
def test_a_terminal_under_80x24_is_one_line_and_exit_2(tmp_path, terminals):
    term = terminals(tmp_path, ["--out", "spec.toml"], cols=79, lines=24)
    screen = term.wait("EXIT=2")
    errors = [line for line in screen.splitlines() if line.startswith("collkit: error:")]
    assert len(errors) == 1 and "the terminal is 79x24; collkit new needs at least 80x24" in errors[0]
    assert "Traceback" not in screen and not (tmp_path / "spec.toml").exists()


@needs.tmux
def test_a_starting_choice_the_interface_cannot_show_is_one_line_and_exit_2(tmp_path, terminals):
    term = terminals(tmp_path, ["--out", "spec.toml", "--dtype", "int33"])
    screen = term.wait("EXIT=2")
    joined = screen.replace("\n", "")   # the line wraps at 80 columns
    assert screen.count("collkit: error:") == 1 and "Traceback" not in screen
    assert "--dtype 'int33' is not one of int8, int32, int64, float, double" in joined
    assert "did you mean 'int32'?" in joined


@needs.tmux
def test_a_terminal_shrunk_under_80x24_is_told_so(tmp_path, terminals):
    term = terminals(tmp_path, ["--out", "spec.toml"])
    term.wait("missing required key 'collectives'")
    subprocess.run([TMUX, "-S", term.sock, "resize-window", "-x", "70", "-y", "24"], check=True, timeout=60)
    term.wait("the terminal is now 70x24: enlarge it to 80x24")
    subprocess.run([TMUX, "-S", term.sock, "resize-window", "-x", "80", "-y", "24"], check=True, timeout=60)
    term.wait("collkit new · this machine")


def test_no_terminal_is_one_line_and_exit_2(tmp_path):
    one_line_error(collkit("new", "--out", "spec.toml", cwd=tmp_path),
                   "collkit new is interactive and needs a terminal")
    assert not (tmp_path / "spec.toml").exists()


def test_an_existing_out_is_never_overwritten(tmp_path):
    (tmp_path / "spec.toml").write_text("mine\n")
    for extra in ([], ["--non-interactive", "--collectives", "allreduce", "--sizes", "8", "--ranks", "2",
                       "--backend-collkit", "all"]):
        one_line_error(collkit("new", "--out", "spec.toml", *extra, cwd=tmp_path), "--out spec.toml exists")
    assert (tmp_path / "spec.toml").read_text() == "mine\n"


NONINTERACTIVE = ["new", "--non-interactive", "--out", "spec.toml", "--collectives", "allreduce,bcast",
                  "--sizes", "8,1KiB", "--ranks", "2", "--backend-collkit", "all"]


@pytest.mark.parametrize("change, message", [
    (["--ranks", "0"], "spec.toml: ranks must be at least 1, not 0"),
    (["--sizes", "6"], "spec.toml: size 6 B is not a whole number of int32 elements (4 B each)"),
    (["--root", "2"], "spec.toml: root 2 is not a rank of the 2-rank runs"),
    (["--measure", "time_budget=1"], "unknown key 'time_budget' in [measure] (did you mean 'time_budget_s'?)"),
    (["--backend-collkit", "allreduce/rnig"], "unknown libcollkit algorithm 'allreduce/rnig'"),
    (["--mpi", "nosuchmpi"], "MPI 'nosuchmpi' is not on platform"),
    (["--measure", "warmup"], "--measure 'warmup': write KEY=VALUE"),
])
def test_non_interactive_refuses_what_run_refuses(tmp_path, change, message):
    one_line_error(collkit(*NONINTERACTIVE, *change, cwd=tmp_path), message)
    assert not (tmp_path / "spec.toml").exists()


@needs.openmpi
def test_non_interactive_writes_a_commented_spec_that_plans_as_written(tmp_path):
    out = collkit(*NONINTERACTIVE, "--mpi", "openmpi", "--backend-mpi", "default,bcast/binomial_doubling",
                  "--measure", "time_budget_s=0.002", "--measure", "settle_s=0", "--name", "scripted", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    spec_file = tmp_path / "spec.toml"
    assert out.stdout.startswith("wrote spec.toml: ")
    text = spec_file.read_text()
    assert "# the reduction op (reductions only)\nop = \"sum\"" in text     # every key says what it means
    spec = specs.load(spec_file)
    assert spec.name == "scripted" and spec.measure.settle_s == 0.0 and spec.platforms == ()
    plan = planner.build(spec, platforms.detect(), registry.load())
    assert written_points(spec_file) == len(plan.points) > 0


@needs.simgrid_programs
def test_a_simulated_platform_is_offered_and_written_as_the_spec_platform(tmp_path):
    """SMPI's libraries and names (what the planner resolves against there), the
    platform in `platforms`, and the planner's refusal of what cannot be simulated."""
    args = ["new", "--non-interactive", "--platform", "sim:fattree-2to1", "--collectives", "bcast", "--sizes", "8",
            "--ranks", "4", "--mpi", "smpi", "--backend-mpi", "default,all"]
    too_big = [a if a != "4" else "2048" for a in args]        # --ranks 2048 on 1,024 nodes
    one_line_error(collkit(*too_big, "--out", "r.toml", cwd=tmp_path),
                   "r.toml: ranks = 2048: a job of 2048 nodes does not fit machine fattree-2to1", "at most 1024")
    assert not (tmp_path / "r.toml").exists()
    # One simulated clock: window sync runs there (bench/sync.c), so it is offered too.
    out = collkit(*args, "--out", "w.toml", "--measure", "sync=window", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert specs.load(tmp_path / "w.toml").measure.sync == "window"
    out = collkit(*args, "--out", "s.toml", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    spec = specs.load(tmp_path / "s.toml")
    assert spec.platforms == ("sim:fattree-2to1",)
    plan = planner.build(spec, platforms.load(Path("sim:fattree-2to1")), registry.load())
    assert written_points(tmp_path / "s.toml") == len(plan.points) > 1


@pytest.mark.parametrize("typed, toml", [
    ("5", "5"), (" -3 ", "-3"), ("0.05", "0.05"), ("2", "2"), ("1e-3", "0.001"), ("7.", "7.0"), ("007", "7"),
    ("first", '"first"'), ('a"b', '"a\\"b"'), ("1,5", '"1,5"'),
])
def test_typed_entries_become_the_toml_value_they_read_as(typed, toml):
    assert choices.value(typed) == toml


def test_typed_lists_and_ranges():
    assert choices.list_value("2, 4 8") == "[2, 4, 8]"
    assert choices.list_value("8, 1KiB") == '[8, "1KiB"]'
    assert choices.list_value("8B..1MiB x4") == '"8B..1MiB x4"'
    assert choices.list_value("0") == "[0]"


def test_new_is_listed_in_help(tmp_path):
    out = collkit("--help", cwd=tmp_path)
    assert out.returncode == 0 and re.search(r"^\s+new\s", out.stdout, re.M)
