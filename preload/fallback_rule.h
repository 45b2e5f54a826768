/*
 * The fallback rule: why algorithm a cannot run a call correctly, from facts
 * about the call (docs/preload.md, "Fallback"). The preload gathers the facts
 * from MPI (fallback.c); `collkit-rules --fallback` takes them from a profile
 * (tools/rules_check.c, for predict, trial and replay), so both decide with
 * this one function. It calls no MPI function.
 */
#ifndef COLLKIT_PRELOAD_FALLBACK_RULE_H
#define COLLKIT_PRELOAD_FALLBACK_RULE_H

#include <collkit/collkit.h>
#include <stddef.h>

/* Why a call chosen for a libcollkit algorithm went to the library instead. */
typedef enum {
    CKP_FB_INTERCOMM = 0, /* intercommunicator: the algorithms assume one group */
    CKP_FB_DATATYPE,      /* reduction on a derived or padded datatype */
    CKP_FB_OP,            /* non-commutative op, algorithm needs commutativity */
    CKP_FB_COUNT,         /* block bytes 0, above CK_MAX_COUNT, or below min_count */
    CKP_FB_RANKS,         /* registry constraint on the rank count (power of two) */
    CKP_FB_ROOT,          /* root out of range: the library reports the error */
    CKP_FB_CONSTRAINT,    /* a registry constraint the shim cannot check (e.g. fat tree) */
    CKP_FB_FP_RANK_VARIANT, /* CK_TRAIT_FP_RANK_VARIANT on a floating (or unknown) datatype, not allowed */
    CKP_NUM_REASONS
} ckp_reason;

const char *ckp_reason_name(ckp_reason r);

typedef struct ckp_call_facts {
    int inter;           /* an intercommunicator */
    int size;            /* ranks (an intercommunicator's local group) */
    int root;            /* the root given (rooted collectives) */
    size_t bytes;        /* block bytes, as the rules count them */
    /* Reductions only: */
    long long count;     /* elements */
    int datatype_ok;     /* predefined (named) and laid out without gaps */
    int op_known;        /* an op whose commutativity is known */
    int commutative;
    int integer;         /* the datatype holds only integers (exact sums in any order) */
    int fp_allowed;      /* the rules file allows rank-variant floats, or the algorithm is forced by name */
    /* When set, fills the reduction facts above; called only once the checks
     * before them pass (the preload asks MPI about a datatype only then). */
    void (*read_reduction)(struct ckp_call_facts *f, void *ctx);
    void *ctx;
} ckp_call_facts;

/* The ckp_reason (ck_preload.h; names: ckp_reason_name) or -1 when a runs the call. */
int ckp_fallback_rule(const ck_algorithm *a, ck_collective c, ckp_call_facts *f);

#endif
