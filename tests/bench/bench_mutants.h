/* Broken algorithms that only collkit-bench's tests need: ones that return
 * MPI errors, to prove a failing measured call becomes a `failed` record on
 * every rank without hanging any of them. */
#ifndef CK_BENCH_MUTANTS_H
#define CK_BENCH_MUTANTS_H
#include <collkit/collkit.h>
size_t bench_mutant_count(void);
const ck_algorithm *bench_mutant_at(size_t i);
#endif
