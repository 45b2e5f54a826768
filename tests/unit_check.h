/* The unit tests' one check macro: every failed condition is counted and
 * named with its file and line, and each test program ends by printing
 * "N passed, M failed" from these counters. */
#ifndef CK_UNIT_CHECK_H
#define CK_UNIT_CHECK_H

#include <stdio.h>

static int passed, failed;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (cond) passed++;                                                          \
        else {                                                                       \
            failed++;                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

#endif
