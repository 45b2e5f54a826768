/*
 * collkit-gpu-membw (COLLKIT_NCCL, docs/gpu.md): the device's memory
 * bandwidth, to put beside the busbw of NCCL collectives on the same GPU.
 *
 *   collkit-gpu-membw [--bytes N] [--iters K] [--device D]
 *
 * Times K device-to-device copies of N bytes (cudaMemcpyAsync on one stream,
 * CUDA events around each) after 3 untimed ones, and prints one JSON line:
 * the median, min and max time per copy and the bandwidth as bytes moved
 * (read + write = 2N) per second of the median, in GB/s (1e9). A copy reads
 * and writes every byte once, as a ring step of an allreduce does with its
 * block, so "read + write" is the figure to compare busbw with; N defaults to
 * 1 GiB, far beyond any cache. Exit status 2 with one line when there is no
 * device or an argument is bad.
 */
#include <cuda_runtime_api.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Digits only (strtoull would take "-1"); at least `min`. */
static int parse_size(const char *v, unsigned long long min, unsigned long long *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (v[0] < '0' || v[0] > '9' || *end != '\0' || errno != 0 || x < min) return -1;
    *out = x;
    return 0;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static int fail_cuda(const char *what, cudaError_t e)
{
    fprintf(stderr, "collkit-gpu-membw: %s: %s (%s)\n", what, cudaGetErrorString(e), cudaGetErrorName(e));
    return 1;
}

int main(int argc, char **argv)
{
    unsigned long long bytes = 1ULL << 30, iters = 20, device = 0;
    for (int i = 1; i < argc; i++) {
        unsigned long long *slot = strcmp(argv[i], "--bytes") == 0   ? &bytes
                                   : strcmp(argv[i], "--iters") == 0  ? &iters
                                   : strcmp(argv[i], "--device") == 0 ? &device
                                                                      : NULL;
        if (slot == NULL || i + 1 >= argc || parse_size(argv[++i], slot == &device ? 0 : 1, slot) != 0 ||
            iters > 100000 ||
            device > 1023) {
            fprintf(stderr,
                    "collkit-gpu-membw: bad argument '%s'; usage: collkit-gpu-membw [--bytes N] [--iters K] "
                    "[--device D] (positive integers, K <= 100000)\n",
                    argv[i]);
            return 2;
        }
    }
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0 || (int)device >= ndev) {
        fprintf(stderr, "collkit-gpu-membw: no CUDA device %llu here (%s); run it on a GPU machine (docs/gpu.md)\n",
                device, e != cudaSuccess ? cudaGetErrorString(e) : "fewer devices");
        return 2;
    }
    if ((e = cudaSetDevice((int)device)) != cudaSuccess) return fail_cuda("cudaSetDevice", e);
    struct cudaDeviceProp prop;
    if ((e = cudaGetDeviceProperties(&prop, (int)device)) != cudaSuccess)
        return fail_cuda("cudaGetDeviceProperties", e);

    void *src = NULL, *dst = NULL;
    cudaStream_t s = NULL;
    cudaEvent_t t0 = NULL, t1 = NULL;
    float *ms = calloc(iters, sizeof *ms);
    int rc = 1;
    if (ms == NULL) {
        fprintf(stderr, "collkit-gpu-membw: out of memory\n");
        return 1;
    }
    if ((e = cudaMalloc(&src, bytes)) != cudaSuccess || (e = cudaMalloc(&dst, bytes)) != cudaSuccess) {
        fail_cuda("cudaMalloc", e);
        goto out;
    }
    if ((e = cudaMemset(src, 1, bytes)) != cudaSuccess || (e = cudaStreamCreate(&s)) != cudaSuccess ||
        (e = cudaEventCreate(&t0)) != cudaSuccess || (e = cudaEventCreate(&t1)) != cudaSuccess) {
        fail_cuda("setting up", e);
        goto out;
    }
    for (unsigned long long k = 0; k < 3 + iters; k++) {
        if ((e = cudaEventRecord(t0, s)) != cudaSuccess ||
            (e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s)) != cudaSuccess ||
            (e = cudaEventRecord(t1, s)) != cudaSuccess || (e = cudaEventSynchronize(t1)) != cudaSuccess) {
            fail_cuda("timed copy", e);
            goto out;
        }
        float m = 0.0f;
        if ((e = cudaEventElapsedTime(&m, t0, t1)) != cudaSuccess) {
            fail_cuda("cudaEventElapsedTime", e);
            goto out;
        }
        if (k >= 3) ms[k - 3] = m;
    }
    qsort(ms, iters, sizeof *ms, cmp_float);
    float med = iters % 2 ? ms[iters / 2] : 0.5f * (ms[iters / 2 - 1] + ms[iters / 2]);
    printf("{\"device\": %llu, \"name\": \"%s\", \"bytes\": %llu, \"iters\": %llu, \"median_ms\": %.4f, "
           "\"min_ms\": %.4f, \"max_ms\": %.4f, \"copy_GBps\": %.1f, \"read_write_GBps\": %.1f}\n",
           device, prop.name, bytes, iters, med, ms[0], ms[iters - 1], bytes / (med * 1e-3) / 1e9,
           2.0 * bytes / (med * 1e-3) / 1e9);
    rc = 0;
out:
    if (t0) cudaEventDestroy(t0);
    if (t1) cudaEventDestroy(t1);
    if (s) cudaStreamDestroy(s);
    if (src) cudaFree(src);
    if (dst) cudaFree(dst);
    free(ms);
    return rc;
}
