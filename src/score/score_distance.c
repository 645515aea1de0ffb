/* The distance machinery of the Gaussian and Laplace scores (score_distance.h). */
#include <float.h>
#include <math.h>

#include "blas/blas_kernels.h"
#include "checks.h"
#include "core/range.h"
#include "score_distance.h"

static int positive_finite(float x) { return isfinite(x) && x > 0.0f; }

nwattn_status nw_distance_check(nw_call *call, const nwattn_score *score, size_t d,
                                nw_score *out) {
    nwattn_context *ctx = call->ctx;
    if (score->bandwidths != NULL) {
        /* The array's extent is checked before any of it is read. */
        NW_TRY(nw_input_array(call, "score.bandwidths", score->bandwidths, sizeof(float), d));
        for (size_t j = 0; j < d; j++)
            if (!positive_finite(score->bandwidths[j]))
                return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER,
                               "bandwidths[%zu] = %g is not finite and > 0", j,
                               (double)score->bandwidths[j]);
    } else if (!positive_finite(score->bandwidth)) {
        return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER, "bandwidth %g is not finite and > 0",
                       (double)score->bandwidth);
    }
    out->bandwidth = score->bandwidth;
    out->bandwidths = score->bandwidths;
    return NWATTN_OK;
}

static double inverse_bandwidth(const nw_score *score, size_t l) {
    return 1.0 / (double)(score->bandwidths ? score->bandwidths[l] : score->bandwidth);
}

double nw_distance_ref_t(const nw_score *score, size_t d, const float *q, const float *k) {
    /* Cannot overflow double for float data: each term is below (2·FLT_MAX / FLT_TRUE_MIN)^2. */
    double sum = 0.0;
    for (size_t l = 0; l < d; l++) {
        const double u = ((double)q[l] - (double)k[l]) * inverse_bandwidth(score, l);
        sum += u * u;
    }
    return sum;
}

size_t nw_distance_info_doubles(size_t d) {
    return 2 * d; /* 1/h, then the centre */
}

static double max_rescaled(size_t rows, size_t d, const float *x, size_t ldx,
                           const double *centre, const double *inv_h) {
    double largest = 0.0;
    for (size_t i = 0; i < rows; i++)
        for (size_t l = 0; l < d; l++)
            largest = fmax(largest, fabs(((double)x[i * ldx + l] - centre[l]) * inv_h[l]));
    return largest;
}

void nw_distance_keys_info(const nw_score *score, size_t n, size_t d, const float *k,
                           size_t ldk, double *store, nw_keys_info *info) {
    double *inv_h = store, *centre = store + d;
    for (size_t l = 0; l < d; l++)
        inv_h[l] = inverse_bandwidth(score, l);
    info->inv_h = inv_h;
    info->max_abs = nw_max_abs(n, d, k, ldk);
    info->finite = info->max_abs >= 0.0;
    info->exponent = 0;
    info->centre = NULL;
    if (d <= NW_DIRECT_MAX_D || !info->finite)
        return;
    for (size_t l = 0; l < d; l++) {
        double sum = 0.0;
        for (size_t j = 0; j < n; j++)
            sum += (double)k[j * ldk + l];
        centre[l] = n > 0 ? sum / (double)n : 0.0;
    }
    info->centre = centre;
    info->exponent = nw_safe_exponent(max_rescaled(n, d, k, ldk, centre, inv_h));
}

int nw_distance_row_fast(const nw_score *score, size_t d, const float *q,
                         const nw_keys_info *info) {
    (void)score;
    const double max_q = nw_max_abs(1, d, q, d);
    if (max_q < 0.0)
        return 0;
    if (info->centre != NULL) /* the expansion: q' at the keys' exponent stays safe */
        return ldexp(max_rescaled(1, d, q, d, info->centre, info->inv_h), -info->exponent) <=
               ldexp(1.0, NW_SAFE_EXPONENT);
    /* direct: 1/h is a float and the largest |u| <= (|q| + |k|) / h is safe to square */
    double largest = 0.0;
    for (size_t l = 0; l < d; l++) {
        if (info->inv_h[l] > FLT_MAX)
            return 0;
        largest = fmax(largest, info->inv_h[l]);
    }
    const double bound = (max_q + info->max_abs) * largest;
    return bound == 0.0 || nw_in_range(bound, NW_SAFE_EXPONENT);
}

size_t nw_distance_prep_floats(size_t n, size_t d) {
    size_t floats;
    if (!nw_mul(n, d, &floats) || !nw_add(floats, n, &floats))
        return SIZE_MAX;
    return floats;
}

size_t nw_distance_row_floats(size_t m, size_t d) {
    size_t floats;
    if (!nw_mul(m, d, &floats) || !nw_add(floats, m, &floats) || !nw_add(floats, d, &floats))
        return SIZE_MAX;
    return floats;
}

/* out = (x - centre) / h · 2^-exponent row by row (pitch d); norms = squared row lengths. */
static void rescale_rows(size_t rows, size_t d, const float *x, size_t ldx,
                         const nw_keys_info *info, float *out, float *norms) {
    const double pow2 = ldexp(1.0, -info->exponent); /* exact, and no libm call per entry */
    for (size_t i = 0; i < rows; i++) {
        double norm = 0.0;
        for (size_t l = 0; l < d; l++) {
            const double u = ((double)x[i * ldx + l] - info->centre[l]) * info->inv_h[l];
            const float stored = (float)(u * pow2);
            out[i * d + l] = stored;
            norm += (double)stored * (double)stored;
        }
        norms[i] = (float)norm;
    }
}

void nw_distance_prepare(const nw_score *score, const nw_keys_info *info, const nw_simd *simd,
                         size_t n, size_t d, const float *k, size_t ldk, float *kp) {
    (void)score;
    if (info->centre != NULL) /* rescaled rows, then their norms */
        rescale_rows(n, d, k, ldk, info, kp, kp + n * d);
    else /* direct: the keys transposed, d × n */
        simd->transpose(k, n, d, ldk, kp, n);
}

void nw_distance_prepare_rows(const nw_score *score, const nw_keys_info *info, size_t m,
                              size_t d, const float *q, size_t ldq, float *qs) {
    (void)score;
    if (info->centre != NULL) { /* rescaled rows, then their norms */
        rescale_rows(m, d, q, ldq, info, qs, qs + m * d);
        return;
    }
    for (size_t l = 0; l < d; l++) /* direct: 1/h in float (row_fast saw it is one) */
        qs[l] = (float)info->inv_h[l];
}

/* Row q against the first n of np transposed keys kt (d × np): s = -t/2 or -sqrt(t),
 * t = sum_l u_l^2. */
static void direct_row(int gaussian, size_t n, size_t np, size_t d, const float *restrict q,
                       const float *restrict inv_h, const float *restrict kt,
                       float *restrict s) {
    for (size_t j = 0; j < n; j++)
        s[j] = 0.0f;
    for (size_t l = 0; l < d; l++) {
        const float ql = q[l], ih = inv_h[l];
        const float *restrict kl = kt + l * np;
        for (size_t j = 0; j < n; j++) {
            const float u = (ql - kl[j]) * ih;
            s[j] += u * u;
        }
    }
    if (gaussian)
        for (size_t j = 0; j < n; j++)
            s[j] *= -0.5f;
    else
        for (size_t j = 0; j < n; j++)
            s[j] = -sqrtf(s[j]);
}

float nw_dist1_bound(int gaussian, float u, float inv_h, float lo, float hi) {
    if (u >= lo && u <= hi)
        return 0.0f;
    const float d = u - (u < lo ? lo : hi); /* the nearer end: every step below is monotone */
    return gaussian ? (d * nw_dist1_coefficient(inv_h)) * d : -fabsf(d) * inv_h;
}

void nw_distance_block(int gaussian, const nw_keys_info *info, const nw_simd *simd, size_t m,
                       size_t n, size_t d, const float *q, size_t ldq, const float *qs,
                       const float *kp, size_t np, float *t, size_t ldt) {
    if (info->centre == NULL) { /* direct; qs holds 1/h */
        for (size_t i = 0; i < m; i++) {
            if (d == 1)
                (void)simd->dist1(gaussian, q[i * ldq], qs[0], kp, n, t + i * ldt);
            else
                direct_row(gaussian, n, np, d, q + i * ldq, qs, kp, t + i * ldt);
        }
        return;
    }
    const float *qp = qs, *qnorm = qs + m * d;
    const float *knorm = kp + np * d;
    nw_blas_sgemm(1, m, n, d, -2.0f, qp, d, kp, d, 0.0f, t, ldt); /* -2 q'·k' */
    for (size_t i = 0; i < m; i++) {
        float *row = t + i * ldt;
        for (size_t j = 0; j < n; j++) {
            float dist2 = qnorm[i] + knorm[j] + row[j];
            dist2 = dist2 > 0.0f ? dist2 : 0.0f; /* rounding can make it slightly negative */
            row[j] = gaussian ? -0.5f * dist2 : -sqrtf(dist2);
        }
    }
}
