/* The fallback for one intercepted call: its facts from MPI, decided by the
 * rule (fallback_rule.c; docs/preload.md, "Fallback"). The dispatcher and the
 * autotuner both ask, so it sits below them and calls neither. */
#include "ck_preload.h"

/* Whether a reduction's datatype (named and contiguous: ckp_fallback_reason)
 * holds only integers, whose sums are exact in any order. Anything not
 * listed, floating or not known to the shim, counts as floating-point. */
static int integer_type(MPI_Datatype dt)
{
    static const MPI_Datatype ints[] = {
        MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_BYTE, MPI_SHORT, MPI_UNSIGNED_SHORT,
        MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG_INT, MPI_LONG_LONG,
        MPI_UNSIGNED_LONG_LONG, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T,
        MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T, MPI_C_BOOL, MPI_AINT, MPI_OFFSET, MPI_COUNT,
        MPI_INTEGER, MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4, MPI_INTEGER8, MPI_LOGICAL,
        MPI_CHARACTER,
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (ints[i] != MPI_DATATYPE_NULL && dt == ints[i]) return 1;
    return 0;
}

typedef struct {
    ck_collective c;
    MPI_Datatype dt;
    MPI_Op op;
} reduction_args;

/* A reduction's facts from MPI: asked only once the rule reaches them. */
static void read_reduction(ckp_call_facts *f, void *ctx)
{
    const reduction_args *r = ctx;
    int size, contig;
    f->datatype_ok = ckp_type_named(r->dt) && ckp_type_info(r->dt, &size, &contig) == MPI_SUCCESS && contig;
    if (!f->datatype_ok) return;
    f->op_known = r->op != MPI_OP_NULL && PMPI_Op_commutative(r->op, &f->commutative) == MPI_SUCCESS;
    f->integer = integer_type(r->dt);
    f->fp_allowed = ckp_cfg.allow_fp_rank_variant || ckp_cfg.forced[r->c] >= 0;
}

/* Why algorithm a cannot run this call correctly, or -1 when it can: the
 * call's facts, read from MPI, through the one rule (fallback_rule.c). Every
 * input here agrees across ranks: count and dt are read only for reductions,
 * whose one count and datatype are significant and equal at every rank (the
 * interceptors pass them on both sides). */
int ckp_fallback_reason(const ck_algorithm *a, ck_collective c, const ckp_comm *info, size_t bytes, int count,
                        MPI_Datatype dt, MPI_Op op, int root)
{
    reduction_args r = {.c = c, .dt = dt, .op = op};
    ckp_call_facts f = {.inter = info->inter, .size = info->size, .root = root, .bytes = bytes, .count = count,
                        .read_reduction = read_reduction, .ctx = &r};
    return ckp_fallback_rule(a, c, &f);
}
