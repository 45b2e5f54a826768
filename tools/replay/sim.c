/* The program's own work between two collectives, replayed as simulated time.
 *
 * smpi_nanosleep (what SimGrid 3.32's smpicc makes of nanosleep through the
 * smpi_helpers.h it force-includes; called by name here, so the macro's
 * _POSIX_TIMERS condition does not matter): the rank's actor sleeps for
 * exactly that much simulated time, whatever the host's speed. smpi_execute_flops would
 * need a flop count, and collkit's platforms give their hosts the speed of a
 * local reduction (bytes/s), not of the program's computation, so a
 * duration is the only honest input. With smpi/simulate-computation:no the
 * host's real CPU time between calls adds nothing, so reruns are identical. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdlib.h>
#include <time.h>

#include "sim.h"

#ifndef SMPI_H
#error "collkit-replay runs under SimGrid only: build it with smpicc (build/simgrid)"
#endif

void rp_compute(double seconds)
{
    if (!(seconds > 0.0)) return;
    struct timespec ts;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec > 999999999L) ts.tv_nsec = 999999999L;
    if (ts.tv_sec == 0 && ts.tv_nsec == 0) return;
    smpi_nanosleep(&ts, NULL);
}

/* Collective buffers: a replay validates nothing, so from this size on every
 * rank's buffer is folded onto SMPI's shared block (SMPI_SHARED_MALLOC):
 * simulated times do not change, and 1,024 ranks of a large alltoall fit in
 * memory. `collkit replay` also sets COLLKIT_SIM_NO_DATA=1, so libcollkit
 * charges its copies and reductions without doing them on such memory.
 * Smaller buffers stay private (and zeroed). */
#define RP_SHARED_ABOVE 65536

void *rp_buffer_alloc(size_t bytes)
{
    if (bytes >= RP_SHARED_ABOVE) return SMPI_SHARED_MALLOC(bytes);
    return calloc(bytes, 1);
}

void rp_buffer_free(void *p, size_t bytes)
{
    if (p == NULL) return;
    if (bytes >= RP_SHARED_ABOVE) SMPI_SHARED_FREE(p);
    else free(p);
}
