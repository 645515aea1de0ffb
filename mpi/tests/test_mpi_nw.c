/* Sharded regression against the one-process calls: nwattn_mpi_nw_predict vs
 * nwattn_nw_predict, nwattn_mpi_nw_cv vs nwattn_nw_cv (value and gradient) and
 * nwattn_mpi_nw_select_bandwidth vs nwattn_nw_select_bandwidth (Gaussian and Laplace local
 * constant, d = 1 to 3, random shards with empty ones), and every other model of the
 * one-process calls (every_model, every_model_selection); results the same on every rank;
 * bad models, disagreeing ranks and degenerate data refused on every rank. */
#include "mpi_testutil.h"

static void predict_and_cv(void **state) {
    (void)state;
    nwattn_context *ref = at_context(NWATTN_BACKEND_REFERENCE, 1);
    nwattn_context *fast = at_context(NWATTN_BACKEND_AUTO, 1);
    double worst_p = 0.0, worst_cv = 0.0;
    for (int c = 0; c < 16; c++) {
        at_rng rng = {0x77000u + (uint64_t)c};
        const size_t n = 3 + at_below(&rng, 200), m = 1 + at_below(&rng, 30);
        const size_t d = 1 + (size_t)(c % 2), dv = 1 + at_below(&rng, 2);
        const size_t ldx = d + 1, ldy = dv + 1;
        float *x = at_random(&rng, n * ldx, 0.0f, 5.0f), *y = at_random(&rng, n * ldy, -1, 1);
        float *xq = at_random(&rng, m * d, -0.5f, 5.5f);
        float h[4] = {at_uniform(&rng, 0.1f, 1.0f), at_uniform(&rng, 0.1f, 1.0f)};
        float grid[3 * 2] = {h[0], h[1], 2 * h[0], h[1], h[0] * 0.5f, 3 * h[1]};
        nwattn_regression model = {c % 4 < 2 ? NWATTN_KERNEL_GAUSSIAN : NWATTN_KERNEL_LAPLACE,
                                   NWATTN_LOCAL_CONSTANT, NWATTN_EMPTY_NEAREST};
        float *yq1 = at_filled(m * dv, 0), *yq = at_filled(m * dv, 0);
        assert_int_equal(nwattn_nw_predict(ref, &model, h, m, n, d, dv, xq, d, x, ldx, y, ldy,
                                           yq1, dv, NULL, 0, NULL, NULL),
                         NWATTN_OK);
        double cv1[3], cv[3];
        assert_int_equal(nwattn_nw_cv(ref, &model, n, d, dv, x, ldx, y, ldy, 3, grid, d, cv1,
                                      NULL, 0, NULL),
                         NWATTN_OK);
        size_t counts[64];
        const size_t off = mt_split(&rng, n, counts, c % 3 == 0 ? c % mt_size() : -1);
        const size_t cnt = counts[mt_rank()];
        nwattn_mpi_error err;
        nwattn_status s = nwattn_mpi_nw_predict(fast, MPI_COMM_WORLD, &model, h, m, cnt, d, dv,
                                                xq, d, cnt ? x + off * ldx : NULL, ldx,
                                                cnt ? y + off * ldy : NULL, ldy, yq, dv, NULL, 0, NULL, NULL, &err);
        const double ep = s == NWATTN_OK ? mt_max(mt_diff(yq, dv, yq1, dv, m, dv)) : INFINITY;
        nwattn_status s2 = nwattn_mpi_nw_cv(fast, MPI_COMM_WORLD, &model, cnt, d, dv,
                                            cnt ? x + off * ldx : NULL, ldx,
                                            cnt ? y + off * ldy : NULL, ldy, 3, grid, d, cv,
                                            NULL, 0, NULL, &err);
        double ecv = 0.0;
        for (int g = 0; s2 == NWATTN_OK && g < 3; g++)
            ecv = fmax(ecv, fabs(cv[g] - cv1[g]) / cv1[g]);
        ecv = s2 == NWATTN_OK ? mt_max(ecv) : INFINITY;
        worst_p = fmax(worst_p, ep);
        worst_cv = fmax(worst_cv, ecv);
        const int ok = mt_all(s == NWATTN_OK && s2 == NWATTN_OK && ep <= 2e-5 && ecv <= 1e-5);
        if (!ok && mt_rank() == 0)
            fprintf(stderr, "case %d (n %zu d %zu): status %d %d '%s', predict %.3g cv %.3g\n",
                    c, n, d, (int)s, (int)s2, err.message, ep, ecv);
        assert_true(ok);
        assert_true(mt_same_everywhere(cv, sizeof cv)); /* bit for bit on every rank */
        free(x);
        free(y);
        free(xq);
        free(yq1);
        free(yq);
    }
    if (mt_rank() == 0)
        fprintf(stderr, "largest difference on %d ranks: predictions %.3g, CV %.3g relative\n",
                mt_size(), worst_p, worst_cv);
    nwattn_context_destroy(ref);
    nwattn_context_destroy(fast);
}

/* Bandwidth selection by grid over ranks: the argmin of the sharded CV on a log grid is the
 * one-process argmin, and the same on every rank (the CV doubles are). */
static void grid_selection(void **state) {
    (void)state;
    nwattn_context *ref = at_context(NWATTN_BACKEND_REFERENCE, 1);
    nwattn_context *fast = at_context(NWATTN_BACKEND_AUTO, 1);
    at_rng rng = {99};
    const size_t n = 150, grid = 16;
    float x[150], y[150], h[16];
    for (size_t i = 0; i < n; i++) {
        x[i] = at_uniform(&rng, 0.0f, 10.0f);
        y[i] = sinf(x[i]) + at_uniform(&rng, -0.3f, 0.3f);
    }
    for (size_t g = 0; g < grid; g++)
        h[g] = (float)(0.05 * pow(400.0, (double)g / (double)(grid - 1)));
    nwattn_regression model = {NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_CONSTANT, 0};
    double cv1[16], cv[16];
    assert_int_equal(nwattn_nw_cv(ref, &model, n, 1, 1, x, 1, y, 1, grid, h, 1, cv1, NULL, 0,
                                  NULL),
                     NWATTN_OK);
    size_t counts[64];
    const size_t off = mt_split(&rng, n, counts, mt_size() > 1 ? 1 : -1);
    const size_t cnt = counts[mt_rank()];
    assert_true(mt_all(nwattn_mpi_nw_cv(fast, MPI_COMM_WORLD, &model, cnt, 1, 1,
                                        cnt ? x + off : NULL, 1, cnt ? y + off : NULL, 1,
                                        grid, h, 1, cv, NULL, 0, NULL, NULL) == NWATTN_OK));
    size_t best1 = 0, best = 0;
    for (size_t g = 1; g < grid; g++) {
        best1 = cv1[g] <= cv1[best1] ? g : best1; /* ties to the larger bandwidth */
        best = cv[g] <= cv[best] ? g : best;
    }
    assert_true(mt_all(best == best1 && best > 0 && best + 1 < grid));
    assert_true(mt_same_everywhere(&best, sizeof best));
    nwattn_context_destroy(ref);
    nwattn_context_destroy(fast);
}

/* The analytic gradient: against nwattn_nw_cv's (REFERENCE, one process) and central finite
 * differences of that CV; the same bits on every rank. */
static void cv_gradient(void **state) {
    (void)state;
    nwattn_context *ref = at_context(NWATTN_BACKEND_REFERENCE, 1);
    nwattn_context *fast = at_context(NWATTN_BACKEND_AUTO, 1);
    double worst = 0.0, worst_fd = 0.0;
    for (int c = 0; c < 12; c++) {
        at_rng rng = {0x78100u + (uint64_t)c};
        const size_t n = 3 + at_below(&rng, 150), d = 1 + (size_t)(c % 3);
        const size_t dv = 1 + at_below(&rng, 2), ldx = d + 2, ldy = dv, ldg = d + 1;
        float *x = at_random(&rng, n * ldx, 0.0f, 4.0f), *y = at_random(&rng, n * ldy, -1, 1);
        for (size_t i = 0; i < n; i++) /* some signal, so the CV has a slope */
            y[i * ldy] += sinf(2.0f * x[i * ldx]);
        float grid[2 * 3];
        for (size_t k = 0; k < 2 * d; k++)
            grid[k] = at_uniform(&rng, 0.15f, 1.5f);
        nwattn_regression model = {c % 2 ? NWATTN_KERNEL_LAPLACE : NWATTN_KERNEL_GAUSSIAN,
                                   NWATTN_LOCAL_CONSTANT, NWATTN_EMPTY_NEAREST};
        double cv1[2], g1[2 * 4], cv[2], g[2 * 4];
        assert_int_equal(nwattn_nw_cv(ref, &model, n, d, dv, x, ldx, y, ldy, 2, grid, d, cv1,
                                      g1, ldg, NULL),
                         NWATTN_OK);
        size_t counts[64];
        const size_t off = mt_split(&rng, n, counts, c % 3 == 0 ? c % mt_size() : -1);
        const size_t cnt = counts[mt_rank()];
        nwattn_mpi_error err;
        memset(g, 0, sizeof g);
        nwattn_status s = nwattn_mpi_nw_cv(fast, MPI_COMM_WORLD, &model, cnt, d, dv,
                                           cnt ? x + off * ldx : NULL, ldx,
                                           cnt ? y + off * ldy : NULL, ldy, 2, grid, d, cv, g,
                                           ldg, NULL, &err);
        double e = 0.0, efd = 0.0;
        for (size_t b = 0; s == NWATTN_OK && b < 2; b++) {
            double scale = 0.0;
            for (size_t k = 0; k < d; k++)
                scale = fmax(scale, fabs(g1[b * ldg + k]));
            for (size_t k = 0; k < d; k++) {
                e = fmax(e, fabs(g[b * ldg + k] - g1[b * ldg + k]) / scale);
                /* central difference of the one-process CV in h_k */
                float hp[3], hm[3];
                memcpy(hp, grid + b * d, d * sizeof(float));
                memcpy(hm, grid + b * d, d * sizeof(float));
                hp[k] *= 1.001f;
                hm[k] /= 1.001f;
                double fp, fm;
                assert_int_equal(nwattn_nw_cv(ref, &model, n, d, dv, x, ldx, y, ldy, 1, hp, d,
                                              &fp, NULL, 0, NULL), NWATTN_OK);
                assert_int_equal(nwattn_nw_cv(ref, &model, n, d, dv, x, ldx, y, ldy, 1, hm, d,
                                              &fm, NULL, 0, NULL), NWATTN_OK);
                const double fd = (fp - fm) / ((double)hp[k] - (double)hm[k]);
                efd = fmax(efd, fabs(g[b * ldg + k] - fd) / scale);
            }
        }
        e = s == NWATTN_OK ? mt_max(e) : INFINITY;
        efd = s == NWATTN_OK ? mt_max(efd) : INFINITY;
        worst = fmax(worst, e);
        worst_fd = fmax(worst_fd, efd);
        const int ok = mt_all(s == NWATTN_OK && e <= 1e-4 && efd <= 2e-3);
        if (!ok && mt_rank() == 0)
            fprintf(stderr, "case %d (n %zu d %zu dv %zu): status %d '%s', grad %.3g fd %.3g\n",
                    c, n, d, dv, (int)s, err.message, e, efd);
        assert_true(ok);
        assert_true(mt_same_everywhere(g, sizeof g));
        assert_true(mt_same_everywhere(cv, sizeof cv));
        free(x);
        free(y);
    }
    if (mt_rank() == 0)
        fprintf(stderr, "%d ranks: largest gradient difference %.3g (finite differences %.3g)\n",
                mt_size(), worst, worst_fd);
    /* bad gradient arguments are collective */
    float x[8] = {0, 1, 2, 3, 4, 5, 6, 7}, y[8] = {1, 0, 1, 0, 1, 0, 1, 0};
    float h2[2] = {1.0f, 2.0f};
    double cv[2], g[2];
    nwattn_mpi_error err;
    nwattn_regression nw = {NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_CONSTANT, 0};
    nwattn_status s = nwattn_mpi_nw_cv(fast, MPI_COMM_WORLD, &nw, 4, 1, 1, x, 1, y, 1, 1, h2,
                                       1, cv, mt_rank() == mt_size() - 1 ? NULL : g, 1, NULL, &err);
    assert_true(mt_all(mt_size() == 1 ? s == NWATTN_OK : s == NWATTN_ERR_BAD_PARAMETER));
    s = nwattn_mpi_nw_cv(fast, MPI_COMM_WORLD, &nw, 4, 1, 1, x, 1, y, 1, 2, h2, 1, cv, g,
                         mt_rank() == 0 ? 0 : 1, NULL, &err);
    assert_true(mt_all(s == NWATTN_ERR_BAD_LEADING_DIM && err.rank == 0 &&
                       strstr(err.message, "ldg")));
    nwattn_context_destroy(ref);
    nwattn_context_destroy(fast);
}

/* Bandwidth selection over ranks: the same bits on every rank, close to the one-process
 * nwattn_nw_select_bandwidth; bad options refused on every rank. */
static void selection(void **state) {
    (void)state;
    nwattn_context *ref = at_context(NWATTN_BACKEND_REFERENCE, 1);
    nwattn_context *fast = at_context(NWATTN_BACKEND_AUTO, 1);
    double worst = 0.0;
    for (int c = 0; c < 6; c++) {
        at_rng rng = {0x79200u + (uint64_t)c};
        const size_t n = 40 + at_below(&rng, 80), d = 1 + (size_t)(c % 2), dv = 1, ldx = d;
        float *x = at_random(&rng, n * ldx, 0.0f, 6.0f), *y = at_filled(n, 0);
        for (size_t i = 0; i < n; i++) /* signal in x_0; x_1 (d == 2) is noise */
            y[i] = sinf(x[i * ldx]) + at_uniform(&rng, -0.3f, 0.3f);
        nwattn_regression model = {c % 4 < 2 ? NWATTN_KERNEL_GAUSSIAN : NWATTN_KERNEL_LAPLACE,
                                   NWATTN_LOCAL_CONSTANT, NWATTN_EMPTY_NEAREST};
        nwattn_cv_options opt;
        nwattn_cv_options_default(&opt);
        opt.grid_points = 8;
        float h1[2], h[2] = {0, 0}, scales[8];
        double curve[8];
        nwattn_cv_report rep1, rep;
        memset(&rep, 0, sizeof rep);
        assert_int_equal(nwattn_nw_select_bandwidth(ref, &model, n, d, dv, x, ldx, y, 1, &opt,
                                                    h1, &rep1, NULL, NULL),
                         NWATTN_OK);
        size_t counts[64];
        const size_t off = mt_split(&rng, n, counts, c % 3 == 0 ? c % mt_size() : -1);
        const size_t cnt = counts[mt_rank()];
        nwattn_mpi_error err;
        nwattn_status s = nwattn_mpi_nw_select_bandwidth(
            fast, MPI_COMM_WORLD, &model, cnt, d, dv, cnt ? x + off * ldx : NULL, ldx,
            cnt ? y + off : NULL, 1, &opt, h, &rep, scales, curve, &err);
        /* x_0's bandwidth; x_1 (noise) has a flat CV towards large h, where the two
         * searches stop apart: there only the CV reached is compared */
        double e = s == NWATTN_OK ? fabs(log((double)h[0] / (double)h1[0])) : 0.0;
        e = s == NWATTN_OK ? mt_max(e) : INFINITY;
        worst = fmax(worst, e);
        const int ok = mt_all(s == NWATTN_OK && e <= 0.02 &&
                              fabs(rep.cv - rep1.cv) <= 1e-5 * rep1.cv);
        if (!ok && mt_rank() == 0)
            fprintf(stderr, "case %d (n %zu d %zu): status %d '%s', log h differs by %.3g, "
                    "cv %.17g vs %.17g, converged %d %d\n", c, n, d, (int)s, err.message, e, rep.cv,
                    rep1.cv, rep.converged, rep1.converged);
        assert_true(ok);
        assert_true(mt_same_everywhere(h, sizeof h));
        assert_true(mt_same_everywhere(&rep, sizeof rep));
        assert_true(mt_same_everywhere(curve, sizeof curve));
        free(x);
        free(y);
    }
    if (mt_rank() == 0)
        fprintf(stderr, "%d ranks: selection within %.3g in log h of one process\n", mt_size(),
                worst);
    /* refusals, collective */
    float x[8] = {0, 1, 2, 3, 4, 5, 6, 7}, y[8] = {1, 0, 1, 0, 1, 0, 1, 0}, h[1];
    nwattn_regression nw = {NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_CONSTANT, 0};
    nwattn_cv_options bad = {0};
    bad.grid_points = mt_rank() == mt_size() - 1 ? 1 : 8;
    nwattn_mpi_error err;
    nwattn_status s = nwattn_mpi_nw_select_bandwidth(fast, MPI_COMM_WORLD, &nw, 4, 1, 1, x, 1,
                                                     y, 1, &bad, h, NULL, NULL, NULL, &err);
    assert_true(mt_all(s == NWATTN_ERR_BAD_PARAMETER && err.rank == mt_size() - 1 &&
                       strstr(err.message, "grid_points")));
    nwattn_cv_options differ = {0};
    differ.tolerance = mt_rank() == 0 ? 1e-3 : 1e-4;
    s = nwattn_mpi_nw_select_bandwidth(fast, MPI_COMM_WORLD, &nw, 4, 1, 1, x, 1, y, 1, &differ,
                                       h, NULL, NULL, NULL, &err);
    assert_true(mt_all(mt_size() == 1 ? s == NWATTN_OK
                                      : s == NWATTN_ERR_BAD_PARAMETER &&
                                            strstr(err.message, "tolerance")));
    s = nwattn_mpi_nw_select_bandwidth(fast, MPI_COMM_WORLD, &nw, 4, 1, 1, x, 1, y, 1, NULL,
                                       mt_rank() == 0 ? NULL : h, NULL, NULL, NULL, &err);
    assert_true(mt_all(s == NWATTN_ERR_NULL_POINTER && err.rank == 0));
    nwattn_regression unknown = {NWATTN_KERNEL_GAUSSIAN, (nwattn_degree)7, 0};
    s = nwattn_mpi_nw_select_bandwidth(fast, MPI_COMM_WORLD, &unknown, 4, 1, 1, x, 1, y, 1,
                                       NULL, h, NULL, NULL, NULL, &err);
    assert_true(mt_all(s == NWATTN_ERR_BAD_ENUM && strstr(err.message, "degree")));
    nwattn_context_destroy(ref);
    nwattn_context_destroy(fast);
}

/* Every model of the one-process calls (seven kernels, local constant and local linear, the
 * three empty-row policies, per-dimension bandwidths) against nwattn_nw_predict (yq, weights,
 * row_flags, n_flagged) and nwattn_nw_cv (cv, gradient, flagged) under REFERENCE, on random
 * shards with empty ones; every replicated result the same bits on every rank. Small
 * bandwidths make compact kernels' rows empty (and their CV +INFINITY). */
static void every_model(void **state) {
    (void)state;
    nwattn_context *ref = at_context(NWATTN_BACKEND_REFERENCE, 1);
    nwattn_context *fast = at_context(NWATTN_BACKEND_AUTO, 1);
    double worst_p = 0.0, worst_w = 0.0, worst_cv = 0.0, worst_g = 0.0; /* the rows path */
    size_t empty_rows = 0, singular_rows = 0;
    for (int c = 0; c < 42; c++) {
        at_rng rng = {0x7a300u + (uint64_t)c};
        const nwattn_kernel kernel = (nwattn_kernel)(c % 7);
        const nwattn_degree degree = (c / 7) % 2 ? NWATTN_LOCAL_LINEAR : NWATTN_LOCAL_CONSTANT;
        const nwattn_empty empty = (nwattn_empty)((c / 14) % 3);
        nwattn_regression model = {kernel, degree, empty};
        const size_t n = 4 + at_below(&rng, 50), m = 1 + at_below(&rng, 12);
        const size_t d = 1 + at_below(&rng, 2), dv = 1 + at_below(&rng, 2);
        const size_t ldx = d + 1, ldy = dv + 1, ldw = n + 2, ldg = d + 1;
        float *x = at_random(&rng, n * ldx, 0.0f, 4.0f), *y = at_random(&rng, n * ldy, -1, 1);
        for (size_t i = 0; i < n; i++) /* some signal, so the CV has a slope */
            y[i * ldy] += sinf(2.0f * x[i * ldx]);
        float *xq = at_random(&rng, m * d, -0.5f, 4.5f);
        /* empty rows for the compact kernels (the pooled Gaussian and Laplace local constant
         * rows, float, are tested at such bandwidths by predict_and_cv and cv_gradient) */
        const int pooled = degree == NWATTN_LOCAL_CONSTANT && kernel <= NWATTN_KERNEL_LAPLACE;
        const float small = c % 3 == 0 && !pooled ? 0.1f : 1.0f;
        float h[2], grid[2 * 2];
        for (size_t k = 0; k < d; k++) {
            h[k] = small * at_uniform(&rng, 0.4f, 1.5f);
            grid[k] = small * at_uniform(&rng, 0.4f, 1.5f);
            grid[d + k] = at_uniform(&rng, 0.5f, 2.0f);
        }
        float *yq1 = at_filled(m * dv, 0), *yq = at_filled(m * dv, 0);
        float *w1 = at_filled(m * ldw, 0), *w = at_filled(m * ldw, 0);
        unsigned char f1[16], f[16];
        size_t nf1 = 0, nf = 99;
        assert_int_equal(nwattn_nw_predict(ref, &model, h, m, n, d, dv, xq, d, x, ldx, y, ldy,
                                           yq1, dv, w1, ldw, f1, &nf1),
                         NWATTN_OK);
        double cv1[2], g1[2 * 3], cv[2], g[2 * 3];
        size_t fl1[2], fl[2] = {99, 99};
        assert_int_equal(nwattn_nw_cv(ref, &model, n, d, dv, x, ldx, y, ldy, 2, grid, d, cv1,
                                      g1, ldg, fl1),
                         NWATTN_OK);
        size_t counts[64];
        const size_t off = mt_split(&rng, n, counts, c % 2 ? c % mt_size() : -1);
        const size_t cnt = counts[mt_rank()];
        const float *xs = cnt ? x + off * ldx : NULL, *ys = cnt ? y + off * ldy : NULL;
        nwattn_mpi_error err;
        nwattn_status s = nwattn_mpi_nw_predict(fast, MPI_COMM_WORLD, &model, h, m, cnt, d, dv,
                                                xq, d, xs, ldx, ys, ldy, yq, dv, w, ldw, f,
                                                &nf, &err);
        double ymax = 1.0;
        for (size_t i = 0; i < m * dv; i++)
            ymax = isfinite(yq1[i]) ? fmax(ymax, fabs(yq1[i])) : ymax;
        const double ep = s == NWATTN_OK ? mt_max(mt_diff(yq, dv, yq1, dv, m, dv) / ymax)
                                         : INFINITY;
        const double ew = s == NWATTN_OK ? mt_max(mt_diff(w, ldw, w1 + off, ldw, m, cnt))
                                         : INFINITY;
        const int flags_ok = s == NWATTN_OK && nf == nf1 && memcmp(f, f1, m) == 0;
        memset(g, 0, sizeof g);
        nwattn_status s2 = nwattn_mpi_nw_cv(fast, MPI_COMM_WORLD, &model, cnt, d, dv, xs, ldx,
                                            ys, ldy, 2, grid, d, cv, g, ldg, fl, &err);
        double ecv = 0.0, eg = 0.0;
        for (size_t b = 0; s2 == NWATTN_OK && b < 2; b++) {
            if (isinf(cv1[b]) || isinf(cv[b])) {
                ecv = fmax(ecv, cv[b] == cv1[b] ? 0.0 : INFINITY);
                continue;
            }
            ecv = fmax(ecv, fabs(cv[b] - cv1[b]) / cv1[b]);
            double scale = 1e-30;
            for (size_t k = 0; k < d; k++)
                scale = fmax(scale, fabs(g1[b * ldg + k]));
            for (size_t k = 0; k < d; k++)
                eg = fmax(eg, fabs(g[b * ldg + k] - g1[b * ldg + k]) /
                                  (kernel == NWATTN_KERNEL_UNIFORM ? 1.0 : scale));
        }
        ecv = s2 == NWATTN_OK ? mt_max(ecv) : INFINITY;
        eg = s2 == NWATTN_OK ? mt_max(eg) : INFINITY;
        const int cv_flags_ok = s2 == NWATTN_OK && fl[0] == fl1[0] && fl[1] == fl1[1];
        worst_p = fmax(worst_p, ep);
        worst_w = fmax(worst_w, ew);
        worst_cv = pooled ? worst_cv : fmax(worst_cv, ecv);
        worst_g = pooled ? worst_g : fmax(worst_g, eg);
        for (size_t i = 0; i < m; i++) {
            empty_rows += (f1[i] & NWATTN_ROW_EMPTY) != 0;
            singular_rows += (f1[i] & NWATTN_ROW_SINGULAR) != 0;
        }
        const int ok = mt_all(s == NWATTN_OK && s2 == NWATTN_OK && ep <= 1e-6 && ew <= 1e-6 &&
                              flags_ok && ecv <= (pooled ? 1e-5 : 1e-9) &&
                              eg <= (pooled ? 1e-4 : 1e-6) && cv_flags_ok);
        if (!ok && mt_rank() == 0)
            fprintf(stderr, "case %d (kernel %d degree %d empty %d n %zu m %zu d %zu dv %zu): "
                    "status %d %d '%s', predict %.3g weights %.3g flags %d (%zu vs %zu), "
                    "cv %.3g grad %.3g, cv flags %d\n", c, (int)kernel, (int)degree,
                    (int)empty, n, m, d, dv, (int)s, (int)s2, err.message, ep, ew, flags_ok, nf,
                    nf1, ecv, eg, cv_flags_ok);
        assert_true(ok);
        assert_true(mt_same_everywhere(yq, m * dv * sizeof(float)));
        assert_true(mt_same_everywhere(f, m));
        assert_true(mt_same_everywhere(cv, sizeof cv));
        assert_true(mt_same_everywhere(g, sizeof g));
        free(x);
        free(y);
        free(xq);
        free(yq1);
        free(yq);
        free(w1);
        free(w);
    }
    if (mt_rank() == 0)
        fprintf(stderr, "every model on %d ranks: predictions %.3g (of max|y|), weights %.3g, "
                "CV %.3g relative, gradient %.3g (rows path); %zu empty and %zu singular rows seen\n",
                mt_size(), worst_p, worst_w, worst_cv, worst_g, empty_rows, singular_rows);
    assert_true(empty_rows > 0);
    nwattn_context_destroy(ref);
    nwattn_context_destroy(fast);
}

/* Bandwidth selection for the other models (a compact kernel's raised grid, local linear,
 * the uniform kernel's golden section): every rank the same bits, close to one process. */
static void every_model_selection(void **state) {
    (void)state;
    nwattn_context *ref = at_context(NWATTN_BACKEND_REFERENCE, 1);
    nwattn_context *fast = at_context(NWATTN_BACKEND_AUTO, 1);
    const nwattn_regression models[] = {
        {NWATTN_KERNEL_EPANECHNIKOV, NWATTN_LOCAL_CONSTANT, NWATTN_EMPTY_NEAREST},
        {NWATTN_KERNEL_MATERN32, NWATTN_LOCAL_LINEAR, NWATTN_EMPTY_NEAREST},
        {NWATTN_KERNEL_UNIFORM, NWATTN_LOCAL_CONSTANT, NWATTN_EMPTY_NAN},
        {NWATTN_KERNEL_TRICUBE, NWATTN_LOCAL_LINEAR, NWATTN_EMPTY_ZERO},
        {NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_LINEAR, NWATTN_EMPTY_NEAREST},
    };
    double worst = 0.0;
    for (int c = 0; c < 5; c++) {
        at_rng rng = {0x7b400u + (uint64_t)c};
        const size_t n = 30 + at_below(&rng, 30), d = c == 4 ? 2 : 1, ldx = d;
        float *x = at_random(&rng, n * ldx, 0.0f, 6.0f), *y = at_filled(n, 0);
        for (size_t i = 0; i < n; i++)
            y[i] = sinf(x[i * ldx]) + at_uniform(&rng, -0.3f, 0.3f);
        nwattn_cv_options opt;
        nwattn_cv_options_default(&opt);
        opt.grid_points = 8;
        opt.max_evaluations = 30;
        float h1[2], h[2] = {0, 0};
        double curve1[8], curve[8];
        nwattn_cv_report rep1, rep;
        memset(&rep, 0, sizeof rep);
        assert_int_equal(nwattn_nw_select_bandwidth(ref, &models[c], n, d, 1, x, ldx, y, 1,
                                                    &opt, h1, &rep1, NULL, curve1),
                         NWATTN_OK);
        size_t counts[64];
        const size_t off = mt_split(&rng, n, counts, c % mt_size());
        const size_t cnt = counts[mt_rank()];
        nwattn_mpi_error err;
        nwattn_status s = nwattn_mpi_nw_select_bandwidth(
            fast, MPI_COMM_WORLD, &models[c], cnt, d, 1, cnt ? x + off * ldx : NULL, ldx,
            cnt ? y + off : NULL, 1, &opt, h, &rep, NULL, curve, &err);
        double e = s == NWATTN_OK ? fabs(log((double)h[0] / (double)h1[0])) : INFINITY;
        double ecurve = 0.0; /* the grid (raised alike for compact kernels) */
        for (size_t g = 0; s == NWATTN_OK && g < 8; g++)
            ecurve = fmax(ecurve, isinf(curve1[g]) ? (curve[g] == curve1[g] ? 0 : INFINITY)
                                                   : fabs(curve[g] - curve1[g]) / curve1[g]);
        e = mt_max(e);
        ecurve = mt_max(ecurve);
        worst = fmax(worst, e);
        const int ok = mt_all(s == NWATTN_OK && e <= 0.02 && ecurve <= 1e-9 &&
                              fabs(rep.cv - rep1.cv) <= 1e-6 * rep1.cv &&
                              rep.flagged_rows == rep1.flagged_rows);
        if (!ok && mt_rank() == 0)
            fprintf(stderr, "case %d (kernel %d degree %d n %zu d %zu): status %d '%s', log h "
                    "%.3g, curve %.3g, cv %.17g vs %.17g, flagged %zu vs %zu\n", c,
                    (int)models[c].kernel, (int)models[c].degree, n, d, (int)s, err.message, e,
                    ecurve, rep.cv, rep1.cv, rep.flagged_rows, rep1.flagged_rows);
        assert_true(ok);
        assert_true(mt_same_everywhere(h, sizeof h));
        assert_true(mt_same_everywhere(&rep, sizeof rep));
        assert_true(mt_same_everywhere(curve, sizeof curve));
        free(x);
        free(y);
    }
    if (mt_rank() == 0)
        fprintf(stderr, "%d ranks: other models' selection within %.3g in log h\n", mt_size(),
                worst);
    nwattn_context_destroy(ref);
    nwattn_context_destroy(fast);
}

static void refusals(void **state) {
    (void)state;
    nwattn_context *ctx = at_context(NWATTN_BACKEND_AUTO, 1);
    float x[8] = {0, 1, 2, 3, 4, 5, 6, 7}, y[8] = {1, 0, 1, 0, 1, 0, 1, 0}, h = 1.0f, yq[2];
    double cv[1];
    nwattn_mpi_error err;
    /* an unknown kernel on one rank; kernels or empty policies that differ across ranks */
    nwattn_regression unknown = {(nwattn_kernel)(mt_rank() == mt_size() - 1 ? 9 : 0),
                                 NWATTN_LOCAL_CONSTANT, 0};
    nwattn_status s = nwattn_mpi_nw_predict(ctx, MPI_COMM_WORLD, &unknown, &h, 2, 4, 1, 1, x,
                                            1, x, 1, y, 1, yq, 1, NULL, 0, NULL, NULL, &err);
    assert_true(mt_all(s == NWATTN_ERR_BAD_ENUM && err.rank == mt_size() - 1 &&
                       strstr(err.message, "kernel")));
    nwattn_regression differ = {(nwattn_kernel)(mt_rank() % 2 ? NWATTN_KERNEL_TRICUBE : 0),
                                NWATTN_LOCAL_LINEAR, (nwattn_empty)(mt_rank() % 3)};
    s = nwattn_mpi_nw_predict(ctx, MPI_COMM_WORLD, &differ, &h, 2, 4, 1, 1, x, 1, x, 1, y, 1,
                              yq, 1, NULL, 0, NULL, NULL, &err);
    assert_true(mt_all(mt_size() == 1 ? s == NWATTN_OK
                                      : s == NWATTN_ERR_BAD_PARAMETER && err.rank == mt_size()));
    /* weights on one rank only, and a weights pitch below n_local */
    float w[2 * 4];
    s = nwattn_mpi_nw_predict(ctx, MPI_COMM_WORLD, &differ, &h, 2, 4, 1, 1, x, 1, x, 1, y, 1,
                              yq, 1, mt_rank() == 0 ? w : NULL, 4, NULL, NULL, &err);
    assert_true(mt_all(s != NWATTN_OK || mt_size() == 1));
    nwattn_regression linear = {NWATTN_KERNEL_EPANECHNIKOV, NWATTN_LOCAL_LINEAR, 0};
    s = nwattn_mpi_nw_predict(ctx, MPI_COMM_WORLD, &linear, &h, 2, 4, 1, 1, x, 1, x, 1, y, 1,
                              yq, 1, w, mt_rank() == 0 ? 3 : 4, NULL, NULL, &err);
    assert_true(mt_all(s == NWATTN_ERR_BAD_LEADING_DIM && err.rank == 0 &&
                       strstr(err.message, "weights")));
    /* a non-finite y on the last rank */
    nwattn_regression nw = {NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_CONSTANT, 0};
    float ybad[8] = {1, 0, 1, 0, 1, 0, 1, 0};
    if (mt_rank() == mt_size() - 1)
        ybad[2] = NAN;
    s = nwattn_mpi_nw_cv(ctx, MPI_COMM_WORLD, &nw, 4, 1, 1, x, 1, ybad, 1, 1, &h, 1, cv, NULL, 0, NULL, &err);
    assert_true(mt_all(s == NWATTN_ERR_BAD_PARAMETER && err.rank == mt_size() - 1));
    /* NULL bandwidths on the last rank only (once a hang: the ranks' checks differed) */
    s = nwattn_mpi_nw_cv(ctx, MPI_COMM_WORLD, &nw, 4, 1, 1, x, 1, y, 1, 1,
                         mt_rank() == mt_size() - 1 ? NULL : &h, 1, cv, NULL, 0, NULL, &err);
    assert_true(mt_all(s == NWATTN_ERR_NULL_POINTER && err.rank == mt_size() - 1));
    s = nwattn_mpi_nw_predict(ctx, MPI_COMM_WORLD, mt_rank() == mt_size() - 1 ? NULL : &nw, &h,
                              2, 4, 1, 1, x, 1, x, 1, y, 1, yq, 1, NULL, 0, NULL, NULL, &err);
    assert_true(mt_all(s == NWATTN_ERR_NULL_POINTER && err.rank == mt_size() - 1 &&
                       strstr(err.message, "model is NULL")));
    /* too few points in all, and no spread */
    s = nwattn_mpi_nw_cv(ctx, MPI_COMM_WORLD, &nw, mt_rank() == 0 ? 2 : 0, 1, 1, x, 1, y, 1, 1,
                         &h, 1, cv, NULL, 0, NULL, &err);
    assert_true(mt_all(s == NWATTN_ERR_DEGENERATE_DATA));
    float same[8] = {2, 2, 2, 2, 2, 2, 2, 2};
    s = nwattn_mpi_nw_cv(ctx, MPI_COMM_WORLD, &nw, 4, 1, 1, same, 1, y, 1, 1, &h, 1, cv, NULL, 0, NULL, &err);
    assert_true(mt_all(s == NWATTN_ERR_DEGENERATE_DATA && strstr(err.message, "one value")));
    nwattn_context_destroy(ctx);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(predict_and_cv),
    cmocka_unit_test(cv_gradient),
    cmocka_unit_test(selection),
    cmocka_unit_test(grid_selection),
    cmocka_unit_test(every_model),
    cmocka_unit_test(every_model_selection),
    cmocka_unit_test(refusals),
};

MT_MAIN(tests)
