/* The fast-sum path of a plan: leave-one-out CV rows and predictions, one block of sorted
 * points per unit of work, each row finished by the same nw_finish_row as the other paths. */
#include <string.h>

#include "fastsum.h"
#include "threads.h"

static size_t align8(size_t bytes) { return (bytes + 7) / 8 * 8; }

#define NW_FG_RUNS 64 /* the Gaussian's CV rows: runs of work, at most */

/* Doubles of a worker's row moments: both sides (Laplace family) or one array (Gaussian). */
static size_t row_doubles(size_t v, size_t k1) {
    const size_t vp = (v + 1) / 2 * 2;
    return vp * (2 * k1 > NW_FG_AMAX + 1 ? 2 * k1 : NW_FG_AMAX + 1) + NW_FG_LOCAL_DOUBLES(v);
}

size_t nw_fs_plan_bytes(const nw_model *model, size_t n, size_t threads) {
    const size_t v = 1 + model->dv, k1 = nw_fs_moments_needed(model, 1);
    size_t engine = nw_fs_bytes(n, v, k1), per_worker, total;
    if (engine != SIZE_MAX && model->kernel == NWATTN_KERNEL_GAUSSIAN) {
        size_t g = nw_fg_bytes(n, v), copies;
        if (g == SIZE_MAX || !nw_add(engine, g, &engine) || !nw_mul(v + 1, n, &copies) ||
            !nw_mul(copies, sizeof(double), &copies) || !nw_add(engine, copies, &engine))
            engine = SIZE_MAX;
    }
    if (engine == SIZE_MAX || !nw_mul(1, row_doubles(v, k1), &per_worker) ||
        !nw_add(per_worker, nw_fs_block_doubles(v, k1), &per_worker) ||
        !nw_mul(per_worker, threads * sizeof(double), &total) || !nw_add(total, engine, &total) ||
        !nw_add(total, align8(sizeof(struct nw_fs_plan)), &total))
        return SIZE_MAX;
    return total;
}

void nw_fs_plan_init(nw_plan *plan, void *mem, double eps) {
    const nw_model *model = &plan->model;
    const size_t n = plan->n, v = 1 + model->dv, k1 = nw_fs_moments_needed(model, 1);
    struct nw_fs_plan *fp = mem;
    char *p = (char *)mem + align8(sizeof *fp);
    nw_fs_init(&fp->fs, p, n, v, k1, plan->train.x, plan->train.y);
    p += nw_fs_bytes(n, v, k1);
    fp->gauss = model->kernel == NWATTN_KERNEL_GAUSSIAN;
    fp->eps = eps;
    fp->gx = fp->gc = NULL;
    if (fp->gauss) {
        fp->gx = (double *)(void *)p;
        fp->gc = fp->gx + n;
        p += (v + 1) * n * sizeof(double);
        for (size_t j = 0; j < n; j++) {
            fp->gx[j] = (double)plan->train.x[j];
            fp->gc[j] = 1.0;
        }
        for (size_t c = 0; c < model->dv; c++)
            for (size_t j = 0; j < n; j++)
                fp->gc[(1 + c) * n + j] = (double)plan->train.y[c * n + j];
        nw_fg_init(&fp->g, p, n, v, fp->gx, fp->gc);
        p += nw_fg_bytes(n, v);
    }
    fp->worker_mem = (double *)(void *)p;
    fp->worker_doubles = nw_fs_block_doubles(v, k1) + row_doubles(v, k1);
    plan->fastsum = fp;
}

/* A worker's block buffers and its row's left and right moments. */
static void worker_scratch(const nw_plan *plan, size_t worker, nw_fs_block *blk, double **left,
                           double **right) {
    const struct nw_fs_plan *fp = plan->fastsum;
    double *mem = fp->worker_mem + worker * fp->worker_doubles;
    nw_fs_block_init(blk, mem);
    *left = mem + nw_fs_block_doubles(fp->fs.v, fp->fs.k1);
    *right = *left + fp->fs.vp * fp->fs.k1;
}

typedef struct cv_job {
    nw_plan *plan;
    int want_grad;
    size_t rows; /* the Gaussian: rows per unit of work (whole NW_FS_BLOCKs) */
} cv_job;

static void cv_block(void *arg, size_t b, size_t worker) {
    const cv_job *job = arg;
    nw_plan *plan = job->plan;
    const nw_model *model = &plan->model;
    const nw_fastsum *fs = &plan->fastsum->fs;
    nw_worker *wk = &plan->workers[worker];
    const size_t d = model->d;
    nw_fs_block blk;
    double *left, *right;
    worker_scratch(plan, worker, &blk, &left, &right);
    nw_fs_fill(fs, b, &blk);
    for (size_t u = blk.s / NW_UNIT_ROWS; u < nw_units(blk.e); u++)
        memset(plan->partial + u * (3 + d), 0, (3 + d) * sizeof(double));
    nw_fs_cv_rows(model, fs, &blk, job->want_grad, plan->train.y, wk, left, right, plan->partial);
}

/* One row's CV term from its moments mom (sum u^a K, then sum y u^a K; one y column):
 * nw_finish_row's closed form, inline. */
static inline void gauss_cv_row(const nw_model *one, size_t amax, int want_grad, const double *mom,
                                const float *y, double *partial) {
    const int ll = one->p == 2;
    const double *km = mom, *ky = mom + amax + 1;
    double m[4] = {km[0], 0.0, 0.0, 0.0}, b[2] = {ky[0], 0.0}, dm[4] = {0.0}, db[2] = {0.0},
           yhat, dyhat = 0.0;
    if (ll)
        m[2] = km[1], m[3] = km[2], b[1] = ky[1];
    if (want_grad) { /* G u^2 = u^2 K: the moments two powers up */
        dm[0] = km[2], db[0] = ky[2];
        if (ll)
            dm[2] = km[3], dm[3] = km[4], db[1] = ky[3];
    }
    const unsigned flags = nw_finish_one(ll, m, b, want_grad ? dm : NULL, db, &yhat, &dyhat);
    nw_cv_add_row(one, flags, &yhat, &dyhat, y, 0, want_grad, 1.0, partial);
}

/* The Gaussian: job->rows leave-one-out rows (whole units). Consecutive rows of one dense
 * cluster share its target expansion (two rows at a time with one y column); the others walk
 * the clusters. A row's result does not depend on where its run of rows starts (an expansion
 * is built from its cluster alone), so the runs are long (NW_FG_RUNS of them): each start
 * rebuilds its first cluster's expansion, which at n = 10^6 with one run per NW_FS_BLOCK cost
 * more than all the rows. */
static void cv_gauss_block(void *arg, size_t blk_index, size_t worker) {
    const cv_job *job = arg;
    nw_plan *plan = job->plan;
    const nw_model *model = &plan->model;
    const nw_fs_gauss *g = &plan->fastsum->g;
    nw_worker *wk = &plan->workers[worker];
    const size_t n = plan->n, d = model->d, amax = nw_fg_amax(model, job->want_grad);
    const float *y = plan->train.y;
    const nw_model one = {model->kernel, model->degree, model->empty, 1, 1, model->p,
                          model->tolerance};
    nw_fs_block blk;
    double *mom, *unused;
    worker_scratch(plan, worker, &blk, &mom, &unused);
    nw_fg_local loc = {.k = SIZE_MAX, .N = mom + g->v * (NW_FG_AMAX + 1)};
    int local = 0;
    const size_t s0 = blk_index * job->rows, e0 = s0 + job->rows < n ? s0 + job->rows : n;
    for (size_t u = s0 / NW_UNIT_ROWS; u < nw_units(e0); u++)
        memset(plan->partial + u * (3 + d), 0, (3 + d) * sizeof(double));
    size_t k = nw_fg_cluster_of(g, s0), last = 0;
    for (size_t j = s0; j < e0; j++) {
        while (g->start[k + 1] <= j) /* the cluster of j: rows ascend */
            k++;
        if (k != loc.k)
            local = nw_fg_target(g, k, &loc), loc.k = k;
        if (local && model->dv == 1) { /* two rows of the cluster at a time */
            const size_t j1 = j + 1 < e0 && j + 1 < g->start[k + 1] ? j + 1 : j;
            double out0[2 * (NW_FG_AMAX + 1)], out1[2 * (NW_FG_AMAX + 1)];
            nw_fg_moments_local2(g, &loc, j, j1, amax, out0, out1);
            gauss_cv_row(&one, amax, job->want_grad, out0, y + j,
                         plan->partial + j / NW_UNIT_ROWS * (3 + d));
            if (j1 != j)
                gauss_cv_row(&one, amax, job->want_grad, out1, y + j1,
                             plan->partial + j1 / NW_UNIT_ROWS * (3 + d));
            j = j1;
            continue;
        }
        if (local)
            nw_fg_moments_local(g, &loc, j, amax, mom);
        else { /* the position of x_j: its last duplicate (a scan: rows ascend) */
            if (last < j)
                last = j;
            while (last + 1 < n && g->x[last + 1] <= g->x[j])
                last++;
            nw_fg_moments(g, g->x[j], last, j, amax, mom);
        }
        double *partial = plan->partial + j / NW_UNIT_ROWS * (3 + d);
        if (model->dv == 1) {
            gauss_cv_row(&one, amax, job->want_grad, mom, y + j, partial);
            continue;
        }
        nw_sums s;
        nw_sums_init(&s, wk->sums_mem, model, job->want_grad);
        nw_fg_row_sums(model, amax, mom, &s);
        unsigned flags = nw_finish_row(model, &s, 1, wk->work, wk->yhat,
                                       job->want_grad ? wk->dyhat : NULL, NULL);
        nw_cv_add_row(model, flags, wk->yhat, wk->dyhat, y + j, n, job->want_grad, 1.0, partial);
    }
}

void nw_fs_cv_units(nw_plan *plan, int want_grad) {
    nw_fastsum *fs = &plan->fastsum->fs;
    if (plan->fastsum->gauss) {
        nw_fg_prepare(&plan->fastsum->g, plan->inv_h[0], plan->fastsum->eps, plan->team,
                      plan->threads);
        const size_t per = (fs->blocks + NW_FG_RUNS - 1) / NW_FG_RUNS;
        cv_job job = {plan, want_grad, per * NW_FS_BLOCK};
        nw_parallel_for(plan->team, plan->threads, (fs->blocks + per - 1) / per, cv_gauss_block,
                        &job);
        return;
    }
    /* without the gradient fewer moments: the same values (the lower moments never read the
     * higher ones) */
    nw_fs_prepare(fs, plan->inv_h[0], nw_fs_moments_needed(&plan->model, want_grad), plan->team,
                  plan->threads);
    cv_job job = {plan, want_grad, NW_FS_BLOCK};
    nw_parallel_for(plan->team, plan->threads, fs->blocks, cv_block, &job);
}

/* ---- Predictions ---------------------------------------------------------------------------
 * The queries run in sorted order (the training order itself when they are the training
 * points, else a radix sort): each block's queries are a run of that order, found by a binary
 * search per block, and a query's position in the data follows from the previous one's by a
 * scan (no binary search per query: at n = 10^7 those cache-missing searches cost more than
 * the sums). A query's result does not depend on the order: the same values for any threads. */
typedef struct predict_job {
    nw_plan *plan;
    const float *xq;
    size_t ldq;
    float *yq;
    size_t ldyq;
    unsigned char *row_flags;
    const size_t *order, *start; /* sorted queries; block b's: order[start[b] .. start[b+1]) */
    size_t m;
    size_t *flagged; /* per block (per unit for the Gaussian) */
    size_t per;      /* the Gaussian: units per run */
} predict_job;

/* The count of points <= q, from next, the count for an earlier (smaller) query. */
static size_t advance(const nw_fastsum *fs, size_t next, double q) {
    while (next < fs->n && (double)fs->x[next] <= q)
        next++;
    return next;
}

/* One finished prediction row into the outputs; returns whether it is flagged. */
static int store_row(const predict_job *job, nw_worker *wk, size_t i, const nw_sums *s) {
    const nw_model *model = &job->plan->model;
    unsigned flags = nw_finish_row(model, s, 1, wk->work, wk->yhat, NULL, NULL);
    for (size_t c = 0; c < model->dv; c++)
        job->yq[i * job->ldyq + c] = (float)wk->yhat[c];
    if (job->row_flags != NULL)
        job->row_flags[i] = (unsigned char)flags;
    return flags != 0;
}

static void predict_block(void *arg, size_t b, size_t worker) {
    const predict_job *job = arg;
    nw_plan *plan = job->plan;
    const nw_model *model = &plan->model;
    const nw_fastsum *fs = &plan->fastsum->fs;
    nw_worker *wk = &plan->workers[worker];
    job->flagged[b] = 0;
    if (job->start[b] == job->start[b + 1])
        return;
    nw_fs_block blk;
    double *left, *right;
    worker_scratch(plan, worker, &blk, &left, &right);
    nw_fs_fill(fs, b, &blk);
    size_t next = blk.s; /* every query here has at least s points <= it */
    for (size_t r = job->start[b]; r < job->start[b + 1]; r++) {
        const size_t i = job->order[r];
        const double q = (double)job->xq[i * job->ldq];
        next = advance(fs, next, q);
        nw_sums s;
        nw_sums_init(&s, wk->sums_mem, model, 0);
        nw_fs_moments_at(fs, &blk, next - 1, q, left, right); /* next 0: SIZE_MAX */
        nw_fs_row_sums(model, fs->vp, left, right, &s);
        job->flagged[b] += (size_t)store_row(job, wk, i, &s);
    }
}

int nw_fs_predict_scratch(size_t n, size_t m, size_t *count) {
    return nw_mul(m, 2, count) && nw_add(*count, 3 * (n / NW_FS_BLOCK + 2), count);
}

/* The Gaussian: a run of job->per units of NW_UNIT_ROWS sorted queries. A query inside a
 * dense cluster's span takes that cluster's target expansion (built once per run and cluster,
 * as the CV rows' are), the others walk the clusters; a query's result does not depend on its
 * run. */
static void predict_gauss_run(void *arg, size_t run, size_t worker) {
    const predict_job *job = arg;
    nw_plan *plan = job->plan;
    const nw_model *model = &plan->model;
    const nw_fs_gauss *g = &plan->fastsum->g;
    const nw_fastsum *fs = &plan->fastsum->fs;
    nw_worker *wk = &plan->workers[worker];
    const size_t amax = nw_fg_amax(model, 0), m = job->m, units = nw_units(m);
    nw_fs_block blk;
    double *mom, *unused;
    worker_scratch(plan, worker, &blk, &mom, &unused);
    nw_fg_local loc = {.k = SIZE_MAX, .N = mom + g->v * (NW_FG_AMAX + 1)};
    int local = 0;
    const size_t u0 = run * job->per, u1 = u0 + job->per < units ? u0 + job->per : units;
    size_t next = 0, k = 0;
    for (size_t u = u0; u < u1; u++) {
        job->flagged[u] = 0;
        const size_t end = (u + 1) * NW_UNIT_ROWS < m ? (u + 1) * NW_UNIT_ROWS : m;
        for (size_t r = u * NW_UNIT_ROWS; r < end; r++) {
            const size_t i = job->order[r];
            const double q = (double)job->xq[i * job->ldq];
            if (r == u0 * NW_UNIT_ROWS) {
                next = nw_fs_locate(fs, q) + 1;
                k = next > 0 ? nw_fg_cluster_of(g, next - 1) : 0;
            } else
                next = advance(fs, next, q);
            while (next > 0 && g->start[k + 1] <= next - 1) /* the cluster of x_{next-1} */
                k++;
            nw_sums s;
            nw_sums_init(&s, wk->sums_mem, model, 0);
            const int inside = next > 0 && nw_fg_inside(g, k, q);
            if (inside && k != loc.k) /* local: whether loc's cluster k has an expansion */
                local = nw_fg_target(g, k, &loc), loc.k = k;
            if (inside && local)
                nw_fg_moments_at_local(g, &loc, q, amax, mom);
            else
                nw_fg_moments(g, q, next - 1, SIZE_MAX, amax, mom);
            nw_fg_row_sums(model, amax, mom, &s);
            job->flagged[u] += (size_t)store_row(job, wk, i, &s);
        }
    }
}

size_t nw_fs_predict(nw_plan *plan, size_t m, const float *xq, size_t ldq, float *yq, size_t ldyq,
                     unsigned char *row_flags, size_t *scratch) {
    nw_fastsum *fs = &plan->fastsum->fs;
    const size_t blocks = fs->blocks;
    size_t *sorted = scratch, *tmp = sorted + m, *start = tmp + m, *flagged = start + blocks + 1;
    const size_t *order = sorted;
    if (xq == plan->x && ldq == plan->ldx && m == plan->n)
        order = plan->train.perm; /* the fitted values: the data's own order */
    else
        nw_sort_order(m, xq, ldq, sorted, tmp);
    predict_job job = {plan, xq, ldq, yq, ldyq, row_flags, order, start, m, flagged, 0};
    size_t total = 0;
    if (plan->fastsum->gauss) { /* units of sorted queries; flagged per unit in tmp */
        const size_t units = nw_units(m);
        job.flagged = tmp;
        job.per = (units + NW_FG_RUNS - 1) / NW_FG_RUNS;
        nw_fg_prepare(&plan->fastsum->g, plan->inv_h[0], plan->fastsum->eps, plan->team,
                      plan->threads);
        nw_parallel_for(plan->team, plan->threads, (units + job.per - 1) / job.per,
                        predict_gauss_run, &job);
        for (size_t u = 0; u < units; u++)
            total += tmp[u];
        return total;
    }
    nw_fs_prepare(fs, plan->inv_h[0], nw_fs_moments_needed(&plan->model, 0), plan->team,
                  plan->threads);
    /* block b >= 1 takes the queries with x_{bB} <= q < x_{(b+1)B} (j = last x_j <= q) */
    start[0] = 0;
    start[blocks] = m;
    for (size_t b = 1; b < blocks; b++) {
        const double edge = (double)fs->x[b * NW_FS_BLOCK];
        size_t lo = start[b - 1], hi = m; /* first sorted query >= edge */
        while (lo < hi) {
            const size_t mid = lo + (hi - lo) / 2;
            if ((double)xq[order[mid] * ldq] < edge)
                lo = mid + 1;
            else
                hi = mid;
        }
        start[b] = lo;
    }
    nw_parallel_for(plan->team, plan->threads, blocks, predict_block, &job);
    for (size_t b = 0; b < blocks; b++)
        total += flagged[b];
    return total;
}
