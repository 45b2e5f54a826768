/* COLLKIT_BENCH_TEST_SLOW_LAUNCH="FRACTION:MICROSECONDS:SEED[@COLLECTIVE/BACKEND:ALGORITHM]"
 * (test-only, every rank): a launch is slow with probability FRACTION, drawn from
 * SEED and the launch's points file (its text names the launch group and the round,
 * "# collkit repeat=K": the same draw for the same launch of a campaign, however
 * launches are numbered), so the draw is independent of how fast its algorithms
 * are and the same on every rank without a message; in a slow launch every timed
 * call of every point (with @...: of the matching points only) gets
 * MICROSECONDS added to its time. It stands for a machine that draws a state
 * per launch (issue #54): the launch-level statistics must not call it a
 * difference between algorithms, and must call it one when it is tied to an
 * algorithm (FRACTION 1 with @). Added, not waited, as the other test-only
 * slowdowns (a busy wait is preempted for tens of ms when oversubscribed). */
#include "slow_launch.h"

#include "ck_hash.h"

#include <collkit/collkit.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
    int slow;
    double seconds;
    char want[256]; /* "COLLECTIVE/BACKEND:ALGORITHM", "" for every point */
} launch;

/* The points file's bytes folded into h (unreadable: h unchanged). */
static uint64_t fnv1a_file(uint64_t h, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) return h;
    for (int c; (c = fgetc(f)) != EOF;) {
        const unsigned char byte = (unsigned char)c;
        h = ck_fnv1a(h, &byte, 1);
    }
    fclose(f);
    return h;
}

void slow_launch_begin(const char *points)
{
    memset(&launch, 0, sizeof launch);
    const char *v = getenv("COLLKIT_BENCH_TEST_SLOW_LAUNCH");
    if (v == NULL || *v == '\0' || points == NULL) return;
    char *end = NULL;
    double fraction = strtod(v, &end);
    if (end == v || *end != ':' || !(fraction >= 0.0 && fraction <= 1.0)) return;
    const char *p = end + 1;
    double us = strtod(p, &end);
    if (end == p || *end != ':' || !(us > 0.0 && us < 1e7)) return;
    p = end + 1;
    const char *at = strchr(p, '@');
    char seed[64];
    size_t n = at ? (size_t)(at - p) : strlen(p);
    if (n == 0 || n >= sizeof seed) return;
    memcpy(seed, p, n);
    seed[n] = '\0';
    if (at != NULL) {
        if (strlen(at + 1) == 0 || strlen(at + 1) >= sizeof launch.want) return;
        snprintf(launch.want, sizeof launch.want, "%s", at + 1);
    }
    uint64_t h = fnv1a_file(ck_fnv1a_str(CK_FNV1A_BASIS, seed), points);
    double u = (double)(h >> 11) / 9007199254740992.0; /* 53 bits: [0, 1) */
    launch.slow = u < fraction;
    launch.seconds = us * 1e-6;
}

double slow_launch_delay(const bench_point *pt)
{
    if (!launch.slow) return 0.0;
    if (launch.want[0] == '\0') return launch.seconds;
    char have[256];
    snprintf(have, sizeof have, "%s/%s:%s", ck_collective_name(pt->coll), backend_name(pt->backend),
             pt->algorithm);
    return strcmp(have, launch.want) == 0 ? launch.seconds : 0.0;
}
