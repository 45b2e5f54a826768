/* A settled call's decision in one cache line (issue #50).
 *
 * A class the autotuner settled runs its choice for the rest of the run, yet
 * each of its calls took the general path: the communicator's entry, the
 * buffer roles, MPI_Type_size, the class's key and counters, the autotuner's
 * settings: some ten cache lines, which a program's computation between two
 * collectives evicts (hpcc: a 4-byte allreduce 0.09 us slower than under the
 * plain preload; tests/preload/overhead.c's cold mode shows the same).
 *
 * Here, a call that repeats every argument of a settled call kept in its
 * slot (the slot a mix of those arguments picks, of 32) finds its column in
 * that one line and counts itself there; the dispatcher runs a library
 * column at once. The counts reach the class (and the statistics) when the
 * line is taken by another call, when its communicator is freed, and before
 * anything reads them (ckp_autotune_close at MPI_Finalize, the test counters).
 *
 * Only arguments whose meaning cannot change under the same handle values
 * are kept: named datatypes and predefined ops, which MPI never frees (so no
 * other object can take their handles), and a communicator whose handle
 * cannot have come back as another one, since the entries' delete callback
 * forgets a freed communicator's slots (ckp_comm_forget). The column then
 * follows from the same values as on the general path, equal on every rank.
 * Not where several threads may call at once. */
#include "autotune.h"

#include <stdint.h>

/* 32 lines: a few communicators times a few collectives times a few
 * argument lists, as programs go (2 KiB). */
#define SLOTS 32

typedef struct {
    _Alignas(64) MPI_Comm comm;
    MPI_Datatype stype, rtype;
    MPI_Op op;
    tune_class *cls;      /* NULL: the slot is empty */
    size_t bytes;
    int scount, rcount, root;
    uint8_t coll_in_place; /* the collective << 2 | where MPI_IN_PLACE is passed */
    uint8_t col;
    uint16_t pending;     /* calls counted here, not yet in cls->calls */
} slot;

_Static_assert(CKP_LIB_COL(CKP_LIB_ALGS_MAX) <= UINT8_MAX, "a column fits a slot's byte");
_Static_assert(CK_NUM_COLLECTIVES <= 64, "a collective fits a slot's six bits");

static slot table[SLOTS];

/* The slot of a call: a mix of all it is keyed by but the datatypes' kind
 * of use, so that calls of one collective on one communicator with other
 * arguments (hpcc: a 4-byte allreduce with max, then one with sum) take other
 * slots instead of evicting each other. Open MPI's handles are aligned
 * pointers, MPICH's integers counting up from a kind prefix: multiplied by
 * odd constants and folded down, both spread. */
static unsigned slot_of(ck_collective c, const ck_mpi_args *m)
{
    uint64_t h = (uint64_t)(uintptr_t)m->comm * 0x9E3779B97F4A7C15u;
    h ^= (uint64_t)(uintptr_t)m->op * 0xC2B2AE3D27D4EB4Fu;
    h ^= (uint64_t)(uintptr_t)m->rtype * 0x165667B19E3779F9u;
    h ^= ((uint64_t)(uint32_t)m->rcount << 32 | (uint32_t)m->scount) * 0x85EBCA77C2B2AE63u;
    h ^= ((uint64_t)(uint32_t)m->root << 8 | (uint64_t)c) * 0x27D4EB2F165667C5u;
    h ^= h >> 29;
    h ^= h >> 17;
    return (unsigned)(h & (SLOTS - 1));
}

static uint8_t coll_in_place(ck_collective c, const ck_mpi_args *m)
{
    return (uint8_t)((unsigned)c << 2 | (m->sbuf == MPI_IN_PLACE) | (m->rbuf == MPI_IN_PLACE) << 1);
}

/* The slot's calls to its class; the library's, which the dispatcher ran
 * uncounted unless a report times each call, to the statistics. */
static void hand_on(slot *s)
{
    if (s->cls && s->pending) {
        s->cls->calls += s->pending;
        if (s->col == CKP_LIBRARY && !ckp_cfg.report)
            ckp_stat_calls((ck_collective)(s->coll_in_place >> 2), CKP_LIBRARY, s->pending, s->bytes);
    }
    s->pending = 0;
}

/* Told by the entries' delete callback (shared.c) before the handle can come back. */
static void forget(MPI_Comm comm)
{
    for (int i = 0; i < SLOTS; i++)
        if (table[i].cls && table[i].comm == comm) {
            hand_on(&table[i]);
            table[i].cls = NULL;
        }
}

int ckp_settled_col(ck_collective c, const ck_mpi_args *m, size_t *bytes)
{
    slot *s = &table[slot_of(c, m)];
    if (!s->cls || s->comm != m->comm || s->coll_in_place != coll_in_place(c, m) || s->scount != m->scount ||
        s->rcount != m->rcount || s->stype != m->stype || s->rtype != m->rtype || s->op != m->op ||
        s->root != m->root)
        return -1;
    if (++s->pending == UINT16_MAX) hand_on(s);
    *bytes = s->bytes;
    return s->col;
}

void ckp_settled_note(ck_collective c, const ck_mpi_args *m, const ck_mpi_roles *ro, const ckp_comm *info,
                      const ckp_tune_call *tc, size_t bytes)
{
    tune_class *k = tc->cls;
    if (ckp_multi_threaded || !k || k->state != SETTLED || tc->col != k->choice) return;
    const int reduction = ck_collective_has_op(c);
    /* The run needs nothing beyond the slot: the library's call, or a
     * reduction's algorithm on the entry's duplicate (read through the
     * entry then); a data-movement algorithm also needs the roles. */
    if (tc->col < CKP_LIBRARY && (!reduction || info->dup == MPI_COMM_NULL)) return;
    /* The loose classes (a user op, a derived datatype) check each call. */
    if (reduction && (k->op == MPI_OP_NULL || k->dt == MPI_DATATYPE_NULL)) return;
    if (!ckp_type_named(ro->block_from_send ? m->stype : m->rtype)) return;
    ckp_comm_forget = forget;
    ckp_stats_pending = ckp_settled_count;
    slot *s = &table[slot_of(c, m)];
    hand_on(s);
    s->comm = m->comm;
    s->stype = m->stype;
    s->rtype = m->rtype;
    s->op = m->op;
    s->cls = k;
    s->bytes = bytes;
    s->scount = m->scount;
    s->rcount = m->rcount;
    s->root = m->root;
    s->coll_in_place = coll_in_place(c, m);
    s->col = (uint8_t)tc->col;
}

void ckp_settled_count(void)
{
    for (int i = 0; i < SLOTS; i++) hand_on(&table[i]);
}

void ckp_settled_flush(void)
{
    for (int i = 0; i < SLOTS; i++) {
        hand_on(&table[i]);
        table[i].cls = NULL;
    }
}
