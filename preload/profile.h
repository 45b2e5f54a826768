/* The profile's state: profile.c keeps it (counting) and hands it to
 * profile_write.c (the per-rank JSON files). Nothing else reads it. */
#ifndef COLLKIT_PRELOAD_PROFILE_H
#define COLLKIT_PRELOAD_PROFILE_H

#include "ck_preload.h"

#include <stdint.h>

/* At most this many classes per rank; the table has twice the slots so that
 * probes stay short. */
#define CKP_PROFILE_CLASSES 2048
#define CKP_PROFILE_SLOTS 4096
/* The most calls COLLKIT_PROFILE_TRACE may keep per rank (160 MB at 16 bytes a call). */
#define CKP_TRACE_MAX 10000000

/* A communicator as the profile labels it (profile_file.py: comm): its
 * entry's kind (ckp_comm, shared.c), and for CKP_COMM_OTHER its leader, the
 * world rank of its rank 0 (-1 if outside the world). */
typedef enum { CKP_COMM_WORLD = 0, CKP_COMM_SELF, CKP_COMM_INTER, CKP_COMM_OTHER } ckp_comm_kind;

typedef struct {
    /* The key; calls == 0 marks an empty slot. */
    int coll, root, in_place, comm_kind, comm_leader, comm_size;
    size_t bytes;
    MPI_Datatype dt; /* on the block's side */
    MPI_Op op;
    /* Names taken when the class is first seen (a derived datatype may be
     * freed before MPI_Finalize). */
    char datatype[48];
    const char *dtype; /* the spec's name, or NULL */
    const char *op_name;
    uint32_t number; /* order of first use: the trace's class index */
    long calls;
    uint64_t ticks; /* time inside the library, in ckp_profile_now's ticks */
} ckp_class;

/* One traced call: 16 bytes. */
typedef struct {
    uint64_t start; /* ticks from the end of MPI_Init */
    float ticks;    /* its time inside the library */
    uint32_t cls;   /* ckp_class.number */
} ckp_trace_call;

typedef struct {
    char dir[4096];
    double init_start, span; /* CLOCK_MONOTONIC: MPI_Init's entry to MPI_Finalize's */
    uint64_t zero;           /* ckp_profile_now at the end of MPI_Init */
    double wtime_zero;       /* and PMPI_Wtime then: the clock's calibration */
    double tick_s;           /* seconds a tick, set at MPI_Finalize */
    ckp_class *slots;
    uint32_t *order; /* slot of class number i */
    size_t nclasses;
    long unclassified_calls;
    uint64_t unclassified_ticks;
    ckp_trace_call *trace;
    size_t trace_cap, ntrace;
    long dropped;
} ckp_profile_state;

/* profile_write.c */
void ckp_profile_names(ckp_class *e, MPI_Datatype dt, MPI_Op op);
void ckp_profile_write_start(const ckp_profile_state *s);
void ckp_profile_write_final(const ckp_profile_state *s);

#endif
