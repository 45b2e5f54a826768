/* The profile (COLLKIT_PROFILE=DIR): per rank, the calls and the time spent
 * inside each class of collective call, and optionally the first
 * COLLKIT_PROFILE_TRACE calls in order. It runs beside pass-through, forcing
 * and rules alike, since `collkit trial` profiles both variants.
 *
 * Bounds: at most CKP_PROFILE_CLASSES (2,048) classes per rank in a fixed table
 * (open addressing, never resized, so a class's slot and number stay put);
 * a call of a new class once the table is full, or a call that cannot be
 * keyed (erroneous arguments), is counted only in the rank's `unclassified`
 * calls and time, never traced nor sampled. The trace is one array of 24
 * bytes a call (ckp_trace_call), allocated at MPI_Init; calls past it are
 * counted as dropped. The sample (CKP_SAMPLE_CALLS rows, always kept) holds
 * the calls whose sequence number on their communicator is a multiple of
 * its stride, the same calls at every rank of the communicator until the
 * strides differ. Each communicator is listed once, at its first profiled
 * call, and numbers its calls (ckp_comm: index, seq). Writing the files is
 * profile_write.c's; the clock's exchanges clock.c's. */
#include "ck_preload.h"
#include "profile.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ckp_profile_on;
int ckp_profile_tsc;
static ckp_profile_state prof;

/* Programs that call collectives from several threads at once
 * (MPI_THREAD_MULTIPLE: ckp_multi_threaded) take a spin lock around the
 * table; others pay nothing. */
static atomic_flag table_lock = ATOMIC_FLAG_INIT;

void ckp_profile_mark_init(void)
{
    prof.init_start = ckp_clock_monotonic();
}

/* ---------------------------------------------------------------- communicators */

/* Each communicator's label, computed once into its entry (shared.c, freed
 * with it): a per-call Comm_compare and group translation would cost more
 * than the whole profile's budget. */
static int label_of(MPI_Comm comm, ckp_comm *pc)
{
    int cmp = MPI_UNEQUAL, rc;
    pc->leader = -1;
    if (pc->inter) {
        pc->kind = CKP_COMM_INTER;
        return MPI_SUCCESS;
    }
    rc = PMPI_Comm_compare(comm, MPI_COMM_WORLD, &cmp);
    if (rc != MPI_SUCCESS) return rc;
    if (cmp == MPI_IDENT || cmp == MPI_CONGRUENT) {
        pc->kind = CKP_COMM_WORLD;
        return MPI_SUCCESS;
    }
    if (pc->size == 1) {
        pc->kind = CKP_COMM_SELF;
        return MPI_SUCCESS;
    }
    /* c<L>x<N>: L is the world rank of the communicator's rank 0 (-1 for a
     * process outside MPI_COMM_WORLD, spawned or connected). */
    MPI_Group g, wg;
    int zero = 0, leader = MPI_UNDEFINED;
    rc = PMPI_Comm_group(comm, &g);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Group_translate_ranks(g, 1, &zero, wg, &leader);
        PMPI_Group_free(&wg);
    }
    PMPI_Group_free(&g);
    pc->kind = CKP_COMM_OTHER;
    pc->leader = leader == MPI_UNDEFINED ? -1 : leader;
    return rc;
}

/* How many communicators of each label the rank has listed: open
 * addressing, doubled at half full, so that a program making a communicator
 * per step pays a probe, not a scan of the list, for each. */
typedef struct {
    int kind, leader, size;
    uint32_t count; /* 0: an empty slot */
} label_count;

static label_count *labels;
static size_t labels_cap, nlabels;

static size_t label_slot(const label_count *t, size_t cap, int kind, int leader, int size)
{
    uint64_t h = ((uint64_t)(uint32_t)kind << 32 | (uint32_t)leader) * 0x9e3779b97f4a7c15ull;
    h ^= (uint64_t)(uint32_t)size * 0xc2b2ae3d27d4eb4full;
    size_t i = (size_t)(h ^ (h >> 29)) & (cap - 1);
    while (t[i].count && !(t[i].kind == kind && t[i].leader == leader && t[i].size == size)) i = (i + 1) & (cap - 1);
    return i;
}

/* The label's count so far (its next communicator's instance), counted up;
 * -1 without memory. */
static long next_instance(int kind, int leader, int size)
{
    if (2 * (nlabels + 1) > labels_cap) {
        const size_t cap = labels_cap ? 2 * labels_cap : 64;
        label_count *t = calloc(cap, sizeof *t);
        if (!t) return -1;
        for (size_t i = 0; i < labels_cap; i++)
            if (labels[i].count) t[label_slot(t, cap, labels[i].kind, labels[i].leader, labels[i].size)] = labels[i];
        free(labels);
        labels = t;
        labels_cap = cap;
    }
    label_count *e = &labels[label_slot(labels, labels_cap, kind, leader, size)];
    if (!e->count) {
        e->kind = kind;
        e->leader = leader;
        e->size = size;
        nlabels++;
    }
    return (long)e->count++;
}

/* The communicator's place in the rank's list ("comms"), at its first call. */
static int list_comm(ckp_comm *pc)
{
    if (prof.ncomms == prof.comms_cap) {
        /* A row's comm is 32 bits: past that many communicators, none is listed. */
        const size_t cap = prof.comms_cap ? 2 * prof.comms_cap : 16;
        ckp_comm_info *grown = cap <= UINT32_MAX ? realloc(prof.comms, cap * sizeof *grown) : NULL;
        if (!grown) return MPI_ERR_NO_MEM;
        prof.comms = grown;
        prof.comms_cap = cap;
    }
    const long instance = next_instance(pc->kind, pc->leader, pc->size);
    if (instance < 0) return MPI_ERR_NO_MEM;
    const ckp_comm_info info = {pc->kind, pc->leader, pc->size, pc->rank, (uint32_t)instance};
    pc->index = (uint32_t)prof.ncomms;
    prof.comms[prof.ncomms++] = info;
    return MPI_SUCCESS;
}

static int pcomm_of(MPI_Comm comm, ckp_comm **out)
{
    ckp_comm *pc;
    int rc = ckp_comm_of(comm, &pc);
    if (rc != MPI_SUCCESS) return rc;
    if (!pc->labelled) {
        rc = label_of(comm, pc);
        if (rc == MPI_SUCCESS) rc = list_comm(pc);
        if (rc != MPI_SUCCESS) return rc;
        pc->labelled = 1;
    }
    *out = pc;
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------- the class table */

static uint64_t handle_bits(const void *h, size_t size)
{
    uint64_t v = 0;
    memcpy(&v, h, size < sizeof v ? size : sizeof v);
    return v;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

static int same_key(const ckp_class *e, const ckp_comm *pc, const ckp_call_key *k)
{
    return e->coll == k->coll && e->bytes == k->bytes && e->root == k->root &&
           e->in_place == k->in_place && e->comm_kind == pc->kind && e->comm_leader == pc->leader &&
           e->comm_size == pc->size && e->dt == k->dt && e->op == k->op;
}

/* A call on a communicator with an entry (pc) still takes its sequence
 * number: the other ranks may have classified the same call. */
static void unclassified(ckp_comm *pc, uint64_t t0, uint64_t t1)
{
    if (pc) pc->seq++;
    prof.unclassified_calls++;
    prof.unclassified_ticks += t1 - t0;
}

static void fill(ckp_trace_call *t, const ckp_class *e, const ckp_comm *pc, uint64_t seq, uint64_t t0, uint64_t t1)
{
    t->start = t0 > prof.zero ? t0 - prof.zero : 0;
    t->ticks = (float)(t1 - t0);
    t->comm = pc->index;
    t->seq_cls = seq << CKP_ROW_CLS_BITS | e->number;
}

/* The sample is full: double the stride and keep the rows on its multiples,
 * again while that frees nothing. */
static void thin(void)
{
    while (prof.nsample == CKP_SAMPLE_CALLS && prof.stride < CKP_SAMPLE_STRIDE_MAX) {
        prof.stride *= 2;
        size_t kept = 0;
        for (size_t i = 0; i < prof.nsample; i++)
            if ((ckp_row_seq(&prof.sample[i]) & (prof.stride - 1)) == 0) prof.sample[kept++] = prof.sample[i];
        prof.nsample = kept;
    }
}

static void count_in(ckp_class *e, ckp_comm *pc, uint64_t t0, uint64_t t1)
{
    const uint64_t seq = pc->seq++;
    e->calls++;
    e->ticks += t1 - t0;
    if ((seq & (prof.stride - 1)) == 0) {
        if (prof.nsample == CKP_SAMPLE_CALLS) thin();
        if (prof.nsample < CKP_SAMPLE_CALLS && (seq & (prof.stride - 1)) == 0)
            fill(&prof.sample[prof.nsample++], e, pc, seq, t0, t1);
    }
    if (prof.trace_cap) {
        if (prof.ntrace < prof.trace_cap) fill(&prof.trace[prof.ntrace++], e, pc, seq, t0, t1);
        else prof.dropped++;
    }
}

/* The call's class (made on first use), or NULL when it went unclassified. */
static ckp_class *record(ckp_comm *pc, const ckp_call_key *k, uint64_t t0, uint64_t t1)
{
    uint64_t h = mix(mix(mix((uint64_t)k->coll, k->bytes), (uint64_t)(k->root + 1)),
                     ((uint64_t)pc->kind << 32) ^ (uint64_t)(uint32_t)pc->leader);
    h = mix(mix(h, (uint64_t)pc->size * 2u + (uint64_t)k->in_place), handle_bits(&k->dt, sizeof k->dt));
    h = mix(h, handle_bits(&k->op, sizeof k->op));
    size_t i = (size_t)h & (CKP_PROFILE_SLOTS - 1);
    ckp_class *e;
    for (;;) {
        e = &prof.slots[i];
        if (!e->calls) break;
        if (same_key(e, pc, k)) break;
        i = (i + 1) & (CKP_PROFILE_SLOTS - 1);
    }
    if (!e->calls) {
        if (prof.nclasses >= CKP_PROFILE_CLASSES) {
            unclassified(pc, t0, t1);
            return NULL;
        }
        e->coll = k->coll;
        e->bytes = k->bytes;
        e->root = k->root;
        e->in_place = k->in_place;
        e->comm_kind = pc->kind;
        e->comm_leader = pc->leader;
        e->comm_size = pc->size;
        e->dt = k->dt;
        e->op = k->op;
        ckp_profile_names(e, k->dt, k->op);
        e->number = (uint32_t)prof.nclasses;
        prof.order[prof.nclasses++] = (uint32_t)i;
    }
    count_in(e, pc, t0, t1);
    return e;
}

static void lock(void)
{
    if (ckp_multi_threaded)
        while (atomic_flag_test_and_set_explicit(&table_lock, memory_order_acquire)) {
        }
}

static void unlock(void)
{
    if (ckp_multi_threaded) atomic_flag_clear_explicit(&table_lock, memory_order_release);
}

static ckp_class *keyed(ckp_comm *pc, const ckp_call_key *k, uint64_t t0, uint64_t t1)
{
    if (pc->inter) {
        /* An intercommunicator's root is MPI_ROOT / MPI_PROC_NULL and its
         * sides depend on the group: counted with bytes 0 and no root. */
        const ckp_call_key ik = {k->coll, 0, -1, MPI_DATATYPE_NULL, k->op, 0};
        return record(pc, &ik, t0, t1);
    }
    if (k->root >= pc->size || k->root < -1) {
        unclassified(pc, t0, t1); /* erroneous: the library has reported it */
        return NULL;
    }
    return record(pc, k, t0, t1);
}

void ckp_profile_call(MPI_Comm comm, const ckp_call_key *k, uint64_t t0, uint64_t t1)
{
    ckp_comm *pc;
    lock();
    if (comm == MPI_COMM_NULL || pcomm_of(comm, &pc) != MPI_SUCCESS) unclassified(NULL, t0, t1);
    else (void)keyed(pc, k, t0, t1);
    unlock();
}

/* The last call of each of the eight with its class: a program calls the
 * same collective with the same arguments again and again, and comparing
 * them costs less than the roles, the bytes and the table's hash (about 40
 * of the profile's first 160 ns a call, docs/benchmarks-log.md). A hit still
 * re-reads the block's type size, so a datatype freed and its handle reused
 * for another size is never counted under the old bytes; a memo made before
 * a cached communicator was freed is never used (the handle may come back
 * as another: ckp_comms_freed), so its entry (pc) is still there.
 * Single-threaded programs only. */
typedef struct {
    int valid, sip, rip, scount, rcount, root;
    ck_mpi_roles ro;     /* the call's roles here: the same for the same arguments */
    unsigned long freed; /* ckp_comms_freed when made */
    MPI_Comm comm;
    MPI_Datatype stype, rtype;
    MPI_Op op;
    size_t bytes;
    ckp_class *e;
    ckp_comm *pc;
} ckp_memo;

static ckp_memo memo[CK_NUM_COLLECTIVES];

static int memo_hit(const ckp_memo *mm, const ck_mpi_args *m)
{
    if (!(mm->valid && mm->freed == ckp_comms_freed && mm->comm == m->comm && mm->scount == m->scount &&
          mm->rcount == m->rcount && mm->stype == m->stype && mm->rtype == m->rtype && mm->op == m->op &&
          mm->root == m->root && mm->sip == (m->sbuf == MPI_IN_PLACE) && mm->rip == (m->rbuf == MPI_IN_PLACE)))
        return 0;
    size_t bytes = 0;
    return ck_mpi_block_bytes(&mm->ro, m, &bytes) == MPI_SUCCESS && bytes == mm->bytes;
}

/* The eight: the same bytes as the rules (ck_mpi_roles_of, ck_mpi_block_bytes),
 * read on a side significant at this rank. */
void ckp_profile_dispatch(ck_collective c, const ck_mpi_args *m, uint64_t t0, uint64_t t1)
{
    ckp_comm *pc;
    if (!ckp_multi_threaded && memo_hit(&memo[c], m)) {
        count_in(memo[c].e, memo[c].pc, t0, t1);
        return;
    }
    lock();
    if (m->comm == MPI_COMM_NULL || pcomm_of(m->comm, &pc) != MPI_SUCCESS) {
        unclassified(NULL, t0, t1);
        unlock();
        return;
    }
    const int has_op = ck_collective_has_op(c);
    ckp_call_key k = {(int)c, 0, -1, MPI_DATATYPE_NULL, has_op ? m->op : MPI_OP_NULL, 0};
    ck_mpi_roles ro = {0};
    if (!pc->inter) {
        const ck_collective_desc *d = ck_collective_describe(c);
        if (ck_mpi_roles_of(c, m, pc->size, pc->rank, &ro) != 0 ||
            ck_mpi_block_bytes(&ro, m, &k.bytes) != MPI_SUCCESS) {
            unclassified(pc, t0, t1);
            unlock();
            return;
        }
        k.dt = has_op ? m->rtype : (ro.block_from_send ? m->stype : m->rtype);
        if (d->has_root) k.root = m->root < 0 ? pc->size : m->root;
        const int ip = (d->in_place == CK_IN_PLACE_SEND && m->sbuf == MPI_IN_PLACE) ||
                       (d->in_place == CK_IN_PLACE_RECV && m->rbuf == MPI_IN_PLACE);
        k.in_place = ck_collective_in_place_at(d, ip, pc->rank, m->root);
    }
    ckp_class *e = keyed(pc, &k, t0, t1);
    if (e && !pc->inter && !ckp_multi_threaded) {
        const ckp_memo mm = {1, m->sbuf == MPI_IN_PLACE, m->rbuf == MPI_IN_PLACE, m->scount, m->rcount, m->root,
                             ro, ckp_comms_freed, m->comm, m->stype, m->rtype, m->op, k.bytes, e, pc};
        memo[c] = mm;
    }
    unlock();
}

/* ---------------------------------------------------------------- set-up */

/* Whether the time-stamp counter ticks at one rate on every core, in every
 * power state: Linux's constant_tsc and nonstop_tsc flags. */
static int invariant_tsc(void)
{
#ifdef CKP_HAVE_TSC
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192];
    int ok = 0;
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0) {
            ok = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
            break;
        }
    fclose(f);
    return ok;
#else
    return 0;
#endif
}

static int parse_trace(const char *text, size_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end != '\0' || v < 0 || v > CKP_TRACE_MAX) return -1;
    *out = (size_t)v;
    return 0;
}

static void release_tables(void)
{
    free(prof.slots);
    free(prof.order);
    free(prof.trace);
    free(prof.sample);
    free(prof.comms);
    free(labels);
    prof.slots = NULL;
    prof.order = NULL;
    prof.trace = NULL;
    prof.sample = NULL;
    prof.comms = NULL;
    labels = NULL;
    prof.trace_cap = prof.ncomms = prof.comms_cap = 0;
    labels_cap = nlabels = 0;
}

int ckp_profile_setup(char *err, size_t errlen)
{
    const char *dir = getenv("COLLKIT_PROFILE");
    const char *trace = getenv("COLLKIT_PROFILE_TRACE");
    struct stat st;
    ckp_profile_on = 0;
    if (!dir || !*dir) {
        if (trace && *trace && strcmp(trace, "0") != 0) {
            snprintf(err, errlen, "COLLKIT_PROFILE_TRACE is set without COLLKIT_PROFILE; fix: set "
                                  "COLLKIT_PROFILE=DIR too, or unset COLLKIT_PROFILE_TRACE");
            return -1;
        }
        return ckp_clock_setup(&prof.clock, 0, err, errlen);
    }
    if (strlen(dir) >= sizeof prof.dir - 32) {
        snprintf(err, errlen, "COLLKIT_PROFILE: the path is longer than %zu characters; fix: use a shorter one",
                 sizeof prof.dir - 33);
        return -1;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(dir, W_OK | X_OK) != 0) {
        snprintf(err, errlen, "COLLKIT_PROFILE: %s is not a writable directory; fix: create it on every node "
                              "(collkit profile makes one)", dir);
        return -1;
    }
    size_t cap = 0;
    if (trace && *trace && parse_trace(trace, &cap) != 0) {
        snprintf(err, errlen, "COLLKIT_PROFILE_TRACE: '%s' is not a number of calls from 0 to %d; fix: e.g. "
                              "COLLKIT_PROFILE_TRACE=100000", trace, CKP_TRACE_MAX);
        return -1;
    }
    if (ckp_clock_setup(&prof.clock, 1, err, errlen) != 0) return -1;
    strcpy(prof.dir, dir);
    prof.slots = calloc(CKP_PROFILE_SLOTS, sizeof *prof.slots);
    prof.order = malloc(CKP_PROFILE_CLASSES * sizeof *prof.order);
    prof.sample = malloc(CKP_SAMPLE_CALLS * sizeof *prof.sample);
    prof.trace = cap ? malloc(cap * sizeof *prof.trace) : NULL;
    if (!prof.slots || !prof.order || !prof.sample || (cap && !prof.trace)) {
        release_tables();
        snprintf(err, errlen, "COLLKIT_PROFILE_TRACE=%zu: no memory for %zu bytes of trace; fix: a smaller "
                              "number of calls", cap, cap * sizeof(ckp_trace_call));
        return -1;
    }
    prof.trace_cap = cap;
    prof.nsample = 0;
    prof.stride = 1;
    ckp_profile_tsc = invariant_tsc();
    ckp_profile_on = 1;
    return 0;
}

int ckp_profile_mode(void)
{
    return ckp_profile_on ? 1 + prof.clock.exchange_all : 0;
}

/* The ticks and CLOCK_MONOTONIC at one moment: the clock read either side
 * of the ticks, the middle taken, from the try with the two reads closest
 * together. A rank descheduled between the reads of a single try would put
 * the middle microseconds off and tilt the ticks' calibration (seen as tens
 * of microseconds of drift over a run at 4 ranks on 2 cores). */
#define PAIR_TRIES 7
static void pair_now(uint64_t *ticks, double *mono)
{
    double best = -1.0;
    for (int i = 0; i < PAIR_TRIES; i++) {
        const double a = ckp_clock_monotonic();
        const uint64_t t = ckp_profile_now();
        const double b = ckp_clock_monotonic();
        if (best < 0 || b - a < best) {
            best = b - a;
            *ticks = t;
            *mono = 0.5 * (a + b);
        }
    }
}

void ckp_profile_started(void)
{
    if (!ckp_profile_on) return;
    ckp_clock_start(&prof.clock);
    ckp_profile_write_start(&prof);
    /* The trace's zero, after the start file: the program's own time starts here. */
    pair_now(&prof.zero, &prof.mono_zero);
}

void ckp_profile_finish(void)
{
    if (!ckp_profile_on) return;
    pair_now(&prof.end, &prof.mono_end);
    prof.span = prof.mono_end - prof.init_start;
    /* The ticks' length, from the whole run against CLOCK_MONOTONIC, the
     * files' clock; PMPI_Wtime's ns (no invariant counter) may come from
     * another clock, so it is calibrated alike. Without a tick between the
     * two readings there is nothing to scale: PMPI_Wtime's nominal ns. */
    const uint64_t ticks = prof.end - prof.zero;
    const double seconds = prof.mono_end - prof.mono_zero;
    prof.tick_s = ticks > 0 && seconds > 0 ? seconds / (double)ticks : 1e-9;
    ckp_clock_finish(&prof.clock);
    ckp_profile_write_final(&prof);
    ckp_profile_on = 0;
    release_tables();
}
