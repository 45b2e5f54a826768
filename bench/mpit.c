/* MPI_T control-variable readback. */
#include "mpit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SMPI_H
/* SimGrid's SMPI (3.32) has no MPI_T interface at all: its collective
 * algorithms are chosen by smpirun's --cfg=smpi/<coll>:NAME, which collkit
 * records in the campaign metadata. A readback says so instead of guessing,
 * and a setting fails its point with the reason. */
int mpit_open(mpit_session *s)
{
    s->open = 0;
    return -1;
}

void mpit_close(mpit_session *s) { s->open = 0; }

void mpit_read(const mpit_session *s, const char *name, MPI_Comm comm, char *out, size_t outlen)
{
    (void)s, (void)name, (void)comm;
    snprintf(out, outlen, "%s", MPIT_UNSUPPORTED);
}

int mpit_set(const mpit_session *s, const char *name, const char *value, mpit_saved *saved, char *err,
             size_t errlen)
{
    (void)s, (void)value;
    memset(saved, 0, sizeof *saved);
    snprintf(err, errlen,
             "cannot set %s: SimGrid SMPI has no MPI_T interface (its algorithms are chosen with "
             "smpirun --cfg=smpi/<collective>:NAME)",
             name);
    return -1;
}

void mpit_restore(const mpit_session *s, const mpit_saved *saved) { (void)s, (void)saved; }

#else /* a real MPI library */

int mpit_open(mpit_session *s)
{
    int provided;
    s->open = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS;
    return s->open ? 0 : -1;
}

void mpit_close(mpit_session *s)
{
    if (s->open) MPI_T_finalize();
    s->open = 0;
}

static void set(char *out, size_t outlen, const char *s) { snprintf(out, outlen, "%s", s); }

/* 0 with the name of the enumeration item of value v, or -1. */
static int enum_name(MPI_T_enum et, long long v, char *name, int namelen)
{
    int num, len = namelen;
    if (MPI_T_enum_get_info(et, &num, name, &len) != MPI_SUCCESS) return -1;
    for (int i = 0; i < num; i++) {
        int value;
        len = namelen;
        if (MPI_T_enum_get_item(et, i, &value, name, &len) != MPI_SUCCESS) return -1;
        if (value == v) return 0;
    }
    return -1;
}

/* A choice line of an MPICH description: "name<blanks>- text". Returns the
 * name's length, or 0 when the line has another shape. */
static size_t choice_line(const char *line, size_t len)
{
    size_t w = 0;
    while (w < len && line[w] != ' ' && line[w] != '\t') w++;
    size_t d = w;
    while (d < len && (line[d] == ' ' || line[d] == '\t')) d++;
    return (w > 0 && d > w && d < len && line[d] == '-') ? w : 0;
}

/* MPICH exposes its enumeration CVARs (MPIR_CVAR_<COLL>_INTRA_ALGORITHM, ...)
 * as plain MPI_INT without an MPI_T enumeration. Their description ends with
 * the choices, one "name - text" line each, in value order (the order MPICH
 * generates the enumeration from; checked against MPICH 5.0.2, where
 * allreduce's ring is 8 and the fallback policy's error is 0). Name value v
 * from that trailing block of lines only; free text above it (one or more
 * lines) is skipped, and with fewer than two choices nothing is named. */
/* The trailing block of choice lines of an MPICH description: its first line
 * and number of lines, or NULL when there is none (or fewer than two). */
static const char *choice_block(const char *desc, long long *n_out)
{
    const char *first = strchr(desc, '\n');
    if (first == NULL) return NULL;
    /* Walk the lines after the header, restarting the block at every line
     * that is not a choice: what remains at the end is the trailing block. */
    const char *block = NULL;
    long long n = 0;
    for (const char *line = first + 1; line != NULL;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (choice_line(line, len)) {
            if (block == NULL) block = line, n = 0;
            n++;
        } else {
            block = NULL, n = 0;
        }
        line = end ? end + 1 : NULL;
    }
    *n_out = n;
    return n >= 2 ? block : NULL;
}

/* MPICH exposes its enumeration CVARs (MPIR_CVAR_<COLL>_INTRA_ALGORITHM, ...)
 * as plain MPI_INT without an MPI_T enumeration. Their description ends with
 * the choices, one "name - text" line each, in value order (the order MPICH
 * generates the enumeration from; checked against MPICH 5.0.2, where
 * allreduce's ring is 8 and the fallback policy's error is 0). Name value v
 * from that trailing block of lines only; free text above it (one or more
 * lines) is skipped, and with fewer than two choices nothing is named. */
static int name_from_description(const char *desc, long long v, char *out, size_t outlen)
{
    long long n = 0;
    const char *line = choice_block(desc, &n);
    if (line == NULL || v < 0 || v >= n) return -1;
    for (long long i = 0; i < v; i++) line = strchr(line, '\n') + 1;
    const char *end = strchr(line, '\n');
    size_t w = choice_line(line, end ? (size_t)(end - line) : strlen(line));
    snprintf(out, outlen, "%.*s", (int)w, line);
    return 0;
}

/* The inverse: the value of choice `name`, or -1. */
static long long value_from_description(const char *desc, const char *name)
{
    long long n = 0;
    const char *line = choice_block(desc, &n);
    for (long long i = 0; line != NULL && i < n; i++) {
        const char *end = strchr(line, '\n');
        size_t w = choice_line(line, end ? (size_t)(end - line) : strlen(line));
        if (w == strlen(name) && strncmp(line, name, w) == 0) return i;
        line = end ? end + 1 : NULL;
    }
    return -1;
}

static int read_integers(MPI_T_cvar_handle h, MPI_Datatype dt, int count, MPI_T_enum et,
                         const char *desc, char *out, size_t outlen)
{
    int is_int = dt == MPI_INT, is_uns = dt == MPI_UNSIGNED, is_ul = dt == MPI_UNSIGNED_LONG,
        is_ull = dt == MPI_UNSIGNED_LONG_LONG, is_cnt = dt == MPI_COUNT, is_bool = dt == MPI_C_BOOL;
    if (!(is_int || is_uns || is_ul || is_ull || is_cnt || is_bool)) return -1;
    /* Libraries differ in how wide they write a C bool (Open MPI reports
     * MPI_C_BOOL for its boolean MCA variables); only a single one is read,
     * as "any non-zero byte in an int's width" on a zeroed buffer. */
    if (is_bool && count != 1) return -1;
    /* Largest element of the allowed types is 8 bytes. */
    unsigned char *raw = calloc((size_t)count, 8);
    if (raw == NULL) return -1;
    if (MPI_T_cvar_read(h, raw) != MPI_SUCCESS) {
        free(raw);
        return -1;
    }
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < count; i++) {
        long long v = 0;
        unsigned long long u = 0;
        int is_signed = 1;
        if (is_int) v = ((int *)(void *)raw)[i];
        else if (is_uns) u = ((unsigned *)(void *)raw)[i], is_signed = 0, v = (long long)u;
        else if (is_ul) u = ((unsigned long *)(void *)raw)[i], is_signed = 0, v = (long long)u;
        else if (is_ull) u = ((unsigned long long *)(void *)raw)[i], is_signed = 0, v = (long long)u;
        else if (is_cnt) v = (long long)((MPI_Count *)(void *)raw)[i];
        else
            for (size_t b = 0; b < sizeof(int); b++) v |= raw[b] != 0;
        char item[256], one[300];
        if (et != MPI_T_ENUM_NULL && enum_name(et, v, item, (int)sizeof item) == 0)
            snprintf(one, sizeof one, "%s", item);
        else if (et == MPI_T_ENUM_NULL && is_int && count == 1 &&
                 name_from_description(desc, v, item, sizeof item) == 0)
            snprintf(one, sizeof one, "%s", item);
        else if (is_signed)
            snprintf(one, sizeof one, "%lld", v);
        else
            snprintf(one, sizeof one, "%llu", u);
        int n = snprintf(out + used, outlen - used, "%s%s", i ? "," : "", one);
        if (n < 0 || (size_t)n >= outlen - used) break;
        used += (size_t)n;
    }
    free(raw);
    return 0;
}

static int read_value(MPI_T_cvar_handle h, MPI_Datatype dt, int count, MPI_T_enum et,
                      const char *desc, char *out, size_t outlen)
{
    if (dt == MPI_CHAR) {
        char *s = calloc((size_t)count + 1, 1);
        if (s == NULL) return -1;
        int rc = MPI_T_cvar_read(h, s);
        if (rc == MPI_SUCCESS) set(out, outlen, s);
        free(s);
        return rc == MPI_SUCCESS ? 0 : -1;
    }
    if (dt == MPI_DOUBLE) {
        double *d = calloc((size_t)count, sizeof *d);
        if (d == NULL) return -1;
        int rc = MPI_T_cvar_read(h, d);
        size_t used = 0;
        out[0] = '\0';
        for (int i = 0; rc == MPI_SUCCESS && i < count; i++) {
            int n = snprintf(out + used, outlen - used, "%s%.17g", i ? "," : "", d[i]);
            if (n < 0 || (size_t)n >= outlen - used) break;
            used += (size_t)n;
        }
        free(d);
        return rc == MPI_SUCCESS ? 0 : -1;
    }
    return read_integers(h, dt, count, et, desc, out, outlen);
}

void mpit_read(const mpit_session *s, const char *name, MPI_Comm comm, char *out, size_t outlen)
{
    set(out, outlen, MPIT_UNKNOWN);
    if (!s->open) return;
    int idx;
    if (MPI_T_cvar_get_index(name, &idx) != MPI_SUCCESS) return;
    /* The description is read in full: MPICH's lists the enumeration. */
    char vname[256], desc[8192];
    int vlen = (int)sizeof vname, dlen = (int)sizeof desc, verbosity, bind, scope;
    MPI_Datatype dt;
    MPI_T_enum et;
    if (MPI_T_cvar_get_info(idx, vname, &vlen, &verbosity, &dt, &et, desc, &dlen, &bind, &scope) !=
        MPI_SUCCESS)
        return;
    desc[sizeof desc - 1] = '\0';
    void *obj = NULL;
    MPI_Comm c = comm;
    if (bind == MPI_T_BIND_MPI_COMM) obj = &c;
    else if (bind != MPI_T_BIND_NO_OBJECT) return;
    MPI_T_cvar_handle h;
    int count;
    if (MPI_T_cvar_handle_alloc(idx, obj, &h, &count) != MPI_SUCCESS) return;
    char tmp[1024];
    if (count > 0 && read_value(h, dt, count, et, desc, tmp, sizeof tmp) == 0) set(out, outlen, tmp);
    MPI_T_cvar_handle_free(&h);
}

/* 0 with the value of enumeration item `name`, or -1. */
static int enum_value(MPI_T_enum et, const char *name, int *value)
{
    char item[256];
    int num, len = (int)sizeof item;
    if (MPI_T_enum_get_info(et, &num, item, &len) != MPI_SUCCESS) return -1;
    for (int i = 0; i < num; i++) {
        len = (int)sizeof item;
        if (MPI_T_enum_get_item(et, i, value, item, &len) != MPI_SUCCESS) return -1;
        if (strcmp(item, name) == 0) return 0;
    }
    return -1;
}

int mpit_set(const mpit_session *s, const char *name, const char *value, mpit_saved *saved, char *err,
             size_t errlen)
{
    memset(saved, 0, sizeof *saved);
    if (!s->open) {
        snprintf(err, errlen, "cannot set %s: the MPI library offers no MPI_T interface", name);
        return -1;
    }
    int idx;
    if (MPI_T_cvar_get_index(name, &idx) != MPI_SUCCESS) {
        snprintf(err, errlen, "cannot set %s: the MPI library has no such control variable", name);
        return -1;
    }
    char vname[256], desc[8192];
    int vlen = (int)sizeof vname, dlen = (int)sizeof desc, verbosity, bind, scope;
    MPI_Datatype dt;
    MPI_T_enum et;
    if (MPI_T_cvar_get_info(idx, vname, &vlen, &verbosity, &dt, &et, desc, &dlen, &bind, &scope) !=
            MPI_SUCCESS ||
        bind != MPI_T_BIND_NO_OBJECT || dt != MPI_INT) {
        snprintf(err, errlen, "cannot set %s: only integer variables bound to no object are supported", name);
        return -1;
    }
    desc[sizeof desc - 1] = '\0';
    int v = 0;
    char *end = NULL;
    long parsed = strtol(value, &end, 10);
    if (*value != '\0' && *end == '\0') {
        v = (int)parsed;
    } else if (et != MPI_T_ENUM_NULL) {
        if (enum_value(et, value, &v) != 0) {
            snprintf(err, errlen, "cannot set %s: '%s' is not one of its values", name, value);
            return -1;
        }
    } else {
        long long lv = value_from_description(desc, value);
        if (lv < 0) {
            snprintf(err, errlen, "cannot set %s: '%s' is not one of its values", name, value);
            return -1;
        }
        v = (int)lv;
    }
    if (scope == MPI_T_SCOPE_CONSTANT || scope == MPI_T_SCOPE_READONLY) {
        snprintf(err, errlen, "cannot set %s: the library makes it read-only", name);
        return -1;
    }
    MPI_T_cvar_handle h;
    int count;
    if (MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) != MPI_SUCCESS || count != 1) {
        snprintf(err, errlen, "cannot set %s: no handle", name);
        return -1;
    }
    int old = 0;
    int rc = MPI_T_cvar_read(h, &old);
    if (rc == MPI_SUCCESS) rc = MPI_T_cvar_write(h, &v);
    MPI_T_cvar_handle_free(&h);
    if (rc != MPI_SUCCESS) {
        snprintf(err, errlen, "cannot set %s to '%s': MPI_T error %d", name, value, rc);
        return -1;
    }
    saved->index = idx;
    saved->old = old;
    saved->valid = 1;
    return 0;
}

void mpit_restore(const mpit_session *s, const mpit_saved *saved)
{
    if (!s->open || !saved->valid) return;
    MPI_T_cvar_handle h;
    int count;
    if (MPI_T_cvar_handle_alloc(saved->index, NULL, &h, &count) != MPI_SUCCESS) return;
    int old = saved->old;
    (void)MPI_T_cvar_write(h, &old);
    MPI_T_cvar_handle_free(&h);
}

#endif /* SMPI_H */
