/* The fast row engine: its working memory, the choice of the copy compiled for the machine's
 * instruction set, and the baseline copy itself (see fast_rows_impl.h). */
#include "nw.h"
#include "simd/cpu.h"

#define NW_FAST_ISA base
#include "fast_rows_impl.h"

size_t nw_fast_buffer_floats(const nw_model *model, size_t n) {
    size_t floats;
    if (!nw_add(model->d, 6, &floats) || !nw_mul(floats, NW_FAST_CHUNK, &floats)) /* z: 2 */
        return SIZE_MAX;
    if (model->d > 1 && (!nw_add(floats, n, &floats) || !nw_add(floats, 1, &floats)))
        return SIZE_MAX;
    if (model->d == 2) { /* two positions per strip */
        size_t runs;
        if (!nw_mul(nw_strips(n), 2 * sizeof(size_t) / sizeof(float), &runs) ||
            !nw_add(floats, runs, &floats))
            return SIZE_MAX;
    }
    return floats;
}

/* The widest copy this build has and this CPU runs (x86-64: AVX-512, AVX2 + FMA), by the
 * library's one CPU probe (simd/cpu.h), so that it agrees with the context's vector kernels. */
static void choose_copy(nw_fast *f) {
    f->row = nw_fast_row_base;
    f->row_weights = nw_fast_row_weights_base;
    const int level = nw_simd_level();
    (void)level;
#if NWATTN_SIMD_LEVEL >= NW_SIMD_LEVEL_AVX2
    if (level >= NW_SIMD_LEVEL_AVX2) {
        f->row = nw_fast_row_avx2;
        f->row_weights = nw_fast_row_weights_avx2;
    }
#endif
#if NWATTN_SIMD_LEVEL >= NW_SIMD_LEVEL_AVX512
    if (level >= NW_SIMD_LEVEL_AVX512) {
        f->row = nw_fast_row_avx512;
        f->row_weights = nw_fast_row_weights_avx512;
    }
#endif
}

void nw_fast_init(nw_fast *f, const nw_model *model, const nw_train *train, float *buf) {
    f->model = model;
    f->train = train;
    f->buf = buf;
    /* Left-out weights are below e^-T of the nearest point's, so n of them below e^-17. */
    f->tail = 17.0f + (float)log((double)(train->n > 0 ? train->n : 1));
    choose_copy(f);
}

void nw_fast_row(const nw_fast *f, const float *q, const float *inv_h, size_t skip, nw_sums *s) {
    f->row(f, q, inv_h, skip, s);
}

void nw_fast_row_weights(const nw_fast *f, const float *q, const float *inv_h, size_t skip,
                         const double *coef, float *weights) {
    f->row_weights(f, q, inv_h, skip, coef, weights);
}
