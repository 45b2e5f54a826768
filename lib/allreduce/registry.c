/* The allreduce algorithms of libcollkit.
 *
 * CK_TRAIT_FP_RANK_VARIANT (floating-point results may differ across ranks in
 * the last bits) is set where ranks combine the inputs in different trees:
 * bine_latency and swing_latency only. The others compute every element once
 * and send it (ring, rabenseifner(_halving), the bine/swing bandwidth
 * variants, parallel_rings, binary_blocks: reduce-scatter + allgather;
 * reduce_bcast; bine_hierarchical: one leader's result, see its comment), or
 * combine the same two partial sums on both partners of every step
 * (recursive_doubling: a + b and b + a are the same bits), so every rank
 * returns the same bits; the matrix's spread sums check that bitwise
 * (tests/matrix.c). Reduce and reduce-scatter results live on one rank per
 * element, so the trait has no meaning there. */
#include "../core/registry_internal.h"

const ck_algorithm ck_allreduce_algorithms[] = {
    {CK_ALLREDUCE, "recursive_doubling",
     "whole vector exchanged with rank XOR 2^k; non-power-of-two p by folding; any op",
     "Thakur, Rabenseifner, Gropp 2005 (MPICH)", CK_TRAIT_WHOLE_VECTOR, 0,
     {.allreduce = ck_allreduce_recursive_doubling}},
    {CK_ALLREDUCE, "rabenseifner",
     "reduce-scatter by vector halving, distance doubling (n/2 to rank XOR 1 first) + allgather retracing it; MPICH's folding for non-power-of-two p",
     "MPICH MPIR_Allreduce_intra_reduce_scatter_allgather (Rabenseifner 2004)", CK_REQUIRES_COMMUTATIVE, 0,
     {.allreduce = ck_allreduce_rabenseifner}},
    {CK_ALLREDUCE, "rabenseifner_halving",
     "reduce-scatter by vector and distance halving (n/2 to rank XOR p'/2 first) + allgather by recursive doubling; MPICH's folding",
     "Thakur, Rabenseifner, Gropp 2005 (the paper's order; no library runs it)", CK_REQUIRES_COMMUTATIVE, 0,
     {.allreduce = ck_allreduce_rabenseifner_halving}},
    {CK_ALLREDUCE, "ring",
     "ring reduce-scatter + ring allgather of p blocks (first count % p one longer), each block one message",
     "Open MPI ompi_coll_base_allreduce_intra_ring (Patarasuk & Yuan)", CK_REQUIRES_COMMUTATIVE, 0,
     {.allreduce = ck_allreduce_ring}},
    {CK_ALLREDUCE, "ring_seg",
     "ring, reduce-scatter blocks moved in 1 MiB segments received ahead, reduction overlapping transfer",
     "Patarasuk & Yuan; not Open MPI's ring_segmented (phase-major)", CK_REQUIRES_COMMUTATIVE, 0,
     {.allreduce = ck_allreduce_ring_seg}},
    {CK_ALLREDUCE, "reduce_bcast",
     "binomial reduce to rank 0 then binomial broadcast from rank 0; any op",
     "MPICH / Open MPI coll/base (basic)", CK_TRAIT_WHOLE_VECTOR, 0,
     {.allreduce = ck_allreduce_reduce_bcast}},
    {CK_ALLREDUCE, "binary_blocks",
     "power-of-two blocks per binary digit of p, each halving/doubling, partials handed between blocks",
     "Rabenseifner & Träff 2004", CK_REQUIRES_COMMUTATIVE, 0,
     {.allreduce = ck_allreduce_binary_blocks}},
    /* The paper's butterfly (docs/algorithms.md): from p' = 8 on partners
     * hold different rank sets, so ranks add the inputs in different trees
     * and floating-point sums may differ in their last bits between ranks. */
    {CK_ALLREDUCE, "swing_latency",
     "Swing butterfly, whole vector each step with partner at distance |rho(k)| = 1, 1, 3, 5, 11, ...; folding of neighbour pairs for non-power-of-two p; float results may differ across ranks in the last bits",
     "De Sensi et al., Swing (NSDI'24)", CK_REQUIRES_COMMUTATIVE | CK_TRAIT_WHOLE_VECTOR | CK_TRAIT_FP_RANK_VARIANT, 0,
     {.allreduce = ck_allreduce_swing_latency}},
    /* Rank 0's result broadcast after the butterfly: every rank the same bits. */
    {CK_ALLREDUCE, "swing_latency_agreed",
     "swing_latency, then virtual rank 0's result broadcast (log2 p' more steps from p' = 8) so every rank returns the same bits",
     "De Sensi et al., Swing (NSDI'24) + collkit's agreement broadcast", CK_REQUIRES_COMMUTATIVE | CK_TRAIT_WHOLE_VECTOR, 0,
     {.allreduce = ck_allreduce_swing_latency_agreed}},
    {CK_ALLREDUCE, "swing_bandwidth",
     "Swing reduce-scatter (halving, nearest partners first) + Swing allgather, non-contiguous block sets packed; folding for non-power-of-two p",
     "De Sensi et al., Swing (NSDI'24)", CK_REQUIRES_COMMUTATIVE, 0,
     {.allreduce = ck_allreduce_swing_bandwidth}},
    /* The papers' butterfly (HLC-Lab/pico libbine allreduce_bine_lat): as
     * swing_latency, floating-point sums may differ between ranks. */
    {CK_ALLREDUCE, "bine_latency",
     "Bine butterfly, whole vector each step with partner at distance |rho(k)| = 1, 1, 3, 5, 11, ...; folding of neighbour pairs for non-power-of-two p; float results may differ across ranks in the last bits",
     "De Sensi et al., Bine Trees", CK_REQUIRES_COMMUTATIVE | CK_TRAIT_WHOLE_VECTOR | CK_TRAIT_FP_RANK_VARIANT, 0,
     {.allreduce = ck_allreduce_bine_latency}},
    {CK_ALLREDUCE, "bine_latency_agreed",
     "bine_latency, then virtual rank 0's result broadcast (log2 p' more steps from p' = 8) so every rank returns the same bits",
     "De Sensi et al., Bine Trees + collkit's agreement broadcast", CK_REQUIRES_COMMUTATIVE | CK_TRAIT_WHOLE_VECTOR, 0,
     {.allreduce = ck_allreduce_bine_latency_agreed}},
    {CK_ALLREDUCE, "bine_bandwidth",
     "Bine reduce-scatter (distance doubling) + Bine allgather (distance halving), contiguous blocks in Bine slot order; folding for non-power-of-two p",
     "De Sensi et al., Bine Trees", CK_REQUIRES_COMMUTATIVE, 0,
     {.allreduce = ck_allreduce_bine_bandwidth}},
    {CK_ALLREDUCE, "bine_bandwidth_seg",
     "bine_bandwidth with reduce-scatter transfers in 64 KiB segments received ahead, reduction overlapping transfer",
     "De Sensi et al., Bine Trees", CK_REQUIRES_COMMUTATIVE, 0,
     {.allreduce = ck_allreduce_bine_bandwidth_seg}},
    {CK_ALLREDUCE, "parallel_rings",
     "node-aware: parallel_rings reduce-scatter + parallel_rings allgather on p nearly equal blocks, 2(N-1) ring steps for N nodes; equal ranks per node",
     "Barati Sedeh, Grant, Afsahi, Parallel Rings (Algorithm 1, on CPUs)", CK_REQUIRES_COMMUTATIVE | CK_REQUIRES_EQUAL_NODES, 0,
     {.allreduce = ck_allreduce_parallel_rings}},
    /* No FP_RANK_VARIANT: the leaders run bine_latency_agreed's butterfly. */
    {CK_ALLREDUCE, "bine_hierarchical",
     "node-aware: binomial reduce to each node's local rank 0, bine_latency_agreed butterfly among the node leaders, binomial bcast inside each node; any node shape",
     "De Sensi et al., Bine Trees; PICO (hierarchical)", CK_REQUIRES_COMMUTATIVE | CK_TRAIT_WHOLE_VECTOR, 0,
     {.allreduce = ck_allreduce_bine_hierarchical}},
};
const size_t ck_allreduce_algorithms_n = CK_TABLE_SIZE(ck_allreduce_algorithms);
