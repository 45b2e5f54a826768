/* Shared by ck_trace and ck_trace_mpi; see trace.h. */
#include "trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- datatypes */

/* The datatypes are libcollkit's table (ck_datatype_*); the error message
 * lists them from there so that a new one needs no change here. */
static void dtype_names(char *dst, size_t len, const char *sep)
{
    size_t at = 0;
    dst[0] = '\0';
    for (size_t i = 0; i < ck_datatype_count() && at < len; i++)
        at += (size_t)snprintf(dst + at, len - at, "%s%s", i ? sep : "", ck_datatype_at(i)->name);
}

static void dtype_unknown(char *err, size_t errlen, const char *val)
{
    char names[128];
    dtype_names(names, sizeof names, ", ");
    snprintf(err, errlen, "unknown dtype '%s' (%s)", val, names);
}

static int parse_format(const char *s, ck_trace_format *f)
{
    if (strcmp(s, "messages") == 0) *f = CK_TRACE_MESSAGES;
    else if (strcmp(s, "pairs") == 0) *f = CK_TRACE_PAIRS;
    else return -1;
    return 0;
}

/* ------------------------------------------------------------- numbers */

/* Decimal digits only: no sign, no spaces, no base prefixes. */
static int parse_u64(const char *s, unsigned long long max, unsigned long long *out)
{
    if (*s < '0' || *s > '9') return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v > max) return -1;
    *out = v;
    return 0;
}

/* ------------------------------------------------------------- cases */

/* Fills one field of a case from its textual value; name is the option name
 * used in error messages. The collective is resolved with the algorithm. */
static int case_field(ck_trace_case *c, const char *name, const char *val, char *err,
                      size_t errlen)
{
    unsigned long long v;
    if (strcmp(name, "ranks") == 0) {
        if (parse_u64(val, CK_TRACE_MAX_RANKS, &v) != 0 || v == 0) {
            snprintf(err, errlen, "ranks must be an integer from 1 to %d, not '%s'",
                     CK_TRACE_MAX_RANKS, val);
            return -1;
        }
        c->ranks = (int)v;
    } else if (strcmp(name, "count") == 0) {
        if (parse_u64(val, SIZE_MAX, &v) != 0) {
            snprintf(err, errlen, "count must be a non-negative integer, not '%s'", val);
            return -1;
        }
        c->count = (size_t)v;
    } else if (strcmp(name, "root") == 0) {
        /* Range against p is the algorithm's check (MPI_ERR_ROOT), as in MPI. */
        if (parse_u64(val, CK_TRACE_MAX_RANKS, &v) != 0) {
            snprintf(err, errlen, "root must be a non-negative rank, not '%s'", val);
            return -1;
        }
        c->root = (int)v;
    } else if (strcmp(name, "dtype") == 0) {
        c->dtype = ck_datatype_find(val);
        if (c->dtype == NULL) {
            dtype_unknown(err, errlen, val);
            return -1;
        }
    } else if (strcmp(name, "format") == 0) {
        if (parse_format(val, &c->format) != 0) {
            snprintf(err, errlen, "unknown format '%s' (messages, pairs)", val);
            return -1;
        }
    }
    return 0;
}

static int resolve_algorithm(ck_trace_case *c, const char *coll, const char *alg, char *err,
                             size_t errlen)
{
    ck_collective cc;
    if (ck_collective_parse(coll, &cc) != 0) {
        snprintf(err, errlen, "unknown collective '%s' (see --list)", coll);
        return -1;
    }
    c->alg = ck_algorithm_find(cc, alg);
    if (c->alg == NULL) {
        snprintf(err, errlen, "unknown algorithm '%s' for collective %s (see --list)", alg, coll);
        return -1;
    }
    return 0;
}

static void case_defaults(ck_trace_case *c)
{
    memset(c, 0, sizeof *c);
    c->dtype = ck_datatype_find("int8"); /* bytes equal the element count */
    c->format = CK_TRACE_MESSAGES;
}

void ck_trace_usage(FILE *f, const char *prog)
{
    char dtypes[128];
    dtype_names(dtypes, sizeof dtypes, "|");
    fprintf(f,
            "usage: %s --collective C --algorithm A --ranks P --count N [--root R]\n"
            "          [--dtype %s] [--format messages|pairs]\n"
            "       %s --batch FILE   (lines: collective algorithm ranks count root dtype format)\n"
            "       %s --list\n"
            "Prints every message the algorithm sends: a header line\n"
            "  # trace collective=C algorithm=A ranks=P count=N root=R dtype=D "
            "bytes_per_element=S messages=M\n"
            "then 'src dst bytes step' per message (messages, sender then call order; step =\n"
            "index of the send among the sender's sends) or 'src dst bytes' per pair (pairs).\n"
            "Defaults: root 0, dtype int8, format messages. Exit 2: bad usage; 3: the\n"
            "algorithm returned an MPI error (e.g. a constraint); 1: out of memory or I/O.\n",
            prog, dtypes, prog, prog);
}

int ck_trace_parse_cli(int argc, char **argv, int need_ranks, ck_trace_cli *cli, char *err,
                       size_t errlen)
{
    static const char *const fields[] = {"ranks", "count", "root", "dtype", "format"};
    const char *coll = NULL, *alg = NULL;
    int have_ranks = 0, have_count = 0, have_list = 0;
    memset(cli, 0, sizeof *cli);
    cli->mode = CK_TRACE_ONE;
    case_defaults(&cli->one);
    if (argc <= 1) {
        snprintf(err, errlen, "missing arguments (see --help)");
        return -1;
    }
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            cli->mode = CK_TRACE_HELP;
            return 0;
        }
        if (strcmp(arg, "--list") == 0) {
            have_list = 1;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0) {
            snprintf(err, errlen, "unexpected argument '%s'", arg);
            return -1;
        }
        /* --name value or --name=value */
        char name[32];
        const char *val;
        const char *eq = strchr(arg + 2, '=');
        size_t nlen = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        if (nlen >= sizeof name) {
            snprintf(err, errlen, "unknown option '%s'", arg);
            return -1;
        }
        memcpy(name, arg + 2, nlen);
        name[nlen] = '\0';
        int known = strcmp(name, "collective") == 0 || strcmp(name, "algorithm") == 0 ||
                    strcmp(name, "batch") == 0;
        for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++)
            if (strcmp(name, fields[k]) == 0) known = 1;
        if (!known) {
            snprintf(err, errlen, "unknown option '%s'", arg);
            return -1;
        }
        if (eq) {
            val = eq + 1;
        } else {
            if (i + 1 >= argc) {
                snprintf(err, errlen, "option --%s needs a value", name);
                return -1;
            }
            val = argv[++i];
        }
        if (strcmp(name, "collective") == 0) coll = val;
        else if (strcmp(name, "algorithm") == 0) alg = val;
        else if (strcmp(name, "batch") == 0) cli->batch = val;
        else if (case_field(&cli->one, name, val, err, errlen) != 0) return -1;
        if (strcmp(name, "ranks") == 0) have_ranks = 1;
        if (strcmp(name, "count") == 0) have_count = 1;
    }
    if (have_list + (cli->batch != NULL) + (coll != NULL || alg != NULL) > 1) {
        snprintf(err, errlen, "--list, --batch and a single trace exclude each other");
        return -1;
    }
    if (have_list) {
        cli->mode = CK_TRACE_LIST;
        return 0;
    }
    if (cli->batch) {
        cli->mode = CK_TRACE_BATCH;
        return 0;
    }
    if (coll == NULL || alg == NULL) {
        snprintf(err, errlen, "--collective and --algorithm are required (or --batch, --list)");
        return -1;
    }
    if (need_ranks && !have_ranks) {
        snprintf(err, errlen, "--ranks is required");
        return -1;
    }
    if (!have_count) {
        snprintf(err, errlen, "--count is required");
        return -1;
    }
    return resolve_algorithm(&cli->one, coll, alg, err, errlen);
}

int ck_trace_parse_line(const char *line, ck_trace_case *c, char *err, size_t errlen)
{
    static const char *const names[] = {"collective", "algorithm", "ranks", "count",
                                         "root",       "dtype",     "format"};
    char copy[512];
    char *tok[7];
    int ntok = 0;
    case_defaults(c);
    size_t len = strlen(line);
    if (len >= sizeof copy) {
        snprintf(err, errlen, "line longer than %zu characters", sizeof copy - 1);
        return -1;
    }
    memcpy(copy, line, len + 1);
    int extra = 0;
    for (char *s = strtok(copy, " \t\r\n"); s != NULL; s = strtok(NULL, " \t\r\n")) {
        if (ntok == 0 && s[0] == '#') return 1;
        if (ntok < 7) tok[ntok++] = s;
        else extra = 1;
    }
    if (ntok == 0) return 1;
    if (ntok != 7 || extra) {
        snprintf(err, errlen,
                 "expected 7 fields: collective algorithm ranks count root dtype format");
        return -1;
    }
    for (int k = 2; k < 7; k++)
        if (case_field(c, names[k], tok[k], err, errlen) != 0) return -1;
    return resolve_algorithm(c, tok[0], tok[1], err, errlen);
}

void ck_trace_list(FILE *f)
{
    size_t n = ck_algorithm_count();
    for (size_t i = 0; i < n; i++) {
        const ck_algorithm *a = ck_algorithm_at(i);
        fprintf(f, "%s %s\n", ck_collective_name(a->collective), a->name);
    }
}

const char *ck_trace_errname(int rc)
{
    /* An if-chain, not a switch: the values differ between MPIs and nothing
     * promises they are distinct compile-time constants. */
    if (rc == MPI_SUCCESS) return "MPI_SUCCESS";
    if (rc == MPI_ERR_BUFFER) return "MPI_ERR_BUFFER";
    if (rc == MPI_ERR_COUNT) return "MPI_ERR_COUNT";
    if (rc == MPI_ERR_TYPE) return "MPI_ERR_TYPE";
    if (rc == MPI_ERR_TAG) return "MPI_ERR_TAG";
    if (rc == MPI_ERR_COMM) return "MPI_ERR_COMM";
    if (rc == MPI_ERR_RANK) return "MPI_ERR_RANK";
    if (rc == MPI_ERR_REQUEST) return "MPI_ERR_REQUEST";
    if (rc == MPI_ERR_ROOT) return "MPI_ERR_ROOT";
    if (rc == MPI_ERR_OP) return "MPI_ERR_OP";
    if (rc == MPI_ERR_ARG) return "MPI_ERR_ARG";
    if (rc == MPI_ERR_NO_MEM) return "MPI_ERR_NO_MEM";
    if (rc == MPI_ERR_OTHER) return "MPI_ERR_OTHER";
    return "MPI_ERR_UNKNOWN";
}

/* ------------------------------------------------------------- running */

/* Elements of a buffer large enough for the root and for any other rank:
 * the descriptor's blocks, never in place. */
static size_t max_role_elems(size_t (*elems)(const ck_collective_desc *, size_t, int, int, int,
                                             int),
                             const ck_collective_desc *d, size_t count, int p)
{
    /* Rank 1 with root 0 stands for "any other rank" even at p = 1: a
     * buffer sized for a role nobody plays costs nothing. */
    size_t at_root = elems(d, count, p, 0, 0, 0), other = elems(d, count, p, 1, 0, 0);
    return at_root > other ? at_root : other;
}

int ck_trace_bufs_alloc(ck_trace_bufs *b, const ck_trace_case *c, int p)
{
    b->a = b->b = NULL;
    const ck_collective_desc *d = ck_collective_describe(c->alg->collective);
    if (d == NULL) return -1;
    size_t na = 1, nb = 1;
    /* Counts above CK_MAX_COUNT are refused by every algorithm before it
     * touches a buffer (ck_check_args runs first), so a token buffer will do
     * and the refusal is what gets reported. p <= 2^20 and count <= 2^31
     * keep p*count*size far below SIZE_MAX. */
    if (c->count <= CK_MAX_COUNT) {
        na = max_role_elems(ck_collective_send_elems, d, c->count, p);
        nb = max_role_elems(ck_collective_recv_elems, d, c->count, p);
        if (na == 0) na = 1;
        if (nb == 0) nb = 1;
    }
    /* Zeroed: the data does not matter, but ck_trace_mpi gives them to a real
     * MPI and reductions then compute on defined values. */
    b->a = calloc(na, c->dtype->size);
    b->b = calloc(nb, c->dtype->size);
    if (b->a == NULL || b->b == NULL) {
        ck_trace_bufs_free(b);
        return -1;
    }
    return 0;
}

void ck_trace_bufs_free(ck_trace_bufs *b)
{
    free(b->a);
    free(b->b);
    b->a = b->b = NULL;
}

int ck_trace_call(const ck_trace_case *c, const ck_trace_bufs *b, MPI_Comm comm)
{
    return ck_algorithm_call(c->alg, b->a, b->b, c->count, ck_datatype_mpi(c->dtype), MPI_SUM,
                             c->root, comm);
}

/* ------------------------------------------------------------- pairs */

int ck_pairs_init(ck_pairs *a, int p)
{
    a->p = p;
    a->epoch = 0;
    a->acc = malloc((size_t)p * sizeof *a->acc);
    a->mark = calloc((size_t)p, sizeof *a->mark);
    a->dsts = malloc((size_t)p * sizeof *a->dsts);
    if (a->acc == NULL || a->mark == NULL || a->dsts == NULL) {
        ck_pairs_free(a);
        return -1;
    }
    return 0;
}

void ck_pairs_free(ck_pairs *a)
{
    free(a->acc);
    free(a->mark);
    free(a->dsts);
    a->acc = NULL;
    a->mark = NULL;
    a->dsts = NULL;
}

static int cmp_int32(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

size_t ck_pairs_compact(ck_pairs *a, ck_trace_msg *v, size_t start, size_t end)
{
    /* Marks are stamped with an epoch per source, so nothing of size p is
     * cleared between sources: the cost is linear in the messages. */
    if (++a->epoch == 0) {
        memset(a->mark, 0, (size_t)a->p * sizeof *a->mark);
        a->epoch = 1;
    }
    int nd = 0;
    for (size_t i = start; i < end; i++) {
        int32_t d = v[i].dst;
        if (a->mark[d] != a->epoch) {
            a->mark[d] = a->epoch;
            a->acc[d] = 0;
            a->dsts[nd++] = d;
        }
        a->acc[d] += v[i].bytes;
    }
    qsort(a->dsts, (size_t)nd, sizeof *a->dsts, cmp_int32);
    /* Every message was read above, so overwriting from start is safe. */
    for (int j = 0; j < nd; j++) {
        ck_trace_msg *r = &v[start + (size_t)j];
        r->dst = a->dsts[j];
        r->step = 0;
        r->bytes = a->acc[a->dsts[j]];
    }
    return start + (size_t)nd;
}

/* ------------------------------------------------------------- output */

void ck_out_init(ck_out *o, FILE *f)
{
    o->f = f;
    o->n = 0;
    o->err = 0;
}

static void out_drain(ck_out *o)
{
    if (o->n > 0 && fwrite(o->buf, 1, o->n, o->f) != o->n) o->err = 1;
    o->n = 0;
}

static void out_str(ck_out *o, const char *s)
{
    size_t len = strlen(s);
    if (o->n + len > sizeof o->buf) out_drain(o);
    if (len > sizeof o->buf) {
        if (fwrite(s, 1, len, o->f) != len) o->err = 1;
        return;
    }
    memcpy(o->buf + o->n, s, len);
    o->n += len;
}

/* Appends the decimal digits of v and the character `sep` to p. */
static char *put_u64(char *p, uint64_t v, char sep)
{
    char tmp[24];
    int k = 0;
    do {
        tmp[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (k > 0) *p++ = tmp[--k];
    *p++ = sep;
    return p;
}

void ck_out_rank(ck_out *o, int src, const ck_trace_msg *v, size_t n, ck_trace_format f)
{
    char head[24];
    char *h = put_u64(head, (uint64_t)src, ' ');
    size_t hlen = (size_t)(h - head);
    for (size_t i = 0; i < n; i++) {
        /* A line is at most 4 numbers of 20 digits plus separators. */
        if (o->n + 96 > sizeof o->buf) out_drain(o);
        char *p = o->buf + o->n;
        memcpy(p, head, hlen);
        p += hlen;
        p = put_u64(p, (uint64_t)v[i].dst, ' ');
        if (f == CK_TRACE_MESSAGES) {
            p = put_u64(p, v[i].bytes, ' ');
            p = put_u64(p, (uint64_t)v[i].step, '\n');
        } else {
            p = put_u64(p, v[i].bytes, '\n');
        }
        o->n = (size_t)(p - o->buf);
    }
}

static void case_fields(char *dst, size_t len, const ck_trace_case *c, int p)
{
    snprintf(dst, len, "collective=%s algorithm=%s ranks=%d count=%zu root=%d dtype=%s",
             ck_collective_name(c->alg->collective), c->alg->name, p, c->count, c->root,
             c->dtype->name);
}

void ck_out_header(ck_out *o, const ck_trace_case *c, int p, uint64_t nmsgs)
{
    char fields[256], line[400];
    case_fields(fields, sizeof fields, c, p);
    snprintf(line, sizeof line, "# trace %s bytes_per_element=%zu messages=%llu\n", fields,
             c->dtype->size,
             (unsigned long long)nmsgs);
    out_str(o, line);
}

void ck_out_error(ck_out *o, const ck_trace_case *c, int p, const char *reason)
{
    char fields[256], line[512];
    case_fields(fields, sizeof fields, c, p);
    snprintf(line, sizeof line, "# error %s reason=%s\n", fields, reason);
    out_str(o, line);
}

void ck_out_error_line(ck_out *o, long lineno, const char *reason)
{
    char line[512];
    snprintf(line, sizeof line, "# error line=%ld reason=%s\n", lineno, reason);
    out_str(o, line);
}

int ck_out_flush(ck_out *o)
{
    out_drain(o);
    if (fflush(o->f) != 0 || ferror(o->f)) o->err = 1;
    return o->err ? -1 : 0;
}

void ck_trace_describe(char *dst, size_t len, const ck_trace_case *c, int p, const char *reason)
{
    char fields[256];
    case_fields(fields, sizeof fields, c, p);
    snprintf(dst, len, "%s: %s", fields, reason);
}
