/* The SimGrid-specific pieces of collkit-replay (sim.c): how the measured
 * time between two calls becomes simulated time, and buffers whose contents
 * do not matter. */
#ifndef CK_REPLAY_SIM_H
#define CK_REPLAY_SIM_H

#include <stddef.h>

void rp_compute(double seconds);
/* zero-filled below RP_SHARED_ABOVE bytes, garbage (folded) from there on */
void *rp_buffer_alloc(size_t bytes);
void rp_buffer_free(void *p, size_t bytes);

#endif
