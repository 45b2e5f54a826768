/* The autotuner's classes and candidates (autotune.c), for the files that
 * write them out (autotune_write.c). */
#ifndef COLLKIT_PRELOAD_AUTOTUNE_H
#define COLLKIT_PRELOAD_AUTOTUNE_H

#include "ck_preload.h"

enum { EXPLORING, PAUSED, SETTLED };

typedef struct {
    int col;          /* CKP_LIBRARY or an algorithm index */
    int alive;
    double *t;        /* the agreed working time of each of its exploration calls (working_rule.h) */
    size_t n, cap;
    int out_look;     /* the look that eliminated it (0: never) */
    double out_p;
} tune_cand;

typedef struct tune_class {
    /* the key */
    int coll;
    uint64_t comm;    /* the communicator's key (autotune.c, comm_key) */
    size_t bytes;
    int root, in_place;
    MPI_Datatype dt;
    MPI_Op op;
    /* what the rules and the report say of it */
    int p, world;
    int ncand;
    tune_cand *cand;
    int state, choice, from_rules;
    const char *why;
    long calls;          /* all of its calls so far */
    long explored;       /* its exploration calls */
    long stage;          /* calls per alive candidate in this stage */
    long in_stage;       /* calls made in this stage */
    int alive;           /* candidates in the race */
    int *order;          /* this stage's alive candidates */
    long offset;         /* where its rotation starts: a hash of its key's rank-equal values */
    double *pending;     /* this rank's arrival and exit of the stage's calls, in call order (pending_len) */
    int looks, max_looks;
    double alpha;        /* the race's family error rate (a continued race keeps its own) */
    int continued;       /* it continued a race state of COLLKIT_AUTOTUNE_FROM */
    long start_calls;    /* its calls before this run (a continued race's) */
    long stage_cap;      /* a continued race's most calls a candidate a stage (0: none) */
    long resume_at;      /* PAUSED: the call at which the next stage starts */
    double explore_s;    /* agreed working time of every exploration call */
    double wait_s;       /* and the rest of their time: waiting for the ranks they depend on */
    double paused_s;     /* calls run paused, at the choice's median: the class's time besides */
    double cost_s;       /* exploration's working time above the choice's median */
    double lost_s;       /* exploration's working time on candidates other than the choice */
    struct tune_class *next;    /* in its bucket */
    struct tune_class *created; /* in the order the classes were made: the rules' order */
} tune_class;

/* Every class, in the order the program first called it. */
tune_class *ckp_autotune_classes(void);

/* A class's datatype and op as race states name them (race_state.h): "-"
 * outside reductions, "derived" and "user" for what the key folds together. */
void ckp_autotune_class_names(const tune_class *k, char dt[CKP_RACE_NAME], char op[CKP_RACE_NAME]);

#endif
