/* The library's own algorithms that can be switched per call (issue #42):
 * MPICH reads MPIR_CVAR_<COLL>_INTRA_ALGORITHM at every call (mpir_coll.c,
 * backends/mpich.py RUNTIME_SWITCH), so a call runs one of them when the
 * shim writes that CVAR through MPI_T before it, with the collective's
 * MPIR_CVAR_<COLL>_DEVICE_COLLECTIVE at 0 so that the device layer does not
 * override it, and writes both back after. Open MPI (4.1 and 5) has no such
 * switch: coll/tuned copies coll_tuned_<coll>_algorithm into a communicator's
 * module when the communicator is made (tuned_module_enable), and only
 * under coll_tuned_use_dynamic_rules. There the switch is per communicator
 * (issue #51): ckp_lib_dup writes the CVAR, duplicates the program's
 * communicator and writes it back, and the dispatcher runs that algorithm's
 * calls on the duplicate. Nothing is offered without dynamic rules (tuned
 * then never reads the CVAR). Nor under Intel MPI 2021: its switch is the string
 * CVAR MPIR_CVAR_USE_<COLL> (alias I_MPI_ADJUST_<COLL>, a preset id), which
 * a write at run time leaves without effect (docs/preload.md).
 *
 * MPICH's MPI_T gives these CVARs as plain integers without an enumeration;
 * the names are the lines "name - what it does" of the CVAR's description, in
 * the order of their values (0, 1, ...; the same list `mpivars` prints, which
 * backends/mpich.py reads). `auto` (0) is the library's own choice, already a
 * candidate as "library". Where MPIR_CVAR_DEVICE_COLLECTIVES is `all`, the
 * per-collective switch is ignored, and nothing is offered either. */
#include "ck_preload.h"
#include "cvar_values.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    int n;                               /* algorithms besides auto */
    char names[CKP_LIB_ALGS_MAX][CKP_CVAR_NAME_MAX + 1];
    int values[CKP_LIB_ALGS_MAX];
    MPI_T_cvar_handle alg, device;       /* the algorithm CVAR, the collective's device switch */
    int saved_alg, saved_device;
} lib_coll;

static lib_coll libs[CK_NUM_COLLECTIVES];
/* Open MPI's coll/tuned: the switch is read when a communicator is made. */
static int per_comm;

/* MPICH's names of libcollkit's eight (reduce_scatter is MPI_Reduce_scatter_block). */
static const char *cvar_coll[CK_NUM_COLLECTIVES] = {
    [CK_BCAST] = "BCAST", [CK_REDUCE] = "REDUCE", [CK_GATHER] = "GATHER", [CK_SCATTER] = "SCATTER",
    [CK_ALLGATHER] = "ALLGATHER", [CK_REDUCE_SCATTER] = "REDUCE_SCATTER_BLOCK", [CK_ALLREDUCE] = "ALLREDUCE",
    [CK_ALLTOALL] = "ALLTOALL",
};

/* An integer CVAR by name: its index and its description; -1 when absent or not an int. */
static int find_cvar(const char *want, char *desc, int desclen)
{
    int index = -1;
    if (MPI_T_cvar_get_index(want, &index) != MPI_SUCCESS) return -1;
    char name[256];
    int nl = sizeof name, dl = desclen, verbosity, bind, scope;
    MPI_Datatype dt;
    MPI_T_enum en;
    if (MPI_T_cvar_get_info(index, name, &nl, &verbosity, &dt, &en, desc, &dl, &bind, &scope) != MPI_SUCCESS ||
        dt != MPI_INT)
        return -1;
    return index;
}

/* The names of the description's value lines (cvar_values.c), in order:
 * value k is the k-th. Returns how many (at most max). */
static int value_names(const char *desc, char names[][CKP_CVAR_NAME_MAX + 1], int max)
{
    int n = 0;
    for (const char *line = desc; line && *line && n < max;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line), w, text;
        if (ckp_cvar_value_line(line, len, &w, &text)) {
            memcpy(names[n], line, w);
            names[n++][w] = '\0';
        }
        line = end ? end + 1 : NULL;
    }
    return n;
}

/* Algorithms the library gets wrong on calls the shim cannot tell apart by
 * values equal on every rank, so never offered. Found by
 * preload_autotune_matrix_mixed_p3 and checked with the CVAR set alone (no
 * preload, `ck_matrix_library --mixed-types`, MPICH 5.0.2): allgather
 * k_brucks crashes (a memcpy from the NULL address) on MPI_IN_PLACE with an
 * MPI_BOTTOM receive buffer of absolute addresses; alltoall k_brucks returns
 * wrong blocks when ranks pass different but matching datatypes (strided
 * on some ranks, contiguous on others). Both calls are valid MPI, and which
 * datatype or buffer a rank passes is not the same on every rank. */
static int broken(int c, const char *name)
{
    return (c == CK_ALLGATHER || c == CK_ALLTOALL) && strcmp(name, "k_brucks") == 0;
}

static int handle(int index, MPI_T_cvar_handle *h)
{
    int count = 0;
    return MPI_T_cvar_handle_alloc(index, NULL, h, &count) == MPI_SUCCESS && count == 1 ? 0 : -1;
}

/* ---------------------------------------------------------------- Open MPI's coll/tuned */

/* Open MPI's names of libcollkit's eight. */
static const char *tuned_coll[CK_NUM_COLLECTIVES] = {
    [CK_BCAST] = "bcast", [CK_REDUCE] = "reduce", [CK_GATHER] = "gather", [CK_SCATTER] = "scatter",
    [CK_ALLGATHER] = "allgather", [CK_REDUCE_SCATTER] = "reduce_scatter_block", [CK_ALLREDUCE] = "allreduce",
    [CK_ALLTOALL] = "alltoall",
};

/* coll_tuned_use_dynamic_rules, a bool (one byte in Open MPI 4.1, not an
 * MPI_INT): without it tuned decides by its fixed rules and never reads a
 * forced algorithm. Any nonzero byte is true. */
static int tuned_dynamic(int index)
{
    char name[256], desc[64];
    int nl = sizeof name, dl = sizeof desc, verbosity, bind, scope, size = 0, count = 0, on = 0;
    MPI_Datatype dt;
    MPI_T_enum en;
    MPI_T_cvar_handle h;
    unsigned char v[16] = {0};
    if (MPI_T_cvar_get_info(index, name, &nl, &verbosity, &dt, &en, desc, &dl, &bind, &scope) != MPI_SUCCESS ||
        PMPI_Type_size(dt, &size) != MPI_SUCCESS || size < 1 || size > (int)sizeof v)
        return 0;
    if (MPI_T_cvar_handle_alloc(index, NULL, &h, &count) != MPI_SUCCESS) return 0;
    if (count == 1 && MPI_T_cvar_read(h, v) == MPI_SUCCESS)
        for (int i = 0; i < size; i++) on |= v[i] != 0;
    MPI_T_cvar_handle_free(&h);
    return on;
}

/* An enumeration item's name as a rules file can hold it: Open MPI's
 * "in-order_binary" is in_order_binary (backends/openmpi.py's spelling).
 * 0 when it is no such name. */
static int tuned_name(const char *in, char *out)
{
    size_t n = strlen(in);
    if (n == 0 || n > CKP_CVAR_NAME_MAX) return 0;
    for (size_t i = 0; i <= n; i++) {
        const char ch = in[i] == '-' ? '_' : in[i];
        if (ch && !(ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'))) return 0;
        out[i] = ch;
    }
    return 1;
}

/* coll_tuned_<coll>_algorithm: an MPI_INT with an enumeration whose item 0
 * is "ignore" (tuned's own choice, the `library` candidate). */
static void tuned_setup(int dynamic_index)
{
    if (!tuned_dynamic(dynamic_index)) return;
    for (int c = 0; c < CK_NUM_COLLECTIVES; c++) {
        char want[96], name[256], desc[1024];
        snprintf(want, sizeof want, "coll_tuned_%s_algorithm", tuned_coll[c]);
        int index = -1, nl = sizeof name, dl = sizeof desc, verbosity, bind, scope, items = 0;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_T_cvar_get_index(want, &index) != MPI_SUCCESS ||
            MPI_T_cvar_get_info(index, name, &nl, &verbosity, &dt, &en, desc, &dl, &bind, &scope) != MPI_SUCCESS ||
            dt != MPI_INT || en == MPI_T_ENUM_NULL)
            continue;
        nl = sizeof name;
        if (MPI_T_enum_get_info(en, &items, name, &nl) != MPI_SUCCESS) continue;
        lib_coll *L = &libs[c];
        if (handle(index, &L->alg) != 0) continue;
        for (int j = 0; j < items && L->n < CKP_LIB_ALGS_MAX; j++) {
            int value = 0;
            nl = sizeof name;
            if (MPI_T_enum_get_item(en, j, &value, name, &nl) != MPI_SUCCESS || value <= 0 ||
                !tuned_name(name, L->names[L->n]))
                continue;
            L->values[L->n++] = value;
        }
        if (L->n == 0) MPI_T_cvar_handle_free(&L->alg);
        else per_comm = 1;
    }
}

/* ---------------------------------------------------------------- MPICH */

static void mpich_setup(void)
{
    char desc[8192], names[CKP_LIB_ALGS_MAX + 1][CKP_CVAR_NAME_MAX + 1];
    /* `all`: the device decides every collective, whatever the per-collective switch says. */
    int dc = find_cvar("MPIR_CVAR_DEVICE_COLLECTIVES", desc, sizeof desc);
    if (dc >= 0) {
        MPI_T_cvar_handle h;
        int v = -1, n = value_names(desc, names, CKP_LIB_ALGS_MAX + 1);
        if (handle(dc, &h) != 0) return;
        MPI_T_cvar_read(h, &v);
        MPI_T_cvar_handle_free(&h);
        if (v < 0 || v >= n || strcmp(names[v], "all") == 0) return;
    }
    for (int c = 0; c < CK_NUM_COLLECTIVES; c++) {
        char want[96];
        snprintf(want, sizeof want, "MPIR_CVAR_%s_INTRA_ALGORITHM", cvar_coll[c]);
        int ai = find_cvar(want, desc, sizeof desc);
        if (ai < 0) continue;
        int n = value_names(desc, names, CKP_LIB_ALGS_MAX + 1);
        if (n < 2 || strcmp(names[0], "auto") != 0) continue; /* not the layout this reads */
        snprintf(want, sizeof want, "MPIR_CVAR_%s_DEVICE_COLLECTIVE", cvar_coll[c]);
        char dd[1024];
        int di = find_cvar(want, dd, sizeof dd);
        lib_coll *L = &libs[c];
        if (di < 0 || handle(ai, &L->alg) != 0) continue;
        if (handle(di, &L->device) != 0) {
            MPI_T_cvar_handle_free(&L->alg);
            continue;
        }
        for (int k = 1; k < n; k++) {
            if (broken(c, names[k])) continue;
            snprintf(L->names[L->n], sizeof L->names[L->n], "%s", names[k]);
            L->values[L->n++] = k;
        }
    }
}

void ckp_lib_algs_setup(void)
{
    memset(libs, 0, sizeof libs);
    per_comm = 0;
    int provided, index = -1;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return;
    if (MPI_T_cvar_get_index("coll_tuned_use_dynamic_rules", &index) == MPI_SUCCESS) tuned_setup(index);
    else mpich_setup();
}

int ckp_lib_per_comm(void) { return per_comm; }

/* Calls a forced tuned algorithm may refuse or get wrong, never offered:
 * the two_proc algorithms return MPI_ERR_UNSUPPORTED_OPERATION at any size
 * but 2 (coll_base_allgather.c, coll_base_alltoall.c), and tuned's own
 * decision gives a non-commutative op only its order-keeping reductions,
 * while a forced one runs as forced; so a reduction's op must commute. The
 * size and the op are the same on every rank. MPICH falls back inside
 * (MPIR_CVAR_COLLECTIVE_FALLBACK): everything. */
int ckp_lib_alg_can(ck_collective c, int i, int p, MPI_Op op)
{
    if (!per_comm) return 1;
    if (p < 2) return 0; /* coll/self, not tuned, runs a communicator of one */
    if (strcmp(libs[c].names[i], "two_proc") == 0 && p != 2) return 0;
    if (ck_collective_has_op(c)) {
        int commute = 0;
        if (op == MPI_OP_NULL || PMPI_Op_commutative(op, &commute) != MPI_SUCCESS || !commute) return 0;
    }
    return 1;
}

/* Under Open MPI: a duplicate of comm whose tuned module runs algorithm i of
 * c. Every rank of comm calls it in the same collective call (a choice from
 * rank-equal values), so the duplicate is as legal there as the program's
 * call. The CVAR goes back to what it was before anything else can make a
 * communicator (not while other threads may call: add_candidates). */
int ckp_lib_dup(ck_collective c, int i, MPI_Comm comm, MPI_Comm *out)
{
    lib_coll *L = &libs[c];
    int saved = 0;
    *out = MPI_COMM_NULL;
    if (MPI_T_cvar_read(L->alg, &saved) != MPI_SUCCESS || MPI_T_cvar_write(L->alg, &L->values[i]) != MPI_SUCCESS)
        return MPI_ERR_OTHER;
    int rc = PMPI_Comm_dup(comm, out);
    if (MPI_T_cvar_write(L->alg, &saved) != MPI_SUCCESS && rc == MPI_SUCCESS) {
        /* every later communicator of the program would run algorithm i */
        PMPI_Comm_free(out);
        rc = MPI_ERR_OTHER;
    }
    if (rc != MPI_SUCCESS) *out = MPI_COMM_NULL;
    return rc;
}

int ckp_lib_nalgs(ck_collective c) { return libs[c].n; }

/* What this rank found, as one number: every rank must offer the same
 * library algorithms (a rank whose environment says MPIR_CVAR_DEVICE_COLLECTIVES=all
 * finds none), or the autotuner's candidates would differ across ranks. */
int ckp_lib_algs_signature(void)
{
    uint32_t h = 2166136261u;
    for (int c = 0; c < CK_NUM_COLLECTIVES; c++)
        for (int i = 0; i < libs[c].n; i++) {
            for (const char *q = libs[c].names[i]; *q; q++) h = (h ^ (unsigned char)*q) * 16777619u;
            h = (h ^ (uint32_t)(c * 64 + libs[c].values[i])) * 16777619u;
        }
    return (int)(h & 0x3fffffff);
}

void ckp_lib_algs_disable(void)
{
    for (int c = 0; c < CK_NUM_COLLECTIVES; c++) libs[c].n = 0;
}

const char *ckp_lib_alg_name(ck_collective c, int i) { return libs[c].names[i]; }

int ckp_lib_alg_find(ck_collective c, const char *name)
{
    for (int i = 0; i < libs[c].n; i++)
        if (strcmp(libs[c].names[i], name) == 0) return i;
    return -1;
}

void ckp_lib_select(ck_collective c, int i)
{
    lib_coll *L = &libs[c];
    int off = 0;
    MPI_T_cvar_read(L->alg, &L->saved_alg);
    MPI_T_cvar_read(L->device, &L->saved_device);
    MPI_T_cvar_write(L->device, &off);
    MPI_T_cvar_write(L->alg, &L->values[i]);
}

void ckp_lib_restore(ck_collective c)
{
    lib_coll *L = &libs[c];
    MPI_T_cvar_write(L->alg, &L->saved_alg);
    MPI_T_cvar_write(L->device, &L->saved_device);
}

const char *ckp_column_name(ck_collective c, int col, char *buf, size_t len)
{
    if (col == CKP_LIBRARY) return "library";
    if (col > CKP_LIBRARY) {
        snprintf(buf, len, "library:%s", libs[c].names[col - CKP_LIB_COL(0)]);
        return buf;
    }
    return ckp_algs[c][col]->name;
}

int ckp_column_find(ck_collective c, const char *name)
{
    if (strcmp(name, "library") == 0) return CKP_LIBRARY;
    if (strncmp(name, "library:", 8) == 0) {
        int i = ckp_lib_alg_find(c, name + 8);
        return i < 0 ? -2 : CKP_LIB_COL(i);
    }
    int k = ckp_alg_find(c, name);
    return k < 0 ? -2 : k;
}
