/* collkit-mpi-probe: which MPI is this program linked with, and do its
 * programs start?
 *
 *   collkit-mpi-probe          one JSON object: the library's version string
 *                              and the MPI standard version. MPI allows both
 *                              calls before MPI_Init, so no launcher is needed
 *                              and a login node can run it.
 *   collkit-mpi-probe --init   under mpirun: MPI_Init, a barrier, and rank 0
 *                              prints "started N ranks".
 *
 * `collkit build` compiles this file alone with the MPI's wrapper before it
 * builds anything else; every build also installs it (its manifest). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c == '\n')
            fputs("\\n", stdout);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--init") == 0) {
        int rank, size;
        if (MPI_Init(&argc, &argv) != MPI_SUCCESS)
            return 1;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
            printf("started %d ranks\n", size);
        MPI_Finalize();
        return 0;
    }
    char version[MPI_MAX_LIBRARY_VERSION_STRING + 1];
    int len = 0, major = 0, minor = 0;
    if (MPI_Get_library_version(version, &len) != MPI_SUCCESS || MPI_Get_version(&major, &minor) != MPI_SUCCESS)
        return 1;
    version[len < 0 ? 0 : (len > MPI_MAX_LIBRARY_VERSION_STRING ? MPI_MAX_LIBRARY_VERSION_STRING : len)] = '\0';
    /* Trailing blank lines and spaces (Open MPI ends with "\n") say nothing. */
    for (size_t n = strlen(version); n > 0 && (version[n - 1] == '\n' || version[n - 1] == ' '); n--)
        version[n - 1] = '\0';
    fputs("{\"library_version\": ", stdout);
    json_string(version);
    printf(", \"mpi_version\": \"%d.%d\"}\n", major, minor);
    return 0;
}
