/*
 * The autotuner's defaults and bounds (docs/preload.md, "Autotune"): the one
 * home of these numbers for the shim (autotune_config.c) and for `collkit
 * preload --autotune` (python/collkit/apply/autotune_settings.py reads the
 * `#define NAME VALUE` lines below: keep one a line, a number or a string).
 */
#ifndef COLLKIT_PRELOAD_AUTOTUNE_SETTINGS_H
#define COLLKIT_PRELOAD_AUTOTUNE_SETTINGS_H

#define CKP_AUTOTUNE_OUT "collkit-autotune.rules"
/* Exploration's cost, at most this percentage of a class's time: (0, MAX]. */
#define CKP_AUTOTUNE_BUDGET_PCT 5.0
#define CKP_AUTOTUNE_BUDGET_PCT_MAX 100.0
/* Exploration calls a class, at most: [1, CALLS_MAX]. */
#define CKP_AUTOTUNE_CALLS 1000
/* A class explores from its call after this many: [0, CALLS_MAX]. */
#define CKP_AUTOTUNE_AFTER 32
#define CKP_AUTOTUNE_CALLS_MAX 10000000
/* The chance of eliminating a class's fastest candidate, at most: (0, MAX]. */
#define CKP_AUTOTUNE_ALPHA 0.05
#define CKP_AUTOTUNE_ALPHA_MAX 0.5

#endif
