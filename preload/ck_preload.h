/*
 * libcollkit-preload: internal declarations shared by its files.
 *
 * The shim intercepts the MPI collectives through the profiling interface and
 * either runs a libcollkit algorithm or the library's own (PMPI_*) collective.
 * Every decision reads only arguments MPI requires to agree across the ranks of
 * a call (collective, communicator, root, block bytes read on a side significant
 * at each rank, datatype and op of reductions), never an argument that is not
 * significant at that rank, so all ranks always choose alike (docs/preload.md).
 */
#ifndef COLLKIT_PRELOAD_H
#define COLLKIT_PRELOAD_H

#include "fallback_rule.h"
#include "race_state.h"

#include <collkit/collkit.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Most algorithms of one collective the shim can name (well above any registry table). */
#define CKP_MAX_ALGS 32
/* Stats column of the library's own collective, after the algorithms. */
#define CKP_LIBRARY CKP_MAX_ALGS
/* Columns after it: the library's own algorithms that can be switched, per
 * call (MPICH) or per communicator (Open MPI), library_algs.c: "library:NAME"
 * in rules and candidates. */
#define CKP_LIB_ALGS_MAX 32
#define CKP_LIB_COL(i) (CKP_LIBRARY + 1 + (i))

/* Why a call went to the library instead (ckp_reason, ckp_reason_name): fallback_rule.h. */

/* One line of a rules file: collective, rank range, bytes range, choice. */
typedef struct {
    ck_collective coll;
    int pmin, pmax;         /* inclusive */
    size_t bmin, bmax;      /* inclusive */
    int alg;                /* index into ckp_algs[coll], -1: the library, or CKP_LIB_COL(i): its algorithm i */
} ckp_rule;

typedef struct {
    int active;                          /* any forcing or rules: else pass-through */
    int forced[CK_NUM_COLLECTIVES];      /* algorithm index, or -1 */
    ckp_rule *rules;
    size_t nrules;
    /* `allow_fp_rank_variant = true` in the rules file: rules may run
     * CK_TRAIT_FP_RANK_VARIANT algorithms on floating-point reductions. A
     * forced algorithm (COLLKIT_ALGORITHMS) is allowed by being named. */
    int allow_fp_rank_variant;
    /* The autotuner's race states (race_state.h): continued under
     * COLLKIT_AUTOTUNE_FROM, read and ignored under COLLKIT_RULES. */
    ckp_races races;
    int report;                          /* COLLKIT_REPORT given */
    char report_path[4096];              /* "" = standard error */
} ckp_config;

extern ckp_config ckp_cfg;

/* The registry's algorithms per collective, in registry order (algorithms.c):
 * the index a forcing, a rule and the report's columns name an algorithm by. */
extern const ck_algorithm *ckp_algs[CK_NUM_COLLECTIVES][CKP_MAX_ALGS];
extern int ckp_nalgs[CK_NUM_COLLECTIVES];
void ckp_algs_index(void);
/* The index of collective c's algorithm `name`, or -1. */
int ckp_alg_find(ck_collective c, const char *name);

/* The library's algorithms that can be switched (library_algs.c): found at
 * MPI_Init through MPI_T (MPICH's MPIR_CVAR_<COLL>_INTRA_ALGORITHM; Open
 * MPI's coll_tuned_<coll>_algorithm under coll_tuned_use_dynamic_rules);
 * under MPICH ckp_lib_select before a call runs algorithm i of c, and
 * ckp_lib_restore after it puts the CVARs back. */
void ckp_lib_algs_setup(void);
/* One number for what the rank found; the ranks compare it at MPI_Init and,
 * where it differs, none is offered on any rank (ckp_lib_algs_disable). */
int ckp_lib_algs_signature(void);
void ckp_lib_algs_disable(void);
int ckp_lib_nalgs(ck_collective c);
const char *ckp_lib_alg_name(ck_collective c, int i);
int ckp_lib_alg_find(ck_collective c, const char *name);
void ckp_lib_select(ck_collective c, int i);
void ckp_lib_restore(ck_collective c);
/* Open MPI (coll/tuned under coll_tuned_use_dynamic_rules): the switch is
 * read when a communicator is made, so algorithm i of c runs on a duplicate
 * made by ckp_lib_dup (collective over comm) instead of ckp_lib_select. */
int ckp_lib_per_comm(void);
int ckp_lib_dup(ck_collective c, int i, MPI_Comm comm, MPI_Comm *out);
/* Whether algorithm i of c may run a call on p ranks with op (MPI_OP_NULL
 * where the collective has none); from values equal on every rank. */
int ckp_lib_alg_can(ck_collective c, int i, int p, MPI_Op op);
/* A column's name ("library", "library:NAME" in buf, an algorithm's), and a
 * name's column (-2: unknown). */
const char *ckp_column_name(ck_collective c, int col, char *buf, size_t len);
int ckp_column_find(ck_collective c, const char *name);

/* Reads COLLKIT_ALGORITHMS, COLLKIT_RULES and COLLKIT_REPORT into ckp_cfg.
 * Returns 0, or -1 with one line (naming the variable and the fix) in err. */
int ckp_config_load(char *err, size_t errlen);
/* Parses a rules file into cfg's rules and setting; -1 with a message in err. */
int ckp_rules_load(const char *path, ckp_config *cfg, char *err, size_t errlen);
/* The algorithm index for this call, or -1 (library). */
int ckp_choose(ck_collective c, int p, size_t bytes);

/* MPI_Init / MPI_Init_thread / MPI_Finalize work around PMPI_Init*. */
int ckp_after_init(void);
int ckp_before_finalize(void);

/* ---------------------------------------------------------------- shared state (shared.c) */

/* Nonzero while this thread runs a libcollkit algorithm (the dispatcher sets
 * it): libcollkit's own helpers may call MPI collectives (ck_nodes_get's
 * allreduce on a split of the communicator), which with -Bsymbolic bind to
 * this shim; they go to the library, neither chosen for (forcing an algorithm
 * on them would recurse without end) nor profiled. */
extern __attribute__((tls_model("initial-exec"))) _Thread_local int ckp_inside;

/* What the shim keeps per communicator: one entry, cached as an attribute
 * under one key and freed with the communicator. */
typedef struct ckp_comm_s {
    int size, rank, inter; /* an intercommunicator's: its local group's */
    /* The algorithms' messages travel on this duplicate (dispatch.c), made at
     * the dispatcher's first call on the communicator; MPI_COMM_NULL until
     * then, and always for an intercommunicator. */
    MPI_Comm dup;
    /* Under Open MPI, the library's algorithm i of collective c runs on
     * lib_dups[c * CKP_LIB_ALGS_MAX + i] (dispatch.c, lib_comm): made at its
     * first call on the communicator, freed with it. NULL until one is. */
    MPI_Comm *lib_dups;
    struct ckp_comm_s *lib_next; /* the entries with lib_dups, freed at MPI_Finalize */
    /* The profile's label (profile.c, profile.h: ckp_comm_kind), once
     * labelled; then index: its place in the rank's list of communicators
     * (the files' "comms", which holds the label's instance); seq: the
     * profiled collective calls on it so far, classified or not, so that
     * every rank numbers the same call alike. */
    int labelled, kind, leader;
    uint32_t index;
    uint64_t seq;
    /* The autotuner: a number no other entry of this run has (a freed
     * entry's address may come back), the key its classes go by (0 until
     * its first autotuned call: autotune.c, comm_key), and the class of its
     * last call. */
    uint64_t serial;
    uint64_t tune_key;
    void *tune_last;
    /* The dispatcher's buffer roles of the last call on it, with what they
     * were computed from (dispatch.c, roles_of). */
    struct {
        int valid, coll, in_place, root, scount, rcount;
        ck_mpi_roles ro;
    } roles;
} ckp_comm;

/* At MPI_Init, when the dispatcher or the profile is on: the attribute key,
 * and whether the program may call from several threads at once. */
int ckp_comms_create(void);
/* comm's entry, made on first use with its size, rank and inter; an MPI error
 * code when it cannot be. */
int ckp_comm_of(MPI_Comm comm, ckp_comm **out);
/* Before PMPI_Finalize: MPI_COMM_WORLD's and MPI_COMM_SELF's entries, every
 * entry's lib_dups, the key. */
void ckp_comms_release(void);
/* An entry has just got its lib_dups: listed, so that they are freed at
 * MPI_Finalize even if the program never frees its communicator. */
void ckp_comm_lib_dups_made(ckp_comm *c);
/* MPI_THREAD_MULTIPLE was provided: calls may come from several threads at once. */
extern int ckp_multi_threaded;
/* Entries freed so far: a memo keyed by a communicator's handle is stale once
 * this moves (a freed handle may come back as another communicator). */
extern unsigned long ckp_comms_freed;
/* Set by a part that keeps communicators' handles of its own (the settled
 * calls, autotune_settled.c): told of each one freed, before its handle can
 * be reused. */
extern void (*ckp_comm_forget)(MPI_Comm comm);

/* ---------------------------------------------------------------- the autotuner (autotune*.c) */

/* What COLLKIT_AUTOTUNE* set (autotune_config.c; docs/preload.md, "Autotune"). */
typedef struct {
    int on;
    char out[4096];              /* the rules file rank 0 writes at MPI_Finalize */
    double budget;               /* exploration's cost, at most this fraction of the class's time */
    long max_calls;              /* exploration calls a class, at most */
    /* A class explores from its call after this many; the first ones run the
     * library, untimed, so a class the program calls a few times stays on it
     * and costs nothing (mpi4py's test suite under MPICH: 827 classes, most of
     * a few calls on communicators made and freed, whose first stages made the
     * run 3-5 % slower in wall time). */
    long after;
    double alpha;                /* the chance of eliminating the best candidate, at most */
    /* Per collective: which libcollkit algorithms may be candidates (bit k:
     * ckp_algs[c][k]); all when COLLKIT_AUTOTUNE_CANDIDATES does not name it.
     * The library's own collective always is one. */
    uint32_t allowed[CK_NUM_COLLECTIVES];
    uint32_t allowed_lib[CK_NUM_COLLECTIVES]; /* the same for the library's own (bit i: library:NAME i) */
    int from;                    /* COLLKIT_AUTOTUNE_FROM: its rules (in ckp_cfg) settle the classes they match */
    /* Test-only (COLLKIT_AUTOTUNE_TEST_SLOW): microseconds added inside the
     * timed call of a candidate, on one rank or all (-1). */
    int nslow;
    struct {
        int coll, col, rank;
        double us;
    } slow[16];
} ckp_tune_config;

extern ckp_tune_config ckp_tune_cfg;

/* Reads COLLKIT_AUTOTUNE* (after ckp_config_load); 0, or -1 with one line in err. */
int ckp_autotune_setup(char *err, size_t errlen);

/* Why algorithm a cannot run this call correctly (a ckp_reason), or -1 when
 * it can: from values equal on every rank only (fallback.c). */
int ckp_fallback_reason(const ck_algorithm *a, ck_collective c, const ckp_comm *info, size_t bytes, int count,
                        MPI_Datatype dt, MPI_Op op, int root);
/* A datatype's size and whether its elements lie end to end from the
 * buffer's address, without gaps (datatypes.c). MPI's error code. */
int ckp_type_info(MPI_Datatype t, int *size, int *contiguous);
/* Whether t is a named (predefined) datatype: MPI never frees one (datatypes.c). */
int ckp_type_named(MPI_Datatype t);

/* One call as the autotuner sees it: the column it runs (an algorithm index,
 * or CKP_LIBRARY) and, while its class explores, what to time. */
typedef struct {
    void *cls;     /* the class, or NULL: the call is not the autotuner's */
    int col;
    int timed;     /* exploring: time the call and hand it to ckp_autotune_end */
    double slow_s; /* test-only delay of an exploring call (ckp_autotune_end) */
} ckp_tune_call;

/* Before the call: its class (made at its first call, keyed by values equal
 * on every rank) and the column it runs. */
void ckp_autotune_begin(ck_collective c, MPI_Comm comm, const ckp_comm *info, const ck_mpi_args *m,
                        size_t bytes, ckp_tune_call *tc);
/* After it: this rank's arrival and exit (ckp_autotune_now); at a look, the
 * ranks agree on each call's working time (one allreduce on the shim's
 * duplicate of comm) and decide. */
void ckp_autotune_end(ckp_tune_call *tc, const ckp_comm *info, double arrival, double exit);
/* A settled class's call in one cache line (autotune_settled.c): the column
 * of a call that repeats every argument of a settled call kept in its slot,
 * with its block bytes, counted there; -1 otherwise.
 * After a call of the general path, ckp_settled_note keeps it when it may be
 * repeated so. A call the column sends to the library (the dispatcher runs it
 * at once, uncounted when no report times it) is counted there for the
 * statistics too, until ckp_settled_count hands the counts on. */
int ckp_settled_col(ck_collective c, const ck_mpi_args *m, size_t *bytes);
void ckp_settled_note(ck_collective c, const ck_mpi_args *m, const ck_mpi_roles *ro, const ckp_comm *info,
                      const ckp_tune_call *tc, size_t bytes);
void ckp_settled_count(void); /* the counts so far to the classes and statistics (ckp_stats_pending) */
void ckp_settled_flush(void); /* the same, and the table emptied */
/* After the set-up agreement, every rank: the clock's offset to world rank
 * 0's (clock.c), for the arrivals and exits. ckp_autotune_now: that clock, s. */
void ckp_autotune_started(void);
void ckp_autotune_close(void);   /* at MPI_Finalize, every rank: the closing looks */
void ckp_autotune_stopped(void); /* at MPI_Finalize, every rank */
double ckp_autotune_now(void);
/* The first line of MPI_Get_library_version (names.c): the rules'
 * `mpi_library` setting, checked by rules.c against the running library. */
void ckp_library_line(char *out, size_t len);
/* At MPI_Finalize: rank 0 writes the rules (autotune_write.c). */
void ckp_autotune_finish(int rank);
/* The report's section (report.c), and the rank files' "autotune" object
 * (profile_write.c). */
void ckp_autotune_report(FILE *f);
void ckp_autotune_json(FILE *f);

/* Statistics (autotune_stats.c). */
void ckp_sort(double *v, size_t n);
double ckp_median_sorted(const double *v, size_t n);
void ckp_median_interval_sorted(const double *v, size_t n, double *lo, double *hi);
double ckp_mann_whitney_greater(const double *a, size_t na, const double *b, size_t nb, double *scratch);

/* ---------------------------------------------------------------- the dispatcher (dispatch.c) */

/* The one dispatcher: the uniform argument list of every collective. bcast
 * passes its buffer, count and datatype as the receive side. */
int ckp_dispatch(ck_collective c, const void *sbuf, int scount, MPI_Datatype stype,
                 void *rbuf, int rcount, MPI_Datatype rtype, MPI_Op op, int root,
                 MPI_Comm comm);

/* The large-count interceptors' test (dispatch.c): 1 with int counts in
 * *sc / *rc when every count significant at this rank fits an int (one that is
 * not significant is never read), else 0: the library's _c call. */
int ckp_int_counts(ck_collective c, const void *sbuf, MPI_Count scount, void *rbuf, MPI_Count rcount,
                   int root, MPI_Comm comm, int *sc, int *rc);

/* The Fortran bindings: Init/Init_thread/Finalize around the shim's hooks
 * (fortran_init.c, both MPIs), and one collective with Open MPI's Fortran
 * handles and counts, its MPI_IN_PLACE / MPI_BOTTOM sentinels turned into
 * C's (fortran.c, Open MPI only). Arguments a collective does not have are
 * NULL; ierr may be NULL (mpi_f08's optional ierror). Shared by the mpif.h /
 * `use mpi` symbols and the mpi_f08 ones (fortran_f08.c). */
void ckp_fortran_init(MPI_Fint *ierr);
void ckp_fortran_init_thread(const MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr);
void ckp_fortran_finalize(MPI_Fint *ierr);
void ckp_fortran_coll(ck_collective c, const void *s, const MPI_Fint *sc, const MPI_Fint *st, void *r,
                      const MPI_Fint *rc, const MPI_Fint *rt, const MPI_Fint *op, const MPI_Fint *root,
                      const MPI_Fint *comm, MPI_Fint *ierr);

/* ierror is optional in mpi_f08: an absent one arrives as NULL. */
static inline void ckp_set_ierr(MPI_Fint *ierr, int rc)
{
    if (ierr) *ierr = rc;
}

/* One Fortran procedure under the four manglings compilers use (gfortran:
 * lower case, one underscore). */
#define CKP_FORTRAN(lower, upper, params, body)                                                    \
    void lower##_ params body                                                                      \
    void lower##__ params body                                                                     \
    void lower params body                                                                         \
    void upper params body

/* ---------------------------------------------------------------- the profile (profile.c) */

/* The collectives the profile counts: libcollkit's eight (ck_collective
 * values first), then those the shim only times (always the library). The
 * names written for them are profile_write.c's; Python knows the timing-only
 * ones as TIMING_ONLY in collkit/program/profile_file.py. */
typedef enum {
    CKP_P_BARRIER = CK_NUM_COLLECTIVES,
    CKP_P_ALLGATHERV,
    CKP_P_ALLTOALLV,
    CKP_P_GATHERV,
    CKP_P_SCATTERV,
    CKP_P_REDUCE_SCATTER_V,
    CKP_P_SCAN,
    CKP_P_EXSCAN,
    CKP_P_NUM
} ckp_profiled;

/* One call as the profile keys it: bytes, root (-1: none), datatype (on the
 * block's side; MPI_DATATYPE_NULL: none), op (MPI_OP_NULL: none), in place. */
typedef struct {
    int coll; /* ck_collective or ckp_profiled */
    size_t bytes;
    int root;
    MPI_Datatype dt;
    MPI_Op op;
    int in_place;
} ckp_call_key;

/* Nonzero when COLLKIT_PROFILE is set (read at MPI_Init). */
extern int ckp_profile_on;
/* The profile's clock: the x86 time-stamp counter where the CPU says it is
 * invariant (constant_tsc and nonstop_tsc), else PMPI_Wtime in ns; either is
 * calibrated against CLOCK_MONOTONIC over the run (profile.c), the clock the
 * files' times are in (clock.c). Reading PMPI_Wtime twice a call
 * (clock_gettime) was about a third of the profile's cost (docs/benchmarks-log.md). */
extern int ckp_profile_tsc;
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define CKP_HAVE_TSC 1
#endif
static inline uint64_t ckp_profile_now(void)
{
#ifdef CKP_HAVE_TSC
    if (ckp_profile_tsc) return __rdtsc();
#endif
    return (uint64_t)(PMPI_Wtime() * 1e9);
}
/* Before PMPI_Init*: the start of the MPI_Init..MPI_Finalize span. */
void ckp_profile_mark_init(void);
/* After PMPI_Init*: reads COLLKIT_PROFILE, COLLKIT_PROFILE_TRACE and
 * COLLKIT_PROFILE_CLOCK; 0, or -1 with one line in err (the ranks agree on it
 * like the rules file). */
int ckp_profile_setup(char *err, size_t errlen);
/* What the ranks must agree on before the profile's collective set-up: 0
 * when not profiling, else 1 + the clock's mode. */
int ckp_profile_mode(void);
/* After the agreement: the clock's set-up (collective), then the rank's
 * start file (DIR/rank-R.start.json). */
void ckp_profile_started(void);
/* Counts one call on comm from t0 to t1 (ckp_profile_now). The key of the
 * eight is computed from their arguments (ck_mpi_roles_of). */
void ckp_profile_dispatch(ck_collective c, const ck_mpi_args *m, uint64_t t0, uint64_t t1);
void ckp_profile_call(MPI_Comm comm, const ckp_call_key *k, uint64_t t0, uint64_t t1);
/* At MPI_Finalize (before PMPI_Finalize): the clock's second measurement
 * (collective), then DIR/rank-R.json, atomically. */
void ckp_profile_finish(void);

/* Statistics (stats.c; the report, report.c). */
void ckp_stat_call(ck_collective c, int col, size_t bytes, double seconds);
/* n untimed calls of bytes each at once (the settled calls' counts, autotune_settled.c). */
void ckp_stat_calls(ck_collective c, int col, long n, size_t bytes);
/* Set by a part that holds counts back (autotune_settled.c): asked to hand
 * them on before the test counters below are read mid-run. */
extern void (*ckp_stats_pending)(void);
void ckp_stat_fallback(ck_collective c, int alg, ckp_reason r);
/* A column's calls so far (the held-back ones handed on first), its bytes and seconds. */
long ckp_stat_read(ck_collective c, int col, double *bytes, double *seconds);
long ckp_stat_fallbacks(ck_collective c, int alg, ckp_reason r);
int ckp_report_write(void);

/* Counters for tests: calls that ran algorithm `alg` of `coll` (alg = -1: the
 * library), and fallbacks for a reason. Exported, looked up with dlsym. */
long collkit_preload_calls(int coll, int alg);
long collkit_preload_fallbacks(int coll, int reason);

#endif
