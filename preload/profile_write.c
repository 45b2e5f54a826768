/* The profile's files (docs/application-loop.md, "Profile"): per rank,
 *   DIR/rank-<world rank>.start.json  after MPI_Init: who ran (rank, size,
 *                                     host, library), so a run that dies
 *                                     before MPI_Finalize is still told apart
 *                                     from one that never reached MPI;
 *   DIR/rank-<world rank>.json        at MPI_Finalize: the same and the
 *                                     span, the clock, the communicators,
 *                                     the classes, the trace and the sample.
 * Both carry the format's version (2) and the run's id, one for all ranks.
 * Each is written to a temporary name and renamed, so a file with its final
 * name is always whole. collkit.program.rank_files reads them. */
#include "ck_preload.h"
#include "profile.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define RANK_FORMAT "collkit-profile-rank"
#define RANK_VERSION 2

static const char *profiled_names[CKP_P_NUM - CK_NUM_COLLECTIVES] = {
    "barrier", "allgatherv", "alltoallv", "gatherv", "scatterv", "reduce_scatter_v", "scan", "exscan",
};

static const char *coll_name(int c)
{
    return c < CK_NUM_COLLECTIVES ? ck_collective_name((ck_collective)c) : profiled_names[c - CK_NUM_COLLECTIVES];
}

/* ---------------------------------------------------------------- JSON */

static void json_name_or_null(FILE *f, const char *s)
{
    if (s) ckp_json_string(f, s);
    else fputs("null", f);
}

static void header(FILE *f, const ckp_profile_state *s, const char *stage)
{
    int rank = 0, size = 0, len = 0;
    char host[MPI_MAX_PROCESSOR_NAME + 1] = "", version[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "";
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    if (PMPI_Get_processor_name(host, &len) != MPI_SUCCESS) strcpy(host, "?");
    if (PMPI_Get_library_version(version, &len) != MPI_SUCCESS) version[0] = '\0';
    /* Libraries end it with newlines and spaces; trimmed so runs compare equal. */
    for (size_t n = strlen(version); n > 0 && (version[n - 1] == '\n' || version[n - 1] == ' '); n--)
        version[n - 1] = '\0';
    fprintf(f, "{\"format\": \"%s\", \"version\": %d, \"run_id\": \"%016" PRIx64 "\", \"stage\": \"%s\", "
               "\"rank\": %d, \"size\": %d, \"host\": ",
            RANK_FORMAT, RANK_VERSION, s->clock.run_id, stage, rank, size);
    ckp_json_string(f, host);
    fputs(", \"library_version\": ", f);
    ckp_json_string(f, version);
    fprintf(f, ", \"pid\": %ld", (long)getpid());
}

static void classes(FILE *f, const ckp_profile_state *s)
{
    fputs(", \"classes\": [", f);
    for (size_t n = 0; n < s->nclasses; n++) {
        const ckp_class *e = &s->slots[s->order[n]];
        fputs(n ? ",\n  {" : "\n  {", f);
        char label[48];
        ckp_profile_label(label, sizeof label, e->comm_kind, e->comm_leader, e->comm_size);
        fprintf(f, "\"collective\": \"%s\", \"comm\": \"%s\"", coll_name(e->coll), label);
        fprintf(f, ", \"comm_size\": %d, \"bytes\": %zu, \"datatype\": ", e->comm_size, e->bytes);
        ckp_json_string(f, e->datatype);
        fputs(", \"dtype\": ", f);
        json_name_or_null(f, e->dtype);
        fputs(", \"op\": ", f);
        json_name_or_null(f, e->op_name);
        if (e->root >= 0) fprintf(f, ", \"root\": %d", e->root);
        else fputs(", \"root\": null", f);
        fprintf(f, ", \"in_place\": %s, \"calls\": %ld, \"time_s\": %.9e}", e->in_place ? "true" : "false",
                e->calls, (double)e->ticks * s->tick_s);
    }
    fputs("]", f);
}

void ckp_profile_label(char *out, size_t len, int kind, int leader, int size)
{
    switch (kind) {
    case CKP_COMM_WORLD: snprintf(out, len, "world"); break;
    case CKP_COMM_SELF: snprintf(out, len, "self"); break;
    case CKP_COMM_INTER: snprintf(out, len, "inter"); break;
    default: snprintf(out, len, "c%dx%d", leader, size); break;
    }
}

static void comms(FILE *f, const ckp_profile_state *s)
{
    fputs(", \"comms\": [", f);
    for (size_t i = 0; i < s->ncomms; i++) {
        const ckp_comm_info *c = &s->comms[i];
        char label[48];
        ckp_profile_label(label, sizeof label, c->kind, c->leader, c->size);
        fprintf(f, "%s{\"label\": \"%s\", \"instance\": %" PRIu32 ", \"rank\": %d}", i ? ",\n  " : "\n  ", label,
                c->instance, c->rank);
    }
    fputs("]", f);
}

/* The clock's numbers; the reader maps local CLOCK_MONOTONIC t to rank 0's
 * as t - offset(t) (clock.c). Without a measurement at MPI_Finalize its
 * pair is null. */
static void clock_json(FILE *f, const ckp_profile_state *s)
{
    const ckp_clock *c = &s->clock;
    fprintf(f, ", \"clock\": {\"mono_zero_s\": %.9f, \"node\": %d, \"method\": \"%s\", \"init_s\": %.9f, "
               "\"offset_init_s\": %.9e, ",
            s->mono_zero, c->node_leader, ckp_clock_method_name(c->method), c->init_s, c->offset_init_s);
    if (c->measured_final) fprintf(f, "\"final_s\": %.9f, \"offset_final_s\": %.9e, ", c->final_s, c->offset_final_s);
    else fputs("\"final_s\": null, \"offset_final_s\": null, ", f);
    fprintf(f, "\"error_s\": %.9e}", c->error_s);
}

/* Rows [class, start_s, duration_s, comm, seq], four a line. */
static void rows(FILE *f, const ckp_profile_state *s, const ckp_trace_call *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s[%" PRIu32 ", %.9f, %.6e, %" PRIu32 ", %" PRIu64 "]", i ? (i % 4 ? ", " : ",\n  ") : "\n  ",
                ckp_row_cls(&t[i]), (double)t[i].start * s->tick_s, (double)t[i].ticks * s->tick_s, t[i].comm,
                ckp_row_seq(&t[i]));
}

static void trace(FILE *f, const ckp_profile_state *s)
{
    if (!s->trace_cap) {
        fputs(", \"trace\": null", f);
        return;
    }
    fprintf(f, ", \"trace\": {\"max_calls\": %zu, \"dropped\": %ld, \"calls\": [", s->trace_cap,
            s->dropped);
    rows(f, s, s->trace, s->ntrace);
    fputs("]}", f);
}

static void sample(FILE *f, const ckp_profile_state *s)
{
    fprintf(f, ", \"sample\": {\"stride\": %" PRIu64 ", \"max_calls\": %d, \"calls\": [", s->stride,
            CKP_SAMPLE_CALLS);
    rows(f, s, s->sample, s->nsample);
    fputs("]}", f);
}

/* Written whole under a temporary name, then renamed: never half a file
 * under the final name. A failure is said on standard error; the program
 * goes on (collkit profile then finds the file missing). */
static void write_file(const ckp_profile_state *s, const char *stage, const char *suffix, int final)
{
    int rank = 0;
    char path[sizeof s->dir + 64], tmp[sizeof s->dir + 64];
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    snprintf(path, sizeof path, "%s/rank-%d%s", s->dir, rank, suffix);
    snprintf(tmp, sizeof tmp, "%s/.rank-%d%s.tmp", s->dir, rank, suffix);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "collkit-preload: COLLKIT_PROFILE: cannot write %s; the profile lacks rank %d\n", tmp, rank);
        return;
    }
    header(f, s, stage);
    if (final) {
        fprintf(f, ", \"span_s\": %.9f, \"unclassified\": {\"calls\": %ld, \"time_s\": %.9e}", s->span,
                s->unclassified_calls, (double)s->unclassified_ticks * s->tick_s);
        clock_json(f, s);
        comms(f, s);
        classes(f, s);
        trace(f, s);
        sample(f, s);
        if (ckp_tune_cfg.on && rank == 0) { /* the same agreed decisions on every rank: rank 0's stand for all */
            fputs(", \"autotune\": ", f);
            ckp_autotune_json(f);
        }
    }
    fputs("}\n", f);
    int bad = ferror(f);
    if (fclose(f) != 0) bad = 1;
    if (bad || rename(tmp, path) != 0) {
        fprintf(stderr, "collkit-preload: COLLKIT_PROFILE: cannot write %s; the profile lacks rank %d\n", path, rank);
        unlink(tmp);
    }
}

void ckp_profile_write_start(const ckp_profile_state *s)
{
    write_file(s, "start", ".start.json", 0);
}

void ckp_profile_write_final(const ckp_profile_state *s)
{
    write_file(s, "final", ".json", 1);
}
