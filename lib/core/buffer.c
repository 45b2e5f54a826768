/* Datatype-aware temporary buffers, local copies and local reductions.
 * The instrumented build tags every local copy "copy" and every local
 * reduction "reduce" here, so algorithms get both for free. */
#include "ck_core.h"
#include "collkit/spans.h"

/* Under SimGrid (smpicc), local work costs no simulated time unless we say
 * so: a reduction is charged one flop per operand byte and a copy half a flop
 * per byte, so the simulated host speed is the reduction rate in bytes/s and
 * copies run twice as fast (collkit's SimGrid platforms state the rate).
 *
 * Inside ck_algorithm_call the charges are batched: each one only adds to
 * this rank's pending flops, and ck_local_work_flush charges the sum in one
 * smpi_execute_flops before the next message (the p2p wrappers call it) and
 * when the algorithm returns. Local work between two messages runs back to
 * back on one simulated core, so one execution of the sum ends at the same
 * simulated time as the executions one by one (to SimGrid's rounding, below
 * a picosecond), while the simulator schedules one action instead of
 * thousands (the block-by-block packers of Bruck and Bine alltoall copy
 * p^2 log p times). Direct calls of an algorithm's function have no common
 * exit to flush at, so outside ck_algorithm_call every charge is immediate,
 * as while spans are recorded (instrumented build): a "copy" or "reduce"
 * span then lasts as long as its own work. The state is global: SMPI
 * privatises globals per rank, which collkit's launcher relies on anyway. */
#ifdef SMPI_H
static double pending_flops;
static int batching;

void ck_local_work_flush(void)
{
    if (pending_flops > 0.0) {
        double f = pending_flops;
        pending_flops = 0.0;
        smpi_execute_flops(f);
    }
}

int ck_local_work_batch(int on)
{
    int was = batching;
    if (!on) ck_local_work_flush();
    batching = on;
    return was;
}

static void sim_charge(size_t count, MPI_Datatype dt, double flops_per_byte)
{
    int size;
    if (MPI_Type_size(dt, &size) != MPI_SUCCESS || size <= 0) return;
    pending_flops += (double)count * (double)size * flops_per_byte;
    int now = !batching;
#ifdef CK_INSTRUMENT
    now |= ck_spans_on;
#endif
    if (now) ck_local_work_flush();
}
#define CK_SIM_CHARGE(count, dt, fpb) sim_charge((count), (dt), (fpb))

/* COLLKIT_SIM_NO_DATA=1 (collkit's SimGrid launcher sets it when a launch's
 * buffers are shared, i.e. their contents are garbage and nothing is
 * validated): inside ck_algorithm_call, charge dense copies and reductions
 * but do not perform them. The simulated time is the charge, so it does not
 * change; the host skips what was most of a 16 MiB point's CPU time (issue
 * #21). Only there: a harness calling algorithms directly (collkit-bench's
 * agreements on times and errors) needs its results. Read once. */
static int skip_data(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("COLLKIT_SIM_NO_DATA");
        v = e != NULL && strcmp(e, "1") == 0;
    }
    return v && batching;
}
#else
#define skip_data() 0
#define CK_SIM_CHARGE(count, dt, fpb) ((void)0)
#endif

int ck_type_named_dense(MPI_Datatype dt, MPI_Aint *size)
{
    /* Compared by handle (a constant of mpi.h in every MPI): no library call. */
#ifdef CK_MPI_STANDIN
    static const struct { MPI_Datatype dt; MPI_Aint size; } named[] = {
        {MPI_INT8_T, 1}, {MPI_INT32_T, 4}, {MPI_INT64_T, 8}, {MPI_FLOAT, 4}, {MPI_DOUBLE, 8}};
#else
    static const struct { MPI_Datatype dt; MPI_Aint size; } named[] = {
        {MPI_INT32_T, sizeof(int32_t)}, {MPI_DOUBLE, sizeof(double)}, {MPI_INT, sizeof(int)},
        {MPI_FLOAT, sizeof(float)}, {MPI_INT64_T, sizeof(int64_t)}, {MPI_INT8_T, sizeof(int8_t)},
        {MPI_BYTE, 1}, {MPI_CHAR, sizeof(char)}, {MPI_LONG, sizeof(long)},
        {MPI_LONG_LONG, sizeof(long long)}, {MPI_UNSIGNED, sizeof(unsigned)},
        {MPI_UNSIGNED_LONG, sizeof(unsigned long)}, {MPI_UNSIGNED_CHAR, sizeof(unsigned char)},
        {MPI_SHORT, sizeof(short)}, {MPI_INT16_T, sizeof(int16_t)}, {MPI_UINT8_T, sizeof(uint8_t)},
        {MPI_UINT16_T, sizeof(uint16_t)}, {MPI_UINT32_T, sizeof(uint32_t)}, {MPI_UINT64_T, sizeof(uint64_t)}};
#endif
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (dt == named[i].dt) {
            *size = named[i].size;
            return 1;
        }
    return 0;
}

int ck_type_extent(MPI_Datatype dt, MPI_Aint *extent)
{
    if (ck_type_named_dense(dt, extent)) return MPI_SUCCESS;
    MPI_Aint lb;
    return MPI_Type_get_extent(dt, &lb, extent);
}

int ck_tmp_alloc(ck_tmp *t, size_t count, MPI_Datatype dt)
{
    MPI_Aint lb = 0, extent, true_lb = 0, true_extent;
    if (ck_type_named_dense(dt, &extent)) {
        true_extent = extent;
    } else {
        int rc = MPI_Type_get_extent(dt, &lb, &extent);
        if (rc != MPI_SUCCESS) return rc;
        rc = MPI_Type_get_true_extent(dt, &true_lb, &true_extent);
        if (rc != MPI_SUCCESS) return rc;
    }
    /* span of count elements: (count-1) strides plus one element's data */
    size_t bytes = count == 0 ? 1 : (size_t)(count - 1) * (size_t)extent + (size_t)true_extent;
    if (bytes == 0) bytes = 1;
    t->mem = malloc(bytes);
    if (t->mem == NULL) return MPI_ERR_NO_MEM;
    t->buf = (char *)t->mem - true_lb;
    return MPI_SUCCESS;
}

void ck_tmp_free(ck_tmp *t)
{
    free(t->mem);
    t->mem = NULL;
    t->buf = NULL;
}

/* A datatype whose bytes are one dense run can be copied with memcpy. */
static int is_dense(MPI_Datatype dt, MPI_Aint *extent)
{
    if (ck_type_named_dense(dt, extent)) return 1;
    MPI_Aint lb, true_lb, true_extent;
    int size;
    if (MPI_Type_get_extent(dt, &lb, extent) != MPI_SUCCESS) return 0;
    if (MPI_Type_get_true_extent(dt, &true_lb, &true_extent) != MPI_SUCCESS) return 0;
    if (MPI_Type_size(dt, &size) != MPI_SUCCESS) return 0;
    return lb == 0 && true_lb == 0 && true_extent == *extent && (MPI_Aint)size == *extent;
}

int ck_copy(const void *src, void *dst, size_t count, MPI_Datatype dt)
{
    if (count == 0 || src == dst) return MPI_SUCCESS;
    if (count > CK_MAX_COUNT) return MPI_ERR_COUNT;
    /* The tag first: under SimGrid the charge is the copy's simulated time. */
    CK_SPAN_BEGIN("copy");
    CK_SIM_CHARGE(count, dt, 0.5);
    int rc = MPI_SUCCESS;
    MPI_Aint extent;
    if (is_dense(dt, &extent)) {
        if (!skip_data()) memcpy(dst, src, count * (size_t)extent);
    } else {
        /* General datatypes: let MPI do the typed copy through a self message
         * (a message: the batched charges go first, as for any other). */
        ck_local_work_flush();
        rc = MPI_Sendrecv(src, (int)count, dt, 0, 0, dst, (int)count, dt, 0, 0, MPI_COMM_SELF,
                          MPI_STATUS_IGNORE);
    }
    CK_SPAN_END("copy");
    return rc;
}

int ck_reduce_local(const void *in, void *inout, size_t count, MPI_Datatype dt, MPI_Op op)
{
    if (count == 0) return MPI_SUCCESS;
    if (count > CK_MAX_COUNT) return MPI_ERR_COUNT;
    CK_SPAN_BEGIN("reduce");
    CK_SIM_CHARGE(count, dt, 1.0);
    int rc = skip_data() ? MPI_SUCCESS : MPI_Reduce_local(in, inout, (int)count, dt, op);
    CK_SPAN_END("reduce");
    return rc;
}

int ck_rotate(const void *src, void *dst, int shift, int nblocks, size_t count, MPI_Datatype dt)
{
    MPI_Aint ext;
    int rc = ck_type_extent(dt, &ext);
    const size_t head = (size_t)(nblocks - shift) * count;
    /* Two copies: blocks shift..n-1 to the front, then 0..shift-1 after them. */
    if (rc == MPI_SUCCESS) rc = ck_copy(ck_elem(src, (size_t)shift * count, ext), dst, head, dt);
    if (rc == MPI_SUCCESS)
        rc = ck_copy(src, ck_elem(dst, head, ext), (size_t)shift * count, dt);
    return rc;
}
