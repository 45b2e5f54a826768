/* The registry: every algorithm of libcollkit, in collective order, with its
 * constraints as data. The JSON export is what the Python side reads. */
#include "registry_internal.h"

#include <string.h>

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

static const char *in_place_name(ck_in_place_kind k)
{
    return k == CK_IN_PLACE_SEND ? "send" : k == CK_IN_PLACE_RECV ? "recv" : "none";
}

static void json_bool(FILE *f, const char *key, int v)
{
    fprintf(f, ", \"%s\": %s", key, v ? "true" : "false");
}

/* A block count as JSON: 0, 1 or the string "p". */
static void json_blocks(FILE *f, const char *key, int blocks)
{
    if (blocks == CK_BLOCKS_P) fprintf(f, ", \"%s\": \"p\"", key);
    else fprintf(f, ", \"%s\": %d", key, blocks);
}

static void write_collective(FILE *f, const ck_collective_desc *d)
{
    fputs("    {\"name\": ", f);
    json_string(f, d->name);
    fprintf(f, ", \"id\": %d, \"mpi_name\": ", (int)d->id);
    json_string(f, d->mpi_name);
    json_bool(f, "has_root", d->has_root);
    json_bool(f, "has_op", d->has_op);
    json_bool(f, "per_block", d->per_block);
    fprintf(f, ", \"in_place\": \"%s\"", in_place_name(d->in_place));
    json_blocks(f, "send_blocks_root", d->send_blocks_root);
    json_blocks(f, "send_blocks_other", d->send_blocks_other);
    json_blocks(f, "recv_blocks_root", d->recv_blocks_root);
    json_blocks(f, "recv_blocks_other", d->recv_blocks_other);
    json_bool(f, "from_root", d->from_root);
    json_bool(f, "source_slot_is_dest", d->source_slot_is_dest);
    json_bool(f, "result_is_own_block", d->result_is_own_block);
    json_bool(f, "replicated", d->replicated);
    fprintf(f, ", \"busbw_const\": %g, \"busbw_per_p\": %g}", d->busbw_const, d->busbw_per_p);
}

static void write_algorithm(FILE *f, const ck_algorithm *a)
{
    fputs("    {\"collective\": ", f);
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
            "\"fattree\": %s, \"equal_nodes\": %s, \"min_count\": %zu}, "
            "\"traits\": {\"whole_vector\": %s, \"fp_rank_variant\": %s}}",
            (a->constraints & CK_REQUIRES_COMMUTATIVE) ? "true" : "false",
            (a->constraints & CK_REQUIRES_POW2_RANKS) ? "true" : "false",
            (a->constraints & CK_REQUIRES_FATTREE) ? "true" : "false",
            (a->constraints & CK_REQUIRES_EQUAL_NODES) ? "true" : "false", a->min_count,
            (a->constraints & CK_TRAIT_WHOLE_VECTOR) ? "true" : "false",
            (a->constraints & CK_TRAIT_FP_RANK_VARIANT) ? "true" : "false");
}

int ck_registry_write_json(FILE *f)
{
    fputs("{\n  \"collectives\": [\n", f);
    for (int c = 0; c < CK_NUM_COLLECTIVES; c++) {
        write_collective(f, ck_collective_describe((ck_collective)c));
        fputs(c + 1 < CK_NUM_COLLECTIVES ? ",\n" : "\n", f);
    }
    fputs("  ],\n  \"datatypes\": [\n", f);
    size_t nd = ck_datatype_count();
    for (size_t i = 0; i < nd; i++) {
        const ck_datatype_desc *d = ck_datatype_at(i);
        fputs("    {\"name\": ", f);
        json_string(f, d->name);
        fprintf(f, ", \"size\": %zu, \"is_float\": %s}%s\n", d->size, d->is_float ? "true" : "false",
                i + 1 < nd ? "," : "");
    }
    fputs("  ],\n  \"ops\": [\n", f);
    size_t no = ck_op_count();
    for (size_t i = 0; i < no; i++) {
        const ck_op_desc *o = ck_op_at(i);
        fputs("    {\"name\": ", f);
        json_string(f, o->name);
        json_bool(f, "reduction", o->reduction);
        json_bool(f, "arithmetic", o->arithmetic);
        fputs(i + 1 < no ? "},\n" : "}\n", f);
    }
    fprintf(f, "  ],\n  \"skew_quantiles\": %d,\n  \"algorithms\": [\n", CK_SKEW_QUANTILES);
    size_t n = ck_algorithm_count();
    for (size_t i = 0; i < n; i++) {
        write_algorithm(f, ck_algorithm_at(i));
        fputs(i + 1 < n ? ",\n" : "\n", f);
    }
    fputs("  ]\n}\n", f);
    return ferror(f) ? -1 : 0;
}
