"""A launch whose MPI did not start says so in the point's reason
(launch/mpi_failure.py), from the library's own output. Checked on the library's
text alone: Open MPI 4.1 printed its MPI_Init help text whole, in part or not at all
from one run to the next here (its "Data unpack would read past end of buffer"
while gathering it), so a real failed launch cannot promise the words."""

from collkit.launch import mpi_failure

# As Open MPI 4.1 printed it here with OMPI_MCA_btl=nonexistent (trimmed).
OPEN_MPI = """--------------------------------------------------------------------------
It looks like MPI_INIT failed for some reason; your parallel process is
likely to abort.  There are many reasons that a parallel process can
fail during MPI_INIT; some of which are due to configuration or environment
problems.  This failure appears to be an internal failure; here's some
additional information (which may only be relevant to an Open MPI
developer):

  mca_bml_base_open() failed
  --> Returned "Not found" (-13) instead of "Success" (0)
--------------------------------------------------------------------------
[vm:23774] *** An error occurred in MPI_Init
[vm:23774] *** reported by process [807862273,1]
"""
# MPICH's error stack (its form in MPICH 4's src/mpi/errhan).
MPICH = """Abort(1090447) on node 0 (rank 0 in comm 0): Fatal error in PMPI_Init: Unknown error class, error stack:
MPIR_Init_thread(193)........:
MPID_Init(1715)..............:
"""


def test_open_mpi_names_the_step_that_failed(tmp_path):
    (tmp_path / "err").write_text(OPEN_MPI)
    assert mpi_failure.diagnose(tmp_path / "err") == \
        'MPI_Init failed: mca_bml_base_open() failed returned "Not found" (-13)'


def test_mpich_gives_its_error_class(tmp_path):
    (tmp_path / "err").write_text(MPICH)
    assert mpi_failure.diagnose(tmp_path / "err") == "MPI_Init failed: Unknown error class, error stack"


def test_other_failures_and_a_missing_file_name_nothing(tmp_path):
    (tmp_path / "err").write_text("collkit-bench: measuring the one-message floor: MPI_ERR_OTHER\n"
                                  "  --> Returned \"x\" (-1) instead of \"Success\" (0)\n")
    assert mpi_failure.diagnose(tmp_path / "err") is None
    assert mpi_failure.diagnose(tmp_path / "absent") is None
