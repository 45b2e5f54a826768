#!/usr/bin/env bash
# Install libcollkit into a scratch prefix and link an application against it
# twice: through CMake's find_package(collkit) and through pkg-config.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install build/openmpi --prefix "$tmp/prefix" >/dev/null

mkdir -p "$tmp/app"
cat > "$tmp/app/app.c" <<'SRC'
#include <collkit/collkit.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, v, sum = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    v = rank + 1;
    int rc = ck_allreduce_recursive_doubling(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int ok = rc == MPI_SUCCESS && sum == size * (size + 1) / 2 && ck_algorithm_count() > 0;
    if (rank == 0) printf("%s\n", ok ? "app ok" : "app WRONG");
    MPI_Finalize();
    return ok ? 0 : 1;
}
SRC
cat > "$tmp/app/CMakeLists.txt" <<'SRC'
cmake_minimum_required(VERSION 3.25)
project(app C)
find_package(collkit REQUIRED)
add_executable(app app.c)
target_link_libraries(app PRIVATE collkit::collkit)
SRC
cmake -S "$tmp/app" -B "$tmp/app/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DMPI_C_COMPILER=/usr/bin/mpicc.openmpi >/dev/null
cmake --build "$tmp/app/build" >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun.openmpi --oversubscribe -n 3 "$tmp/app/build/app"

export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
# shellcheck disable=SC2046
mpicc.openmpi "$tmp/app/app.c" -o "$tmp/app/app_pc" $(pkg-config --cflags --libs collkit) \
    -Wl,-rpath,"$tmp/prefix/lib"
mpirun.openmpi --oversubscribe -n 3 "$tmp/app/app_pc"
mpicc.openmpi "$tmp/app/app.c" -o "$tmp/app/app_static" -I"$tmp/prefix/include" "$tmp/prefix/lib/libcollkit.a"
mpirun.openmpi --oversubscribe -n 2 "$tmp/app/app_static"
