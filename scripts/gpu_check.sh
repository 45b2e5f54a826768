#!/usr/bin/env bash
# CI's GPU variant (docs/gpu.md): configure and build collkit-bench-nccl
# (COLLKIT_NCCL=ON) against Open MPI in build/gpu-openmpi — compile and link
# only, no GPU needed — and run its GPU-free tests: every CPU point through
# collkit-bench-nccl, and the one-line refusal of nccl points where no device
# is visible. The Python side (spec, forcing, discovery) is tested by
# tests/python/test_nccl_backend.py in the pytest step.
#
# Needs the CUDA runtime headers/library and NCCL. Debian's archives enabled
# here offer neither (apt-cache policy nvidia-cuda-toolkit libnccl-dev: no
# candidate), so setup.sh does not install them; where they are absent this
# step says so and skips rather than fails.
set -euo pipefail
cd "$(dirname "$0")/.."

find_one() {  # find_one <file> <dirs...>: the first dir holding it
    local f=$1; shift
    for d in "$@"; do [[ -n "$d" && -f "$d/$f" ]] && { echo "$d"; return 0; }; done
    return 1
}
roots=("${CUDA_HOME:-}" "${NCCL_HOME:-}" /usr/local/cuda /usr/local /usr)
incs=(); for r in "${roots[@]}"; do [[ -n "$r" ]] && incs+=("$r/include"); done
if ! find_one cuda_runtime_api.h "${incs[@]}" >/dev/null || ! find_one nccl.h "${incs[@]}" >/dev/null; then
    echo "[gpu] skipped: the CUDA toolkit or NCCL is not installed here (cuda_runtime_api.h, nccl.h not found" \
         "under ${incs[*]}); install them from NVIDIA or set CUDA_HOME/NCCL_HOME (docs/gpu.md)"
    exit 0
fi

cmake -S . -B build/gpu-openmpi -DCOLLKIT_WERROR=ON -DCOLLKIT_NCCL=ON -DCOLLKIT_INSTRUMENT=OFF \
      -DCOLLKIT_BUILD_PRELOAD=OFF -DMPI_C_COMPILER=/usr/bin/mpicc.openmpi \
      -DMPIEXEC_EXECUTABLE=/usr/bin/mpirun.openmpi >/dev/null
cmake --build build/gpu-openmpi -j "$(nproc)" \
      --target collkit-bench collkit-bench-nccl collkit-gpu-membw ck_bench_check_records >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir build/gpu-openmpi -R '^bench_nccl_' --output-on-failure
