/* The learnable-w model: yhat_i = sum_j softmax_j(-w^2 |q_i - k_j|^2 / 2) v_j, its loss
 * L = sum |yhat - target|^2 / 2 and dL/dw = 2w sum_ij a_ij s_ij (v_j - yhat_i)·e_i, where
 * s_ij = -|q_i - k_j|^2 / 2 and e_i = yhat_i - target_i.
 * Fast path: the backend's kernels (BLAS distance scores, masked softmax, sgemm) a block of
 * query rows at a time, the gradient sums in double. Reference path: everything in double. */
#include <math.h>
#include <string.h>

#include "core/row_state.h"
#include "mask.h"
#include "score/score.h"
#include "nw.h"

#define BLOCK_FLOATS ((size_t)1 << 21) /* scores per block: 8 MiB, two blocks */

static size_t block_rows(const nw_wmodel_args *a) {
    size_t rows = a->n > 0 ? BLOCK_FLOATS / a->n : a->m;
    rows = rows < a->m ? rows : a->m;
    return rows > 0 ? rows : 1;
}

static const nw_score unit_gaussian = {&nw_score_gaussian, NWATTN_SCORE_GAUSSIAN, 0.0f, 1.0f,
                                       NULL};

size_t nw_wmodel_bytes(const nw_kernels *kernels, const nw_wmodel_args *a) {
    size_t floats, bytes, extra;
    if (kernels == &nw_reference_kernels) { /* two rows of n doubles, yhat row (dv doubles) */
        if (!nw_mul(a->n, 2, &floats) || !nw_add(floats, a->dv, &floats) ||
            !nw_mul(floats, sizeof(double), &bytes))
            return SIZE_MAX;
        /* at least one double: the row pointers are offsets into it, never into NULL */
        return bytes > 0 ? bytes : sizeof(double);
    }
    const size_t rows = block_rows(a);
    size_t block, yh;
    if (!nw_mul(rows, a->n, &block) || !nw_mul(block, 2, &floats) || !nw_mul(rows, a->dv, &yh) ||
        !nw_add(floats, yh, &floats) || !nw_mul(floats, sizeof(float), &bytes))
        return SIZE_MAX;
    extra = kernels->scores_workspace(&unit_gaussian, rows, a->n, a->d);
    /* + the block's row scales (rows doubles) and slack to align them and the scratch */
    if (extra == SIZE_MAX || !nw_add(bytes, extra, &bytes) ||
        !nw_add(bytes, rows * sizeof(double) + 32, &bytes))
        return SIZE_MAX;
    return bytes;
}

/* ---- Fast path ----------------------------------------------------------------------------- */
static void run_fast(const nw_kernels *kernels, const nw_wmodel_args *a, void *mem, double *loss,
                     double *grad) {
    const size_t rows_max = block_rows(a), n = a->n, dv = a->dv, lds = n > 0 ? n : 1;
    float *s0 = mem;                          /* rows×n: -|q - k|^2 / 2 */
    float *alpha_block = s0 + rows_max * lds; /* rows×n: weights, unless the caller's */
    float *yh_block = alpha_block + rows_max * lds;
    char *scale_bytes = (char *)(yh_block + rows_max * dv);
    double *row_scale = (double *)(void *)(scale_bytes + (16 - (uintptr_t)scale_bytes % 16) % 16);
    char *scratch_bytes = (char *)(row_scale + rows_max);
    void *scratch = scratch_bytes + (16 - (uintptr_t)scratch_bytes % 16) % 16;
    const float w2 = a->w * a->w;
    double total = 0.0, g = 0.0;
    for (size_t i0 = 0; i0 < a->m; i0 += rows_max) {
        const size_t rows = a->m - i0 < rows_max ? a->m - i0 : rows_max;
        float *alpha = a->weights ? a->weights + i0 * a->ldw : alpha_block;
        const size_t lda = a->weights ? a->ldw : lds;
        float *yh = a->yhat ? a->yhat + i0 * a->ldyhat : yh_block;
        const size_t ldyh = a->yhat ? a->ldyhat : (dv > 0 ? dv : 1);
        kernels->scores(a->simd, &unit_gaussian, rows, n, a->d, a->q + i0 * a->ldq, a->ldq, a->k, a->ldk, s0,
                        lds, row_scale, scratch);
        /* The scores come as row_scale · t (a power of two, 1 unless the data are extreme). */
        for (size_t r = 0; r < rows; r++)
            for (size_t j = 0; j < n; j++) {
                s0[r * lds + j] = (float)(row_scale[r] * (double)s0[r * lds + j]);
                alpha[r * lda + j] = w2 * s0[r * lds + j];
            }
        kernels->softmax(a->simd, &a->mask, 0, i0, rows, n, alpha, lda, NULL, alpha, lda, NULL);
        kernels->gemm(rows, dv, n, alpha, lda, a->v, a->ldv, yh, ldyh);
        if (a->target == NULL)
            continue;
        for (size_t r = 0; r < rows; r++) {
            const float *t = a->target + (i0 + r) * a->ldt, *y = yh + r * ldyh;
            double row = 0.0;
            for (size_t c = 0; c < dv; c++) {
                const double e = (double)y[c] - (double)t[c];
                total += 0.5 * e * e;
            }
            for (size_t j = 0; j < n; j++) {
                const double as = (double)alpha[r * lda + j] * (double)s0[r * lds + j];
                if (as == 0.0)
                    continue;
                double inner = 0.0;
                for (size_t c = 0; c < dv; c++)
                    inner += ((double)a->v[j * a->ldv + c] - (double)y[c]) *
                             ((double)y[c] - (double)t[c]);
                row += as * inner;
            }
            g += row;
        }
    }
    *loss = total;
    *grad = 2.0 * (double)a->w * g;
}

/* ---- Reference path ------------------------------------------------------------------------ */
/* Row i's masked softmax of w^2 s0 in double (alpha), through the row contract. */
static void reference_weights(const nw_wmodel_args *a, size_t i, const double *s0, double *alpha) {
    const nw_mask_row rm = nw_mask_row_get(&a->mask, 0, i, a->n);
    const double w2 = (double)a->w * (double)a->w;
    nw_tile tile = nw_tile_empty();
    for (size_t j = 0; j < a->n; j++) {
        alpha[j] = nw_mask_value_d(&rm, w2 * s0[j], j);
        nw_tile_see(&tile, alpha[j]);
    }
    nw_row row = nw_row_empty();
    (void)nw_row_rescale(&row, &tile);
    double sum = 0.0;
    for (size_t j = 0; j < a->n; j++)
        sum += nw_row_factor(&row, alpha[j]);
    nw_row_add(&row, sum);
    for (size_t j = 0; j < a->n; j++)
        alpha[j] = nw_row_weight(&row, alpha[j]);
}

static void run_reference(const nw_wmodel_args *a, void *mem, double *loss, double *grad) {
    const size_t n = a->n, d = a->d, dv = a->dv;
    double *s0 = mem, *alpha = s0 + n, *yh = alpha + n;
    double total = 0.0, g = 0.0;
    for (size_t i = 0; i < a->m; i++) {
        const float *q = a->q + i * a->ldq;
        for (size_t j = 0; j < n; j++) {
            double r2 = 0.0;
            for (size_t k = 0; k < d; k++) {
                double u = (double)q[k] - (double)a->k[j * a->ldk + k];
                r2 += u * u;
            }
            s0[j] = -0.5 * r2;
        }
        reference_weights(a, i, s0, alpha);
        for (size_t c = 0; c < dv; c++) {
            double sum = 0.0;
            for (size_t j = 0; j < n; j++)
                sum += alpha[j] * (double)a->v[j * a->ldv + c];
            yh[c] = sum;
            if (a->yhat != NULL)
                a->yhat[i * a->ldyhat + c] = (float)sum;
        }
        if (a->weights != NULL)
            for (size_t j = 0; j < n; j++)
                a->weights[i * a->ldw + j] = (float)alpha[j];
        if (a->target == NULL)
            continue;
        const float *t = a->target + i * a->ldt;
        for (size_t c = 0; c < dv; c++) {
            const double e = yh[c] - (double)t[c];
            total += 0.5 * e * e;
        }
        for (size_t j = 0; j < n; j++) {
            double inner = 0.0;
            for (size_t c = 0; c < dv; c++)
                inner += ((double)a->v[j * a->ldv + c] - yh[c]) * (yh[c] - (double)t[c]);
            g += alpha[j] * s0[j] * inner;
        }
    }
    *loss = total;
    *grad = 2.0 * (double)a->w * g;
}

void nw_wmodel_run(const nw_kernels *kernels, const nw_wmodel_args *a, void *mem, double *loss,
                   double *grad) {
    double l = 0.0, g = 0.0;
    if (kernels == &nw_reference_kernels)
        run_reference(a, mem, &l, &g);
    else
        run_fast(kernels, a, mem, &l, &g);
    if (loss != NULL)
        *loss = l;
    if (grad != NULL)
        *grad = g;
}
