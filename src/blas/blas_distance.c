/* The centred distance expansion's pieces (see blas_distance.h). */
#include <math.h>

#include "blas_distance.h"

void nw_inverse_bandwidths(const nw_score *score, size_t d, float *inv_h) {
    for (size_t j = 0; j < d; j++)
        inv_h[j] = (float)(1.0 / (double)(score->bandwidths ? score->bandwidths[j]
                                                            : score->bandwidth));
}

void nw_mean_key(size_t n, size_t d, const float *k, size_t ldk, float *centre) {
    for (size_t j = 0; j < d; j++) {
        double sum = 0.0;
        for (size_t i = 0; i < n; i++)
            sum += (double)k[i * ldk + j];
        centre[j] = n > 0 ? (float)(sum / (double)n) : 0.0f;
    }
}

void nw_rescale_rows(size_t rows, size_t d, const float *x, size_t ldx, const float *centre,
                     const float *inv_h, float *out, float *norms) {
    for (size_t i = 0; i < rows; i++) {
        double norm = 0.0;
        for (size_t j = 0; j < d; j++) {
            float u = (x[i * ldx + j] - centre[j]) * inv_h[j];
            out[i * d + j] = u;
            norm += (double)u * (double)u;
        }
        norms[i] = (float)norm;
    }
}

void nw_distance_scores(nwattn_score_kind kind, size_t m, size_t n, const float *qnorm,
                        const float *knorm, float *s, size_t lds) {
    const int gaussian = kind == NWATTN_SCORE_GAUSSIAN;
    for (size_t i = 0; i < m; i++) {
        float *row = s + i * lds;
        for (size_t j = 0; j < n; j++) {
            float dist2 = qnorm[i] + knorm[j] + row[j];
            dist2 = dist2 > 0.0f ? dist2 : 0.0f; /* rounding can make it slightly negative */
            row[j] = gaussian ? -0.5f * dist2 : -sqrtf(dist2);
        }
    }
}

void nw_distance_scores_1d(nwattn_score_kind kind, size_t m, size_t n, const float *q,
                           size_t ldq, const float *k, size_t ldk, float inv_h, float *s,
                           size_t lds) {
    const int gaussian = kind == NWATTN_SCORE_GAUSSIAN;
    for (size_t i = 0; i < m; i++) {
        float *row = s + i * lds;
        const float qi = q[i * ldq];
        for (size_t j = 0; j < n; j++) {
            float u = (qi - k[j * ldk]) * inv_h;
            row[j] = gaussian ? -0.5f * u * u : -fabsf(u);
        }
    }
}
