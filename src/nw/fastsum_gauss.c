/* The Gaussian kernel sums with a stated error bound: a 1-D improved fast Gauss transform
 * (Yang, Duraiswami and Gumerov's Taylor form) over clusters of the sorted points, with a
 * direct walk where the expansion would not pay or not converge fast enough.
 *
 * Clusters: consecutive sorted points spanning at most h/2 (in units of h, radius
 * rho <= 1/4 about the centre a). With dx = (x_i - a)/h, dy = (q - a)/h and u = dx - dy,
 *   e^{-u^2/2} = e^{-dy^2/2} e^{-dx^2/2} sum_m (dx dy)^m / m!,
 * so a cluster's moments mu_s = sum_i c_i dx_i^s e^{-dx_i^2/2} (about its own centre: no
 * absolute origin) give every sum_i c_i u_i^a e^{-u_i^2/2} at any query in p·(a+1) flops.
 * Truncating after p terms changes each point's term by a relative |R| <= z^p / p! e^z with
 * z = rho |dy| (Lagrange remainder, both signs of dx dy); p is the smallest order with
 * z^p / p! e^z <= eps / 2 (at most NW_FG_PMAX, else the cluster is summed directly). A query
 * visits clusters outwards from its position and stops on a side once the points left there
 * could add at most eps / 2 of the nearest point's weight (count · r^4 e^{-(r^2 - r_near^2)/2}
 * with r the next cluster's edge, r >= 2). Hence for every moment a <= 4 (nwattn.h):
 *   |error| <= eps · max_i |c_i| · sum_i (1 + |u_i|)^a e^{-u_i^2/2}
 * (the binomial recombination (dx - dy)^a costs the (1 + |u|)^a). Everything is scaled by
 * e^{r_near^2/2}, the nearest point's inverse weight: nothing underflows at tiny h.
 * Leave-one-out rows of a dense cluster share one target expansion (below). */
#include <math.h>
#include <string.h>

#include "fastsum.h"
#include "fastsum_pair.h"
#include "threads.h"

#define NW_FG_TERMS (NW_FG_PMAX + NW_FG_AMAX + 1) /* target moments N_s, s < TERMS */
#define NW_FG_MOMENTS (NW_FG_PMAX + NW_FG_TERMS)      /* source moments: M2L needs k + s */

/* 1 / m: the Taylor coefficients' chains multiply (a division per term was their latency). */
static const double inv_int[NW_FG_PMAX + 1] = {
    0.0, 1.0 / 1.0, 1.0 / 2.0, 1.0 / 3.0, 1.0 / 4.0, 1.0 / 5.0, 1.0 / 6.0, 1.0 / 7.0, 1.0 / 8.0, 1.0 / 9.0, 1.0 / 10.0, 1.0 / 11.0, 1.0 / 12.0, 1.0 / 13.0, 1.0 / 14.0, 1.0 / 15.0, 1.0 / 16.0, 1.0 / 17.0, 1.0 / 18.0, 1.0 / 19.0, 1.0 / 20.0, 1.0 / 21.0, 1.0 / 22.0, 1.0 / 23.0, 1.0 / 24.0};

/* The Taylor order for z = rho |dy| (0: do not expand). */
static size_t order_for(double z, double eps) {
    const double target = 0.5 * eps * exp(-z);
    double term = 1.0;
    for (size_t p = 1; p <= NW_FG_PMAX; p++) {
        term *= z * inv_int[p];
        if (term <= target)
            return p;
    }
    return 0;
}

size_t nw_fg_bytes(size_t n, size_t v) {
    size_t words, part;
    /* start (n + 1), moment offsets (n), moments of at most n / MIN + 1 clusters */
    if (!nw_mul(n + 1, 2, &words) || !nw_mul(n / NW_FG_MIN_POINTS + 1, v * NW_FG_MOMENTS, &part) ||
        !nw_add(words, part, &words) || !nw_mul(words, 8, &words))
        return SIZE_MAX;
    return words;
}

void nw_fg_init(nw_fs_gauss *g, void *mem, size_t n, size_t v, const double *x, const double *c) {
    memset(g, 0, sizeof *g);
    g->n = n;
    g->v = v;
    g->x = x;
    g->c = c;
    g->eps = 1e-7;
    g->start = mem;
    g->offset = g->start + n + 1;
    g->mu = (double *)(void *)(g->offset + n);
}

/* Adds point i's powers dx^m e^{-dx^2/2}, m < g->moments, times its coefficients to mu. */
static void add_moments(const nw_fs_gauss *g, size_t i, double centre, double *mu) {
    const size_t v = g->v, n = g->n, M = g->moments;
    const double dx = (g->x[i] - centre) * g->inv_h;
    double pw = exp(-0.5 * dx * dx);
    for (size_t m = 0; m < M; m++, pw *= dx)
        for (size_t a = 0; a < v; a++)
            mu[a * M + m] += g->c[a * n + i] * pw;
}

/* One dense cluster's moments, the general case: four points' power chains side by side. */
static void cluster_moments_any(const nw_fs_gauss *g, size_t k) {
    const size_t v = g->v, n = g->n, s = g->start[k], e = g->start[k + 1], M = g->moments;
    double *mu = g->mu + g->offset[k] * v * M;
    const double centre = 0.5 * (g->x[s] + g->x[e - 1]);
    size_t i = s;
    for (; i + 4 <= e; i += 4) {
        double dx[4], pw[4];
        for (size_t t = 0; t < 4; t++) {
            dx[t] = (g->x[i + t] - centre) * g->inv_h;
            pw[t] = exp(-0.5 * dx[t] * dx[t]);
        }
        for (size_t m = 0; m < M; m++) {
            for (size_t a = 0; a < v; a++) {
                const double *c = g->c + a * n + i;
                mu[a * M + m] += (c[0] * pw[0] + c[1] * pw[1]) + (c[2] * pw[2] + c[3] * pw[3]);
            }
            for (size_t t = 0; t < 4; t++)
                pw[t] *= dx[t];
        }
    }
    for (; i < e; i++)
        add_moments(g, i, centre, mu);
}

#define FG_BATCH 128 /* points whose powers advance together, four moments at a time */

/* acc += the powers p0 .. p0 d^3 times coefficients a and b (the two vectors); returns p0 d^4. */
static inline fs_pair four_powers(fs_pair acc[8], fs_pair a, fs_pair b, fs_pair p0, fs_pair d) {
    const fs_pair p1 = p_mul(p0, d), p2 = p_mul(p1, d), p3 = p_mul(p2, d);
    acc[0] = p_add(acc[0], p_mul(a, p0)), acc[4] = p_add(acc[4], p_mul(b, p0));
    acc[1] = p_add(acc[1], p_mul(a, p1)), acc[5] = p_add(acc[5], p_mul(b, p1));
    acc[2] = p_add(acc[2], p_mul(a, p2)), acc[6] = p_add(acc[6], p_mul(b, p2));
    acc[3] = p_add(acc[3], p_mul(a, p3)), acc[7] = p_add(acc[7], p_mul(b, p3));
    return p_mul(p3, d);
}

/* Adds the moments m0 .. m0 + 3 of the two vectors over points (dx, pw) of a batch (nb of
 * them, coefficients c0 and c1), advancing pw by dx^4; an odd last point in a low half. */
static void four_moments(size_t nb, const double *dx, double *pw, const double *c0,
                         const double *c1, fs_pair acc[8]) {
    size_t t = 0;
    for (; t + 2 <= nb; t += 2)
        p_store(pw + t, four_powers(acc, p_load(c0 + t), p_load(c1 + t), p_load(pw + t),
                                    p_load(dx + t)));
    if (t < nb) {
        double next[2];
        p_store(next, four_powers(acc, p_set(c0[t], 0.0), p_set(c1[t], 0.0), p_set(pw[t], 0.0),
                                  p_set(dx[t], 0.0)));
        pw[t] = next[0];
    }
}

/* One dense cluster's moments with two vectors (1 and y: every one-column fit), two points per
 * pair and the sums in registers, four moments at a time over batches of FG_BATCH points:
 * the loop is bound by its multiplies and adds, each doing two points (the general loop's
 * were scalar, and its sums went through memory). */
static void cluster_moments(const nw_fs_gauss *g, size_t k) {
    const size_t v = g->v, n = g->n, s = g->start[k], e = g->start[k + 1], M = g->moments;
    double *mu = g->mu + g->offset[k] * v * M;
    memset(mu, 0, v * M * sizeof(double));
    if (v != 2) {
        cluster_moments_any(g, k);
        return;
    }
    const double centre = 0.5 * (g->x[s] + g->x[e - 1]);
    for (size_t i0 = s; i0 < e; i0 += FG_BATCH) {
        const size_t nb = e - i0 < FG_BATCH ? e - i0 : FG_BATCH;
        double dx[FG_BATCH], pw[FG_BATCH];
        for (size_t t = 0; t < nb; t++) {
            dx[t] = (g->x[i0 + t] - centre) * g->inv_h;
            pw[t] = exp(-0.5 * dx[t] * dx[t]);
        }
        for (size_t m0 = 0; m0 < M; m0 += 4) {
            fs_pair acc[8];
            for (size_t q = 0; q < 8; q++)
                acc[q] = p_zero();
            four_moments(nb, dx, pw, g->c + i0, g->c + n + i0, acc);
            for (size_t q = 0; q < 4 && m0 + q < M; q++)
                mu[m0 + q] += p_sum(acc[q]), mu[M + m0 + q] += p_sum(acc[4 + q]);
        }
    }
}

typedef struct moments_job {
    nw_fs_gauss *g;
    size_t per; /* clusters per unit */
} moments_job;

static void moments_unit(void *arg, size_t unit, size_t worker) {
    (void)worker;
    const moments_job *job = arg;
    const nw_fs_gauss *g = job->g;
    const size_t end = (unit + 1) * job->per < g->clusters ? (unit + 1) * job->per : g->clusters;
    for (size_t k = unit * job->per; k < end; k++)
        if (g->offset[k] != SIZE_MAX)
            cluster_moments(g, k);
}

/* Clusters (one serial scan) and their moments (each cluster by one worker: the same sums for
 * any thread count) at bandwidth 1 / inv_h. */
void nw_fg_prepare(nw_fs_gauss *g, double inv_h, double eps, nw_workers *team, size_t threads) {
    const size_t n = g->n;
    const double *x = g->x;
    g->inv_h = inv_h;
    g->eps = eps;
    /* How many moments pay: a walk from a cluster ends by r (negligible() with r_near at most
     * the width), so no centre or source it meets is farther than r + 1.5 widths, and the
     * order there bounds every translation's and row's (the few that would need more fall
     * back to exact sums: add_expanded, m2l, nw_fg_target). */
    double r = 2.0;
    while (r < 64.0 && !((double)n * r * r * r * r *
                             exp(-0.5 * (r - NW_FG_WIDTH) * (r + NW_FG_WIDTH)) <=
                         0.5 * eps))
        r += 0.25;
    size_t p = order_for(0.5 * NW_FG_WIDTH * (r + 1.5 * NW_FG_WIDTH), eps / 400.0);
    if (p == 0)
        p = NW_FG_PMAX;
    g->terms = p + NW_FG_AMAX;      /* target moments N_s, s < terms (rows of order <= p) */
    g->moments = p + g->terms - 1; /* source moments: a translation of order <= p reads k + s */
    size_t k = 0, used = 0;
    for (size_t s = 0; s < n; k++) {
        size_t e = s + 1;
        while (e < n && (x[e] - x[s]) * inv_h <= NW_FG_WIDTH)
            e++;
        g->start[k] = s;
        g->offset[k] = e - s >= NW_FG_MIN_POINTS ? used++ : SIZE_MAX;
        s = e;
    }
    g->clusters = k;
    g->start[k] = n;
    moments_job job = {g, k / 64 + 1};
    nw_parallel_for(team, threads, (k + job.per - 1) / job.per, moments_unit, &job);
}

/* A query's running state. */
typedef struct walk {
    const nw_fs_gauss *g;
    double q, near, near2; /* query; r_near and its square */
    size_t skip, amax;
    double *out; /* v × (amax + 1): sum c u^a e^{-(u^2 - r_near^2)/2} */
} walk;

/* Adds point i directly. u^2 - r_near^2 factored: no cancellation when r_near is large. */
static void add_point(const walk *w, size_t i) {
    const nw_fs_gauss *g = w->g;
    const double u = (g->x[i] - w->q) * g->inv_h;
    const double k = exp(-0.5 * (fabs(u) - w->near) * (fabs(u) + w->near));
    for (size_t a = 0; a < g->v; a++) {
        double t = g->c[a * g->n + i] * k;
        for (size_t p = 0; p <= w->amax; p++, t *= u)
            w->out[a * (w->amax + 1) + p] += t;
    }
}

/* Whether the points beyond scaled distance r (count of them) are negligible. */
static int negligible(const walk *w, double r, size_t count) {
    if (!(r >= 2.0) || r * r <= w->near2)
        return 0;
    const double r2 = r * r;
    return (double)count * r2 * r2 * exp(-0.5 * (r - w->near) * (r + w->near)) <=
           0.5 * w->g->eps;
}

/* Cluster k by its expansion; returns 0 (nothing added) when the order would be too high. */
static int add_expanded(const walk *w, size_t k) {
    const nw_fs_gauss *g = w->g;
    const size_t s = g->start[k], e = g->start[k + 1], v = g->v, A = w->amax + 1;
    if (g->offset[k] == SIZE_MAX)
        return 0;
    const double centre = 0.5 * (g->x[s] + g->x[e - 1]);
    const double rho = 0.5 * (g->x[e - 1] - g->x[s]) * g->inv_h;
    const double dy = (w->q - centre) * g->inv_h;
    const size_t p = order_for(rho * fabs(dy), g->eps);
    if (p == 0 || p + NW_FG_AMAX > g->moments)
        return 0;
    const double scale = exp(-0.5 * (dy * dy - w->near2));
    double coef[NW_FG_PMAX]; /* dy^m / m! */
    coef[0] = 1.0;
    for (size_t m = 1; m < p; m++)
        coef[m] = coef[m - 1] * dy * inv_int[m];
    const double *mu = g->mu + g->offset[k] * v * g->moments;
    for (size_t a = 0; a < v; a++, mu += g->moments) {
        double t[NW_FG_AMAX + 1] = {0.0}; /* T_b = sum_m dy^m/m! mu_{m+b}; b innermost: */
        for (size_t m = p; m-- > 0;)          /* A independent chains, not one */
            for (size_t b = 0; b < A; b++)
                t[b] += coef[m] * mu[m + b];
        /* sum c (dx - dy)^j ... = sum_b binom(j, b) (-dy)^{j-b} T_b */
        for (size_t j = 0; j < A; j++) {
            double sum = 0.0, binom = 1.0, pw = 1.0; /* binom(j, b), (-dy)^{j-b} built downwards */
            for (size_t b = j + 1; b-- > 0;) {
                sum += binom * pw * t[b];
                binom = binom * (double)b / (double)(j - b + 1);
                pw *= -dy;
            }
            w->out[a * A + j] += scale * sum;
        }
    }
    if (w->skip >= s && w->skip < e) /* leave the point out: its term is c e^{r_near^2/2} */
        for (size_t a = 0; a < v; a++)
            w->out[a * A] -= g->c[a * g->n + w->skip] * exp(0.5 * w->near2);
    return 1;
}

/* Index of the cluster holding point j. */
size_t nw_fg_cluster_of(const nw_fs_gauss *g, size_t j) {
    size_t lo = 0, hi = g->clusters; /* last k with start[k] <= j */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->start[mid] <= j)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

void nw_fg_moments(const nw_fs_gauss *g, double q, size_t j, size_t skip, size_t amax,
                   double *out) {
    const size_t n = g->n, A = amax + 1;
    memset(out, 0, g->v * A * sizeof(double));
    /* the nearest point other than skip sits next to q's position j (last x_j <= q) */
    double near = INFINITY;
    size_t l = j, r = j == SIZE_MAX ? 0 : j + 1;
    if (l != SIZE_MAX && l == skip)
        l = l > 0 ? l - 1 : SIZE_MAX;
    if (r == skip)
        r++;
    if (l != SIZE_MAX)
        near = fmin(near, (q - g->x[l]) * g->inv_h);
    if (r < n)
        near = fmin(near, (g->x[r] - q) * g->inv_h);
    if (!(near < INFINITY))
        return; /* no other point */
    walk w = {g, q, near, near * near, skip, amax, out};
    /* left: the points <= q, clusters from the one of j downwards. That cluster may continue
     * past q: expanded, it is done whole; summed directly, only up to j here. */
    size_t right_from = 0; /* first point the right side sums */
    if (j != SIZE_MAX) {
        right_from = j + 1;
        for (size_t k = nw_fg_cluster_of(g, j);; k--) {
            const size_t s = g->start[k], last = g->start[k + 1] - 1 < j ? g->start[k + 1] - 1 : j;
            if (negligible(&w, (q - g->x[last]) * g->inv_h, last + 1))
                break;
            if (add_expanded(&w, k)) {
                if (g->start[k + 1] > right_from)
                    right_from = g->start[k + 1];
            } else {
                for (size_t i = last + 1; i-- > s;) { /* nearest first */
                    if (i != skip)
                        add_point(&w, i);
                    if (negligible(&w, (q - g->x[i]) * g->inv_h, i))
                        goto right;
                }
            }
            if (k == 0)
                break;
        }
    }
right:
    if (right_from >= n)
        return;
    for (size_t k = nw_fg_cluster_of(g, right_from); k < g->clusters; k++) {
        const size_t s = g->start[k] > right_from ? g->start[k] : right_from;
        const size_t e = g->start[k + 1];
        if (negligible(&w, (g->x[s] - q) * g->inv_h, n - s))
            break;
        if (s == g->start[k] && add_expanded(&w, k))
            continue;
        for (size_t i = s; i < e; i++) {
            if (i != skip)
                add_point(&w, i);
            if (negligible(&w, (g->x[i] - q) * g->inv_h, n - i - 1))
                return;
        }
    }
}

/* ---- Target expansions (dense clusters of queries: the CV rows) ----------------------------
 * For the queries q = b + h t of a cluster T (centre b, |t| <= rho_T) and w = (x_i - b)/h,
 * e^{-u^2/2} = e^{-t^2/2} e^{-w^2/2} e^{w t}: one set of target moments
 * N_s = sum_i c_i w_i^s e^{-w_i^2/2} over the sources in reach serves every query of T (Taylor
 * in w t, the same remainder as above with z = rho_T max|w|). A source cluster S (centre a,
 * D = (a - b)/h, w = D + dx) adds e^{-D^2/2} sum_j binom(s, j) D^{s-j} sum_k (-D)^k/k! mu_{k+j}
 * (Taylor in D dx); small clusters add their points exactly. Both truncations are held to
 * eps / 400: recombining the moments with t^m / m! can amplify a relative error by at most
 * e^{2 |w t| + t^2/2} < 200 within reach. */

/* Adds source cluster k to N (v × NW_FG_TERMS, g->terms used) about centre b; 0 if its order
 * is too high. */
static int m2l(const nw_fs_gauss *g, size_t k, double b, double eps, const double *binom,
               double *N) {
    const size_t s0 = g->start[k], e = g->start[k + 1], v = g->v, S = g->terms, M = g->moments;
    const double a = 0.5 * (g->x[s0] + g->x[e - 1]);
    const double rho = 0.5 * (g->x[e - 1] - g->x[s0]) * g->inv_h, D = (a - b) * g->inv_h;
    const size_t p = order_for(rho * fabs(D), eps);
    if (p == 0 || p + S > M + 1) /* it reads mu_{k + j}, k < p, j < S */
        return 0;
    double coef[NW_FG_PMAX], pw[NW_FG_TERMS];
    coef[0] = 1.0;
    for (size_t m = 1; m < p; m++)
        coef[m] = coef[m - 1] * -D * inv_int[m];
    pw[0] = 1.0;
    for (size_t m = 1; m < S; m++)
        pw[m] = pw[m - 1] * D;
    const double scale = exp(-0.5 * D * D);
    const double *mu = g->mu + g->offset[k] * v * M;
    for (size_t a2 = 0; a2 < v; a2++, mu += M, N += NW_FG_TERMS) {
        double E[NW_FG_TERMS] = {0.0}; /* E_j = sum_k (-D)^k/k! mu_{k+j}; j innermost */
        for (size_t m = p; m-- > 0;)
            for (size_t j = 0; j < S; j++)
                E[j] += coef[m] * mu[m + j];
        double sum[NW_FG_TERMS] = {0.0}; /* (D + dx)^s by the binomial, s innermost */
        for (size_t j = 0; j < S; j++)
            for (size_t s = j; s < S; s++)
                sum[s] += binom[s * NW_FG_TERMS + j] * pw[s - j] * E[j];
        for (size_t s = 0; s < S; s++)
            N[s] += scale * sum[s];
    }
    return 1;
}

static void add_source_point(const nw_fs_gauss *g, size_t i, double b, double *N) {
    const double w = (g->x[i] - b) * g->inv_h;
    double t = exp(-0.5 * w * w);
    double pw[NW_FG_TERMS];
    for (size_t s = 0; s < g->terms; s++, t *= w)
        pw[s] = t;
    for (size_t a = 0; a < g->v; a++) {
        const double c = g->c[a * g->n + i];
        for (size_t s = 0; s < g->terms; s++)
            N[a * NW_FG_TERMS + s] += c * pw[s];
    }
}

int nw_fg_target(const nw_fs_gauss *g, size_t k, nw_fg_local *loc) {
    const size_t n = g->n, v = g->v, s = g->start[k], e = g->start[k + 1];
    if (g->offset[k] == SIZE_MAX)
        return 0; /* small: its queries walk */
    const double b = 0.5 * (g->x[s] + g->x[e - 1]), lo = g->x[s], hi = g->x[e - 1];
    const double eps = g->eps / 400.0;
    double *N = loc->N, binom[NW_FG_TERMS * NW_FG_TERMS]; /* binom(s, j) at [s·TERMS + j] */
    for (size_t r = 0; r < NW_FG_TERMS; r++) {
        binom[r * NW_FG_TERMS] = binom[r * NW_FG_TERMS + r] = 1.0;
        for (size_t j = 1; j < r; j++)
            binom[r * NW_FG_TERMS + j] =
                binom[(r - 1) * NW_FG_TERMS + j - 1] + binom[(r - 1) * NW_FG_TERMS + j];
    }
    memset(N, 0, v * NW_FG_TERMS * sizeof(double));
    loc->k = k;
    loc->b = b;
    loc->rho = 0.5 * (hi - lo) * g->inv_h;
    double wmax = 0.0; /* the largest |w| of the sources in reach */
    /* the sources in reach on each side: stop where the rest could add eps/2 of the weight of
     * any query's nearest point (r_near <= the cluster width) */
    walk w = {g, b, NW_FG_WIDTH, NW_FG_WIDTH * NW_FG_WIDTH, SIZE_MAX, 0, NULL};
    for (size_t j = k + 1; j-- > 0;) {
        const size_t js = g->start[j], je = g->start[j + 1];
        const double edge = fmax(0.0, (lo - g->x[je - 1]) * g->inv_h);
        if (j != k && negligible(&w, edge, je))
            break;
        wmax = fmax(wmax, (b - g->x[js]) * g->inv_h);
        if (g->offset[j] != SIZE_MAX && m2l(g, j, b, eps, binom, N))
            continue;
        for (size_t i = js; i < je; i++)
            add_source_point(g, i, b, N);
    }
    for (size_t j = k + 1; j < g->clusters; j++) {
        const size_t js = g->start[j], je = g->start[j + 1];
        if (negligible(&w, (g->x[js] - hi) * g->inv_h, n - js))
            break;
        wmax = fmax(wmax, (g->x[je - 1] - b) * g->inv_h);
        if (g->offset[j] != SIZE_MAX && m2l(g, j, b, eps, binom, N))
            continue;
        for (size_t i = js; i < je; i++)
            add_source_point(g, i, b, N);
    }
    for (size_t q = 0; q < NW_FG_SLOTS; q++)
        loc->order[q] = order_for(loc->rho * (double)(q + 1) / NW_FG_SLOTS * wmax, eps);
    const size_t p = loc->order[NW_FG_SLOTS - 1]; /* the rows read N_{m + b}, m < p, b <= amax */
    return p != 0 && p + NW_FG_AMAX <= g->terms;
}

#if defined(__GNUC__)
#define FG_INLINE static inline __attribute__((always_inline))
#else
#define FG_INLINE static inline
#endif

/* The Taylor order of a row at t (its slot's, rounded up: no per-row search). */
static inline size_t row_order(const nw_fg_local *loc, double t) {
    const double slot = loc->rho > 0.0 ? fabs(t) / loc->rho * NW_FG_SLOTS : 0.0;
    return loc->order[slot < NW_FG_SLOTS - 1 ? (size_t)slot : NW_FG_SLOTS - 1];
}

/* Queries q0 and q1 inside loc's cluster span side by side, one per half of each pair (the
 * same query twice with out1 NULL: one), A = amax + 1 a constant (a copy per A keeps the sums
 * in registers); skip0 and skip1 the points left out (the CV rows' own; SIZE_MAX: none). Each
 * query gets exactly the sums it would get alone: beyond its own order its Taylor
 * coefficients are exact zeros, which add nothing. T_b = sum_{m<p} t^m/m! N_{m+b}, the terms
 * in ascending m (the coefficients' chain and the sums overlap). The sums come out times
 * e^{t^2/2}, a factor common to the row (the estimates are its ratios, and |t| <= rho keeps
 * it within e^{1/8}), so a point at the query adds c e^{t^2/2}. */
FG_INLINE void local_pair(const nw_fs_gauss *g, const nw_fg_local *loc, double q0, double q1,
                          size_t skip0, size_t skip1, size_t A, double *out0, double *out1) {
    const size_t n = g->n, v = g->v;
    const double t0 = (q0 - loc->b) * g->inv_h, t1 = (q1 - loc->b) * g->inv_h;
    const size_t p0 = row_order(loc, t0), p1 = row_order(loc, t1), p = p0 > p1 ? p0 : p1;
    fs_pair coef[NW_FG_PMAX]; /* t^m / m!, 0 from the half's own order on */
    coef[0] = p_dup(1.0);
    for (size_t m = 1; m < p; m++)
        coef[m] = p_mul(coef[m - 1],
                        p_set(m < p0 ? t0 * inv_int[m] : 0.0, m < p1 ? t1 * inv_int[m] : 0.0));
    const fs_pair minus_t = p_set(-t0, -t1);
    for (size_t a = 0; a < v; a++) {
        const double *N = loc->N + a * NW_FG_TERMS;
        fs_pair T[NW_FG_AMAX + 1];
        for (size_t b = 0; b < A; b++)
            T[b] = p_dup(N[b]);
        for (size_t m = 1; m < p; m++)
            for (size_t b = 0; b < A; b++)
                T[b] = p_add(T[b], p_mul(coef[m], p_dup(N[m + b])));
        for (size_t i = 0; i < A; i++) { /* (w - t)^i = sum_b binom(i, b) (-t)^{i-b} w^b */
            fs_pair sum = p_zero(), pw = p_dup(1.0);
            double binom = 1.0;
            for (size_t b = i + 1; b-- > 0;) {
                sum = p_add(sum, p_mul(p_mul(p_dup(binom), pw), T[b]));
                binom = binom * (double)b / (double)(i - b + 1);
                pw = p_mul(pw, minus_t);
            }
            double h[2];
            p_store(h, sum);
            out0[a * A + i] = h[0];
            if (out1 != NULL)
                out1[a * A + i] = h[1];
        }
    }
    if (skip0 != SIZE_MAX) { /* leave the row's own point out */
        const double self = exp(0.5 * t0 * t0);
        for (size_t a = 0; a < v; a++)
            out0[a * A] -= g->c[a * n + skip0] * self;
    }
    if (out1 != NULL && skip1 != SIZE_MAX) {
        const double self = exp(0.5 * t1 * t1);
        for (size_t a = 0; a < v; a++)
            out1[a * A] -= g->c[a * n + skip1] * self;
    }
}

#define FG_LOCAL_CASES(Q0, Q1, S0, S1)                                                           \
    switch (amax) {                                                                                \
    case 0:                                                                                        \
        local_pair(g, loc, Q0, Q1, S0, S1, 1, out0, out1);                                         \
        return;                                                                                    \
    case 2:                                                                                        \
        local_pair(g, loc, Q0, Q1, S0, S1, 3, out0, out1);                                         \
        return;                                                                                    \
    case 4:                                                                                        \
        local_pair(g, loc, Q0, Q1, S0, S1, 5, out0, out1);                                         \
        return;                                                                                    \
    default:                                                                                       \
        local_pair(g, loc, Q0, Q1, S0, S1, amax + 1, out0, out1);                                  \
    }

void nw_fg_moments_local2(const nw_fs_gauss *g, const nw_fg_local *loc, size_t j0, size_t j1,
                          size_t amax, double *out0, double *out1) {
    FG_LOCAL_CASES(g->x[j0], g->x[j1], j0, j1)
}

void nw_fg_moments_local(const nw_fs_gauss *g, const nw_fg_local *loc, size_t j, size_t amax,
                         double *out) {
    double *out0 = out, *out1 = NULL; /* both halves the same row */
    FG_LOCAL_CASES(g->x[j], g->x[j], j, j)
}

void nw_fg_moments_at_local(const nw_fs_gauss *g, const nw_fg_local *loc, double q, size_t amax,
                            double *out) {
    double *out0 = out, *out1 = NULL;
    FG_LOCAL_CASES(q, q, SIZE_MAX, SIZE_MAX)
}
#undef FG_LOCAL_CASES

int nw_fg_inside(const nw_fs_gauss *g, size_t k, double q) {
    return q >= g->x[g->start[k]] && q <= g->x[g->start[k + 1] - 1];
}
