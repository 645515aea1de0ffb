/* The fast-sum engine: checkpoints, block sums and the one-sided moments of a row (fastsum.h). */
#include <math.h>
#include <string.h>

#include "fastsum.h"
#include "fastsum_pair.h"
#include "threads.h"

size_t nw_fs_bytes(size_t n, size_t v, size_t k1) {
    const size_t vp = (v + 1) / 2 * 2;
    size_t blocks = (n + NW_FS_BLOCK - 1) / NW_FS_BLOCK, doubles, part;
    doubles = n; /* the decays */
    if (!nw_mul(blocks, 2 * vp * k1, &part) || !nw_add(doubles, part, &doubles) ||
        !nw_mul(doubles, sizeof(double), &doubles))
        return SIZE_MAX;
    return doubles;
}

void nw_fs_init(nw_fastsum *fs, void *mem, size_t n, size_t v, size_t k1, const float *x,
                const float *y) {
    fs->n = n;
    fs->v = v;
    fs->vp = (v + 1) / 2 * 2;
    fs->k1 = k1;
    fs->k = k1;
    fs->blocks = (n + NW_FS_BLOCK - 1) / NW_FS_BLOCK;
    fs->inv_h = 1.0;
    fs->x = x;
    fs->y = y;
    fs->decay = mem;
    fs->left_ck = fs->decay + n;
    fs->right_ck = fs->left_ck + fs->blocks * fs->vp * k1;
}

size_t nw_fs_block_doubles(size_t v, size_t k1) { return 2 * NW_FS_BLOCK * ((v + 1) / 2 * 2) * k1; }

void nw_fs_block_init(nw_fs_block *blk, double *mem) {
    blk->b = blk->s = blk->e = 0;
    blk->left = mem;
    blk->right = NULL; /* set by nw_fs_fill, which knows the moment count */
}

/* δ between points j - 1 and j (j >= 1). */
static double gap(const nw_fastsum *fs, size_t j) {
    return ((double)fs->x[j] - (double)fs->x[j - 1]) * fs->inv_h;
}

/* Vector a's coefficient at point j: 1 (a = 0), y column a - 1, 0 (the padding vector). */
static double coef(const nw_fastsum *fs, size_t a, size_t j) {
    return a == 0 ? 1.0 : a < fs->v ? (double)fs->y[(a - 1) * fs->n + j] : 0.0;
}

/* ---- The passes ---------------------------------------------------------------------------
 * One pair of vectors (pr) over points s .. e-1 (forward) or e-1 .. s (backward), its K
 * moments in registers; K is a compile-time constant in each copy (one per K, the loops
 * unrolled). in: the running sums before the first step (L_{s-1} or R_e, K pairs at stride
 * vp); out: the last (L_{e-1} or R_s). With store, the exclusive sums of every point j: the
 * step without its own c_j, X_j = e^{-δ} T_δ(L_{j-1}) (forward) or Y_j (backward), at
 * store + (j - s)·K·vp. The step: out[k] = e^{-δ} sum_{i<=k} δ^{k-i}/(k-i)! in[i], summed
 * from i = 0 (the i = k term, whose factor is 1, last). */
/* The running sums are named members, not an array: arrays indexed in loops stayed on the
 * stack (a store and a reload on the chain of dependent steps). K is a constant in each copy,
 * so the unused ones fold away; the helpers are forced inline so that a run stays in
 * registers. */
#if defined(__GNUC__)
#define FS_INLINE static inline __attribute__((always_inline))
#else
#define FS_INLINE static inline
#endif

typedef struct fs_run {
    fs_pair r0, r1, r2, r3, r4, r5, r6, r7;
} fs_run;

FS_INLINE void run_load(fs_run *r, size_t K, const double *in, size_t vp) {
    const fs_pair z = p_zero();
    r->r0 = p_load(in);
    r->r1 = K > 1 ? p_load(in + vp) : z;
    r->r2 = K > 2 ? p_load(in + 2 * vp) : z;
    r->r3 = K > 3 ? p_load(in + 3 * vp) : z;
    r->r4 = K > 4 ? p_load(in + 4 * vp) : z;
    r->r5 = K > 5 ? p_load(in + 5 * vp) : z;
    r->r6 = K > 6 ? p_load(in + 6 * vp) : z;
    r->r7 = K > 7 ? p_load(in + 7 * vp) : z;
}

FS_INLINE void run_store(const fs_run *r, size_t K, double *o, size_t vp) {
    p_store(o, r->r0);
    if (K > 1)
        p_store(o + vp, r->r1);
    if (K > 2)
        p_store(o + 2 * vp, r->r2);
    if (K > 3)
        p_store(o + 3 * vp, r->r3);
    if (K > 4)
        p_store(o + 4 * vp, r->r4);
    if (K > 5)
        p_store(o + 5 * vp, r->r5);
    if (K > 6)
        p_store(o + 6 * vp, r->r6);
    if (K > 7)
        p_store(o + 7 * vp, r->r7);
}

/* run <- e^{-d} T_d(run) (decay = e^{-d} > 0), moment k from the old moments 0 .. k: the
 * highest first, then in place. T(m, i): d^m/m! times moment i. */
#define T(m, i) p_mul(p_dup(pw##m), r->r##i)
FS_INLINE void run_translate(fs_run *r, size_t K, double d, double decay) {
    const double pw1 = d, pw2 = pw1 * d * (1.0 / 2.0), pw3 = pw2 * d * (1.0 / 3.0),
                 pw4 = pw3 * d * (1.0 / 4.0), pw5 = pw4 * d * (1.0 / 5.0),
                 pw6 = pw5 * d * (1.0 / 6.0), pw7 = pw6 * d * (1.0 / 7.0);
    const fs_pair dd = p_dup(decay);
    if (K > 7)
        r->r7 = p_mul(
            p_add(p_add(p_add(p_add(p_add(p_add(p_add(T(7, 0), T(6, 1)), T(5, 2)), T(4, 3)), T(3, 4)),
                              T(2, 5)),
                        T(1, 6)),
                  r->r7),
            dd);
    if (K > 6)
        r->r6 = p_mul(
            p_add(p_add(p_add(p_add(p_add(p_add(T(6, 0), T(5, 1)), T(4, 2)), T(3, 3)), T(2, 4)), T(1, 5)),
                  r->r6),
            dd);
    if (K > 5)
        r->r5 = p_mul(
            p_add(p_add(p_add(p_add(p_add(T(5, 0), T(4, 1)), T(3, 2)), T(2, 3)), T(1, 4)), r->r5), dd);
    if (K > 4)
        r->r4 = p_mul(p_add(p_add(p_add(p_add(T(4, 0), T(3, 1)), T(2, 2)), T(1, 3)), r->r4), dd);
    if (K > 3)
        r->r3 = p_mul(p_add(p_add(p_add(T(3, 0), T(2, 1)), T(1, 2)), r->r3), dd);
    if (K > 2)
        r->r2 = p_mul(p_add(p_add(T(2, 0), T(1, 1)), r->r2), dd);
    if (K > 1)
        r->r1 = p_mul(p_add(T(1, 0), r->r1), dd);
    r->r0 = p_mul(r->r0, dd);
}
#undef T

/* One step across the gap (g - 1, g) (its decay; 0: nothing reaches across, and δ^k could
 * overflow): run becomes the exclusive sums of the point reached. */
FS_INLINE void run_step(const nw_fastsum *fs, fs_run *r, size_t K, size_t g) {
    const double decay = g < fs->n ? fs->decay[g] : 0.0; /* decay[0] = 0 */
    if (decay > 0.0) {
        run_translate(r, K, gap(fs, g), decay);
    } else {
        const fs_pair z = p_zero();
        r->r0 = r->r1 = r->r2 = r->r3 = r->r4 = r->r5 = r->r6 = r->r7 = z;
    }
}

/* ... and then the inclusive sums, point j's own c_j added. */
FS_INLINE void run_add(fs_run *r, const float *lo, const float *hi, size_t j) {
    r->r0 = p_add(r->r0, p_set(lo != NULL ? (double)lo[j] : 1.0, hi != NULL ? (double)hi[j] : 0.0));
}

/* The y columns of pair pr's two vectors (NULL: vector 0's ones, the padding's zeros). */
static void pair_columns(const nw_fastsum *fs, size_t pr, const float **lo, const float **hi) {
    *lo = pr == 0 ? NULL : fs->y + (2 * pr - 1) * fs->n;
    *hi = 2 * pr + 1 < fs->v ? fs->y + 2 * pr * fs->n : NULL;
}

static inline void pass_pair_k(const nw_fastsum *fs, size_t K, size_t pr, size_t s, size_t e,
                               int backward, const double *in, double *out, double *store) {
    const size_t vp = fs->vp, kv = K * vp;
    fs_run r;
    const float *lo, *hi;
    pair_columns(fs, pr, &lo, &hi);
    run_load(&r, K, in + 2 * pr, vp);
    for (size_t t = s; t < e; t++) {
        const size_t j = backward ? e - 1 - (t - s) : t;
        run_step(fs, &r, K, backward ? j + 1 : j);
        if (store != NULL) /* the exclusive sums */
            run_store(&r, K, store + (j - s) * kv + 2 * pr, vp);
        run_add(&r, lo, hi, j);
    }
    if (out != NULL)
        run_store(&r, K, out + 2 * pr, vp);
}

/* A block's two passes in one loop (forward from s, backward from e - 1): two independent
 * chains side by side, each step's latency hidden behind the other's. The same steps as
 * pass_pair_k's, so the same sums. */
static inline void fill_pair_k(const nw_fastsum *fs, size_t K, size_t pr, size_t s, size_t e,
                               const double *in_left, const double *in_right, double *left,
                               double *right) {
    const size_t vp = fs->vp, kv = K * vp;
    fs_run f, b;
    const float *lo, *hi;
    pair_columns(fs, pr, &lo, &hi);
    run_load(&f, K, in_left + 2 * pr, vp);
    run_load(&b, K, in_right + 2 * pr, vp);
    for (size_t t = 0; t < e - s; t++) {
        const size_t jf = s + t, jb = e - 1 - t;
        run_step(fs, &f, K, jf);
        run_step(fs, &b, K, jb + 1);
        run_store(&f, K, left + t * kv + 2 * pr, vp);
        run_store(&b, K, right + (jb - s) * kv + 2 * pr, vp);
        run_add(&f, lo, hi, jf);
        run_add(&b, lo, hi, jb);
    }
}

/* The moment counts K with a copy of their own. */
#define NW_FS_EACH_K(CASE) CASE(1) CASE(2) CASE(3) CASE(4) CASE(5) CASE(6) CASE(7) CASE(8)

static void pass_pair(const nw_fastsum *fs, size_t pr, size_t s, size_t e, int backward,
                      const double *in, double *out, double *store) {
    switch (fs->k) {
#define NW_FS_CASE(K)                                                                              \
    case K:                                                                                        \
        pass_pair_k(fs, K, pr, s, e, backward, in, out, store);                                    \
        return;
        NW_FS_EACH_K(NW_FS_CASE)
#undef NW_FS_CASE
    default:
        return; /* not reached: k <= NW_FS_KMAX */
    }
}

static void fill_pair(const nw_fastsum *fs, size_t pr, size_t s, size_t e,
                      const double *in_left, const double *in_right, double *left,
                      double *right) {
    switch (fs->k) {
#define NW_FS_CASE(K)                                                                              \
    case K:                                                                                        \
        fill_pair_k(fs, K, pr, s, e, in_left, in_right, left, right);                              \
        return;
        NW_FS_EACH_K(NW_FS_CASE)
#undef NW_FS_CASE
    default:
        return; /* not reached: k <= NW_FS_KMAX */
    }
}

typedef struct pass_job {
    nw_fastsum *fs;
} pass_job;

static size_t block_end(const nw_fastsum *fs, size_t b) {
    const size_t e = (b + 1) * NW_FS_BLOCK;
    return e < fs->n ? e : fs->n;
}

/* decay[j] = e^{-δ_j} of the gaps, a block per unit. */
static void decay_unit(void *arg, size_t b, size_t worker) {
    (void)worker;
    nw_fastsum *fs = ((pass_job *)arg)->fs;
    const size_t s = b * NW_FS_BLOCK, e = block_end(fs, b);
    for (size_t j = s > 0 ? s : 1; j < e; j++)
        fs->decay[j] = exp(-gap(fs, j));
    if (s == 0)
        fs->decay[0] = 0.0;
}

/* Unit 2 pr: pair pr's forward pass (left checkpoints); unit 2 pr + 1: its backward pass. */
static void pass_unit(void *arg, size_t unit, size_t worker) {
    (void)worker;
    nw_fastsum *fs = ((pass_job *)arg)->fs;
    const size_t kv = fs->k * fs->vp, pr = unit / 2;
    if (unit % 2 == 0) {
        for (size_t k = 0; k < fs->k; k++)
            memset(fs->left_ck + k * fs->vp + 2 * pr, 0, 2 * sizeof(double));
        for (size_t b = 0; b + 1 < fs->blocks; b++)
            pass_pair(fs, pr, b * NW_FS_BLOCK, block_end(fs, b), 0, fs->left_ck + b * kv,
                      fs->left_ck + (b + 1) * kv, NULL);
    } else {
        double *last = fs->right_ck + (fs->blocks - 1) * kv;
        for (size_t k = 0; k < fs->k; k++)
            memset(last + k * fs->vp + 2 * pr, 0, 2 * sizeof(double));
        for (size_t b = fs->blocks - 1; b > 0; b--)
            pass_pair(fs, pr, b * NW_FS_BLOCK, block_end(fs, b), 1, fs->right_ck + b * kv,
                      fs->right_ck + (b - 1) * kv, NULL);
    }
}

void nw_fs_prepare(nw_fastsum *fs, double inv_h, size_t k, nw_workers *team, size_t threads) {
    fs->inv_h = inv_h;
    fs->k = k;
    pass_job job = {fs};
    nw_parallel_for(team, threads, fs->blocks, decay_unit, &job);
    nw_parallel_for(team, threads, fs->vp, pass_unit, &job);
}

void nw_fs_fill(const nw_fastsum *fs, size_t b, nw_fs_block *blk) {
    const size_t kv = fs->k * fs->vp;
    const size_t s = b * NW_FS_BLOCK, e = block_end(fs, b);
    blk->b = b, blk->s = s, blk->e = e;
    blk->right = blk->left + NW_FS_BLOCK * kv;
    for (size_t pr = 0; pr < fs->vp / 2; pr++)
        fill_pair(fs, pr, s, e, fs->left_ck + b * kv, fs->right_ck + b * kv, blk->left,
                  blk->right);
}

/* The running (inclusive) sums of point j of the block, j's own c_j included: L_j (left) or
 * R_j, from its exclusive sums; j one outside the block: the block's checkpoint. */
static void inclusive(const nw_fastsum *fs, const nw_fs_block *blk, size_t j, int right,
                      double *out) {
    const size_t vp = fs->vp, kv = fs->k * vp;
    if (j < blk->s || j >= blk->e) { /* L_{s-1} or R_e */
        memcpy(out, (right ? fs->right_ck : fs->left_ck) + blk->b * kv, kv * sizeof(double));
        return;
    }
    memcpy(out, (right ? blk->right : blk->left) + (j - blk->s) * kv, kv * sizeof(double));
    for (size_t a = 0; a < vp; a++)
        out[a] += coef(fs, a, j);
}

/* sums <- e^{near - δ} T_δ(sums) in place (moments from the highest down: each reads only
 * lower ones); zero when the side is empty or out of reach. */
static void side(const nw_fastsum *fs, double *sums, double delta, double near) {
    const size_t vp = fs->vp, K = fs->k;
    const double factor = !(delta < INFINITY) ? 0.0 : delta == near ? 1.0 : exp(near - delta);
    if (!(factor > 0.0)) {
        memset(sums, 0, K * vp * sizeof(double));
        return;
    }
    double pw[NW_FS_KMAX];
    pw[0] = 1.0;
    for (size_t m = 1; m < K; m++)
        pw[m] = pw[m - 1] * delta * (1.0 / (double)m);
    for (size_t a = 0; a < vp; a++)
        for (size_t k = K; k-- > 0;) {
            double sum = 0.0;
            for (size_t i = 0; i <= k; i++)
                sum += pw[k - i] * sums[i * vp + a];
            sums[k * vp + a] = sum * factor;
        }
}

void nw_fs_moments_far(const nw_fastsum *fs, const nw_fs_block *blk, size_t j, double *lbuf,
                       double *rbuf) {
    const size_t n = fs->n, kv = fs->k * fs->vp;
    const double dl = j > 0 ? gap(fs, j) : INFINITY;
    const double dr = j + 1 < n ? gap(fs, j + 1) : INFINITY;
    const double near = fmin(dl, dr);
    if (j > 0) {
        inclusive(fs, blk, j - 1, 0, lbuf);
        side(fs, lbuf, dl, near);
    } else {
        memset(lbuf, 0, kv * sizeof(double));
    }
    if (j + 1 < n) {
        inclusive(fs, blk, j + 1, 1, rbuf);
        side(fs, rbuf, dr, near);
    } else {
        memset(rbuf, 0, kv * sizeof(double));
    }
}

void nw_fs_moments_at(const nw_fastsum *fs, const nw_fs_block *blk, size_t j, double q,
                      double *left, double *right) {
    const size_t n = fs->n, kv = fs->k * fs->vp;
    const size_t r = j == SIZE_MAX ? 0 : j + 1;
    const double dl = j != SIZE_MAX ? (q - (double)fs->x[j]) * fs->inv_h : INFINITY;
    const double dr = r < n ? ((double)fs->x[r] - q) * fs->inv_h : INFINITY;
    const double near = fmin(dl, dr);
    if (j != SIZE_MAX) {
        inclusive(fs, blk, j, 0, left);
        side(fs, left, dl, near);
    } else {
        memset(left, 0, kv * sizeof(double));
    }
    if (r < n) {
        inclusive(fs, blk, r, 1, right);
        side(fs, right, dr, near);
    } else {
        memset(right, 0, kv * sizeof(double));
    }
}

size_t nw_fs_locate(const nw_fastsum *fs, double q) {
    size_t lo = 0, hi = fs->n; /* first index with x > q */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((double)fs->x[mid] <= q)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo == 0 ? SIZE_MAX : lo - 1;
}
