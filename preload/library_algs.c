/* The library's own algorithms that can be switched per call (issue #42):
 * MPICH reads MPIR_CVAR_<COLL>_INTRA_ALGORITHM at every call (mpir_coll.c,
 * backends/mpich.py RUNTIME_SWITCH), so a call runs one of them when the
 * shim writes that CVAR through MPI_T before it, with the collective's
 * MPIR_CVAR_<COLL>_DEVICE_COLLECTIVE at 0 so that the device layer does not
 * override it, and writes both back after. Open MPI 4.1 has no such switch
 * (coll/tuned copies its forced algorithm when a communicator is created):
 * its CVARs have other names, nothing is found here, and no library
 * algorithm is offered. Nor under Intel MPI 2021: its switch is the string
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

void ckp_lib_algs_setup(void)
{
    memset(libs, 0, sizeof libs);
    int provided;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return;
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
