/* The counts of what ran: calls, bytes and time per collective and column,
 * and the fallbacks with their reasons; read by the report (report.c) and
 * by tests through the exported counters. A leaf: it calls nothing of the
 * shim's but the hook of a part that holds counts back. */
#include "ck_preload.h"

typedef struct {
    long calls;
    double bytes;
    double seconds;
} cell;

static cell stats[CK_NUM_COLLECTIVES][CKP_MAX_ALGS + 1];
static long fallbacks[CK_NUM_COLLECTIVES][CKP_MAX_ALGS][CKP_NUM_REASONS];
void (*ckp_stats_pending)(void);

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

long ckp_stat_read(ck_collective c, int col, double *bytes, double *seconds)
{
    if (ckp_stats_pending) ckp_stats_pending();
    const cell *e = &stats[c][col];
    *bytes = e->bytes;
    *seconds = e->seconds;
    return e->calls;
}

long ckp_stat_fallbacks(ck_collective c, int alg, ckp_reason r)
{
    return fallbacks[c][alg][r];
}

long collkit_preload_calls(int coll, int alg)
{
    if (coll < 0 || coll >= CK_NUM_COLLECTIVES || alg < -1 || alg >= CKP_MAX_ALGS) return -1;
    double bytes, seconds;
    return ckp_stat_read((ck_collective)coll, alg < 0 ? CKP_LIBRARY : alg, &bytes, &seconds);
}

long collkit_preload_fallbacks(int coll, int reason)
{
    if (coll < 0 || coll >= CK_NUM_COLLECTIVES || reason < 0 || reason >= CKP_NUM_REASONS) return -1;
    long n = 0;
    for (int k = 0; k < CKP_MAX_ALGS; k++) n += fallbacks[coll][k][reason];
    return n;
}
