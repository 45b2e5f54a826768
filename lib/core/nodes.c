/* The node structure of a communicator (ck_nodes_get in collkit.h): which
 * ranks share a node, computed once per communicator and cached on it as an
 * attribute, because finding it takes a communicator split and an allgather
 * that a collective must not pay at every call.
 *
 * A node is MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) by default. The
 * environment variable COLLKIT_RANKS_PER_NODE=k declares virtual nodes
 * instead: k consecutive ranks of MPI_COMM_WORLD per node (the last one short
 * when k does not divide the world size). That is how tests on one machine
 * cover several ranks per node, and how SimGrid SMPI runs declare nodes: SMPI
 * models a multi-NIC node as several hosts, so shared memory says nothing.
 *
 * Compiled against ck_trace's stand-in MPI (CK_MPI_STANDIN), where each rank
 * runs alone, the structure comes from COLLKIT_RANKS_PER_NODE without any
 * communication, and unset means one node for all ranks: what the same
 * program finds under a real MPI on one machine, so the traces agree. */
#include "ck_core.h"

#include <limits.h>

/* The attribute: the public view plus the arrays it points into. */
typedef struct {
    ck_nodes view;
    int *mem; /* node_of, local_of, by_node (size each), node_first (nodes + 1) */
} nodes_attr;

static void nodes_attr_free(nodes_attr *a)
{
    if (a == NULL) return;
    free(a->mem);
    free(a);
}

int ck_ranks_per_node_env(int *k)
{
    /* Read once: every call of every algorithm must see the same shape. */
    static int cached = -2; /* -2 unread, -1 invalid, 0 unset, else k */
    if (cached == -2) {
        const char *s = getenv(CK_RANKS_PER_NODE_ENV);
        if (s == NULL || *s == '\0') {
            cached = 0;
        } else {
            char *end = NULL;
            long v = strtol(s, &end, 10);
            cached = (*end == '\0' && v >= 1 && v <= INT_MAX) ? (int)v : -1;
        }
    }
    if (cached < 0) return MPI_ERR_ARG;
    *k = cached;
    return MPI_SUCCESS;
}

/* The structure from one key per rank (equal keys: same node; keys are
 * 0 <= key <= maxkey). Nodes numbered in the order of their lowest rank,
 * local ranks in rank order; O(p + maxkey). */
static int nodes_from_keys(const int *keys, int maxkey, int size, int rank, int virt,
                           nodes_attr **out)
{
    *out = NULL;
    nodes_attr *a = calloc(1, sizeof *a);
    int *mem = malloc(((size_t)4 * size + 1) * sizeof *mem);
    int *ids = malloc(((size_t)(maxkey > size ? maxkey : size) + 1) * sizeof *ids);
    if (!a || !mem || !ids) {
        free(a);
        free(mem);
        free(ids);
        return MPI_ERR_NO_MEM;
    }
    int *node_of = mem, *local_of = mem + size, *by_node = mem + 2 * size,
        *first = mem + 3 * size; /* nodes + 1 <= size + 1 entries */
    for (int i = 0; i <= maxkey; i++) ids[i] = -1;
    int nodes = 0;
    for (int r = 0; r < size; r++) {
        if (ids[keys[r]] < 0) ids[keys[r]] = nodes++;
        node_of[r] = ids[keys[r]];
    }
    for (int n = 0; n <= nodes; n++) first[n] = 0;
    for (int r = 0; r < size; r++) first[node_of[r] + 1]++;
    for (int n = 0; n < nodes; n++) first[n + 1] += first[n];
    int equal = 1, consecutive = 1;
    for (int n = 0; n < nodes; n++)
        if (first[n + 1] - first[n] != first[1]) equal = 0;
    /* Counting sort by node keeps rank order inside a node. */
    int *fill = ids; /* the key map is no longer needed */
    for (int n = 0; n < nodes; n++) fill[n] = first[n];
    for (int r = 0; r < size; r++) {
        int pos = fill[node_of[r]]++;
        by_node[pos] = r;
        local_of[r] = pos - first[node_of[r]];
    }
    for (int n = 0; n < nodes; n++)
        for (int i = first[n] + 1; i < first[n + 1]; i++)
            if (by_node[i] != by_node[i - 1] + 1) consecutive = 0;
    free(ids);
    a->mem = mem;
    a->view = (ck_nodes){.size = size,
                         .nodes = nodes,
                         .node = node_of[rank],
                         .local_rank = local_of[rank],
                         .local_size = first[node_of[rank] + 1] - first[node_of[rank]],
                         .equal = equal,
                         .consecutive = consecutive,
                         .virtual_nodes = virt,
                         .node_of = node_of,
                         .local_of = local_of,
                         .node_first = first,
                         .by_node = by_node};
    *out = a;
    return MPI_SUCCESS;
}

#ifdef CK_MPI_STANDIN

/* One rank at a time: rebuilt when the rank or size changes, which is once
 * per traced rank. The communicator is MPI_COMM_WORLD. */
static nodes_attr *standin_cache;

int ck_nodes_get(MPI_Comm comm, const ck_nodes **nodes)
{
    int rank, size, k, rc;
    *nodes = NULL;
    if ((rc = MPI_Comm_rank(comm, &rank)) != MPI_SUCCESS) return rc;
    if ((rc = MPI_Comm_size(comm, &size)) != MPI_SUCCESS) return rc;
    if ((rc = ck_ranks_per_node_env(&k)) != MPI_SUCCESS) return rc;
    const ck_nodes *v = standin_cache ? &standin_cache->view : NULL;
    if (v && v->size == size && ck_nodes_rank(v, v->node, v->local_rank) == rank) {
        *nodes = &standin_cache->view;
        return MPI_SUCCESS;
    }
    nodes_attr_free(standin_cache);
    standin_cache = NULL;
    int *keys = malloc((size_t)size * sizeof *keys);
    if (keys == NULL) return MPI_ERR_NO_MEM;
    for (int r = 0; r < size; r++) keys[r] = k > 0 ? r / k : 0;
    rc = nodes_from_keys(keys, size, size, rank, k > 0, &standin_cache);
    free(keys);
    if (rc == MPI_SUCCESS) *nodes = &standin_cache->view;
    return rc;
}

#else

static int nodes_keyval = MPI_KEYVAL_INVALID;

static int nodes_delete(MPI_Comm comm, int keyval, void *val, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    nodes_attr_free(val);
    return MPI_SUCCESS;
}

/* The keyval lives until MPI_Finalize, which deletes the attributes of
 * MPI_COMM_SELF first: one there frees the keyval (MPI-4.0 section 11.2.4). */
static int keyval_release(MPI_Comm comm, int keyval, void *val, void *extra)
{
    (void)comm;
    (void)val;
    (void)extra;
    int rc = MPI_Comm_free_keyval(&nodes_keyval);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_free_keyval(&keyval);
    return rc;
}

static int keyval_init(void)
{
    if (nodes_keyval != MPI_KEYVAL_INVALID) return MPI_SUCCESS;
    /* A duplicate of a communicator gets its own structure when asked:
     * never copy the attribute (MPI_COMM_NULL_COPY_FN). */
    int rc = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, nodes_delete, &nodes_keyval, NULL);
    if (rc != MPI_SUCCESS) return rc;
    int release = MPI_KEYVAL_INVALID;
    rc = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, keyval_release, &release, NULL);
    /* Without the release the keyval only stays allocated until exit: the
     * structure still works, so a failure here is not the caller's error. */
    if (rc == MPI_SUCCESS) (void)MPI_Comm_set_attr(MPI_COMM_SELF, release, NULL);
    return MPI_SUCCESS;
}

/* A key that is the same for the ranks of one node and differs between
 * nodes: the world rank / k for virtual nodes, else the lowest rank in comm
 * of the ranks sharing memory with this one. */
static int node_key(MPI_Comm comm, int rank, int k, int *key)
{
    if (k > 0) {
        int wrank, rc = MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
        if (rc == MPI_SUCCESS) *key = wrank / k;
        return rc;
    }
    MPI_Comm shared = MPI_COMM_NULL;
    int rc = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Allreduce(&rank, key, 1, MPI_INT, MPI_MIN, shared);
    int rc2 = MPI_Comm_free(&shared);
    return rc != MPI_SUCCESS ? rc : rc2;
}

/* Every rank's key, then the structure. The collectives are the profiling
 * entry points: under libcollkit-preload MPI_Allgather is libcollkit itself,
 * possibly a node-aware algorithm asking for this very structure. */
static int nodes_build(MPI_Comm comm, nodes_attr **out)
{
    int rank, size, k, key, rc;
    *out = NULL;
    if ((rc = MPI_Comm_rank(comm, &rank)) != MPI_SUCCESS) return rc;
    if ((rc = MPI_Comm_size(comm, &size)) != MPI_SUCCESS) return rc;
    /* An invalid COLLKIT_RANKS_PER_NODE is the same on every rank (mpirun
     * exports it), so every rank refuses before communicating. */
    if ((rc = ck_ranks_per_node_env(&k)) != MPI_SUCCESS) return rc;
    /* The local error of one rank must not leave the others in a collective:
     * every rank joins the allgather, which carries -1 for a failure. */
    if (node_key(comm, rank, k, &key) != MPI_SUCCESS) key = -1;
    int *keys = malloc((size_t)size * sizeof *keys);
    int ok = keys != NULL, all_ok = 0;
    /* Everyone learns whether everyone could allocate, before the allgather. */
    if ((rc = PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm)) != MPI_SUCCESS) goto out;
    if (!all_ok) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    if ((rc = PMPI_Allgather(&key, 1, MPI_INT, keys, 1, MPI_INT, comm)) != MPI_SUCCESS) goto out;
    int maxkey = 0;
    for (int r = 0; r < size; r++) {
        if (keys[r] < 0) {
            rc = MPI_ERR_OTHER;
            goto out;
        }
        if (keys[r] > maxkey) maxkey = keys[r];
    }
    rc = nodes_from_keys(keys, maxkey, size, rank, k > 0, out);
out:
    free(keys);
    return rc;
}

int ck_nodes_get(MPI_Comm comm, const ck_nodes **nodes)
{
    *nodes = NULL;
    if (comm == MPI_COMM_NULL) return MPI_ERR_COMM;
    int rc = keyval_init();
    if (rc != MPI_SUCCESS) return rc;
    void *val = NULL;
    int found = 0;
    rc = MPI_Comm_get_attr(comm, nodes_keyval, &val, &found);
    if (rc != MPI_SUCCESS) return rc;
    if (found) {
        *nodes = &((nodes_attr *)val)->view;
        return MPI_SUCCESS;
    }
    nodes_attr *a = NULL;
    if ((rc = nodes_build(comm, &a)) != MPI_SUCCESS) return rc;
    rc = MPI_Comm_set_attr(comm, nodes_keyval, a);
    if (rc != MPI_SUCCESS) {
        nodes_attr_free(a);
        return rc;
    }
    *nodes = &a->view;
    return MPI_SUCCESS;
}

#endif /* CK_MPI_STANDIN */
