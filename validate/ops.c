/* The ops: names, MPI handles, and the user-defined non-commutative op. */
#include "elements.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    int predefined, commutative;
} op_info;

/* Indexed by ckv_op. */
static const op_info ops[CKV_NUM_OPS] = {
    {"sum", 1, 1}, {"max", 1, 1}, {"min", 1, 1}, {"prod", 1, 1}, {"noncomm", 0, 0},
};

static MPI_Op noncomm_op = MPI_OP_NULL;

static int valid(ckv_op op) { return (int)op >= 0 && op < CKV_NUM_OPS; }

const char *ckv_op_name(ckv_op op) { return valid(op) ? ops[op].name : NULL; }

int ckv_op_parse(const char *name, ckv_op *op)
{
    for (int i = 0; name != NULL && i < CKV_NUM_OPS; i++) {
        if (strcmp(ops[i].name, name) == 0) {
            *op = (ckv_op)i;
            return 0;
        }
    }
    return -1;
}

int ckv_op_predefined(ckv_op op) { return valid(op) && ops[op].predefined; }

int ckv_op_commutative(ckv_op op) { return valid(op) && ops[op].commutative; }

int ckv_op_supports(ckv_op op, const ck_datatype_desc *dt)
{
    if (op != CKV_NONCOMM) return 1;
    /* 30 exact bits: 32-bit or wider integers, or double's 53-bit mantissa. */
    return dt->is_float ? dt->size >= sizeof(double) : dt->size >= 4;
}

MPI_Op ckv_op_mpi(ckv_op op)
{
    /* Handles are not compile-time constants in every MPI: no static table. */
    if (op == CKV_SUM) return MPI_SUM;
    if (op == CKV_MAX) return MPI_MAX;
    if (op == CKV_MIN) return MPI_MIN;
    if (op == CKV_PROD) return MPI_PROD;
    if (op == CKV_NONCOMM) return noncomm_op;
    return MPI_OP_NULL;
}

static const ckv_codec *codec_of_mpi(MPI_Datatype dt)
{
    for (size_t i = 0; i < ck_datatype_count(); i++)
        if (ck_datatype_mpi(ck_datatype_at(i)) == dt) return ckv_codec_of(ck_datatype_at(i));
    return NULL;
}

/* inout[i] = in[i] op inout[i]: `in` holds the lower ranks' operand. */
static void noncomm_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const ckv_codec *k = codec_of_mpi(*dt);
    if (k == NULL) {
        /* A user op cannot return an error, and skipping the combination
         * would fake a result: stop the run instead. */
        fprintf(stderr, "validate: non-commutative op called on an unsupported datatype\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
        return;
    }
    for (int i = 0; i < *len; i++)
        k->put(inout, (size_t)i,
               ckv_combine(CKV_NONCOMM, k->get(in, (size_t)i), k->get(inout, (size_t)i)));
}

int ckv_ops_init(void)
{
    if (noncomm_op != MPI_OP_NULL) return MPI_SUCCESS;
    return MPI_Op_create(noncomm_fn, 0, &noncomm_op);
}

void ckv_ops_free(void)
{
    if (noncomm_op != MPI_OP_NULL) MPI_Op_free(&noncomm_op);
}
