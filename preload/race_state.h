/* A class's race, carried from one autotuning run to the next (issue #50;
 * docs/preload.md, "Evidence across runs"): autotune_write.c writes one for
 * each class not yet decided into the rules file, and COLLKIT_AUTOTUNE_FROM
 * continues it. The lines, read here without an MPI call, so that the
 * preload (rules.c) and collkit-rules (Python) accept and refuse alike:
 *
 *   world_size = N                       the rank count the states were learned at
 *   race ID COLLECTIVE GROUP BYTES ROOT DATATYPE OP IN_PLACE CALLS EXPLORED
 *        LOOKS MAX_LOOKS ALPHA RESUME_AT WORKING_S WAITING_S PAUSED_S RUN_CALLS
 *   race_candidate ID NAME OUT_LOOK OUT_P N
 *   race_samples ID NAME T1 T2 ...       N working times (s) in all, over as many lines as it takes
 *
 * GROUP is the class's communicator key (16 hex digits, autotune.c); ROOT -1
 * where the collective has none; DATATYPE and OP a reduction's names (a
 * derived datatype "derived", a user op "user"), else "-"; OUT_LOOK the look
 * that eliminated the candidate (0: still in the race), OUT_P its p-value;
 * RUN_CALLS the class's calls in the run that wrote the state (of CALLS in
 * all), which caps the continued race's stages (autotune.c). */
#ifndef COLLKIT_PRELOAD_RACE_STATE_H
#define COLLKIT_PRELOAD_RACE_STATE_H

#include <collkit/collkit.h>
#include <stddef.h>
#include <stdint.h>

#define CKP_RACE_NAME 64
#define CKP_RACE_MAX_CANDIDATES 64
/* Samples of one candidate, at most: the exploration cap (autotune_settings.h's largest) */
#define CKP_RACE_MAX_SAMPLES 10000000L

typedef struct {
    char name[CKP_RACE_NAME];
    int out_look;
    double out_p;
    size_t n, have;
    double *t;
} ckp_race_cand;

typedef struct {
    long id;
    int lineno;
    ck_collective coll;
    uint64_t group;
    size_t bytes;
    int root, in_place, looks, max_looks;
    char datatype[CKP_RACE_NAME], op[CKP_RACE_NAME];
    long calls, explored, resume_at, run_calls;
    double alpha, working_s, waiting_s, paused_s;
    int ncand;
    ckp_race_cand cand[CKP_RACE_MAX_CANDIDATES];
    int used; /* the autotuner continued it */
} ckp_race;

typedef struct {
    ckp_race *race;
    size_t n, cap;
    long world_size; /* 0: no world_size line */
    int world_lineno;
} ckp_races;

/* Whether a rules line (comment already cut) is one of these. */
int ckp_race_is_line(const char *line);
/* One line into rs: 0, or -1 with one line in err ("COLLKIT_RULES: PATH:LINE: what; fix: ..."). */
int ckp_race_line(ckp_races *rs, char *line, int lineno, const char *path, char *err, size_t errlen);
/* After the last line: every candidate has its N samples. 0, or -1 with one line. */
int ckp_race_done(const ckp_races *rs, const char *path, char *err, size_t errlen);
void ckp_races_free(ckp_races *rs);

#endif
