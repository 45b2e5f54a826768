/* The registry: every algorithm of libcollkit, in collective order, with its
 * constraints as data. The JSON export is what the Python side reads. */
#include "registry_internal.h"

#include <string.h>

static const char *const collective_names[CK_NUM_COLLECTIVES] = {
    "bcast", "reduce", "gather", "scatter",
    "allgather", "reduce_scatter", "allreduce", "alltoall",
};

typedef struct {
    const ck_algorithm *table;
    const size_t *n;
} table_ref;

static const table_ref tables[CK_NUM_COLLECTIVES] = {
    {ck_bcast_algorithms, &ck_bcast_algorithms_n},
    {ck_reduce_algorithms, &ck_reduce_algorithms_n},
    {ck_gather_algorithms, &ck_gather_algorithms_n},
    {ck_scatter_algorithms, &ck_scatter_algorithms_n},
    {ck_allgather_algorithms, &ck_allgather_algorithms_n},
    {ck_reduce_scatter_algorithms, &ck_reduce_scatter_algorithms_n},
    {ck_allreduce_algorithms, &ck_allreduce_algorithms_n},
    {ck_alltoall_algorithms, &ck_alltoall_algorithms_n},
};

size_t ck_algorithm_count(void)
{
    size_t n = 0;
    for (int c = 0; c < CK_NUM_COLLECTIVES; c++) n += *tables[c].n;
    return n;
}

const ck_algorithm *ck_algorithm_at(size_t i)
{
    for (int c = 0; c < CK_NUM_COLLECTIVES; c++) {
        if (i < *tables[c].n) return &tables[c].table[i];
        i -= *tables[c].n;
    }
    return NULL;
}

const ck_algorithm *ck_algorithm_find(ck_collective coll, const char *name)
{
    if ((int)coll < 0 || coll >= CK_NUM_COLLECTIVES || name == NULL) return NULL;
    const table_ref *t = &tables[coll];
    for (size_t i = 0; i < *t->n; i++)
        if (strcmp(t->table[i].name, name) == 0) return &t->table[i];
    return NULL;
}

const char *ck_collective_name(ck_collective coll)
{
    if ((int)coll < 0 || coll >= CK_NUM_COLLECTIVES) return NULL;
    return collective_names[coll];
}

int ck_collective_parse(const char *name, ck_collective *coll)
{
    if (name == NULL) return -1;
    for (int c = 0; c < CK_NUM_COLLECTIVES; c++) {
        if (strcmp(collective_names[c], name) == 0) {
            *coll = (ck_collective)c;
            return 0;
        }
    }
    return -1;
}

int ck_collective_has_op(ck_collective coll)
{
    return coll == CK_REDUCE || coll == CK_REDUCE_SCATTER || coll == CK_ALLREDUCE;
}

int ck_collective_has_root(ck_collective coll)
{
    return coll == CK_BCAST || coll == CK_REDUCE || coll == CK_GATHER || coll == CK_SCATTER;
}

/* Registry strings are ours, but escape anyway so the export is always valid JSON. */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

int ck_registry_write_json(FILE *f)
{
    size_t n = ck_algorithm_count();
    fputs("[\n", f);
    for (size_t i = 0; i < n; i++) {
        const ck_algorithm *a = ck_algorithm_at(i);
        fputs("  {\"collective\": ", f);
        json_string(f, ck_collective_name(a->collective));
        fputs(", \"name\": ", f);
        json_string(f, a->name);
        fprintf(f, ", \"symbol\": \"ck_%s_%s\"", ck_collective_name(a->collective), a->name);
        fputs(", \"description\": ", f);
        json_string(f, a->description);
        fputs(", \"origin\": ", f);
        json_string(f, a->origin);
        fprintf(f,
                ", \"constraints\": {\"commutative_op\": %s, \"pow2_ranks\": %s, "
                "\"min_count\": %zu}}%s\n",
                (a->constraints & CK_REQUIRES_COMMUTATIVE) ? "true" : "false",
                (a->constraints & CK_REQUIRES_POW2_RANKS) ? "true" : "false",
                a->min_count, i + 1 < n ? "," : "");
    }
    fputs("]\n", f);
    return ferror(f) ? -1 : 0;
}
