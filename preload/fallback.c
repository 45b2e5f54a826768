/* The fallback rules: why an algorithm cannot run one intercepted call
 * correctly (docs/preload.md, "Fallback"). The dispatcher and the autotuner
 * both ask, so it sits below them and calls neither. */
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

/* Why algorithm a cannot run this call correctly, or -1 when it can. Every
 * input here agrees across ranks: count and dt are read only for reductions,
 * whose one count and datatype are significant and equal at every rank (the
 * interceptors pass them on both sides). */
int ckp_fallback_reason(const ck_algorithm *a, ck_collective c, const ckp_comm *info, size_t bytes, int count,
                        MPI_Datatype dt, MPI_Op op, int root)
{
    if (info->inter) return CKP_FB_INTERCOMM;
    if (ck_collective_has_root(c) && (root < 0 || root >= info->size)) return CKP_FB_ROOT;
    if (bytes == 0 || bytes > CK_MAX_COUNT) return CKP_FB_COUNT;
    if (ck_collective_has_op(c)) {
        /* Reductions combine elements, so they keep the datatype: it must be a
         * predefined type laid out without gaps. */
        int ni, na, nd, comb, size, contig;
        if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS || comb != MPI_COMBINER_NAMED)
            return CKP_FB_DATATYPE;
        if (ckp_type_info(dt, &size, &contig) != MPI_SUCCESS || !contig) return CKP_FB_DATATYPE;
        int commute = 0;
        if (op == MPI_OP_NULL || PMPI_Op_commutative(op, &commute) != MPI_SUCCESS) return CKP_FB_OP;
        if (!commute && (a->constraints & CK_REQUIRES_COMMUTATIVE)) return CKP_FB_OP;
        if ((size_t)count < a->min_count) return CKP_FB_COUNT;
        /* Ranks of such an algorithm may return floating-point results that
         * differ in the last bits: only with the user's permission (the rules
         * file's setting, or naming the algorithm in COLLKIT_ALGORITHMS). */
        if ((a->constraints & CK_TRAIT_FP_RANK_VARIANT) && !integer_type(dt) &&
            !ckp_cfg.allow_fp_rank_variant && ckp_cfg.forced[c] < 0)
            return CKP_FB_FP_RANK_VARIANT;
    } else if (bytes < a->min_count) {
        return CKP_FB_COUNT;
    }
    if ((a->constraints & CK_REQUIRES_POW2_RANKS) && (info->size & (info->size - 1)) != 0)
        return CKP_FB_RANKS;
    /* Constraint bits are the low byte; the shim cannot evaluate the others
     * (a topology given elsewhere), so it never risks them. */
    if (a->constraints & 0xffu & ~(unsigned)(CK_REQUIRES_COMMUTATIVE | CK_REQUIRES_POW2_RANKS))
        return CKP_FB_CONSTRAINT;
    return -1;
}
