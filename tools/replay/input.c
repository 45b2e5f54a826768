/* Reading the replay input (format: python/collkit/program/replay_input.py).
 * Python checked it when writing; this parser still refuses anything it
 * cannot run, because a mismatch between ranks would hang the simulation. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input.h"

#define RP_FORMAT "collkit-replay"
#define RP_VERSION 1

static int fail(char *err, size_t len, const char *path, const char *what)
{
    snprintf(err, len, "%s: %s", path, what);
    return -1;
}

/* The ops a replay input names: those a spec measures (lib/core/ops.c). */
static int parse_op(const char *name, MPI_Op *op)
{
    const ck_op_desc *d = ck_op_find(name);
    if (d == NULL || !d->arithmetic) return -1;
    *op = ck_op_mpi(d);
    return 0;
}

/* "bcast 0 65536 int8 - 1 0 library": collective, comm index, bytes,
 * datatype, op ("-": none), root (-1: none), in place, choice. */
static int parse_class(FILE *f, const rp_input *in, rp_class *c)
{
    char coll[32], dtype[16], op[16], choice[64];
    unsigned long long bytes;
    if (fscanf(f, " %31s %d %llu %15s %15s %d %d %63s", coll, &c->comm, &bytes, dtype, op, &c->root,
               &c->in_place, choice) != 8)
        return -1;
    if (c->comm < 0 || c->comm >= RP_FIRST_SPLIT + in->ncomms) return -1;
    if (strcmp(coll, "barrier") == 0) {
        c->barrier = 1;
        c->alg = NULL;
        return strcmp(choice, "library") == 0 ? 0 : -1;
    }
    c->barrier = 0;
    if (ck_collective_parse(coll, &c->coll) != 0) return -1;
    const ck_datatype_desc *d = ck_datatype_find(dtype);
    if (d == NULL || bytes % d->size != 0) return -1;
    c->count = (size_t)(bytes / d->size);
    c->dt = ck_datatype_mpi(d);
    c->op = MPI_OP_NULL;
    if (ck_collective_has_op(c->coll) && parse_op(op, &c->op) != 0) return -1;
    if (!ck_collective_has_root(c->coll)) c->root = 0;
    else if (c->root < 0) return -1;
    c->alg = NULL;
    if (strcmp(choice, "library") != 0 && (c->alg = ck_algorithm_find(c->coll, choice)) == NULL) return -1;
    return 0;
}

static int read_header(const char *path, rp_input *in, char *err, size_t len)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) return fail(err, len, path, "cannot open the replay input");
    char magic[32];
    int version, rc = -1;
    const char *why = "not a replay input of this version";
    if (fscanf(f, " %31s %d", magic, &version) != 2 || strcmp(magic, RP_FORMAT) != 0 || version != RP_VERSION)
        goto out;
    why = "bad 'ranks' or 'comms' line";
    if (fscanf(f, " ranks %d comms %d", &in->ranks, &in->ncomms) != 2 || in->ranks < 1 || in->ncomms < 0)
        goto out;
    if (in->ncomms > 0 && (in->comms = calloc((size_t)in->ncomms, sizeof *in->comms)) == NULL) {
        why = "out of memory";
        goto out;
    }
    why = "bad 'comm' line";
    for (int i = 0; i < in->ncomms; i++) {
        rp_comm *c = &in->comms[i];
        if (fscanf(f, " comm %d", &c->size) != 1 || c->size < 1 || c->size > in->ranks) goto out;
        if ((c->members = malloc((size_t)c->size * sizeof *c->members)) == NULL) {
            why = "out of memory";
            goto out;
        }
        for (int j = 0; j < c->size; j++)
            if (fscanf(f, " %d", &c->members[j]) != 1 || c->members[j] < 0 || c->members[j] >= in->ranks)
                goto out;
    }
    why = "bad 'classes' line";
    if (fscanf(f, " classes %d", &in->nclasses) != 1 || in->nclasses < 0) goto out;
    if (in->nclasses > 0 && (in->classes = calloc((size_t)in->nclasses, sizeof *in->classes)) == NULL) {
        why = "out of memory";
        goto out;
    }
    why = "bad class line (collective, comm, bytes, datatype, op, root, in place, choice)";
    for (int i = 0; i < in->nclasses; i++) {
        int n = -1; /* a literal alone cannot tell a match from a mismatch: %n can */
        if (fscanf(f, " class%n", &n) == EOF || n < 0 || parse_class(f, in, &in->classes[i]) != 0) goto out;
    }
    rc = 0;
out:
    fclose(f);
    return rc == 0 ? 0 : fail(err, len, path, why);
}

static int read_calls(const char *path, rp_input *in, char *err, size_t len)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) return fail(err, len, path, "cannot open this rank's calls");
    int rc = -1;
    const char *why = "bad 'calls' line";
    if (fscanf(f, " calls %ld", &in->ncalls) != 1 || in->ncalls < 0) goto out;
    if (in->ncalls > 0 && (in->calls = malloc((size_t)in->ncalls * sizeof *in->calls)) == NULL) {
        why = "out of memory";
        goto out;
    }
    why = "bad call line (class index, gap in seconds)";
    for (long i = 0; i < in->ncalls; i++) {
        rp_call *c = &in->calls[i];
        if (fscanf(f, " %d %lf", &c->cls, &c->gap_s) != 2 || c->cls < 0 || c->cls >= in->nclasses ||
            !(c->gap_s >= 0.0))
            goto out;
    }
    rc = 0;
out:
    fclose(f);
    return rc == 0 ? 0 : fail(err, len, path, why);
}

int rp_input_read(const char *dir, int rank, rp_input *in, char *err, size_t len)
{
    memset(in, 0, sizeof *in);
    char path[4096];
    if (snprintf(path, sizeof path, "%s/replay.txt", dir) >= (int)sizeof path)
        return fail(err, len, dir, "path too long");
    if (read_header(path, in, err, len) != 0) {
        rp_input_free(in);
        return -1;
    }
    snprintf(path, sizeof path, "%s/rank-%d.txt", dir, rank);
    if (read_calls(path, in, err, len) != 0) {
        rp_input_free(in);
        return -1;
    }
    return 0;
}

void rp_input_free(rp_input *in)
{
    for (int i = 0; in->comms != NULL && i < in->ncomms; i++) free(in->comms[i].members);
    free(in->comms);
    free(in->classes);
    free(in->calls);
    memset(in, 0, sizeof *in);
}
