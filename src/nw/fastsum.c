/* The fast-sum engine: checkpoints, block sums and the one-sided moments of a row (fastsum.h). */
#include <math.h>
#include <string.h>

#include "fastsum.h"
#include "threads.h"

/* Beyond this δ, e^{-δ} is 0 in double: the translated sums are not needed (and δ^k could
 * overflow). */
#define NW_FS_DELTA_MAX 800.0

size_t nw_fs_bytes(size_t n, size_t v, size_t k1) {
    size_t blocks = (n + NW_FS_BLOCK - 1) / NW_FS_BLOCK, doubles, part;
    if (!nw_mul(v + 2, n, &doubles) || !nw_mul(blocks + 2, 2 * v * k1, &part) ||
        !nw_add(doubles, part, &doubles) || !nw_mul(doubles, sizeof(double), &doubles))
        return SIZE_MAX;
    return doubles;
}

void nw_fs_init(nw_fastsum *fs, void *mem, size_t n, size_t v, size_t k1) {
    fs->n = n;
    fs->v = v;
    fs->k1 = k1;
    fs->blocks = (n + NW_FS_BLOCK - 1) / NW_FS_BLOCK;
    fs->inv_h = 1.0;
    fs->x = mem;
    fs->c = fs->x + n;
    fs->decay = fs->c + v * n;
    fs->left_ck = fs->decay + n;
    fs->right_ck = fs->left_ck + fs->blocks * v * k1;
    fs->scratch = fs->right_ck + fs->blocks * v * k1;
}

size_t nw_fs_block_doubles(size_t v, size_t k1) { return 2 * (NW_FS_BLOCK + 1) * v * k1; }

void nw_fs_block_init(nw_fs_block *blk, double *mem) {
    blk->b = blk->s = blk->e = 0;
    blk->left = mem;
    blk->right = NULL; /* set by nw_fs_fill, which knows v·k1 */
}

/* out = T_δ(in) for v vectors of K scaled moments: out[k] = sum_{a<=k} δ^{k-a}/(k-a)! in[a].
 * One copy per K (a compile-time constant there, so that the loops unroll). */
static inline void translate_k(size_t v, size_t K, double delta, const double *in, double *out) {
    double pw[NW_FS_KMAX];
    pw[0] = 1.0;
    for (size_t m = 1; m < K; m++)
        pw[m] = pw[m - 1] * delta * (1.0 / (double)m);
    for (size_t a = 0; a < v; a++, in += K, out += K)
        for (size_t k = 0; k < K; k++) {
            double sum = 0.0;
            for (size_t i = 0; i <= k; i++)
                sum += pw[k - i] * in[i];
            out[k] = sum;
        }
}

/* The moment counts K with a copy of their own (inlined, loops unrolled); others take the
 * generic one. */
#define NW_FS_EACH_K(CASE) CASE(1) CASE(2) CASE(3) CASE(4) CASE(5) CASE(6) CASE(7)

static void translate(size_t v, size_t k1, double delta, const double *in, double *out) {
    switch (k1) {
#define NW_FS_CASE(K)                                                                              \
    case K:                                                                                        \
        translate_k(v, K, delta, in, out);                                                         \
        return;
        NW_FS_EACH_K(NW_FS_CASE)
#undef NW_FS_CASE
    default:
        translate_k(v, k1, delta, in, out);
    }
}

/* δ between points j - 1 and j (j >= 1). */
static double gap(const nw_fastsum *fs, size_t j) { return (fs->x[j] - fs->x[j - 1]) * fs->inv_h; }

/* next = e^{-δ} T_δ(prev) + c_j e_0 (prev and next may not alias); decay = e^{-δ}. The
 * recursions' inner step: one copy per K (inlined, so that its loops unroll), chosen by one
 * predictable switch per point instead of a call per vector. */
static inline void step_k(const nw_fastsum *fs, size_t v, size_t K, double delta, double decay,
                          const double *prev, size_t j, double *next) {
    if (decay > 0.0) {
        double pw[NW_FS_KMAX], in[NW_FS_KMAX];
        pw[0] = 1.0;
        for (size_t m = 1; m < K; m++)
            pw[m] = pw[m - 1] * delta * (1.0 / (double)m);
        for (size_t a = 0; a < v; a++) {
            for (size_t k = 0; k < K; k++) /* scalar copies: no vector load of pw's stores */
                in[k] = prev[a * K + k];
            for (size_t k = 0; k < K; k++) {
                double sum = pw[k] * in[0]; /* = 0.0 + it, but for the sign of a zero */
                for (size_t i = 1; i <= k; i++)
                    sum += pw[k - i] * in[i];
                next[a * K + k] = sum * decay;
            }
        }
    } else {
        for (size_t i = 0; i < v * K; i++)
            next[i] = 0.0;
    }
    for (size_t a = 0; a < v; a++)
        next[a * K] += fs->c[a * fs->n + j];
}

/* The forward steps j = s .. e-1: buf[(j - s + 1)·vk] = L_j from buf[(j - s)·vk] (buf[0] =
 * L_{s-1}); ring: two slots only (slot (j - s + 1) % 2), for the passes that keep no sums. One
 * copy per K, the step inlined into its loop (a call and a switch per point were a fifth of a
 * CV evaluation). Returns the last sums. */
static inline double *forward_k(const nw_fastsum *fs, size_t K, size_t s, size_t e, double *buf,
                                int ring) {
    const size_t vk = fs->v * K;
    double *next = buf;
    for (size_t j = s; j < e; j++) {
        const double *prev = buf + (ring ? (j - s) & 1 : j - s) * vk;
        next = buf + (ring ? (j - s + 1) & 1 : j - s + 1) * vk;
        step_k(fs, fs->v, K, j > 0 ? gap(fs, j) : INFINITY, fs->decay[j], prev, j, next);
    }
    return next;
}

/* The backward steps j = e-1 .. s: buf[(j - s)·vk] = R_j from buf[(j - s + 1)·vk] (buf[(e -
 * s)·vk] = R_e); ring: slots (j - s) % 2, R_e in slot (e - s) % 2. */
static inline double *backward_k(const nw_fastsum *fs, size_t K, size_t s, size_t e, double *buf,
                                 int ring) {
    const size_t vk = fs->v * K, n = fs->n;
    double *next = buf + (ring ? (e - s) & 1 : e - s) * vk;
    for (size_t j = e; j-- > s;) {
        const double *prev = buf + (ring ? (j - s + 1) & 1 : j - s + 1) * vk;
        next = buf + (ring ? (j - s) & 1 : j - s) * vk;
        step_k(fs, fs->v, K, j + 1 < n ? gap(fs, j + 1) : INFINITY, j + 1 < n ? fs->decay[j + 1] : 0.0,
               prev, j, next);
    }
    return next;
}

/* The passes for v == 2 (one y column, the common case) with both sizes known: the running
 * sums stay in registers instead of going through memory at every point (the chain of
 * dependent steps was the passes' cost); keep: every step's sums also stored, as forward_k and
 * backward_k store them. The same arithmetic: the same sums to the last bit. Without keep the
 * result is left in slot 0 and backward reads R_e from slot (e - s) % 2 as backward_k does. */
static inline double *forward2_k(const nw_fastsum *fs, size_t K, size_t s, size_t e,
                                 double *buf, int keep) {
    double cur[2 * NW_FS_KMAX], nxt[2 * NW_FS_KMAX];
    for (size_t i = 0; i < 2 * K; i++)
        cur[i] = buf[i];
    for (size_t j = s; j < e; j++) {
        step_k(fs, 2, K, j > 0 ? gap(fs, j) : INFINITY, fs->decay[j], cur, j, nxt);
        for (size_t i = 0; i < 2 * K; i++)
            cur[i] = nxt[i];
        if (keep)
            for (size_t i = 0; i < 2 * K; i++)
                buf[(j - s + 1) * 2 * K + i] = nxt[i];
    }
    if (keep)
        return buf + (e - s) * 2 * K;
    for (size_t i = 0; i < 2 * K; i++)
        buf[i] = cur[i];
    return buf;
}

static inline double *backward2_k(const nw_fastsum *fs, size_t K, size_t s, size_t e,
                                  double *buf, int keep) {
    const size_t n = fs->n;
    double cur[2 * NW_FS_KMAX], nxt[2 * NW_FS_KMAX];
    for (size_t i = 0; i < 2 * K; i++)
        cur[i] = buf[(keep ? e - s : (e - s) & 1) * 2 * K + i];
    for (size_t j = e; j-- > s;) {
        step_k(fs, 2, K, j + 1 < n ? gap(fs, j + 1) : INFINITY, j + 1 < n ? fs->decay[j + 1] : 0.0,
               cur, j, nxt);
        for (size_t i = 0; i < 2 * K; i++)
            cur[i] = nxt[i];
        if (keep)
            for (size_t i = 0; i < 2 * K; i++)
                buf[(j - s) * 2 * K + i] = nxt[i];
    }
    for (size_t i = 0; i < 2 * K; i++)
        buf[i] = cur[i];
    return buf;
}

static double *forward(const nw_fastsum *fs, size_t s, size_t e, double *buf, int ring) {
    if (fs->v == 2)
        switch (fs->k1) {
#define NW_FS_CASE(K)                                                                              \
    case K:                                                                                        \
        return forward2_k(fs, K, s, e, buf, !ring);
            NW_FS_EACH_K(NW_FS_CASE)
#undef NW_FS_CASE
        default:
            break;
        }
    switch (fs->k1) {
#define NW_FS_CASE(K)                                                                              \
    case K:                                                                                        \
        return forward_k(fs, K, s, e, buf, ring);
        NW_FS_EACH_K(NW_FS_CASE)
#undef NW_FS_CASE
    default:
        return forward_k(fs, fs->k1, s, e, buf, ring);
    }
}

static double *backward(const nw_fastsum *fs, size_t s, size_t e, double *buf, int ring) {
    if (fs->v == 2)
        switch (fs->k1) {
#define NW_FS_CASE(K)                                                                              \
    case K:                                                                                        \
        return backward2_k(fs, K, s, e, buf, !ring);
            NW_FS_EACH_K(NW_FS_CASE)
#undef NW_FS_CASE
        default:
            break;
        }
    switch (fs->k1) {
#define NW_FS_CASE(K)                                                                              \
    case K:                                                                                        \
        return backward_k(fs, K, s, e, buf, ring);
        NW_FS_EACH_K(NW_FS_CASE)
#undef NW_FS_CASE
    default:
        return backward_k(fs, fs->k1, s, e, buf, ring);
    }
}

typedef struct pass_job {
    nw_fastsum *fs;
} pass_job;

/* decay[j] = e^{-δ_j} of the gaps, a block per unit. */
static void decay_unit(void *arg, size_t b, size_t worker) {
    (void)worker;
    nw_fastsum *fs = ((pass_job *)arg)->fs;
    const size_t s = b * NW_FS_BLOCK, e = s + NW_FS_BLOCK < fs->n ? s + NW_FS_BLOCK : fs->n;
    for (size_t j = s > 0 ? s : 1; j < e; j++)
        fs->decay[j] = exp(-gap(fs, j));
    if (s == 0)
        fs->decay[0] = 0.0;
}

/* Unit 0: the forward pass (left checkpoints); unit 1: the backward pass (right ones). */
static void pass_unit(void *arg, size_t unit, size_t worker) {
    (void)worker;
    nw_fastsum *fs = ((pass_job *)arg)->fs;
    const size_t n = fs->n, vk = fs->v * fs->k1;
    double *buf = fs->scratch + 2 * unit * vk, *last;
    memset(buf, 0, 2 * vk * sizeof(double));
    if (unit == 0) {
        for (size_t b = 0; b < fs->blocks; b++) {
            const size_t s = b * NW_FS_BLOCK, e = s + NW_FS_BLOCK < n ? s + NW_FS_BLOCK : n;
            memcpy(fs->left_ck + b * vk, buf, vk * sizeof(double));
            if ((last = forward(fs, s, e, buf, 1)) != buf)
                memcpy(buf, last, vk * sizeof(double));
        }
    } else {
        for (size_t b = fs->blocks; b-- > 0;) {
            const size_t s = b * NW_FS_BLOCK, e = s + NW_FS_BLOCK < n ? s + NW_FS_BLOCK : n;
            double *start = buf + ((e - s) & 1) * vk; /* where backward() reads R_e */
            if (start != buf)
                memcpy(start, buf, vk * sizeof(double));
            memcpy(fs->right_ck + b * vk, start, vk * sizeof(double));
            if ((last = backward(fs, s, e, buf, 1)) != buf)
                memcpy(buf, last, vk * sizeof(double));
        }
    }
}

void nw_fs_prepare(nw_fastsum *fs, double inv_h, nw_workers *team, size_t threads) {
    fs->inv_h = inv_h;
    pass_job job = {fs};
    nw_parallel_for(team, threads, fs->blocks, decay_unit, &job);
    nw_parallel_for(team, threads, 2, pass_unit, &job);
}

void nw_fs_fill(const nw_fastsum *fs, size_t b, nw_fs_block *blk) {
    const size_t n = fs->n, vk = fs->v * fs->k1;
    const size_t s = b * NW_FS_BLOCK, e = s + NW_FS_BLOCK < n ? s + NW_FS_BLOCK : n;
    blk->b = b, blk->s = s, blk->e = e;
    blk->right = blk->left + (NW_FS_BLOCK + 1) * vk;
    /* left[(j - s + 1)·vk] = L_j, left[0] = L_{s-1}; right[(j - s)·vk] = R_j, right[(e-s)·vk] = R_e */
    memcpy(blk->left, fs->left_ck + b * vk, vk * sizeof(double));
    forward(fs, s, e, blk->left, 0);
    memcpy(blk->right + (e - s) * vk, fs->right_ck + b * vk, vk * sizeof(double));
    backward(fs, s, e, blk->right, 0);
}

/* out = e^{-(δ - δ_near)} T_δ(sums), unscaled (times k!); zero when the side is empty. */
static void side(const nw_fastsum *fs, const double *sums, double delta, double near,
                 double *out) {
    const size_t v = fs->v, k1 = fs->k1;
    const double factor = !(delta < INFINITY) ? 0.0 : delta == near ? 1.0 : exp(near - delta);
    if (!(factor > 0.0)) {
        memset(out, 0, v * k1 * sizeof(double));
        return;
    }
    translate(v, k1, delta, sums, out);
    for (size_t a = 0; a < v; a++) {
        double fact = factor;
        for (size_t k = 0; k < k1; k++) {
            out[a * k1 + k] *= fact;
            fact *= (double)(k + 1);
        }
    }
}

void nw_fs_moments_loo(const nw_fastsum *fs, const nw_fs_block *blk, size_t j, double *left,
                       double *right) {
    const size_t n = fs->n, vk = fs->v * fs->k1, s = blk->s;
    const double dl = j > 0 ? (fs->x[j] - fs->x[j - 1]) * fs->inv_h : INFINITY;
    const double dr = j + 1 < n ? (fs->x[j + 1] - fs->x[j]) * fs->inv_h : INFINITY;
    const double near = fmin(dl, dr);
    side(fs, blk->left + (j - s) * vk, dl, near, left);       /* L_{j-1} */
    side(fs, blk->right + (j - s + 1) * vk, dr, near, right); /* R_{j+1} */
}

void nw_fs_moments_at(const nw_fastsum *fs, const nw_fs_block *blk, size_t j, double q,
                      double *left, double *right) {
    const size_t n = fs->n, vk = fs->v * fs->k1, s = blk->s;
    const size_t r = j == SIZE_MAX ? 0 : j + 1;
    const double dl = j != SIZE_MAX ? (q - fs->x[j]) * fs->inv_h : INFINITY;
    const double dr = r < n ? (fs->x[r] - q) * fs->inv_h : INFINITY;
    const double near = fmin(dl, dr);
    side(fs, j != SIZE_MAX ? blk->left + (j - s + 1) * vk : blk->left, dl, near, left);
    side(fs, blk->right + (r - s) * vk, dr, near, right);
}

size_t nw_fs_locate(const nw_fastsum *fs, double q) {
    size_t lo = 0, hi = fs->n; /* first index with x > q */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (fs->x[mid] <= q)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo == 0 ? SIZE_MAX : lo - 1;
}
