/* Deliberately broken algorithms for the matrix's own test. */
#ifndef CK_MUTANTS_H
#define CK_MUTANTS_H
#include <collkit/collkit.h>
size_t mutant_count(void);
const ck_algorithm *mutant_at(size_t i);
#endif
