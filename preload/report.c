/* What happened: calls, bytes and time per collective and algorithm, and the
 * fallbacks with their reasons, written by rank 0 at MPI_Finalize when
 * COLLKIT_REPORT is set (1: standard error; else a file path). Rank 0's own
 * calls: every rank makes the same choices, so its table stands for all. */
#include "ck_preload.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    long calls;
    double bytes;
    double seconds;
} cell;

static cell stats[CK_NUM_COLLECTIVES][CKP_MAX_ALGS + 1];
static long fallbacks[CK_NUM_COLLECTIVES][CKP_MAX_ALGS][CKP_NUM_REASONS];

void ckp_stat_call(ck_collective c, int col, size_t bytes, double seconds)
{
    cell *e = &stats[c][col];
    e->calls++;
    e->bytes += (double)bytes;
    e->seconds += seconds;
}

void ckp_stat_calls(ck_collective c, int col, long n, size_t bytes)
{
    cell *e = &stats[c][col];
    e->calls += n;
    e->bytes += (double)n * (double)bytes;
}

void ckp_stat_fallback(ck_collective c, int alg, ckp_reason r)
{
    fallbacks[c][alg][r]++;
}

long collkit_preload_calls(int coll, int alg)
{
    if (coll < 0 || coll >= CK_NUM_COLLECTIVES || alg < -1 || alg >= CKP_MAX_ALGS) return -1;
    ckp_settled_count();
    return stats[coll][alg < 0 ? CKP_LIBRARY : alg].calls;
}

long collkit_preload_fallbacks(int coll, int reason)
{
    if (coll < 0 || coll >= CK_NUM_COLLECTIVES || reason < 0 || reason >= CKP_NUM_REASONS) return -1;
    long n = 0;
    for (int k = 0; k < CKP_MAX_ALGS; k++) n += fallbacks[coll][k][reason];
    return n;
}

int ckp_report_write(void)
{
    FILE *f = stderr;
    if (ckp_cfg.report_path[0]) {
        f = fopen(ckp_cfg.report_path, "w");
        if (!f) {
            fprintf(stderr, "collkit-preload: COLLKIT_REPORT: cannot write %s; fix: a writable path or 1\n",
                    ckp_cfg.report_path);
            return -1;
        }
    }
    fprintf(f, "collkit-preload report (rank 0)\n");
    fprintf(f, "%-15s %-28s %10s %14s %12s\n", "collective", "algorithm", "calls", "bytes", "seconds");
    for (int c = 0; c < CK_NUM_COLLECTIVES; c++)
        for (int k = 0; k <= CKP_MAX_ALGS; k++) {
            const cell *e = &stats[c][k];
            if (!e->calls) continue;
            const char *name = k == CKP_LIBRARY ? "library" : ckp_algs[c][k]->name;
            fprintf(f, "%-15s %-28s %10ld %14.0f %12.6f\n", ck_collective_name((ck_collective)c), name,
                    e->calls, e->bytes, e->seconds);
        }
    int any = 0;
    for (int c = 0; c < CK_NUM_COLLECTIVES; c++)
        for (int k = 0; k < CKP_MAX_ALGS; k++)
            for (int r = 0; r < CKP_NUM_REASONS; r++) {
                if (!fallbacks[c][k][r]) continue;
                if (!any) fprintf(f, "fallbacks to the library:\n%-15s %-28s %-20s %10s\n", "collective",
                                  "algorithm", "reason", "calls");
                any = 1;
                fprintf(f, "%-15s %-28s %-20s %10ld\n", ck_collective_name((ck_collective)c),
                        ckp_algs[c][k]->name, ckp_reason_name((ckp_reason)r), fallbacks[c][k][r]);
            }
    if (!any) fprintf(f, "fallbacks to the library: none\n");
    ckp_autotune_report(f);
    if (f != stderr && fclose(f) != 0) return -1;
    return 0;
}
