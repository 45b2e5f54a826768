/* The alltoall algorithms of libcollkit. */
#include "../core/registry_internal.h"

const ck_algorithm ck_alltoall_algorithms[] = {
    {CK_ALLTOALL, "linear",
     "nonblocking send to and receive from every rank at once, in rotated peer order",
     "Open MPI coll/base (basic_linear) / MPICH (isend_irecv)", 0, 0,
     {.alltoall = ck_alltoall_linear}},
    {CK_ALLTOALL, "pairwise",
     "p-1 sendrecv steps: XOR partner for power-of-two p, else rank+i / rank-i",
     "MPICH (Thakur, Rabenseifner, Gropp 2005) / Open MPI coll/base", 0, 0,
     {.alltoall = ck_alltoall_pairwise}},
    {CK_ALLTOALL, "bruck",
     "ceil(log2 p) steps, each packing the blocks whose index has bit k set for rank+2^k",
     "Bruck et al. 1997", 0, 0, {.alltoall = ck_alltoall_bruck}},
    {CK_ALLTOALL, "bine",
     "Bruck-like, offsets in negabinary moved by (-2)^k (blocks go the short way round); kept blocks left, sent blocks right so each send is contiguous; any p",
     "De Sensi et al., Bine Trees", 0, 0,
     {.alltoall = ck_alltoall_bine}},
    {CK_ALLTOALL, "xor",
     "phases 0..2^ceil(log2 p)-1, one sendrecv with rank XOR phase (own block in phase 0); a rank idles where rank XOR phase >= p",
     "Prisacari et al., Bandwidth-optimal All-to-all Exchanges in Fat Tree Networks (ICS'13)", 0, 0,
     {.alltoall = ck_alltoall_xor}},
    {CK_ALLTOALL, "linear_shift",
     "p phases, one sendrecv each: to rank+phase+shift, from rank-phase-shift (shift: COLLKIT_LINEAR_SHIFT, default 0)",
     "Prisacari et al. (ICS'13); shift 0 = Open MPI's pairwise messages", 0, 0,
     {.alltoall = ck_alltoall_linear_shift}},
    {CK_ALLTOALL, "fattree_opt",
     "p phases of the permuted-variable-base exchange on FT(L; M1..ML) from COLLKIT_FATTREE (p/prod ranks per node as a leaf level); at the lower bound B_min(l) on every level",
     "Prisacari et al., Bandwidth-optimal All-to-all Exchanges in Fat Tree Networks (ICS'13)",
     CK_REQUIRES_FATTREE, 0, {.alltoall = ck_alltoall_fattree_opt}},
};
const size_t ck_alltoall_algorithms_n = CK_TABLE_SIZE(ck_alltoall_algorithms);
