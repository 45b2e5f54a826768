/* What the shim reads of a datatype: its size and whether its elements lie
 * end to end (the dispatcher's byte view and the fallback rules both ask). */
#include "ck_preload.h"

int ckp_type_info(MPI_Datatype t, int *size, int *contiguous)
{
    MPI_Aint lb, extent, tlb, textent;
    int rc = PMPI_Type_size(t, size);
    if (rc == MPI_SUCCESS) rc = PMPI_Type_get_extent(t, &lb, &extent);
    if (rc == MPI_SUCCESS) rc = PMPI_Type_get_true_extent(t, &tlb, &textent);
    if (rc != MPI_SUCCESS) return rc;
    /* Elements packed end to end from the buffer's address, no gaps. */
    *contiguous = (lb == 0 && tlb == 0 && extent == *size && textent == *size);
    return MPI_SUCCESS;
}

int ckp_type_named(MPI_Datatype t)
{
    int ni, na, nd, comb;
    return t != MPI_DATATYPE_NULL && PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) == MPI_SUCCESS &&
           comb == MPI_COMBINER_NAMED;
}
