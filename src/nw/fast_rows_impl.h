/* The fast row engine's implementation, compiled once per instruction set: included by
 * fast_rows.c (the x86-64 or other baseline), fast_rows_avx2.c and fast_rows_avx512.c, each
 * defining NW_FAST_ISA. Kernel weights in float, a chunk of training points at a time, in
 * loops the compiler vectorises; moment sums in float lanes flushed to double every chunk
 * (local linear: double). With d == 1 the training set is sorted (nw_train) and a query visits
 * only its window: the support of a compact kernel, or the points within t - t_near < 2T
 * (Gaussian) or sqrt(t) - sqrt(t_near) < T (Laplace; T + 8 for the Matérn kernels) of its
 * nearest point. */
#ifndef NW_FAST_ISA
#error "define NW_FAST_ISA before including fast_rows_impl.h"
#endif

#include <float.h>
#include <math.h>

#include "fast_isa.h"
#include "fast_math.h"

#define CHUNK NW_FAST_CHUNK /* training points per chunk: the buffers stay in L1 */
#define LANES 16            /* float partial sums per reduction */

#if defined(__GNUC__)
#define NW_INLINE static inline __attribute__((always_inline))
#else
#define NW_INLINE static inline
#endif

/* Buffers: z (CHUNK doubles) first, then CHUNK floats each: u (d rows), t, k, g, w; then
 * trow (n floats, d > 1); then (d == 2) two positions per strip: the runs a query visits. */
typedef struct chunk_bufs {
    double *z;
    float *u, *t, *k, *g, *w, *trow;
    size_t *runs;
} chunk_bufs;

NW_INLINE chunk_bufs carve(const nw_fast *f) {
    chunk_bufs b;
    b.z = (double *)(void *)f->buf;
    b.u = f->buf + 2 * CHUNK;
    b.t = b.u + f->model->d * CHUNK;
    b.k = b.t + CHUNK;
    b.g = b.k + CHUNK;
    b.w = b.g + CHUNK;
    b.trow = b.w + CHUNK;
    b.runs = (size_t *)(void *)(b.trow + (f->train->n + 1) / 2 * 2);
    return b;
}

/* ---- Reductions: float lanes, double result ------------------------------------------------ */
NW_INLINE double sum_f(size_t len, const float *restrict a) {
    float acc[LANES] = {0};
    size_t j = 0;
    for (; j + LANES <= len; j += LANES)
        for (size_t l = 0; l < LANES; l++)
            acc[l] += a[j + l];
    double total = 0.0;
    for (; j < len; j++)
        total += (double)a[j];
    for (size_t l = 0; l < LANES; l++)
        total += (double)acc[l];
    return total;
}

NW_INLINE double dot_f(size_t len, const float *restrict a, const float *restrict b) {
    float acc[LANES] = {0};
    size_t j = 0;
    for (; j + LANES <= len; j += LANES)
        for (size_t l = 0; l < LANES; l++)
            acc[l] += a[j + l] * b[j + l];
    double total = 0.0;
    for (; j < len; j++)
        total += (double)a[j] * (double)b[j];
    for (size_t l = 0; l < LANES; l++)
        total += (double)acc[l];
    return total;
}

NW_INLINE double dot_fd(size_t len, const double *restrict a, const float *restrict b) {
    double acc[LANES / 2] = {0};
    size_t j = 0;
    for (; j + LANES / 2 <= len; j += LANES / 2)
        for (size_t l = 0; l < LANES / 2; l++)
            acc[l] += a[j + l] * (double)b[j + l];
    double total = 0.0;
    for (; j < len; j++)
        total += a[j] * (double)b[j];
    for (size_t l = 0; l < LANES / 2; l++)
        total += acc[l];
    return total;
}

/* The local linear sums of d == 1 with one output, in double: sum k, k u, k u^2, k y, k u y.
 * Written with vector extensions: compilers do not vectorise five double reductions alone. */
#if defined(__GNUC__)
typedef float nw_v4f __attribute__((vector_size(16)));
typedef double nw_v4d __attribute__((vector_size(32)));

NW_INLINE void moments_2x1(size_t len, const float *restrict k, const float *restrict u,
                           const float *restrict y, double sums[5]) {
    nw_v4d acc[2][5];
    memset(acc, 0, sizeof acc);
    size_t j = 0;
    for (; j + 8 <= len; j += 8)
        for (size_t h = 0; h < 2; h++) {
            nw_v4f kf, uf, yf;
            memcpy(&kf, k + j + 4 * h, sizeof kf);
            memcpy(&uf, u + j + 4 * h, sizeof uf);
            memcpy(&yf, y + j + 4 * h, sizeof yf);
            const nw_v4d kv = __builtin_convertvector(kf, nw_v4d);
            const nw_v4d uv = __builtin_convertvector(uf, nw_v4d);
            const nw_v4d yv = __builtin_convertvector(yf, nw_v4d), ku = kv * uv;
            acc[h][0] += kv;
            acc[h][1] += ku;
            acc[h][2] += ku * uv;
            acc[h][3] += kv * yv;
            acc[h][4] += ku * yv;
        }
    for (size_t e = 0; e < 5; e++)
        for (size_t l = 0; l < 4; l++)
            sums[e] += acc[0][e][l] + acc[1][e][l];
    for (; j < len; j++) {
        const double kj = (double)k[j], ku = kj * (double)u[j];
        sums[0] += kj, sums[1] += ku, sums[2] += ku * (double)u[j];
        sums[3] += kj * (double)y[j], sums[4] += ku * (double)y[j];
    }
}
#else
NW_INLINE void moments_2x1(size_t len, const float *restrict k, const float *restrict u,
                           const float *restrict y, double sums[5]) {
    for (size_t j = 0; j < len; j++) {
        const double kj = (double)k[j], ku = kj * (double)u[j];
        sums[0] += kj, sums[1] += ku, sums[2] += ku * (double)u[j];
        sums[3] += kj * (double)y[j], sums[4] += ku * (double)y[j];
    }
}
#endif

/* m += sum_j wv_j z z', b += sum_j wv_j z y_j' over one chunk; z = (1, u rows).
 * Local constant (p == 1): float lanes. Local linear: the products in double (a product of two
 * floats is exact in double), so that the moment matrix is exactly that of the float weights
 * and coordinates: rounding then moves the points slightly instead of breaking the matrix,
 * whose small eigenvalues decide the local linear fit far from the data. */
NW_INLINE void accumulate(const nw_model *model, size_t len, const float *restrict wv,
                          const float *u, const float *y, size_t ldy, double *restrict tmp,
                          double *m, double *b) {
    const size_t p = model->p, dv = model->dv;
    if (p == 1) {
        m[0] += sum_f(len, wv);
        for (size_t c = 0; c < dv; c++)
            b[c] += dot_f(len, wv, y + c * ldy);
        return;
    }
    if (p == 2 && dv == 1) { /* d == 1, one output: all five sums in one pass */
        double sums[5] = {0};
        moments_2x1(len, wv, u, y, sums);
        m[0] += sums[0], m[2] += sums[1], m[3] += sums[2], b[0] += sums[3], b[1] += sums[4];
        return;
    }
    for (size_t a = 0; a < p; a++) {
        const float *restrict ua = a > 0 ? u + (a - 1) * CHUNK : wv;
        if (a > 0)
            for (size_t j = 0; j < len; j++)
                tmp[j] = (double)wv[j] * (double)ua[j];
        else
            for (size_t j = 0; j < len; j++)
                tmp[j] = (double)wv[j];
        for (size_t c = a; c < p; c++) {
            if (c == 0) {
                double sum = 0.0;
                for (size_t j = 0; j < len; j++)
                    sum += tmp[j];
                m[0] += sum;
            } else {
                m[a + c * p] += dot_fd(len, tmp, u + (c - 1) * CHUNK);
            }
        }
        for (size_t c = 0; c < dv; c++)
            b[a + c * p] += dot_fd(len, tmp, y + c * ldy);
    }
}

/* ---- Kernel weights ------------------------------------------------------------------------ */
/* k = K(t) / K(t_near) (shift: t_near for the Gaussian, sqrt(t_near) for Laplace) and, with
 * g != NULL, g = -2 K'(t) on the same scale. */
NW_INLINE void kernel_chunk(nwattn_kernel kernel, size_t len, const float *restrict t, float shift,
                            float *restrict k, float *restrict g) {
    switch (kernel) {
    case NWATTN_KERNEL_GAUSSIAN:
        for (size_t j = 0; j < len; j++)
            k[j] = nw_expf_neg(-0.5f * (t[j] - shift));
        if (g != NULL)
            for (size_t j = 0; j < len; j++)
                g[j] = k[j];
        break;
    case NWATTN_KERNEL_LAPLACE:
        for (size_t j = 0; j < len; j++) {
            float s = sqrtf(t[j]);
            k[j] = nw_expf_neg(shift - s);
            if (g != NULL) /* K / sqrt(t); at t == 0 it multiplies u_k^2 == 0 */
                g[j] = k[j] / (s + FLT_MIN);
        }
        break;
    case NWATTN_KERNEL_MATERN32:
        for (size_t j = 0; j < len; j++) {
            float s = sqrtf(t[j]), e = nw_expf_neg(shift - s);
            k[j] = (1.0f + s) * e;
            if (g != NULL)
                g[j] = e;
        }
        break;
    case NWATTN_KERNEL_MATERN52:
        for (size_t j = 0; j < len; j++) {
            float s = sqrtf(t[j]), e = nw_expf_neg(shift - s);
            k[j] = (1.0f + s + t[j] * (1.0f / 3.0f)) * e;
            if (g != NULL)
                g[j] = (1.0f + s) * e * (1.0f / 3.0f);
        }
        break;
    case NWATTN_KERNEL_EPANECHNIKOV:
        for (size_t j = 0; j < len; j++)
            k[j] = 1.0f - nw_min_nonneg(t[j], 1.0f);
        if (g != NULL)
            for (size_t j = 0; j < len; j++)
                g[j] = 2.0f * (float)(t[j] < 1.0f);
        break;
    case NWATTN_KERNEL_TRICUBE:
        for (size_t j = 0; j < len; j++) {
            float tc = nw_min_nonneg(t[j], 1.0f);
            float s = sqrtf(tc);
            float a = 1.0f - tc * s;
            k[j] = a * a * a;
            if (g != NULL)
                g[j] = 9.0f * s * a * a;
        }
        break;
    case NWATTN_KERNEL_UNIFORM:
        for (size_t j = 0; j < len; j++)
            k[j] = (float)(t[j] <= 1.0f);
        if (g != NULL)
            for (size_t j = 0; j < len; j++)
                g[j] = 0.0f;
        break;
    }
}

/* ---- Which points a query visits ----------------------------------------------------------- */
/* First index with x[i] >= v (lower) or x[i] > v (upper) in the sorted x[0..n). */
NW_INLINE size_t bound(const float *x, size_t n, double v, int upper) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (upper ? (double)x[mid] <= v : (double)x[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

NW_INLINE float scaled_sq(float xj, float q, float inv_h) {
    float u = (xj - q) * inv_h;
    return u * u;
}

/* d == 1: the window [lo, hi) and the shift of query q. */
NW_INLINE void window_1d(const nw_fast *f, float q, float inv_h, size_t skip, size_t *lo,
                         size_t *hi, float *shift) {
    const float *x = f->train->x;
    const size_t n = f->train->n;
    const nwattn_kernel kernel = f->model->kernel;
    const double h = 1.0 / (double)inv_h;
    double radius;
    *shift = 0.0f;
    if (nw_kernel_compact(kernel)) {
        radius = h;
    } else {
        /* The nearest point other than skip is next to where q would be inserted. */
        size_t pos = bound(x, n, (double)q, 0);
        float t_near = INFINITY;
        size_t left = pos > 0 ? pos - 1 : SIZE_MAX, right = pos;
        if (left != SIZE_MAX && left == skip) /* (skip is SIZE_MAX when nothing is left out) */
            left = left > 0 ? left - 1 : SIZE_MAX;
        if (right == skip)
            right++;
        if (left != SIZE_MAX)
            t_near = scaled_sq(x[left], q, inv_h);
        if (right < n) {
            float t = scaled_sq(x[right], q, inv_h);
            t_near = t < t_near ? t : t_near;
        }
        if (!(t_near < INFINITY)) { /* no other point */
            *lo = *hi = 0;
            return;
        }
        const double r_near = sqrt((double)t_near) * h, tail = (double)f->tail;
        if (kernel == NWATTN_KERNEL_GAUSSIAN) {
            radius = sqrt(r_near * r_near + 2.0 * tail * h * h);
            *shift = t_near;
        } else { /* the Laplace family; the Matérn polynomials (below e^8 there) widen it */
            radius = r_near + (tail + (kernel == NWATTN_KERNEL_LAPLACE ? 0.0 : 8.0)) * h;
            *shift = sqrtf(t_near);
        }
    }
    radius *= 1.0 + 1e-6; /* rounding margin: points just outside get K == 0 or negligible */
    *lo = bound(x, n, (double)q - radius, 0);
    *hi = bound(x, n, (double)q + radius, 1);
}

/* d > 1: trow[j] = t of every point (skip: +inf); returns the shift. */
NW_INLINE float fill_trow(const nw_fast *f, const float *q, const float *inv_h, size_t skip,
                          float *restrict trow) {
    const size_t n = f->train->n, d = f->model->d;
    for (size_t j = 0; j < n; j++)
        trow[j] = 0.0f;
    for (size_t k = 0; k < d; k++) {
        const float *restrict xk = f->train->x + k * n;
        const float qk = q[k], ih = inv_h[k];
        for (size_t j = 0; j < n; j++) {
            float u = (xk[j] - qk) * ih;
            trow[j] += u * u;
        }
    }
    if (skip < n)
        trow[skip] = INFINITY;
    const nwattn_kernel kernel = f->model->kernel;
    if (nw_kernel_compact(kernel))
        return 0.0f;
    uint32_t least = nw_float_bits(INFINITY); /* t >= 0: bit patterns order like values */
    for (size_t j = 0; j < n; j++) {
        uint32_t bits = nw_float_bits(trow[j]);
        least = bits < least ? bits : least;
    }
    float t_near = nw_bits_float(least);
    if (!(t_near < INFINITY))
        return 0.0f;
    return kernel == NWATTN_KERNEL_GAUSSIAN ? t_near : sqrtf(t_near);
}

/* u rows (when wanted) and t of the chunk of points j0 .. j0+len-1; returns t. */
NW_INLINE const float *chunk_coordinates(const nw_fast *f, const chunk_bufs *b, const float *q,
                                         const float *inv_h, size_t j0, size_t len, int want_u) {
    const size_t n = f->train->n, d = f->model->d;
    if (d == 1) {
        const float *restrict x = f->train->x + j0;
        float *restrict u = b->u, *restrict t = b->t;
        const float q0 = q[0], ih = inv_h[0];
        for (size_t j = 0; j < len; j++) {
            u[j] = (x[j] - q0) * ih;
            t[j] = u[j] * u[j];
        }
        return b->t;
    }
    if (want_u) {
        for (size_t k = 0; k < d; k++) {
            const float *restrict xk = f->train->x + k * n + j0;
            float *restrict uk = b->u + k * CHUNK;
            const float qk = q[k], ih = inv_h[k];
            for (size_t j = 0; j < len; j++)
                uk[j] = (xk[j] - qk) * ih;
        }
    }
    return b->trow + j0;
}

/* First strip whose largest y (strip_y[2s + 1]) is >= v; strips when none is. */
NW_INLINE size_t strip_from(const float *strip_y, size_t strips, double v) {
    size_t lo = 0, hi = strips;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if ((double)strip_y[2 * mid + 1] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* d == 2: the runs of positions (b->runs, two per run) of the strips' points that can lie in
 * query q's window, the window as in window_1d (a disc of radius R in the scaled
 * coordinates: R = 1 for the compact kernels, else from t_up, the t of a point found near q,
 * which is at least t_near, so that the window holds every point window_1d's rule keeps);
 * *shift as fill_trow's (the least t over the runs). Returns the number of runs, or SIZE_MAX
 * when the runs would hold more than half of the points (the plain rows then). */
NW_INLINE size_t cell_runs(const nw_fast *f, const chunk_bufs *b, const float *q,
                           const float *inv_h, size_t skip, float *shift) {
    const nw_train *tr = f->train;
    const size_t n = tr->n, strips = tr->strips;
    const size_t *start = tr->strip;
    const float *sy = tr->strip_y, *x0 = tr->x;
    const nwattn_kernel kernel = f->model->kernel;
    const double q0 = (double)q[0], q1 = (double)q[1];
    const double ih0 = (double)inv_h[0], ih1 = (double)inv_h[1];
    double radius = 1.0;
    *shift = 0.0f;
    if (!nw_kernel_compact(kernel)) {
        size_t s0 = strip_from(sy, strips, q1);
        if (s0 == strips)
            s0 = strips - 1;
        float t_up = INFINITY;
        for (size_t s = s0 > 0 ? s0 - 1 : 0; s <= s0 + 1 && s < strips; s++) {
            const size_t lo = start[s], hi = start[s + 1];
            const size_t pos = lo + bound(x0 + lo, hi - lo, q0, 0);
            for (size_t j = pos > lo + 2 ? pos - 2 : lo; j < pos + 2 && j < hi; j++) {
                if (j == skip)
                    continue;
                const float u0 = (x0[j] - q[0]) * inv_h[0], u1 = (x0[n + j] - q[1]) * inv_h[1];
                const float t = u0 * u0 + u1 * u1;
                t_up = t < t_up ? t : t_up;
            }
        }
        if (!(t_up < INFINITY))
            return SIZE_MAX;
        const double tail = (double)f->tail;
        if (kernel == NWATTN_KERNEL_GAUSSIAN)
            radius = sqrt((double)t_up + 2.0 * tail);
        else
            radius = sqrt((double)t_up) + tail + (kernel == NWATTN_KERNEL_LAPLACE ? 0.0 : 8.0);
    }
    radius *= 1.0 + 1e-6; /* rounding margin, as window_1d's */
    size_t runs = 0, total = 0;
    for (size_t s = strip_from(sy, strips, q1 - radius / ih1); s < strips && (double)sy[2 * s] <= q1 + radius / ih1; s++) {
        const size_t lo = start[s], hi = start[s + 1];
        if (lo == hi)
            continue;
        double gap = 0.0; /* scaled distance in y from q to the strip */
        if ((double)sy[2 * s] > q1)
            gap = ((double)sy[2 * s] - q1) * ih1;
        else if ((double)sy[2 * s + 1] < q1)
            gap = (q1 - (double)sy[2 * s + 1]) * ih1;
        if (!(gap < radius))
            continue;
        const double w = sqrt(radius * radius - gap * gap) / ih0;
        const size_t a = lo + bound(x0 + lo, hi - lo, q0 - w, 0);
        const size_t e = lo + bound(x0 + lo, hi - lo, q0 + w, 1);
        if (a < e) {
            b->runs[2 * runs] = a;
            b->runs[2 * runs + 1] = e;
            runs++;
            total += e - a;
        }
    }
    if (total > n / 2)
        return SIZE_MAX;
    /* t of the runs' points into trow (skip: +inf), as fill_trow for every point: the rows
     * read them from there (chunk_coordinates) */
    float *restrict trow = b->trow;
    uint32_t least = nw_float_bits(INFINITY); /* t >= 0: bit patterns order like values */
    for (size_t r = 0; r < runs; r++)
        for (size_t j = b->runs[2 * r]; j < b->runs[2 * r + 1]; j++) {
            const float u0 = (x0[j] - q[0]) * inv_h[0], u1 = (x0[n + j] - q[1]) * inv_h[1];
            trow[j] = j == skip ? INFINITY : u0 * u0 + u1 * u1;
            const uint32_t bits = nw_float_bits(trow[j]);
            least = bits < least ? bits : least;
        }
    if (!nw_kernel_compact(kernel)) {
        const float t_near = nw_bits_float(least);
        if (t_near < INFINITY)
            *shift = kernel == NWATTN_KERNEL_GAUSSIAN ? t_near : sqrtf(t_near);
    }
    return runs;
}

/* The runs of positions [runs[2r], runs[2r + 1]) query q visits (*count of them) and the
 * shift; for d > 1 their t are in b->trow. */
NW_INLINE const size_t *visit(const nw_fast *f, const chunk_bufs *b, const float *q,
                              const float *inv_h, size_t skip, size_t one[2], size_t *count,
                              float *shift) {
    *count = 1;
    if (f->model->d == 1) {
        window_1d(f, q[0], inv_h[0], skip, &one[0], &one[1], shift);
        return one;
    }
    if (f->train->strips > 0) {
        size_t runs = cell_runs(f, b, q, inv_h, skip, shift);
        if (runs != SIZE_MAX) {
            *count = runs;
            return b->runs;
        }
    }
    *shift = fill_trow(f, q, inv_h, skip, b->trow);
    one[0] = 0;
    one[1] = f->train->n;
    return one;
}

/* ---- Rows ---------------------------------------------------------------------------------- */
void NW_FAST_NAME(nw_fast_row)(const nw_fast *f, const float *q, const float *inv_h, size_t skip,
                               nw_sums *s) {
    const nw_model *model = f->model;
    const size_t n = f->train->n, d = model->d, p = model->p, dv = model->dv;
    const int grad = s->dm != NULL;
    const chunk_bufs b = carve(f);
    size_t one[2], count;
    float shift;
    const size_t *runs = visit(f, &b, q, inv_h, skip, one, &count, &shift);
    for (size_t r = 0; r < count; r++)
    for (size_t j0 = runs[2 * r], hi = runs[2 * r + 1]; j0 < hi; j0 += CHUNK) {
        const size_t len = hi - j0 < CHUNK ? hi - j0 : CHUNK;
        const float *t = chunk_coordinates(f, &b, q, inv_h, j0, len, p > 1 || grad);
        kernel_chunk(model->kernel, len, t, shift, b.k, grad ? b.g : NULL);
        if (skip >= j0 && skip - j0 < len)
            b.k[skip - j0] = b.g[skip - j0] = 0.0f;
        const float *y = f->train->y + j0;
        accumulate(model, len, b.k, b.u, y, n, b.z, s->m, s->b);
        if (!grad)
            continue;
        for (size_t k = 0; k < d; k++) {
            const float *restrict uk = b.u + k * CHUNK;
            for (size_t j = 0; j < len; j++)
                b.w[j] = b.g[j] * (uk[j] * uk[j]);
            accumulate(model, len, b.w, b.u, y, n, b.z, s->dm + k * p * p, s->db + k * p * dv);
        }
    }
}

void NW_FAST_NAME(nw_fast_row_weights)(const nw_fast *f, const float *q, const float *inv_h,
                                       size_t skip, const double *coef, float *weights) {
    const nw_model *model = f->model;
    const size_t n = f->train->n, p = model->p;
    const size_t *perm = f->train->perm;
    const chunk_bufs b = carve(f);
    for (size_t j = 0; j < n; j++)
        weights[j] = 0.0f;
    size_t one[2], count;
    float shift;
    const size_t *runs = visit(f, &b, q, inv_h, skip, one, &count, &shift);
    for (size_t r = 0; r < count; r++)
    for (size_t j0 = runs[2 * r], hi = runs[2 * r + 1]; j0 < hi; j0 += CHUNK) {
        const size_t len = hi - j0 < CHUNK ? hi - j0 : CHUNK;
        const float *t = chunk_coordinates(f, &b, q, inv_h, j0, len, p > 1);
        kernel_chunk(model->kernel, len, t, shift, b.k, NULL);
        for (size_t j = 0; j < len; j++) {
            if (j0 + j == skip)
                continue;
            double factor = coef[0];
            for (size_t a = 1; a < p; a++)
                factor += coef[a] * (double)b.u[(a - 1) * CHUNK + j];
            weights[perm[j0 + j]] = (float)((double)b.k[j] * factor);
        }
    }
}
