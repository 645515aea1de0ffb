/* From one-sided moments to a row's nw_sums: the Laplace family K(r) = poly(r) e^{-r}, its
 * local linear moments (z = (1, u), u = ±r) and its derivative in log h, which stays in the
 * family: d K / d log h = -r K'(r) = r (poly(r) - poly'(r)) e^{-r} = G(t) · u^2 of nw.h. */
#include "fastsum.h"

/* Forced: the family's coefficients must fold into each copy (a clone with the family's
 * address kept the tests of its zero coefficients). */
#if defined(__GNUC__)
#define FS_INLINE static inline __attribute__((always_inline))
#else
#define FS_INLINE static inline
#endif

/* Coefficients of poly (kernel) and of r (poly - poly') (gradient weight), in powers of r. */
typedef struct family {
    size_t degree; /* of poly */
    double k[3];
    double g[4];
} family;

static const family laplace = {0, {1.0, 0.0, 0.0}, {0.0, 1.0, 0.0, 0.0}};
static const family matern32 = {1, {1.0, 1.0, 0.0}, {0.0, 0.0, 1.0, 0.0}};
static const family matern52 = {2, {1.0, 1.0, 1.0 / 3.0}, {0.0, 0.0, 1.0 / 3.0, 1.0 / 3.0}};

static const family *family_of(nwattn_kernel kernel) {
    switch (kernel) {
    case NWATTN_KERNEL_LAPLACE:
        return &laplace;
    case NWATTN_KERNEL_MATERN32:
        return &matern32;
    case NWATTN_KERNEL_MATERN52:
        return &matern52;
    default:
        return NULL;
    }
}

int nw_fs_kernel_supported(nwattn_kernel kernel) {
    return kernel == NWATTN_KERNEL_GAUSSIAN || family_of(kernel) != NULL;
}

size_t nw_fs_moments_needed(const nw_model *model, int grad) {
    const family *f = family_of(model->kernel);
    if (f == NULL)
        return 1; /* the Gaussian: the engine only holds x and c */
    /* highest power: the polynomial (+1 with the gradient), + 2 for local linear's u^2 */
    return f->degree + 1 + (grad ? 1 : 0) + (model->degree == NWATTN_LOCAL_LINEAR ? 2 : 0);
}

/* Plain moments from the engine's scaled ones: moment k times k!. */
static const double factorial[NW_FS_KMAX] = {1.0, 1.0, 2.0, 6.0, 24.0, 120.0, 720.0, 5040.0};

/* sum_i c_i u_i^a poly(r_i) e^{-r_i} of vector vec over both sides: u = r on the right, -r on
 * the left. Inlined with a constant family: the zero coefficients and the loops fold away. */
FS_INLINE double combine(const double *poly, size_t terms, size_t a, size_t vp, size_t vec,
                             const double *left, const double *right) {
    double sum = 0.0;
    for (size_t m = 0; m < terms; m++)
        if (poly[m] != 0.0) {
            const size_t k = m + a;
            const double r = right[k * vp + vec], l = left[k * vp + vec];
            sum += poly[m] * factorial[k] * (a % 2 == 0 ? r + l : r - l);
        }
    return sum;
}

/* m (p×p, upper) and b (p×dv) of the weight poly. */
FS_INLINE void fill(size_t p, size_t dv, size_t vp, const double *poly, size_t terms,
                        const double *left, const double *right, double *m, double *b) {
    for (size_t a = 0; a < p; a++) {
        for (size_t c = a; c < p; c++)
            m[a + c * p] = combine(poly, terms, a + c, vp, 0, left, right);
        for (size_t c = 0; c < dv; c++)
            b[a + c * p] = combine(poly, terms, a, vp, 1 + c, left, right);
    }
}

FS_INLINE void row_sums(const family *f, size_t p, size_t dv, size_t vp, const double *left,
                            const double *right, nw_sums *s) {
    fill(p, dv, vp, f->k, f->degree + 1, left, right, s->m, s->b);
    if (s->dm != NULL)
        fill(p, dv, vp, f->g, f->degree + 2, left, right, s->dm, s->db);
}

/* One copy per kernel and degree; for one y column (the common case) also with the sizes
 * known. */
#define NW_FS_ROW_CASE(KERNEL, FAMILY)                                                             \
    case KERNEL:                                                                                   \
        if (one && ll)                                                                             \
            row_sums(&FAMILY, 2, 1, 2, left, right, s);                                            \
        else if (one)                                                                              \
            row_sums(&FAMILY, 1, 1, 2, left, right, s);                                            \
        else if (ll)                                                                               \
            row_sums(&FAMILY, 2, dv, vp, left, right, s);                                          \
        else                                                                                       \
            row_sums(&FAMILY, 1, dv, vp, left, right, s);                                          \
        return;

void nw_fs_row_sums(const nw_model *model, size_t vp, const double *left, const double *right,
                    nw_sums *s) {
    const size_t dv = model->dv;
    const int ll = model->p == 2, one = dv == 1 && vp == 2;
    switch (model->kernel) {
        NW_FS_ROW_CASE(NWATTN_KERNEL_LAPLACE, laplace)
        NW_FS_ROW_CASE(NWATTN_KERNEL_MATERN32, matern32)
        NW_FS_ROW_CASE(NWATTN_KERNEL_MATERN52, matern52)
    default:
        return; /* not reached: nw_select_path chose the fast sums for this kernel */
    }
}
#undef NW_FS_ROW_CASE

/* ---- Leave-one-out rows of a block --------------------------------------------------------
 * One y column (the common case): every step inline with the family, degree and gradient
 * known (a copy each), the row's sums in registers, finished by nw_finish_one (nw_finish_row's
 * closed form) and added by nw_cv_add_row: rows overlap in the pipeline instead of waiting
 * on each other's divisions behind calls. Other shapes take nw_finish_row. */
FS_INLINE void cv_rows_one(const family *f, const nw_model *model, int ll, int grad,
                               const nw_fastsum *fs, const nw_fs_block *blk, const float *y,
                               double *lbuf, double *rbuf, double *partial) {
    const nw_model one = {model->kernel, model->degree, model->empty, 1, 1, ll ? 2 : 1,
                          model->tolerance};
    const size_t p = ll ? 2 : 1, stride = 3 + 1;
    for (size_t j = blk->s; j < blk->e; j++) {
        const double *lm = nw_fs_loo_left(fs, blk, j), *rm = nw_fs_loo_right(fs, blk, j);
        if (nw_fs_far(fs, j)) {
            nw_fs_moments_far(fs, blk, j, lbuf, rbuf);
            lm = lbuf, rm = rbuf;
        }
        double m[4], b[2], dm[4], db[2], yhat, dyhat = 0.0;
        fill(p, 1, 2, f->k, f->degree + 1, lm, rm, m, b);
        if (grad)
            fill(p, 1, 2, f->g, f->degree + 2, lm, rm, dm, db);
        const unsigned flags = nw_finish_one(ll, m, b, grad ? dm : NULL, db, &yhat, &dyhat);
        nw_cv_add_row(&one, flags, &yhat, &dyhat, y + j, 0, grad, 1.0,
                      partial + j / NW_UNIT_ROWS * stride);
    }
}

#define NW_FS_CV_CASE(KERNEL, FAMILY)                                                              \
    case KERNEL:                                                                                   \
        if (ll)                                                                                    \
            want_grad ? cv_rows_one(&FAMILY, model, 1, 1, fs, blk, y, lbuf, rbuf, partial)         \
                      : cv_rows_one(&FAMILY, model, 1, 0, fs, blk, y, lbuf, rbuf, partial);        \
        else                                                                                       \
            want_grad ? cv_rows_one(&FAMILY, model, 0, 1, fs, blk, y, lbuf, rbuf, partial)         \
                      : cv_rows_one(&FAMILY, model, 0, 0, fs, blk, y, lbuf, rbuf, partial);        \
        return;

void nw_fs_cv_rows(const nw_model *model, const nw_fastsum *fs, const nw_fs_block *blk,
                   int want_grad, const float *y, nw_worker *wk, double *lbuf, double *rbuf,
                   double *partial) {
    const size_t n = fs->n, d = model->d;
    const int ll = model->p == 2;
    if (model->dv == 1 && d == 1 && fs->vp == 2)
        switch (model->kernel) {
            NW_FS_CV_CASE(NWATTN_KERNEL_LAPLACE, laplace)
            NW_FS_CV_CASE(NWATTN_KERNEL_MATERN32, matern32)
            NW_FS_CV_CASE(NWATTN_KERNEL_MATERN52, matern52)
        default:
            return; /* not reached: nw_select_path chose the fast sums for this kernel */
        }
    nw_sums s; /* every row assigns the entries it uses */
    nw_sums_init(&s, wk->sums_mem, model, want_grad);
    for (size_t j = blk->s; j < blk->e; j++) {
        const double *lm = nw_fs_loo_left(fs, blk, j), *rm = nw_fs_loo_right(fs, blk, j);
        if (nw_fs_far(fs, j)) {
            nw_fs_moments_far(fs, blk, j, lbuf, rbuf);
            lm = lbuf, rm = rbuf;
        }
        nw_fs_row_sums(model, fs->vp, lm, rm, &s);
        unsigned flags =
            nw_finish_row(model, &s, 1, wk->work, wk->yhat, want_grad ? wk->dyhat : NULL, NULL);
        nw_cv_add_row(model, flags, wk->yhat, wk->dyhat, y + j, n, want_grad, 1.0,
                      partial + j / NW_UNIT_ROWS * (3 + d));
    }
}
#undef NW_FS_CV_CASE

/* ---- The Gaussian: K = e^{-u^2/2}, G u^2 = u^2 K (nw.h) ----------------------------------- */
size_t nw_fg_amax(const nw_model *model, int grad) {
    return (model->degree == NWATTN_LOCAL_LINEAR ? 2 : 0) + (grad ? 2 : 0);
}

void nw_fg_row_sums(const nw_model *model, size_t amax, const double *mom, nw_sums *s) {
    const size_t p = model->p, dv = model->dv, A = amax + 1;
    for (size_t a = 0; a < p; a++) {
        for (size_t c = a; c < p; c++) {
            s->m[a + c * p] = mom[a + c];
            if (s->dm != NULL)
                s->dm[a + c * p] = mom[a + c + 2];
        }
        for (size_t c = 0; c < dv; c++) {
            s->b[a + c * p] = mom[(1 + c) * A + a];
            if (s->db != NULL)
                s->db[a + c * p] = mom[(1 + c) * A + a + 2];
        }
    }
}
