/* What happened: calls, bytes and time per collective and algorithm, and the
 * fallbacks with their reasons (stats.c), written by rank 0 at MPI_Finalize when
 * COLLKIT_REPORT is set (1: standard error; else a file path). Rank 0's own
 * calls: every rank makes the same choices, so its table stands for all. */
#include "ck_preload.h"

#include <stdio.h>
#include <string.h>

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
            double bytes, seconds;
            const long calls = ckp_stat_read((ck_collective)c, k, &bytes, &seconds);
            if (!calls) continue;
            const char *name = k == CKP_LIBRARY ? "library" : ckp_algs[c][k]->name;
            fprintf(f, "%-15s %-28s %10ld %14.0f %12.6f\n", ck_collective_name((ck_collective)c), name, calls,
                    bytes, seconds);
        }
    int any = 0;
    for (int c = 0; c < CK_NUM_COLLECTIVES; c++)
        for (int k = 0; k < CKP_MAX_ALGS; k++)
            for (int r = 0; r < CKP_NUM_REASONS; r++) {
                const long n = ckp_stat_fallbacks((ck_collective)c, k, (ckp_reason)r);
                if (!n) continue;
                if (!any) fprintf(f, "fallbacks to the library:\n%-15s %-28s %-20s %10s\n", "collective",
                                  "algorithm", "reason", "calls");
                any = 1;
                fprintf(f, "%-15s %-28s %-20s %10ld\n", ck_collective_name((ck_collective)c),
                        ckp_algs[c][k]->name, ckp_reason_name((ckp_reason)r), n);
            }
    if (!any) fprintf(f, "fallbacks to the library: none\n");
    ckp_autotune_report(f);
    if (f != stderr && fclose(f) != 0) return -1;
    return 0;
}
