/* The CPUs a rank may run on, for the launch record (oversubscription). */
#ifndef COLLKIT_BENCH_CPUS_H
#define COLLKIT_BENCH_CPUS_H

#include <stddef.h>

/* Longest list written: ranges of CPU numbers, then "" if it did not fit. */
#define CPU_LIST_LEN 256

/* This process's CPU affinity as ranges ("0-3,8"), "" where it cannot be read
 * (no sched_getaffinity, a simulated rank). */
void cpu_list(char *out, size_t len);

#endif
