/* The loops of bench_naive.c as someone who knows their compiler would build them: the same
 * plain C (two passes, expf), compiled with -O3 -ffast-math and -march=native (or the AVX2
 * flags in an NWATTN_SIMD=AVX2 build, so that both sides use the same instruction set; see
 * CMakeLists.txt), which lets gcc vectorise expf through glibc's libmvec, and an OpenMP loop
 * over the query rows for the thread count. The rival the issue names: a fast library must
 * beat this, not only the plain loop. */
#include "bench.h"

#include <math.h>

/* Gaussian NW for one-dimensional data, the loop of d2l's example written in C. */
static void nw_rows_1d(size_t i0, size_t i1, size_t n, float h, const float *q, const float *k,
                       const float *v, float *o) {
    const float c = -0.5f / (h * h);
    for (size_t i = i0; i < i1; i++) {
        const float qi = q[i];
        float max = -INFINITY;
        for (size_t j = 0; j < n; j++) {
            const float t = qi - k[j];
            const float s = c * t * t;
            max = s > max ? s : max;
        }
        float sum = 0.0f, acc = 0.0f;
        for (size_t j = 0; j < n; j++) {
            const float t = qi - k[j];
            const float e = expf(c * t * t - max);
            sum += e;
            acc += e * v[j];
        }
        o[i] = acc / sum;
    }
}

int naive_fast_nw_1d(size_t m, size_t n, float h, const float *q, const float *k,
                     const float *v, float *o, int threads) {
    /* Contiguous row ranges, one per thread (run one after another without OpenMP). */
#if defined(_OPENMP)
#pragma omp parallel for num_threads(threads) schedule(static)
#endif
    for (int t = 0; t < threads; t++)
        nw_rows_1d(m * (size_t)t / (size_t)threads, m * (size_t)(t + 1) / (size_t)threads, n, h,
                   q, k, v, o);
    return 0;
}
