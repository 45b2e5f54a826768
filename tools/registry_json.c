/* collkit-registry: print libcollkit's algorithm registry as JSON.
 * Needs no MPI launch: the registry is static data. */
#include <collkit/collkit.h>
#include <stdio.h>

int main(void)
{
    if (ck_registry_write_json(stdout) != 0 || fflush(stdout) != 0) {
        fprintf(stderr, "collkit-registry: cannot write the registry\n");
        return 1;
    }
    return 0;
}
