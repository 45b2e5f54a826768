/* libcollkit's algorithms, by registry name. */
#include "backend.h"

#include <string.h>

#ifdef CK_BENCH_MUTANTS
#include "bench_mutants.h"
#include "mutants.h"
#endif

const ck_algorithm *backend_collkit_find(ck_collective coll, const char *name)
{
    const ck_algorithm *a = ck_algorithm_find(coll, name);
    if (a != NULL) return a;
#ifdef CK_BENCH_MUTANTS
    /* Test builds only: broken algorithms that the harness must report as
     * invalid (or failed), proving its checks can fail. */
    for (size_t i = 0; i < mutant_count(); i++) {
        const ck_algorithm *m = mutant_at(i);
        if (m->collective == coll && strcmp(m->name, name) == 0) return m;
    }
    for (size_t i = 0; i < bench_mutant_count(); i++) {
        const ck_algorithm *m = bench_mutant_at(i);
        if (m->collective == coll && strcmp(m->name, name) == 0) return m;
    }
#endif
    return NULL;
}

int backend_collkit_call(const ck_algorithm *alg, const backend_call *c, const void *sbuf,
                         void *rbuf, MPI_Comm comm)
{
    return ck_algorithm_call(alg, sbuf, rbuf, c->count, c->dt, c->op, c->root, comm);
}
