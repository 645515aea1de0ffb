/* The oracle's core: the definitions in long double, raw pointers, no cmocka and no call into
 * libnwattn (only its public types are read). See oracle.h for the contract and the bounds. */
#include "oracle.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void *or_alloc(size_t count, size_t size) {
    void *p = calloc(count > 0 ? count : 1, size);
    if (p == NULL)
        abort(); /* the oracle has no error path: a test without memory cannot go on */
    return p;
}

/* ---- Scores ------------------------------------------------------------------------------ */
static long double or_bandwidth(const nwattn_score *score, size_t l) {
    return score->bandwidths != NULL ? (long double)score->bandwidths[l]
                                     : (long double)score->bandwidth;
}

/* The score of one pair, the coordinates from floats (qf, kf) or long doubles (ql, kl). */
static long double score_of(const nwattn_score *score, size_t d, const float *qf,
                            const float *kf, const long double *ql, const long double *kl,
                            double *abs_dot) {
    long double acc = 0.0L, abs_acc = 0.0L, qq = 0.0L, kk = 0.0L;
    const int product = score->kind == NWATTN_SCORE_DOT || score->kind == NWATTN_SCORE_COSINE;
    for (size_t l = 0; l < d; l++) {
        const long double a = qf != NULL ? (long double)qf[l] : ql[l];
        const long double b = kf != NULL ? (long double)kf[l] : kl[l];
        if (product) {
            acc += a * b;
            abs_acc += fabsl(a * b);
            qq += a * a;
            kk += b * b;
        } else {
            const long double t = (a - b) / or_bandwidth(score, l);
            acc += t * t;
        }
    }
    if (abs_dot != NULL)
        *abs_dot = score->kind == NWATTN_SCORE_DOT ? (double)abs_acc : 0.0;
    switch (score->kind) {
    case NWATTN_SCORE_DOT:
        return (long double)score->scale * acc;
    case NWATTN_SCORE_GAUSSIAN:
        return -0.5L * acc;
    case NWATTN_SCORE_LAPLACE:
        return -sqrtl(acc);
    case NWATTN_SCORE_COSINE: /* a zero norm has no direction: score 0 */
        if (qq == 0.0L || kk == 0.0L)
            return 0.0L;
        if (abs_dot != NULL)
            *abs_dot = (double)(abs_acc / (sqrtl(qq) * sqrtl(kk)));
        return (long double)score->scale * (acc / (sqrtl(qq) * sqrtl(kk)));
    }
    return NAN;
}

long double or_score_ex(const nwattn_score *score, size_t d, const float *q, const float *k,
                        double *abs_dot) {
    return score_of(score, d, q, k, NULL, NULL, abs_dot);
}

long double or_score_ld(const nwattn_score *score, size_t d, const long double *q,
                        const long double *k) {
    return score_of(score, d, NULL, NULL, q, k, NULL);
}

double or_score(const nwattn_score *score, size_t d, const float *q, const float *k) {
    return (double)or_score_ex(score, d, q, k, NULL);
}

/* ---- The softmax row contract ------------------------------------------------------------- */
long double or_softmax_values(size_t n, const long double *x, const unsigned char *live,
                              long double *w, double *range) {
    long double mx = -INFINITY;
    double r = 0.0;
    size_t n_live = 0, n_inf = 0;
    int nan = 0;
    for (size_t j = 0; j < n; j++) {
        w[j] = 0.0L;
        if ((live != NULL && !live[j]) || x[j] == -INFINITY)
            continue;
        n_live++;
        if (isnan(x[j])) {
            nan = 1;
            continue;
        }
        if (x[j] == INFINITY)
            n_inf++;
        if (x[j] > mx)
            mx = x[j];
        if (fabsl(x[j]) > r)
            r = (double)fabsl(x[j]);
    }
    if (range != NULL)
        *range = r;
    if (n_live == 0)
        return -INFINITY;
    if (nan || n_inf > 0) {
        for (size_t j = 0; j < n; j++) {
            if ((live != NULL && !live[j]) || x[j] == -INFINITY)
                continue;
            w[j] = nan ? (long double)NAN : x[j] == INFINITY ? 1.0L / (long double)n_inf : 0.0L;
        }
        return nan ? (long double)NAN : (long double)INFINITY;
    }
    long double sum = 0.0L;
    for (size_t j = 0; j < n; j++) {
        if ((live != NULL && !live[j]) || x[j] == -INFINITY)
            continue;
        w[j] = expl(x[j] - mx);
        sum += w[j];
    }
    for (size_t j = 0; j < n; j++)
        w[j] /= sum;
    return mx + logl(sum);
}

/* ---- One pooling row ---------------------------------------------------------------------- */
double or_pool_row(const nwattn_score *score, size_t d, size_t dv, size_t n, const float *q,
                   const float *k, size_t ldk, const float *v, size_t ldv,
                   const double *additive, const unsigned char *live, double *w, double *o,
                   double *range) {
    long double *x = or_alloc(n, sizeof *x), *wl = or_alloc(n, sizeof *wl);
    for (size_t j = 0; j < n; j++) {
        if (live != NULL && !live[j])
            continue; /* a masked key's score is never looked at */
        x[j] = score != NULL ? or_score_ex(score, d, q, k + j * ldk, NULL) : 0.0L;
        if (additive != NULL)
            x[j] += (long double)additive[j];
    }
    const long double lse = or_softmax_values(n, x, live, wl, range);
    for (size_t j = 0; w != NULL && j < n; j++)
        w[j] = (double)wl[j];
    for (size_t c = 0; o != NULL && c < dv; c++) {
        long double acc = 0.0L;
        for (size_t j = 0; j < n; j++)
            if (wl[j] != 0.0L)
                acc += wl[j] * (long double)v[j * ldv + c];
        o[c] = (double)acc;
    }
    free(x);
    free(wl);
    return (double)lse;
}

/* ---- Masks -------------------------------------------------------------------------------- */
int or_masked(const nwattn_mask *mask, size_t b, size_t m, size_t n, size_t i, size_t j) {
    (void)n;
    if (mask == NULL)
        return 0;
    if ((mask->flags & NWATTN_MASK_LEAVE_ONE_OUT) && j == i)
        return 1;
    if ((mask->flags & NWATTN_MASK_CAUSAL) && j > i)
        return 1;
    if (mask->valid_lens != NULL) {
        size_t len = (mask->flags & NWATTN_MASK_LENS_PER_ROW) ? mask->valid_lens[b * m + i]
                                                               : mask->valid_lens[b];
        if (j >= len)
            return 1;
    }
    if (mask->keep != NULL && mask->keep[b * mask->stride_keep + i * mask->ld_keep + j] == 0)
        return 1;
    return 0;
}

double or_additive(const nwattn_mask *mask, size_t b, size_t i, size_t j) {
    if (mask == NULL || mask->additive == NULL)
        return 0.0;
    return (double)mask->additive[b * mask->stride_additive + i * mask->ld_additive + j];
}

double or_softmax_row(const nwattn_mask *mask, size_t b, size_t m, size_t n, size_t i,
                      const double *s, double *w, double *range) {
    long double *x = or_alloc(n, sizeof *x), *wl = or_alloc(n, sizeof *wl);
    unsigned char *live = or_alloc(n, 1);
    for (size_t j = 0; j < n; j++) {
        live[j] = !or_masked(mask, b, m, n, i, j);
        if (live[j])
            x[j] = (long double)s[j] + (long double)or_additive(mask, b, i, j);
    }
    const long double lse = or_softmax_values(n, x, live, wl, range);
    for (size_t j = 0; j < n; j++)
        w[j] = (double)wl[j];
    free(x);
    free(wl);
    free(live);
    return (double)lse;
}

/* ---- Kernel regression -------------------------------------------------------------------- */
long double or_kernel(nwattn_kernel kernel, long double t) {
    switch (kernel) {
    case NWATTN_KERNEL_GAUSSIAN:
        return expl(-t / 2.0L);
    case NWATTN_KERNEL_LAPLACE:
        return expl(-sqrtl(t));
    case NWATTN_KERNEL_EPANECHNIKOV:
        return t < 1.0L ? 1.0L - t : 0.0L;
    case NWATTN_KERNEL_TRICUBE:
        return t < 1.0L ? powl(1.0L - powl(t, 1.5L), 3.0L) : 0.0L;
    case NWATTN_KERNEL_UNIFORM:
        return t <= 1.0L ? 1.0L : 0.0L;
    case NWATTN_KERNEL_MATERN32:
        return (1.0L + sqrtl(t)) * expl(-sqrtl(t));
    case NWATTN_KERNEL_MATERN52:
        return (1.0L + sqrtl(t) + t / 3.0L) * expl(-sqrtl(t));
    }
    return NAN;
}

long double or_kernel_t(size_t d, const float *q, const float *x, const float *h) {
    long double t = 0.0L;
    for (size_t l = 0; l < d; l++) {
        const long double a = ((long double)q[l] - (long double)x[l]) / (long double)h[l];
        t += a * a;
    }
    return t;
}

int or_solve(size_t p, long double *a, long double *b) {
    for (size_t c = 0; c < p; c++) {
        size_t piv = c;
        for (size_t r = c + 1; r < p; r++)
            if (fabsl(a[r * p + c]) > fabsl(a[piv * p + c]))
                piv = r;
        if (a[piv * p + c] == 0.0L)
            return 0;
        for (size_t l = 0; l < p; l++) {
            long double tmp = a[c * p + l];
            a[c * p + l] = a[piv * p + l];
            a[piv * p + l] = tmp;
        }
        long double tmp = b[c];
        b[c] = b[piv];
        b[piv] = tmp;
        for (size_t r = c + 1; r < p; r++) {
            long double f = a[r * p + c] / a[c * p + c];
            for (size_t l = c; l < p; l++)
                a[r * p + l] -= f * a[c * p + l];
            b[r] -= f * b[c];
        }
    }
    for (size_t c = p; c-- > 0;) {
        for (size_t l = c + 1; l < p; l++)
            b[c] -= a[c * p + l] * b[l];
        b[c] /= a[c * p + c];
    }
    return 1;
}

int or_nw_direct(nwattn_kernel kernel, nwattn_degree degree, size_t n, size_t d, size_t dv,
                 const float *x, size_t ldx, const float *y, size_t ldy, const float *h,
                 const float *q, size_t skip, double *out) {
    const size_t p = degree == NWATTN_LOCAL_LINEAR ? d + 1 : 1;
    long double *m = or_alloc(p * p, sizeof *m), *b = or_alloc(p * dv, sizeof *b);
    long double *z = or_alloc(p, sizeof *z), *a = or_alloc(p * p, sizeof *a);
    long double *rhs = or_alloc(p, sizeof *rhs);
    /* Gaussian and Laplace weights relative to the nearest point's: log K(t) - log K(t_near). */
    const int shifted = kernel == NWATTN_KERNEL_GAUSSIAN || kernel == NWATTN_KERNEL_LAPLACE ||
                        kernel == NWATTN_KERNEL_MATERN32 || kernel == NWATTN_KERNEL_MATERN52;
    long double t_near = INFINITY;
    for (size_t j = 0; shifted && j < n; j++)
        if (j != skip)
            t_near = fminl(t_near, or_kernel_t(d, q, x + j * ldx, h));
    long double total = 0.0L;
    for (size_t j = 0; j < n; j++) {
        if (j == skip)
            continue;
        const long double t = or_kernel_t(d, q, x + j * ldx, h);
        long double kw = !shifted                           ? or_kernel(kernel, t)
                         : kernel == NWATTN_KERNEL_GAUSSIAN ? expl((t_near - t) / 2.0L)
                                                            : expl(sqrtl(t_near) - sqrtl(t));
        if (kernel == NWATTN_KERNEL_MATERN32) /* the polynomial factor of the Laplace family */
            kw *= 1.0L + sqrtl(t);
        else if (kernel == NWATTN_KERNEL_MATERN52)
            kw *= 1.0L + sqrtl(t) + t / 3.0L;
        total += kw;
        z[0] = 1.0L;
        for (size_t e = 1; e < p; e++)
            z[e] = (long double)x[j * ldx + e - 1] - (long double)q[e - 1];
        for (size_t r = 0; r < p; r++) {
            for (size_t c = 0; c < p; c++)
                m[r * p + c] += kw * z[r] * z[c];
            for (size_t c = 0; c < dv; c++)
                b[r * dv + c] += kw * z[r] * (long double)y[j * ldy + c];
        }
    }
    int ok = total > 0.0L;
    for (size_t c = 0; ok && c < dv; c++) {
        memcpy(a, m, p * p * sizeof *a);
        for (size_t r = 0; r < p; r++)
            rhs[r] = b[r * dv + c];
        ok = or_solve(p, a, rhs);
        out[c] = (double)rhs[0];
    }
    free(m), free(b), free(z), free(a), free(rhs);
    return ok;
}

/* ---- Products ----------------------------------------------------------------------------- */
long double or_dot(size_t k, const float *a, size_t inc_a, const float *b, size_t inc_b,
                   double *abs_sum) {
    long double sum = 0.0L, abs_acc = 0.0L;
    for (size_t l = 0; l < k; l++) {
        const long double p = (long double)a[l * inc_a] * (long double)b[l * inc_b];
        sum += p;
        abs_acc += fabsl(p);
    }
    if (abs_sum != NULL)
        *abs_sum = (double)abs_acc;
    return sum;
}

/* ---- Bounds ------------------------------------------------------------------------------- */
void or_key_mean(size_t n, size_t d, const float *k, size_t ldk, double *mean) {
    for (size_t l = 0; l < d; l++) {
        long double acc = 0.0L;
        for (size_t j = 0; j < n; j++)
            acc += (long double)k[j * ldk + l];
        mean[l] = n > 0 ? (double)(acc / (long double)n) : 0.0;
    }
}

double or_centred_norm2(const nwattn_score *score, size_t d, const float *x, const double *mean) {
    long double acc = 0.0L;
    for (size_t l = 0; l < d; l++) {
        const long double t = ((long double)x[l] - (long double)mean[l]) / or_bandwidth(score, l);
        acc += t * t;
    }
    return (double)acc;
}

double or_bound_score_blas(const nwattn_score *score, size_t d, double s, double abs_dot,
                           double qn, double kn) {
    const double dd = (double)d, fin = 4.0 * OR_U * fabs(s);
    switch (score->kind) {
    case NWATTN_SCORE_DOT:
        return (dd + 4.0) * OR_U * fabs((double)score->scale) * abs_dot + fin;
    case NWATTN_SCORE_COSINE:
        return (dd + 8.0) * OR_U * fabs((double)score->scale) * abs_dot + fin;
    case NWATTN_SCORE_GAUSSIAN:
    case NWATTN_SCORE_LAPLACE:
        break;
    }
    /* D = -2s (Gaussian) or s^2 (Laplace); e_D its error on the fast path. */
    const double dist2 = score->kind == NWATTN_SCORE_GAUSSIAN ? -2.0 * s : s * s;
    const double e_d = d <= OR_DIRECT_MAX_D ? (dd + 8.0) * OR_U * dist2
                                            : (4.0 * dd + 32.0) * OR_U * (qn + kn);
    if (score->kind == NWATTN_SCORE_GAUSSIAN)
        return 0.5 * e_d + fin;
    double t = sqrt(e_d);
    if (s != 0.0 && e_d / fabs(s) < t)
        t = e_d / fabs(s);
    return t + fin;
}

double or_bound_score_blas_pair(const nwattn_score *score, size_t d, const float *q,
                                const float *k, const double *mean) {
    double abs_dot, qn = 0.0, kn = 0.0;
    const double s = (double)or_score_ex(score, d, q, k, &abs_dot);
    if (d > OR_DIRECT_MAX_D && mean != NULL &&
        (score->kind == NWATTN_SCORE_GAUSSIAN || score->kind == NWATTN_SCORE_LAPLACE)) {
        qn = or_centred_norm2(score, d, q, mean);
        kn = or_centred_norm2(score, d, k, mean);
    }
    return or_bound_score_blas(score, d, s, abs_dot, qn, kn);
}

double or_bound_score_ref(const nwattn_score *score, size_t d, double s, double abs_dot) {
    double tol = 4.0 * OR_U * fabs(s);
    if (score->kind == NWATTN_SCORE_DOT)
        tol += ((double)d + 4.0) * 0x1p-52 * fabs((double)score->scale) * abs_dot;
    return tol;
}

/* ---- Tolerances --------------------------------------------------------------------------- */
double or_rtol_weights_ref(double range) {
    return (8.0 + 4.0 * range) * OR_U;
}

double or_rtol_weights_blas(size_t n, double range, double score_err) {
    return expm1(2.0 * score_err) + ((double)n + 16.0 + 8.0 * range) * OR_U;
}

double or_atol_lse_ref(double range) {
    return (8.0 + 4.0 * range) * OR_U;
}

double or_atol_lse_blas(size_t n, double range, double score_err) {
    return score_err + ((double)n + 16.0 + 8.0 * range) * OR_U;
}

double or_atol_out_blas(size_t n, double rtol_w, double vmax) {
    return (rtol_w + ((double)n + 4.0) * OR_U) * vmax;
}

double or_atol_out_ref(size_t n, double rtol_w, double vmax) {
    return (rtol_w + 4.0 * OR_U + (double)n * 0x1p-50) * vmax;
}
