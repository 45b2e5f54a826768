/* sched_getaffinity and CPU_ISSET are GNU extensions of the C library. */
#define _GNU_SOURCE
#include "cpus.h"

#include <mpi.h> /* SMPI_H under SimGrid: simulated ranks have no CPUs of their own */
#include <stdio.h>
#include <string.h>

#if defined(__linux__) && !defined(SMPI_H)
#include <sched.h>
#endif

void cpu_list(char *out, size_t len)
{
    out[0] = '\0';
#if !defined(__linux__) || defined(SMPI_H)
    (void)len;
#else
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return;
    size_t w = 0;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &set)) continue;
        int last = c;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) last++;
        int n = last > c ? snprintf(out + w, len - w, "%s%d-%d", w ? "," : "", c, last)
                         : snprintf(out + w, len - w, "%s%d", w ? "," : "", c);
        if (n < 0 || (size_t)n >= len - w) { /* did not fit: unknown rather than wrong */
            out[0] = '\0';
            return;
        }
        w += (size_t)n;
        c = last;
    }
#endif
}
