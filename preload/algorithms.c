/* The registry's algorithms per collective, numbered once at MPI_Init: the
 * index by which a forcing (config.c), a rule (rules.c), the dispatcher and
 * the report name an algorithm. */
#include "ck_preload.h"

#include <string.h>

const ck_algorithm *ckp_algs[CK_NUM_COLLECTIVES][CKP_MAX_ALGS];
int ckp_nalgs[CK_NUM_COLLECTIVES];

void ckp_algs_index(void)
{
    for (int c = 0; c < CK_NUM_COLLECTIVES; c++) ckp_nalgs[c] = 0;
    for (size_t i = 0; i < ck_algorithm_count(); i++) {
        const ck_algorithm *a = ck_algorithm_at(i);
        int c = (int)a->collective;
        if (c >= 0 && c < CK_NUM_COLLECTIVES && ckp_nalgs[c] < CKP_MAX_ALGS)
            ckp_algs[c][ckp_nalgs[c]++] = a;
    }
}

int ckp_alg_find(ck_collective c, const char *name)
{
    for (int k = 0; k < ckp_nalgs[c]; k++)
        if (strcmp(ckp_algs[c][k]->name, name) == 0) return k;
    return -1;
}
