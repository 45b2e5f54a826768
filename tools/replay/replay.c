/* collkit-replay DIR: a profiled program's collective calls, in order and with
 * the computation between them, on a SimGrid-simulated machine
 * (`collkit replay`, docs/application-loop.md "Replay").
 *
 * Every rank reads the classes and its own calls (input.c), rebuilds the
 * program's sub-communicators with one MPI_Comm_split per communicator (in
 * the input's order, the same on every rank), and then, per call, spends the
 * gap as simulated computation (sim.c) and runs the call: a libcollkit
 * algorithm through ck_algorithm_call where the input names one, else the
 * library's (SMPI's) own collective. Buffer contents do not matter (zeros,
 * or SMPI's shared block for large ones: sim.c): nothing is validated, only
 * time is of interest. Rank 0 writes DIR/result.txt:
 * per class the most calls and the most simulated time any rank spent in
 * it (the profile's time_max_s), and the span of the whole replay. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collkit/collkit.h"
#include "input.h"
#include "sim.h"

typedef struct {
    void *sbuf, *rbuf;
    size_t bytes;
} rp_buffers;

/* Buffers large enough for every class this rank calls (one pair, reused). */
static int buffers_for(const rp_input *in, const MPI_Comm *comms, rp_buffers *b)
{
    size_t need = 1;
    for (long i = 0; i < in->ncalls; i++) {
        const rp_class *c = &in->classes[in->calls[i].cls];
        if (c->barrier) continue;
        const ck_collective_desc *d = ck_collective_describe(c->coll);
        int p, r, esize;
        if (MPI_Comm_size(comms[c->comm], &p) != MPI_SUCCESS || MPI_Comm_rank(comms[c->comm], &r) != MPI_SUCCESS ||
            MPI_Type_size(c->dt, &esize) != MPI_SUCCESS)
            return MPI_ERR_OTHER;
        size_t s = ck_collective_send_elems(d, c->count, p, r, c->root, c->in_place);
        size_t rv = ck_collective_recv_elems(d, c->count, p, r, c->root, c->in_place);
        size_t res = ck_collective_result_elems(d, c->count, p, r, c->root);
        size_t e = s > rv ? s : rv;
        if (res > e) e = res;
        if (e * (size_t)esize > need) need = e * (size_t)esize;
    }
    b->bytes = need;
    b->sbuf = rp_buffer_alloc(need);
    b->rbuf = rp_buffer_alloc(need);
    if (b->sbuf == NULL || b->rbuf == NULL) {
        rp_buffer_free(b->sbuf, need);
        rp_buffer_free(b->rbuf, need);
        b->sbuf = b->rbuf = NULL;
        return MPI_ERR_NO_MEM;
    }
    return MPI_SUCCESS;
}

static int run_call(const rp_class *c, MPI_Comm comm, const rp_buffers *b)
{
    if (c->barrier) return MPI_Barrier(comm);
    const ck_collective_desc *d = ck_collective_describe(c->coll);
    int r;
    int rc = MPI_Comm_rank(comm, &r);
    if (rc != MPI_SUCCESS) return rc;
    const void *sbuf = b->sbuf;
    void *rbuf = b->rbuf;
    if (ck_collective_in_place_at(d, c->in_place, r, c->root)) {
        if (d->in_place == CK_IN_PLACE_SEND) sbuf = MPI_IN_PLACE;
        else if (d->in_place == CK_IN_PLACE_RECV) rbuf = MPI_IN_PLACE;
    }
    if (c->alg != NULL) return ck_algorithm_call(c->alg, sbuf, rbuf, c->count, c->dt, c->op, c->root, comm);
    return ck_library_call(c->coll, sbuf, rbuf, c->count, c->dt, c->op, c->root, comm);
}

/* The program's communicators: world, self, then one split per listed one;
 * a rank outside a communicator holds MPI_COMM_NULL there. */
static int build_comms(const rp_input *in, int rank, MPI_Comm *comms)
{
    comms[0] = MPI_COMM_WORLD;
    comms[1] = MPI_COMM_SELF;
    for (int i = 0; i < in->ncomms; i++) {
        int key = -1;
        for (int j = 0; j < in->comms[i].size; j++)
            if (in->comms[i].members[j] == rank) key = j;
        int rc = MPI_Comm_split(MPI_COMM_WORLD, key >= 0 ? 0 : MPI_UNDEFINED, key, &comms[RP_FIRST_SPLIT + i]);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
}

static int write_result(const char *dir, const rp_input *in, const double *time_max, const long *calls_max,
                        double span)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/result.txt", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) return -1;
    fprintf(f, "span_s %.17g\n", span);
    for (int k = 0; k < in->nclasses; k++) fprintf(f, "class %d %ld %.17g\n", k, calls_max[k], time_max[k]);
    /* rename only a complete file: Python never reads half a result */
    if (fclose(f) != 0 || rename(tmp, path) != 0) return -1;
    return 0;
}

static int replay(const char *dir, const rp_input *in, int rank)
{
    int rc = MPI_SUCCESS, ncomms = RP_FIRST_SPLIT + in->ncomms;
    MPI_Comm *comms = calloc((size_t)ncomms, sizeof *comms);
    double *time_sum = calloc((size_t)in->nclasses + 1, sizeof *time_sum);
    double *time_max = calloc((size_t)in->nclasses + 1, sizeof *time_max);
    long *calls = calloc((size_t)in->nclasses + 1, sizeof *calls);
    long *calls_max = calloc((size_t)in->nclasses + 1, sizeof *calls_max);
    rp_buffers b = {0};
    if (comms == NULL || time_sum == NULL || time_max == NULL || calls == NULL || calls_max == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    for (int i = 0; i < ncomms; i++) comms[i] = MPI_COMM_NULL;
    if ((rc = build_comms(in, rank, comms)) != MPI_SUCCESS) goto out;
    for (long i = 0; i < in->ncalls; i++)
        if (comms[in->classes[in->calls[i].cls].comm] == MPI_COMM_NULL) {
            fprintf(stderr, "collkit-replay: rank %d: call %ld is on a communicator it is not in\n", rank, i);
            rc = MPI_ERR_COMM;
            goto out;
        }
    if ((rc = buffers_for(in, comms, &b)) != MPI_SUCCESS) goto out;
    /* Everything above is set-up: the replay starts together on every rank. */
    if ((rc = MPI_Barrier(MPI_COMM_WORLD)) != MPI_SUCCESS) goto out;
    const double start = MPI_Wtime();
    for (long i = 0; i < in->ncalls; i++) {
        const rp_call *call = &in->calls[i];
        const rp_class *c = &in->classes[call->cls];
        rp_compute(call->gap_s);
        double t0 = MPI_Wtime();
        if ((rc = run_call(c, comms[c->comm], &b)) != MPI_SUCCESS) {
            fprintf(stderr, "collkit-replay: rank %d: call %ld (class %d) failed with MPI error %d\n", rank, i,
                    call->cls, rc);
            goto out;
        }
        time_sum[call->cls] += MPI_Wtime() - t0;
        calls[call->cls]++;
    }
    double span = MPI_Wtime() - start, span_max = 0.0;
    const int n = in->nclasses + 1; /* + 1: never a zero-length buffer */
    if ((rc = MPI_Reduce(time_sum, time_max, n, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD)) != MPI_SUCCESS ||
        (rc = MPI_Reduce(calls, calls_max, n, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD)) != MPI_SUCCESS ||
        (rc = MPI_Reduce(&span, &span_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD)) != MPI_SUCCESS)
        goto out;
    if (rank == 0 && write_result(dir, in, time_max, calls_max, span_max) != 0) {
        fprintf(stderr, "collkit-replay: cannot write %s/result.txt\n", dir);
        rc = MPI_ERR_IO;
    }
out:
    for (int i = RP_FIRST_SPLIT; comms != NULL && i < ncomms; i++)
        if (comms[i] != MPI_COMM_NULL) MPI_Comm_free(&comms[i]);
    free(comms);
    free(time_sum);
    free(time_max);
    free(calls);
    free(calls_max);
    rp_buffer_free(b.sbuf, b.bytes);
    rp_buffer_free(b.rbuf, b.bytes);
    return rc;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 2) {
        if (rank == 0) fprintf(stderr, "usage: collkit-replay DIR (written by `collkit replay`)\n");
        MPI_Finalize();
        return 2;
    }
    rp_input in;
    char err[4400];
    int ok = rp_input_read(argv[1], rank, &in, err, sizeof err) == 0;
    if (ok && in.ranks != size) {
        snprintf(err, sizeof err, "%s/replay.txt is for %d ranks, not %d", argv[1], in.ranks, size);
        rp_input_free(&in);
        ok = 0;
    }
    /* every rank must know whether all can go on, or a replay would hang */
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok) fprintf(stderr, "collkit-replay: rank %d: %s\n", rank, err);
    int rc = all_ok ? replay(argv[1], &in, rank) : MPI_ERR_OTHER;
    if (ok) rp_input_free(&in);
    MPI_Finalize();
    return rc == MPI_SUCCESS ? 0 : 1;
}
