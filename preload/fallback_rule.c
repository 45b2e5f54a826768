/* The fallback rule (fallback_rule.h): the checks in the order the report
 * counts them, on facts every rank holds alike; and the reasons' names (the
 * report's, the profile's, `collkit-rules --fallback`'s). */
#include "fallback_rule.h"

static const char *reason_names[CKP_NUM_REASONS] = {
    "intercommunicator", "datatype", "op-not-commutative", "count", "ranks", "root", "constraint",
    "fp-rank-variant",
};

const char *ckp_reason_name(ckp_reason r)
{
    return (r >= 0 && r < CKP_NUM_REASONS) ? reason_names[r] : "?";
}

int ckp_fallback_rule(const ck_algorithm *a, ck_collective c, ckp_call_facts *f)
{
    if (f->inter) return CKP_FB_INTERCOMM;
    if (ck_collective_has_root(c) && (f->root < 0 || f->root >= f->size)) return CKP_FB_ROOT;
    if (f->bytes == 0 || f->bytes > CK_MAX_COUNT) return CKP_FB_COUNT;
    if (ck_collective_has_op(c)) {
        /* Reductions combine elements, so they keep the datatype: it must be a
         * predefined type laid out without gaps. */
        if (f->read_reduction) f->read_reduction(f, f->ctx);
        if (!f->datatype_ok) return CKP_FB_DATATYPE;
        if (!f->op_known) return CKP_FB_OP;
        if (!f->commutative && (a->constraints & CK_REQUIRES_COMMUTATIVE)) return CKP_FB_OP;
        if (f->count < 0 || (size_t)f->count < a->min_count) return CKP_FB_COUNT;
        /* Ranks of such an algorithm may return floating-point results that
         * differ in the last bits: only with the user's permission (the rules
         * file's setting, or naming the algorithm in COLLKIT_ALGORITHMS). */
        if ((a->constraints & CK_TRAIT_FP_RANK_VARIANT) && !f->integer && !f->fp_allowed) return CKP_FB_FP_RANK_VARIANT;
    } else if (f->bytes < a->min_count) {
        return CKP_FB_COUNT;
    }
    if ((a->constraints & CK_REQUIRES_POW2_RANKS) && (f->size & (f->size - 1)) != 0) return CKP_FB_RANKS;
    /* Constraint bits are the low byte; the shim cannot evaluate the others
     * (a topology given elsewhere), so it never risks them. */
    if (a->constraints & 0xffu & ~(unsigned)(CK_REQUIRES_COMMUTATIVE | CK_REQUIRES_POW2_RANKS)) return CKP_FB_CONSTRAINT;
    return -1;
}
