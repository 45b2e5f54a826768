/* The ops MPI predefines: the one table of their names (collkit's outputs,
 * specs, profiles) and of what each is (ck_op_desc in collkit.h). Everything
 * in collkit that names an op or asks whether one is predefined reads it:
 * argument checks, the preload's profile and autotuner, collkit-bench's op
 * benchmark, collkit-replay, and (through registry.json) the Python side. */
#include <collkit/collkit.h>

#include <string.h>

/* In the order of the handles below; sum first, the op most calls use. */
static const ck_op_desc ops[] = {
    {"sum", 1, 1},  {"max", 1, 1},  {"min", 1, 1},  {"prod", 1, 1},    {"land", 1, 0},   {"band", 1, 0},
    {"lor", 1, 0},  {"bor", 1, 0},  {"lxor", 1, 0}, {"bxor", 1, 0},    {"maxloc", 1, 0}, {"minloc", 1, 0},
    {"replace", 0, 0}, {"no_op", 0, 0},
};

#define NOPS (sizeof ops / sizeof ops[0])

/* The handles, in the table's order. ck_trace's stand-in MPI defines the four
 * arithmetic ones only (tools/trace/standin/mpi.h): the others are no op there. */
#ifdef CK_MPI_STANDIN
#define CK_OP_STANDIN_NONE MPI_OP_NULL
static const MPI_Op handles[NOPS] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD, CK_OP_STANDIN_NONE, CK_OP_STANDIN_NONE,
                                     CK_OP_STANDIN_NONE, CK_OP_STANDIN_NONE, CK_OP_STANDIN_NONE,
                                     CK_OP_STANDIN_NONE, CK_OP_STANDIN_NONE, CK_OP_STANDIN_NONE,
                                     CK_OP_STANDIN_NONE, CK_OP_STANDIN_NONE};
#else
static const MPI_Op handles[NOPS] = {MPI_SUM,  MPI_MAX,  MPI_MIN,    MPI_PROD,   MPI_LAND,    MPI_BAND,  MPI_LOR,
                                     MPI_BOR,  MPI_LXOR, MPI_BXOR,   MPI_MAXLOC, MPI_MINLOC,  MPI_REPLACE,
                                     MPI_NO_OP};
#endif

size_t ck_op_count(void) { return NOPS; }

const ck_op_desc *ck_op_at(size_t i) { return i < NOPS ? &ops[i] : NULL; }

const ck_op_desc *ck_op_find(const char *name)
{
    for (size_t i = 0; name != NULL && i < NOPS; i++)
        if (strcmp(ops[i].name, name) == 0) return &ops[i];
    return NULL;
}

MPI_Op ck_op_mpi(const ck_op_desc *d)
{
    for (size_t i = 0; i < NOPS; i++)
        if (d == &ops[i]) return handles[i];
    return MPI_OP_NULL;
}

const ck_op_desc *ck_op_of(MPI_Op op)
{
    if (op == MPI_OP_NULL) return NULL;
    for (size_t i = 0; i < NOPS; i++)
        if (op == handles[i]) return &ops[i];
    return NULL;
}
