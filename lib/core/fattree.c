/* The fat tree of the bandwidth-optimal all-to-all (Prisacari, Minkenberg,
 * Rodriguez, Hoefler, ICS'13): the radices M1..ML of FT(L; M1..ML), read from
 * the environment, and the permuted-variable-base digit arithmetic of its
 * phases.
 *
 * Numbering: leaf i sits under the level-1 switch i / M1, the level-2 switch
 * i / (M1*M2), and so on, i.e. i written in the mixed base (M1..ML) with the
 * digit of radix M1 least significant. Rank i runs on leaf i. */
#include "ck_core.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

int ck_fattree_parse(const char *text, int *m, int *levels)
{
    int n = 0;
    const char *s = text;
    long long prod = 1;
    *levels = 0;
    if (text == NULL) return MPI_ERR_ARG;
    for (;;) {
        char *end;
        errno = 0;
        /* strtol skips leading blanks and takes signs; the grammar is plain
         * decimal digits, so look at the first character ourselves. */
        if (*s < '0' || *s > '9') return MPI_ERR_ARG;
        long v = strtol(s, &end, 10);
        if (errno != 0 || v < 1 || v > INT_MAX) return MPI_ERR_ARG;
        if (n == CK_FATTREE_MAX_LEVELS) return MPI_ERR_ARG;
        prod *= v;
        /* The product is a rank count: it must fit an int. */
        if (prod > INT_MAX) return MPI_ERR_ARG;
        m[n++] = (int)v;
        if (*end == '\0') break;
        if (*end != ',') return MPI_ERR_ARG;
        s = end + 1;
    }
    *levels = n;
    return MPI_SUCCESS;
}

int ck_fattree_fit(int p, const int *given, int given_levels, int *m, int *levels)
{
    long long prod = 1;
    *levels = 0;
    if (p < 1) return MPI_ERR_ARG;
    for (int l = 0; l < given_levels; l++) prod *= given[l];
    /* A job must fill whole leaves: p = k * prod. k ranks per node are the
     * extra leaf level of the paper (a node's ranks below its NIC), so the
     * tree becomes FT(L+1; k, M1..ML). A partial tree (k not an integer)
     * would leave holes the phases do not know how to skip: refused. */
    if (prod < 1 || p % prod != 0) return MPI_ERR_ARG;
    int k = (int)(p / prod), n = 0;
    if (k > 1) m[n++] = k;
    for (int l = 0; l < given_levels; l++) m[n++] = given[l];
    if (n == 0) m[n++] = 1; /* p = 1 under a tree of radices 1 */
    *levels = n;
    return MPI_SUCCESS;
}

int ck_fattree_radices(int p, int *m, int *levels)
{
    int given[CK_FATTREE_MAX_LEVELS], n = 0;
    const char *env = getenv(CK_FATTREE_ENV);
    *levels = 0;
    if (p < 1) return MPI_ERR_ARG;
    /* Unset: the ranks hang off one switch, FT(1; p). Every schedule is
     * uncontended there, and the exchange becomes the linear shift. */
    if (env == NULL || *env == '\0') {
        m[0] = p;
        *levels = 1;
        return MPI_SUCCESS;
    }
    if (ck_fattree_parse(env, given, &n) != MPI_SUCCESS) return MPI_ERR_ARG;
    return ck_fattree_fit(p, given, n, m, levels);
}

/* Digits of x in the variable base Theta = (M_L, ..., M_1), theta_1 (radix
 * M_L) least significant. */
static void theta_digits(int x, const int *m, int levels, int *theta)
{
    for (int k = 0; k < levels; k++) {
        const int radix = m[levels - 1 - k];
        theta[k] = x % radix;
        x /= radix;
    }
}

int ck_fattree_opt_dest(int s, int phase, const int *m, int levels)
{
    int ts[CK_FATTREE_MAX_LEVELS + 1], tp[CK_FATTREE_MAX_LEVELS + 1];
    theta_digits(s, m, levels, ts);
    theta_digits(phase, m, levels, tp);
    /* alpha_{L+1-k}(d) = (theta_k(s) + theta_k(p)) mod Theta_k; alpha_j has
     * radix M_j and weight M_1*...*M_{j-1}. Build d from its most significant
     * alpha (j = L, i.e. k = 1) down. */
    int d = 0;
    for (int k = 0; k < levels; k++) {
        const int radix = m[levels - 1 - k];
        d = d * radix + (ts[k] + tp[k]) % radix;
    }
    return d;
}

int ck_fattree_opt_source(int d, int phase, const int *m, int levels)
{
    int tp[CK_FATTREE_MAX_LEVELS + 1], alpha[CK_FATTREE_MAX_LEVELS + 1];
    theta_digits(phase, m, levels, tp);
    for (int j = 0; j < levels; j++) { /* alpha[j]: radix m[j] */
        alpha[j] = d % m[j];
        d /= m[j];
    }
    /* theta_k(s) = alpha_{L+1-k}(d) - theta_k(p) mod Theta_k; s from its most
     * significant theta (k = L, radix M_1) down. */
    int s = 0;
    for (int k = levels - 1; k >= 0; k--) {
        const int radix = m[levels - 1 - k];
        s = s * radix + (alpha[levels - 1 - k] - tp[k] + radix) % radix;
    }
    return s;
}

long long ck_fattree_bmin(const int *m, int levels, int l)
{
    long long below = 1, above = 1;
    for (int j = 0; j < levels; j++) {
        if (j < l) below *= m[j];
        else above *= m[j];
    }
    return below - below / above;
}
