/* Blocks at scattered places in one message (scattered.h). */
#include "scattered.h"
#include "collkit/spans.h"

int ck_scattered_pays(int nb, size_t count, MPI_Datatype dt)
{
    int size;
    if (MPI_Type_size(dt, &size) != MPI_SUCCESS || size <= 0) return 0;
    return (double)nb * (double)count * (double)size >= (double)CK_SCATTERED_MIN_BYTES;
}

int ck_scattered_make(int nb, char *const *blocks, MPI_Aint *disp, size_t count, MPI_Datatype dt,
                      ck_scattered *out)
{
    out->base = NULL;
    out->count = 1;
    out->type = MPI_DATATYPE_NULL;
    out->made = 0;
    if (count > CK_MAX_COUNT || nb < 1) return MPI_ERR_COUNT;
    int rc = MPI_SUCCESS, low = 0;
    for (int i = 0; i < nb && rc == MPI_SUCCESS; i++) {
        rc = MPI_Get_address(blocks[i], &disp[i]);
        if (disp[i] < disp[low]) low = i;
    }
    if (rc != MPI_SUCCESS) return rc;
    const MPI_Aint origin = disp[low];
    for (int i = 0; i < nb; i++) disp[i] = MPI_Aint_diff(disp[i], origin);
    rc = MPI_Type_create_hindexed_block(nb, (int)count, disp, dt, &out->type);
    if (rc != MPI_SUCCESS) return rc;
    out->made = 1;
    rc = MPI_Type_commit(&out->type);
    if (rc != MPI_SUCCESS) {
        ck_scattered_free(out);
        return rc;
    }
    out->base = blocks[low];
    return MPI_SUCCESS;
}

int ck_scattered_run(void *start, size_t count, MPI_Datatype dt, ck_scattered *out)
{
    if (count > CK_MAX_COUNT) return MPI_ERR_COUNT;
    out->base = start;
    out->count = (int)count;
    out->type = dt;
    out->made = 0;
    return MPI_SUCCESS;
}

void ck_scattered_free(ck_scattered *s)
{
    if (s->made && s->type != MPI_DATATYPE_NULL) MPI_Type_free(&s->type);
    s->type = MPI_DATATYPE_NULL;
    s->made = 0;
    s->base = NULL;
}

int ck_sendrecv_scattered(const ck_scattered *send, int dst, const ck_scattered *recv, int src,
                          int tag, MPI_Comm comm)
{
    ck_local_work_flush();
    CK_SPAN_BEGIN("comm");
    int rc = MPI_Sendrecv(send->base, send->count, send->type, dst, tag, recv->base, recv->count, recv->type,
                          src, tag, comm, MPI_STATUS_IGNORE);
    CK_SPAN_END("comm");
    return rc;
}
