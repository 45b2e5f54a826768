/*
 * MPICH's algorithm CVARs name their values only in their description: one
 * line "name - what it does" a value, in value order (0, 1, ...). This reads
 * such a line, with no MPI call, for the preload (library_algs.c, from MPI_T)
 * and for `collkit-rules --cvar-values` (python/collkit/backends/mpich.py,
 * from `mpivars`), so that both name MPICH's algorithms alike.
 */
#ifndef COLLKIT_PRELOAD_CVAR_VALUES_H
#define COLLKIT_PRELOAD_CVAR_VALUES_H

#include <stddef.h>

/* Longest value name read (longer ones are not value lines). */
#define CKP_CVAR_NAME_MAX 47

/* Whether line[0..len) is a value line: a name of lower-case letters, digits
 * and '_' at the line's start, spaces, "- ", the text. Sets *name_len and
 * *text_at (where the text starts). */
int ckp_cvar_value_line(const char *line, size_t len, size_t *name_len, size_t *text_at);

#endif
