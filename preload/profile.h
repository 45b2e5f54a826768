/* The profile's state: profile.c keeps it (counting) and hands it to
 * profile_write.c (the per-rank JSON files). Nothing else reads it. */
#ifndef COLLKIT_PRELOAD_PROFILE_H
#define COLLKIT_PRELOAD_PROFILE_H

#include "ck_preload.h"

#include <stdint.h>
#include <stdio.h>

/* At most this many classes per rank; the table has twice the slots so that
 * probes stay short. */
#define CKP_PROFILE_CLASSES 2048
#define CKP_PROFILE_SLOTS 4096
/* The most calls COLLKIT_PROFILE_TRACE may keep per rank (240 MB at 24 bytes
 * a call: ckp_trace_call). */
#define CKP_TRACE_MAX 10000000
/* The sample's slots (always kept while profiling): the calls whose sequence
 * number on their communicator is a multiple of the stride, which doubles
 * (and the kept calls are thinned to its multiples) whenever they fill. */
#define CKP_SAMPLE_CALLS 4096
/* Past this stride the sample stops thinning: only a program with more than
 * 4,096 communicators, each calling once, keeps it full of sequence 0s, and
 * a thinning pass per call would cost more than the sample is worth. */
#define CKP_SAMPLE_STRIDE_MAX (UINT64_C(1) << 40)

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

/* One traced or sampled call: 24 bytes. The class number (below 2,048) and
 * the sequence number share one word: 52 bits of sequence are 4.5e15 calls
 * on one communicator, years at any call rate. */
#define CKP_ROW_CLS_BITS 12
typedef struct {
    uint64_t start;   /* ticks from the end of MPI_Init */
    float ticks;      /* its time inside the library */
    uint32_t comm;    /* index into the rank's communicators (ckp_comm_info) */
    uint64_t seq_cls; /* seq << CKP_ROW_CLS_BITS | ckp_class.number */
} ckp_trace_call;
_Static_assert(sizeof(ckp_trace_call) == 24, "the docs and CKP_TRACE_MAX's bound say 24 bytes a row");

static inline uint64_t ckp_row_seq(const ckp_trace_call *t)
{
    return t->seq_cls >> CKP_ROW_CLS_BITS;
}

static inline uint32_t ckp_row_cls(const ckp_trace_call *t)
{
    return (uint32_t)(t->seq_cls & ((1u << CKP_ROW_CLS_BITS) - 1));
}

/* A communicator this rank profiled calls on, in order of first use (the
 * files' "comms"): its label (ckp_comm_kind, leader, size, as the classes'),
 * how many communicators of that label the rank listed before it, and the
 * rank's rank in it. */
typedef struct {
    int kind, leader, size, rank;
    uint32_t instance;
} ckp_comm_info;

/* The clock (clock.c): how this rank's CLOCK_MONOTONIC maps to world rank
 * 0's, measured at MPI_Init and at MPI_Finalize. */
typedef enum { CKP_CLOCK_REFERENCE = 0, CKP_CLOCK_SAME_NODE, CKP_CLOCK_EXCHANGE } ckp_clock_method;

typedef struct {
    int exchange_all;  /* COLLKIT_PROFILE_CLOCK=exchange: every rank but 0 measures itself */
    MPI_Comm world;    /* the preload's own duplicate of MPI_COMM_WORLD */
    MPI_Comm node;     /* its split by shared memory, ordered by world rank */
    int node_leader;   /* the lowest world rank of this rank's node */
    int method;        /* ckp_clock_method */
    uint64_t run_id;   /* rank 0's, at MPI_Init */
    int measured_final;
    double init_s, offset_init_s, final_s, offset_final_s; /* CLOCK_MONOTONIC, s */
    double error_s;    /* the larger of the two measurements' bounds */
} ckp_clock;

/* clock.c. Reads COLLKIT_PROFILE_CLOCK: 0, or -1 with one line in err. */
int ckp_clock_setup(ckp_clock *c, int profiling, char *err, size_t errlen);
/* After the setup agreement, every rank: the run's id, the node, the offset
 * at MPI_Init. At MPI_Finalize, before the final file: the offset again, and
 * the duplicates freed. Collective over MPI_COMM_WORLD (on the duplicate). */
void ckp_clock_start(ckp_clock *c);
/* Its duplicates freed without the final measurement (the autotuner's clock). */
void ckp_clock_release(ckp_clock *c);
void ckp_clock_finish(ckp_clock *c);
double ckp_clock_monotonic(void);
/* "reference", "same-node" or "exchange" (the files' clock.method). */
const char *ckp_clock_method_name(int method);

typedef struct {
    char dir[4096];
    double init_start, span; /* CLOCK_MONOTONIC: MPI_Init's entry to MPI_Finalize's */
    uint64_t zero;           /* ckp_profile_now at the end of MPI_Init */
    double mono_zero;        /* and CLOCK_MONOTONIC then: the trace's zero, and */
    uint64_t end;            /* the ticks' calibration against it, from the */
    double mono_end;         /* whole run: both again at MPI_Finalize */
    double tick_s;           /* seconds a tick, set at MPI_Finalize */
    ckp_clock clock;
    ckp_class *slots;
    uint32_t *order; /* slot of class number i */
    size_t nclasses;
    long unclassified_calls;
    uint64_t unclassified_ticks;
    ckp_trace_call *trace;
    size_t trace_cap, ntrace;
    long dropped;
    ckp_trace_call *sample; /* CKP_SAMPLE_CALLS slots */
    size_t nsample;
    uint64_t stride;
    ckp_comm_info *comms; /* grows by doubling: one entry per communicator */
    size_t ncomms, comms_cap;
} ckp_profile_state;

/* A class's datatype and op names (names.c). */
void ckp_profile_names(ckp_class *e, MPI_Datatype dt, MPI_Op op);
/* A communicator's label as the files write it: "world", "self", "inter" or
 * "c<leader>x<size>" (profile_file.py: comm). */
void ckp_profile_label(char *out, size_t len, int kind, int leader, int size);
/* A predefined op's lower-case name ("sum"), "user" for a user op, NULL for
 * MPI_OP_NULL (names.c); a JSON string, escaped (json.c). The profile's and
 * the autotuner's files use both. */
const char *ckp_op_name(MPI_Op op);
void ckp_json_string(FILE *f, const char *s);
/* profile_write.c */
void ckp_profile_write_start(const ckp_profile_state *s);
void ckp_profile_write_final(const ckp_profile_state *s);

#endif
