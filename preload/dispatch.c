/* The dispatcher: one path for every intercepted collective, C or Fortran.
 *
 * The choice reads only what MPI requires to agree across the ranks of one
 * call: the collective, the communicator (size, inter or intra), the root, the
 * block bytes (count times type size; type signatures must match), and for
 * reductions the datatype and op (the same on every rank by the standard).
 * The block bytes are read at each rank on a side MPI reads there: an argument
 * that is not significant at a rank (scatter's send side at a non-root,
 * gather's and reduce's receive side at a non-root, the side MPI_IN_PLACE
 * replaces) may be NULL, -1, MPI_DATATYPE_NULL, and is never looked at, not
 * even to validate it: a rank that refused such a call while the others ran
 * an algorithm would leave them all waiting (issue #32).
 * Data-movement collectives run on bytes: a non-contiguous buffer is packed
 * into a temporary and unpacked after, at that rank only, so the layout of one
 * rank's datatype never changes what the others do. */
#include "ck_preload.h"

#include <stdint.h>
#include <stdlib.h>

/* ---------------------------------------------------------------- helper communicator */

/* The algorithms' point-to-point messages, and the autotuner's agreement,
 * travel on a duplicate of the program's communicator, so they never match
 * the program's own receives. It is made at the first call on it that runs
 * an algorithm or is timed for the autotuner: a choice from rank-equal
 * values, so every rank makes it at the same call. A communicator whose
 * calls all run the library (a settled class, a rule that says library)
 * never pays for one: a program that makes a communicator per iteration
 * would otherwise pay a collective PMPI_Comm_dup per iteration. It is kept in
 * the communicator's entry (shared.c), whose delete callback frees it with
 * the program's communicator. */
static int need_dup(MPI_Comm comm, ckp_comm *info)
{
    if (info->dup != MPI_COMM_NULL) return MPI_SUCCESS;
    int rc = PMPI_Comm_dup(comm, &info->dup);
    if (rc != MPI_SUCCESS) info->dup = MPI_COMM_NULL;
    return rc;
}

/* Under Open MPI, the communicator that runs the library's algorithm i of c:
 * coll/tuned reads its forced algorithm only when a communicator is made
 * (tuned_module_enable), so the algorithm's calls run on a duplicate made
 * while the CVAR named it (ckp_lib_dup). The column came from rank-equal
 * values and every rank of comm is inside this call, so every rank makes it
 * here, once per communicator and algorithm: a duplicate is a collective,
 * too dear for every call. Freed with the communicator (shared.c). */
static int lib_comm(ck_collective c, int i, MPI_Comm comm, ckp_comm *info, MPI_Comm *out)
{
    if (!info->lib_dups) {
        const size_t n = (size_t)CK_NUM_COLLECTIVES * CKP_LIB_ALGS_MAX;
        info->lib_dups = malloc(n * sizeof *info->lib_dups);
        if (!info->lib_dups) return MPI_ERR_NO_MEM;
        for (size_t k = 0; k < n; k++) info->lib_dups[k] = MPI_COMM_NULL;
        ckp_comm_lib_dups_made(info);
    }
    MPI_Comm *d = &info->lib_dups[(size_t)c * CKP_LIB_ALGS_MAX + (size_t)i];
    if (*d == MPI_COMM_NULL) {
        const int rc = ckp_lib_dup(c, i, comm, d);
        if (rc != MPI_SUCCESS) return rc;
    }
    *out = *d;
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------- buffers as bytes */

/* A buffer of `count` elements of `type` seen as bytes: the user's memory when
 * contiguous, else a packed temporary. MPI_Pack's output on a homogeneous
 * machine is the elements' native bytes in Open MPI and MPICH, the same bytes
 * a contiguous rank sends (tests/preload checks a mixed call). */
typedef struct {
    void *user;
    int count;
    MPI_Datatype type;
    void *tmp;
    size_t bytes;
    int shifted; /* type is this view's own (MPI_BOTTOM, below): freed at close */
} view;

/* MPICH 5.0's MPI_Pack refuses a NULL buffer with a count above 1
 * (internal_Pack: "Invalid argument") even with a datatype of absolute
 * addresses, i.e. MPI_BOTTOM, and refusing at one rank leaves the others
 * inside the algorithm. So a view at MPI_BOTTOM addresses the same bytes from
 * a local anchor: one block of `count` elements of the type, displaced by
 * minus the anchor's address, packed (and unpacked) as one element. */
static const char bottom_anchor;

static int view_unbottom(view *v, size_t count, MPI_Datatype type)
{
    MPI_Aint a;
    int rc = PMPI_Get_address(&bottom_anchor, &a);
    if (rc != MPI_SUCCESS) return rc;
    int len = (int)count;
    MPI_Aint disp = -a;
    rc = PMPI_Type_create_struct(1, &len, &disp, &type, &v->type);
    if (rc != MPI_SUCCESS) return rc;
    v->shifted = 1;
    v->user = (void *)&bottom_anchor;
    v->count = 1;
    return PMPI_Type_commit(&v->type);
}

static int view_open(view *v, void *buf, size_t count, MPI_Datatype type, int load, MPI_Comm comm,
                     void **ptr)
{
    int size, contig;
    int rc = ckp_type_info(type, &size, &contig);
    if (rc != MPI_SUCCESS) return rc;
    v->user = buf;
    v->type = type;
    v->tmp = NULL;
    v->shifted = 0;
    v->bytes = count * (size_t)size;
    if (contig) {
        *ptr = buf;
        return MPI_SUCCESS;
    }
    /* MPI_Pack and MPI_Unpack say counts and sizes in int. */
    if (count > INT32_MAX || v->bytes > INT32_MAX) return MPI_ERR_COUNT;
    v->count = (int)count;
    if (buf == MPI_BOTTOM) {
        rc = view_unbottom(v, count, type);
        if (rc != MPI_SUCCESS) return rc;
    }
    v->tmp = malloc(v->bytes ? v->bytes : 1);
    if (!v->tmp) return MPI_ERR_NO_MEM;
    if (load) {
        int pos = 0;
        rc = PMPI_Pack(v->user, v->count, v->type, v->tmp, (int)v->bytes, &pos, comm);
        if (rc != MPI_SUCCESS) return rc;
        if ((size_t)pos != v->bytes) return MPI_ERR_TYPE;
    }
    *ptr = v->tmp;
    return MPI_SUCCESS;
}

static int view_close(view *v, int store, MPI_Comm comm, int rc)
{
    if (v->tmp) {
        if (rc == MPI_SUCCESS && store) {
            int pos = 0;
            rc = PMPI_Unpack(v->tmp, (int)v->bytes, &pos, v->user, v->count, v->type, comm);
        }
        free(v->tmp);
        v->tmp = NULL;
    }
    if (v->shifted) {
        PMPI_Type_free(&v->type);
        v->shifted = 0;
    }
    return rc;
}

/* ---------------------------------------------------------------- the algorithms */

/* Data movement on bytes: b bytes a block. Which buffers this rank passes,
 * how many elements of its own datatype each holds, and whether the receive
 * buffer carries input or takes the result are the descriptor's
 * (ck_mpi_roles_of); only the packing of non-contiguous ones is done here. */
static int run_bytes(const ck_algorithm *a, const ck_mpi_args *m, const ck_mpi_roles *ro, size_t b,
                     MPI_Comm dup)
{
    int rc = MPI_SUCCESS;
    view sv = {0}, rv = {0};
    void *s = NULL, *r = NULL;
    const int use_s = ro->send_elems > 0, use_r = ro->recv_elems > 0;
    if (use_s) rc = view_open(&sv, (void *)m->sbuf, ro->send_elems, m->stype, 1, dup, &s);
    if (rc == MPI_SUCCESS && use_r)
        rc = view_open(&rv, m->rbuf, ro->recv_elems, m->rtype, ro->recv_in, dup, &r);
    if (rc == MPI_SUCCESS) {
        const void *sarg = use_s ? s : m->sbuf;
        void *rarg = use_r ? r : m->rbuf;
        rc = ck_algorithm_call(a, sarg, rarg, b, MPI_BYTE, MPI_OP_NULL, m->root, dup);
    }
    rc = view_close(&sv, 0, dup, rc);
    rc = view_close(&rv, ro->recv_out, dup, rc);
    return rc;
}

/* ck_mpi_roles_of, remembered per communicator: the roles are a function of
 * the collective, where MPI_IN_PLACE is passed, the root and the two counts
 * (the size and rank are the entry's), so a call that repeats them repeats
 * the last call's roles. Computing them was a quarter of the autotuner's cost
 * on a settled call (perf, 8-byte allreduce, 2026-11-29). Not where threads
 * may share the entry. */
static int roles_of(ck_collective c, const ck_mpi_args *m, ckp_comm *info, ck_mpi_roles *ro)
{
    const int ip = (m->sbuf == MPI_IN_PLACE) | (m->rbuf == MPI_IN_PLACE) << 1;
    if (ckp_multi_threaded) return ck_mpi_roles_of(c, m, info->size, info->rank, ro);
    if (info->roles.valid && info->roles.coll == (int)c && info->roles.in_place == ip && info->roles.root == m->root &&
        info->roles.scount == m->scount && info->roles.rcount == m->rcount) {
        *ro = info->roles.ro;
        return 0;
    }
    info->roles.valid = 0;
    if (ck_mpi_roles_of(c, m, info->size, info->rank, ro) != 0) return -1;
    info->roles.coll = (int)c;
    info->roles.in_place = ip;
    info->roles.root = m->root;
    info->roles.scount = m->scount;
    info->roles.rcount = m->rcount;
    info->roles.ro = *ro;
    info->roles.valid = 1;
    return 0;
}

/* Runs the call on column col (an algorithm, the library, or the library's
 * algorithm) and counts it; an exploring call is timed and handed back to the
 * autotuner. info and ro may be NULL where col is the library's. */
static int run_column(ck_collective c, const ck_mpi_args *m, ckp_comm *info, const ck_mpi_roles *ro, int col,
                      size_t bytes, ckp_tune_call *tc)
{
    /* The library's own algorithm: its CVAR written before the timing starts
     * (every rank alike: the column came from rank-equal values), put back
     * after it ends. Not while other threads may call (a process-wide CVAR). */
    /* A failed duplicate is an MPI error the library would report (fatal by
     * default); the call then runs the library, untimed, at this rank. */
    if ((col < CKP_LIBRARY || tc->timed) && need_dup(m->comm, info) != MPI_SUCCESS) {
        col = CKP_LIBRARY;
        tc->timed = 0;
    }
    const int lib_alg = col > CKP_LIBRARY && !ckp_multi_threaded;
    const int per_comm = lib_alg && ckp_lib_per_comm();
    ck_mpi_args on_dup = *m;
    if (per_comm) {
        /* A failed duplicate is returned as the call's error: running the
         * library on comm here while the others run on their duplicates
         * would never match. */
        const int rc = lib_comm(c, col - CKP_LIB_COL(0), m->comm, info, &on_dup.comm);
        if (rc != MPI_SUCCESS) return rc;
    } else if (lib_alg) {
        ckp_lib_select(c, col - CKP_LIB_COL(0));
    }
    /* An exploring call's arrival and exit on the ranks' common clock. */
    const int timed = ckp_cfg.report || tc->timed;
    const double t0 = tc->timed ? ckp_autotune_now() : timed ? PMPI_Wtime() : 0.0;
    int rc;
    if (col >= CKP_LIBRARY) {
        rc = ck_pmpi_call(c, &on_dup);
    } else if (ck_collective_has_op(c)) {
        /* Reductions keep their datatype (fallback_reason let through only
         * predefined contiguous ones); in place is the algorithms' own. */
        ckp_inside = 1;
        rc = ck_algorithm_call(ckp_algs[c][col], m->sbuf, m->rbuf, (size_t)m->rcount, m->rtype, m->op, m->root,
                               info->dup);
        ckp_inside = 0;
    } else {
        /* A failed temporary is returned as MPI_ERR_NO_MEM, not turned into a
         * fallback: the other ranks may already be inside the algorithm. */
        ckp_inside = 1;
        rc = run_bytes(ckp_algs[c][col], m, ro, bytes, info->dup);
        ckp_inside = 0;
    }
    const double t1 = tc->timed ? ckp_autotune_now() : timed ? PMPI_Wtime() : 0.0;
    const double seconds = t1 - t0;
    if (lib_alg && !per_comm) ckp_lib_restore(c);
    ckp_stat_call(c, col > CKP_LIBRARY ? CKP_LIBRARY : col, bytes, seconds);
    /* After the program's call returned: a look's agreement is the shim's own collective. */
    if (tc->timed) ckp_autotune_end(tc, info, t0, t1);
    return rc;
}

static int dispatch(ck_collective c, const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                    int rcount, MPI_Datatype rtype, MPI_Op op, int root, MPI_Comm comm)
{
    const ck_mpi_args m = {sbuf, scount, stype, rbuf, rcount, rtype, op, root, comm};
    if (ckp_inside) return ck_pmpi_call(c, &m);
    if (!ckp_cfg.active) {
        /* Pass-through: nothing configured, only counted when reporting. */
        if (!ckp_cfg.report) return ck_pmpi_call(c, &m);
        double t0 = PMPI_Wtime();
        int rc = ck_pmpi_call(c, &m);
        ckp_stat_call(c, CKP_LIBRARY, 0, PMPI_Wtime() - t0);
        return rc;
    }
    /* A settled class's repeated call: one cache line (autotune_settled.c);
     * the library's column at once, counted there. */
    size_t settled_bytes;
    const int settled = ckp_settled_col(c, &m, &settled_bytes);
    if (settled == CKP_LIBRARY && !ckp_cfg.report) return ck_pmpi_call(c, &m);
    if (settled >= 0) {
        /* Only a reduction's algorithm and, under Open MPI, the library's
         * algorithm need the entry: their duplicates. */
        ckp_comm *entry = NULL;
        ckp_tune_call none = {0};
        const int needs_entry = settled < CKP_LIBRARY || (settled > CKP_LIBRARY && ckp_lib_per_comm());
        if (!needs_entry || ckp_comm_of(comm, &entry) == MPI_SUCCESS)
            return run_column(c, &m, entry, NULL, settled, settled_bytes, &none);
    }
    ckp_comm *info;
    ck_mpi_roles ro;
    size_t bytes = 0;
    if (comm == MPI_COMM_NULL || ckp_comm_of(comm, &info) != MPI_SUCCESS)
        return ck_pmpi_call(c, &m);
    if (info->inter) {
        /* Every rank of an intercommunicator runs the library. Its arguments
         * are not read at all: which are significant depends on MPI_ROOT and
         * MPI_PROC_NULL, which the descriptors do not describe. The fallback
         * is counted against the choice at 0 bytes. */
        int k = ckp_choose(c, info->size, 0);
        if (k >= 0 && k < CKP_LIBRARY) ckp_stat_fallback(c, k, CKP_FB_INTERCOMM);
        const int timed = ckp_cfg.report;
        double t0 = timed ? PMPI_Wtime() : 0.0;
        int rc = ck_pmpi_call(c, &m);
        ckp_stat_call(c, CKP_LIBRARY, 0, timed ? PMPI_Wtime() - t0 : 0.0);
        return rc;
    }
    /* ck_mpi_roles_of validates only the counts significant at this rank, and
     * ck_mpi_block_bytes reads the block on such a side: a failure here is an
     * erroneous call at this rank, which the library reports as it would. */
    if (roles_of(c, &m, info, &ro) != 0 ||
        ck_mpi_block_bytes(&ro, &m, &bytes) != MPI_SUCCESS)
        return ck_pmpi_call(c, &m);
    int col = CKP_LIBRARY;
    ckp_tune_call tc = {0};
    if (ckp_tune_cfg.on && ckp_cfg.forced[c] < 0) {
        /* The autotuner's candidates are the algorithms that can run the
         * call: nothing to fall back from. */
        ckp_autotune_begin(c, comm, info, &m, bytes, &tc);
        col = tc.col;
    } else {
        int k = ckp_choose(c, info->size, bytes);
        if (k > CKP_LIBRARY) {
            /* the library's own algorithm k: the library decides what it can
             * run, except where Open MPI's forced one would not (ckp_lib_alg_can) */
            if (ckp_lib_alg_can(c, k - CKP_LIB_COL(0), info->size, ck_collective_has_op(c) ? op : MPI_OP_NULL))
                col = k;
        } else if (k >= 0) {
            const ck_algorithm *a = ckp_algs[c][k];
            int why = ckp_fallback_reason(a, c, info, bytes, rcount, rtype, op, root);
            if (why < 0) col = k;
            else ckp_stat_fallback(c, k, (ckp_reason)why);
        }
    }
    const int rc = run_column(c, &m, info, &ro, col, bytes, &tc);
    /* A settled class's call whose arguments may come again: kept, so that
     * the next one takes the line above. */
    if (tc.cls && !tc.timed && rc == MPI_SUCCESS) ckp_settled_note(c, &m, &ro, info, &tc, bytes);
    return rc;
}

/* The profile times the whole dispatch, choice and fallback included, so
 * the time it reports is what the program waited for under the rules too. */
int ckp_dispatch(ck_collective c, const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                 int rcount, MPI_Datatype rtype, MPI_Op op, int root, MPI_Comm comm)
{
    if (!ckp_profile_on || ckp_inside)
        return dispatch(c, sbuf, scount, stype, rbuf, rcount, rtype, op, root, comm);
    const uint64_t t0 = ckp_profile_now();
    const int rc = dispatch(c, sbuf, scount, stype, rbuf, rcount, rtype, op, root, comm);
    const uint64_t t1 = ckp_profile_now();
    const ck_mpi_args m = {sbuf, scount, stype, rbuf, rcount, rtype, op, root, comm};
    ckp_profile_dispatch(c, &m, t0, t1);
    return rc;
}

/* For the large-count (MPI_*_c) interceptors of the data-movement
 * collectives: whether every count MPI reads at this rank fits an int. If so,
 * *sc and *rc get the int counts, a count that is not significant here and
 * does not fit replaced by 0 (never read), and the call takes the int path;
 * else the caller runs the library's _c call. Only significant counts are
 * tested: a non-root's scatter send count may be anything (-1 included), and
 * sending that rank alone to the library would hang the others. The ranks
 * agree: a significant count above INT_MAX makes the block bytes, equal on
 * every rank, exceed CK_MAX_COUNT, which sends the int path to the library too. */
int ckp_int_counts(ck_collective c, const void *sbuf, MPI_Count scount, void *rbuf, MPI_Count rcount,
                   int root, MPI_Comm comm, int *sc, int *rc)
{
    const int sfits = scount >= 0 && scount <= INT32_MAX, rfits = rcount >= 0 && rcount <= INT32_MAX;
    int p = 0, rank = 0, inter = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter ||
        PMPI_Comm_size(comm, &p) != MPI_SUCCESS || PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS) {
        /* Erroneous, or an intercommunicator (always the library): either
         * path runs the library; the int one only when it loses nothing. */
        *sc = sfits ? (int)scount : 0;
        *rc = rfits ? (int)rcount : 0;
        return sfits && rfits;
    }
    /* Which sides are significant here: the descriptor's roles at one element a block. */
    const ck_mpi_args one = {sbuf, 1, MPI_DATATYPE_NULL, rbuf, 1, MPI_DATATYPE_NULL, MPI_OP_NULL, root, comm};
    ck_mpi_roles ro;
    if (ck_mpi_roles_of(c, &one, p, rank, &ro) != 0) return 0;
    const int ssig = ro.send_elems > 0, rsig = ro.recv_elems > 0;
    if ((ssig && !sfits) || (rsig && !rfits)) return 0;
    *sc = sfits ? (int)scount : 0;
    *rc = rfits ? (int)rcount : 0;
    return 1;
}
