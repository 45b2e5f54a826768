/*
 * The collkit rules format, read line by line (docs/preload.md): the one
 * grammar the preload (rules.c, at MPI_Init) and `collkit-rules` (the reader
 * Python's predict, trial and replay ask: tools/rules_check.c) share. It calls
 * no MPI function, so a tool runs it without MPI_Init; what only a running
 * library can answer (library:NAME, the mpi_library line) is the caller's.
 */
#ifndef COLLKIT_PRELOAD_RULES_GRAMMAR_H
#define COLLKIT_PRELOAD_RULES_GRAMMAR_H

#include <collkit/collkit.h>
#include <stddef.h>

typedef enum {
    CKP_RULES_RULE,    /* COLLECTIVE RANKS BYTES CHOICE */
    CKP_RULES_SETTING, /* allow_fp_rank_variant = true|false */
    CKP_RULES_LIBRARY, /* mpi_library = TEXT: the library the autotuner learned on */
    CKP_RULES_WORLD_SIZE, /* world_size = N: the rank count the autotuner's race states were learned at */
    CKP_RULES_RACE,    /* race, race_candidate, race_samples: a class's race state (race_state.h) */
} ckp_rules_kind;

typedef struct {
    ckp_rules_kind kind;
    int lineno;
    ck_collective coll;     /* a rule's: */
    int pmin, pmax;         /* inclusive; RANKS "*" is 1..INT32_MAX */
    size_t bmin, bmax;      /* inclusive */
    const char *choice;     /* as written: "library", "library:NAME" or an algorithm name */
    int allow_fp_rank_variant; /* a setting's value */
    const char *library;    /* a library line's TEXT, trimmed */
    long world_size;        /* a world_size line's N */
    char *race;             /* a race line, comment cut, for ckp_race_line (which splits it in place) */
} ckp_rules_line;

/* What a reader does with one line: 0, or -1 with one line in err. */
typedef int (*ckp_rules_take)(const ckp_rules_line *line, void *ctx, const char *path, char *err, size_t errlen);

/* Reads the file at `path`, calling take for each rule, setting and library
 * line in order; blank and comment lines are skipped. 0, or -1 with one line
 * (COLLKIT_RULES: FILE:LINE: what; fix: ...) in err at the first bad line. */
int ckp_rules_read(const char *path, ckp_rules_take take, void *ctx, char *err, size_t errlen);

/* The message for a choice that names no algorithm of the collective. */
void ckp_rules_unknown_choice(const ckp_rules_line *line, const char *path, char *err, size_t errlen);

#endif
