/*
 * trace_diff [--allow-empty] A B: compares two outputs of ck_trace / ck_trace_mpi trace by
 * trace. A trace is a '# trace ...' or '# error ...' line and the message
 * lines after it; two traces are equal when their text is identical (both
 * programs print in sender, then call order, so no sorting is involved).
 * Prints the first differences and one summary line
 *   N equal, M differ (K of the equal ones are refusals in both)
 * Exit 0 when every trace is equal and A has at least one non-empty trace
 * (so that a run where everything was refused cannot pass; --allow-empty
 * lifts that for p = 1, where no algorithm sends anything), 1 otherwise,
 * 2 on usage or I/O errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *text;
    size_t len;
} file_text;

static int slurp(const char *path, file_text *t)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) return -1;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    if (buf == NULL) {
        fclose(f);
        return -1;
    }
    for (;;) {
        if (n == cap) {
            char *nb = realloc(buf, 2 * cap + 1);
            if (nb == NULL) {
                free(buf);
                fclose(f);
                return -1;
            }
            buf = nb;
            cap *= 2;
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (k == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return -1;
    }
    buf[n] = '\0';
    t->text = buf;
    t->len = n;
    return 0;
}

/* A block: from one '# ' line (start of the file or after '\n') to the next. */
static const char *block_end(const char *s, const char *end)
{
    const char *p = s;
    for (;;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL) return end;
        p = nl + 1;
        if (p + 1 < end && p[0] == '#' && p[1] == ' ') return p;
        if (p >= end) return end;
    }
}

static void print_line(const char *tag, const char *s, const char *end)
{
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    int len = (int)((nl ? nl : end) - s);
    printf("  %s: %.*s\n", tag, len, s);
}

int main(int argc, char **argv)
{
    int allow_empty = argc == 4 && strcmp(argv[1], "--allow-empty") == 0;
    if (argc != 3 + allow_empty) {
        fprintf(stderr, "usage: trace_diff [--allow-empty] A B\n");
        return 2;
    }
    argv += allow_empty;
    file_text a, b;
    if (slurp(argv[1], &a) != 0 || slurp(argv[2], &b) != 0) {
        fprintf(stderr, "trace_diff: cannot read '%s' or '%s'\n", argv[1], argv[2]);
        return 2;
    }
    const char *pa = a.text, *ea = a.text + a.len, *pb = b.text, *eb = b.text + b.len;
    long equal = 0, differ = 0, refusals = 0, nonempty = 0, shown = 0;
    while (pa < ea || pb < eb) {
        if (pa >= ea || pb >= eb) {
            printf("trace_diff: %s has more traces, from:\n", pa < ea ? argv[1] : argv[2]);
            print_line(pa < ea ? "A" : "B", pa < ea ? pa : pb, pa < ea ? ea : eb);
            differ++;
            break;
        }
        const char *na = block_end(pa, ea), *nb = block_end(pb, eb);
        int is_error = strncmp(pa, "# error", 7) == 0;
        if (strncmp(pa, "# trace", 7) == 0) {
            /* a trace with at least one line after its header */
            const char *nl = memchr(pa, '\n', (size_t)(na - pa));
            if (nl && nl + 1 < na) nonempty++;
        }
        if (na - pa == nb - pb && memcmp(pa, pb, (size_t)(na - pa)) == 0) {
            equal++;
            if (is_error) refusals++;
        } else {
            differ++;
            if (shown++ < 5) {
                printf("trace_diff: traces differ\n");
                print_line("A", pa, na);
                print_line("B", pb, nb);
                /* the first line that differs inside the trace */
                const char *x = pa, *y = pb;
                int line = 0;
                while (x < na && y < nb) {
                    const char *xn = memchr(x, '\n', (size_t)(na - x));
                    const char *yn = memchr(y, '\n', (size_t)(nb - y));
                    size_t xl = (size_t)((xn ? xn : na) - x), yl = (size_t)((yn ? yn : nb) - y);
                    if (xl != yl || memcmp(x, y, xl) != 0) {
                        printf("  first difference at line %d of the trace:\n", line);
                        print_line("A", x, na);
                        print_line("B", y, nb);
                        break;
                    }
                    x = xn ? xn + 1 : na;
                    y = yn ? yn + 1 : nb;
                    line++;
                }
                if (x >= na || y >= nb) printf("  one trace is a prefix of the other\n");
            }
        }
        pa = na;
        pb = nb;
    }
    printf("%ld equal, %ld differ (%ld of the equal ones are refusals in both)\n", equal, differ,
           refusals);
    free(a.text);
    free(b.text);
    if (differ == 0 && nonempty == 0 && !allow_empty) {
        printf("trace_diff: no trace with messages: nothing was compared\n");
        return 1;
    }
    return differ == 0 ? 0 : 1;
}
