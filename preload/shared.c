/* What the dispatcher (dispatch.c) and the profile (profile.c,
 * profile_intercept.c) both keep: the per-thread re-entry guard, and one
 * cache per communicator under one attribute key, freed with the
 * communicator and torn down once before PMPI_Finalize. Each of them fills
 * its own part of an entry; nothing here calls either. */
#include "ck_preload.h"

#include <stdlib.h>

/* initial-exec: read on every call, and __tls_get_addr cost as much as the
 * profile's hash (the preload is loaded at start-up, so static TLS is there). */
__attribute__((tls_model("initial-exec"))) _Thread_local int ckp_inside;

int ckp_multi_threaded;
unsigned long ckp_comms_freed;
void (*ckp_comm_forget)(MPI_Comm comm);

static int keyval = MPI_KEYVAL_INVALID;
/* The communicators looked up lately, by handle, skipping the attribute
 * lookup (PMPI_Comm_get_attr: most of a settled call's cost) for programs
 * that go round a few communicators (world, rows, columns). Single-threaded
 * programs only: the delete callback, which forgets a freed communicator's
 * slot before its handle can be reused, runs on the freeing thread. */
#define MEMO_SLOTS 8
static struct {
    MPI_Comm comm;
    ckp_comm *entry;
} memo[MEMO_SLOTS];

/* Open MPI's handles are pointers (aligned), MPICH's integers counting up
 * from a kind prefix: fold both into a slot. */
static unsigned memo_slot(MPI_Comm comm)
{
    uintptr_t h = (uintptr_t)comm;
    return (unsigned)((h ^ (h >> 4) ^ (h >> 12)) & (MEMO_SLOTS - 1));
}

/* The entries holding duplicates for the library's algorithms (dispatch.c,
 * lib_comm); single-threaded programs only make them (add_candidates). */
static ckp_comm *with_lib_dups;

void ckp_comm_lib_dups_made(ckp_comm *c)
{
    c->lib_next = with_lib_dups;
    with_lib_dups = c;
}

static void free_lib_dups(ckp_comm *c)
{
    for (int i = 0; c->lib_dups && i < CK_NUM_COLLECTIVES * CKP_LIB_ALGS_MAX; i++)
        if (c->lib_dups[i] != MPI_COMM_NULL) PMPI_Comm_free(&c->lib_dups[i]);
    free(c->lib_dups);
    c->lib_dups = NULL;
    for (ckp_comm **p = &with_lib_dups; *p; p = &(*p)->lib_next)
        if (*p == c) {
            *p = c->lib_next;
            break;
        }
}

static int delete_entry(MPI_Comm comm, int kv, void *attr, void *extra)
{
    (void)comm;
    (void)kv;
    (void)extra;
    ckp_comm *c = attr;
    for (int i = 0; i < MEMO_SLOTS; i++)
        if (memo[i].entry == c) memo[i].entry = NULL;
    if (ckp_comm_forget) ckp_comm_forget(comm);
    ckp_comms_freed++;
    if (c->dup != MPI_COMM_NULL) PMPI_Comm_free(&c->dup);
    free_lib_dups(c);
    free(c);
    return MPI_SUCCESS;
}

/* Made once at MPI_Init, before the program can start threads, so that
 * threads calling collectives on different communicators never race on it. */
int ckp_comms_create(void)
{
    int provided = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&provided);
    ckp_multi_threaded = provided == MPI_THREAD_MULTIPLE;
    return PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_entry, &keyval, NULL);
}

int ckp_comm_of(MPI_Comm comm, ckp_comm **out)
{
    int found = 0;
    void *attr = NULL;
    const unsigned slot = memo_slot(comm);
    if (memo[slot].entry && memo[slot].comm == comm) {
        *out = memo[slot].entry;
        return MPI_SUCCESS;
    }
    if (keyval == MPI_KEYVAL_INVALID) return MPI_ERR_KEYVAL;
    int rc = PMPI_Comm_get_attr(comm, keyval, &attr, &found);
    if (rc != MPI_SUCCESS) return rc;
    ckp_comm *c = attr;
    if (!found) {
        c = malloc(sizeof *c);
        if (!c) return MPI_ERR_NO_MEM;
        static uint64_t serials;
        c->dup = MPI_COMM_NULL;
        c->lib_dups = NULL;
        c->lib_next = NULL;
        c->labelled = 0;
        c->seq = 0;
        c->serial = __atomic_add_fetch(&serials, 1, __ATOMIC_RELAXED);
        c->tune_key = 0;
        c->roles.valid = 0;
        c->tune_last = NULL;
        rc = PMPI_Comm_test_inter(comm, &c->inter);
        if (rc == MPI_SUCCESS) rc = PMPI_Comm_size(comm, &c->size);
        /* An intercommunicator's size and rank are its local group's. */
        if (rc == MPI_SUCCESS) rc = PMPI_Comm_rank(comm, &c->rank);
        if (rc == MPI_SUCCESS) rc = PMPI_Comm_set_attr(comm, keyval, c);
        if (rc != MPI_SUCCESS) {
            free(c);
            return rc;
        }
    }
    if (!ckp_multi_threaded) {
        memo[slot].comm = comm;
        memo[slot].entry = c;
    }
    *out = c;
    return MPI_SUCCESS;
}

/* MPI_COMM_WORLD's and MPI_COMM_SELF's entries (and the world's duplicates)
 * are freed while freeing is still allowed; communicators the program never
 * freed keep their few bytes until exit. */
void ckp_comms_release(void)
{
    if (keyval == MPI_KEYVAL_INVALID) return;
    int found = 0;
    void *attr = NULL;
    if (PMPI_Comm_get_attr(MPI_COMM_WORLD, keyval, &attr, &found) == MPI_SUCCESS && found)
        PMPI_Comm_delete_attr(MPI_COMM_WORLD, keyval);
    if (PMPI_Comm_get_attr(MPI_COMM_SELF, keyval, &attr, &found) == MPI_SUCCESS && found)
        PMPI_Comm_delete_attr(MPI_COMM_SELF, keyval);
    /* Communicators the program never freed: their entries stay, their duplicates go. */
    while (with_lib_dups) free_lib_dups(with_lib_dups);
    PMPI_Comm_free_keyval(&keyval);
    for (int i = 0; i < MEMO_SLOTS; i++) memo[i].entry = NULL;
}
