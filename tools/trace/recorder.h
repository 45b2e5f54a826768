/* The PMPI message recorder of ck_trace_mpi (real MPI). */
#ifndef CK_RECORDER_H
#define CK_RECORDER_H

#include <mpi.h>

#include "msgs.h"

/* From now on every send this process makes on `comm` is appended to `sink`
 * (destination rank in comm, bytes, step from 0). Sends on other
 * communicators (libcollkit's typed copies on MPI_COMM_SELF, the harness's
 * own traffic) are not recorded. */
void ck_recorder_start(MPI_Comm comm, ck_msgs *sink);

/* Stops recording; returns how many non-blocking requests started while
 * recording were never completed by MPI_Waitall (0 for a sound schedule). */
long ck_recorder_stop(void);

#endif /* CK_RECORDER_H */
