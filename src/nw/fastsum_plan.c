/* The fast-sum path of a plan: leave-one-out CV rows and predictions, one block of sorted
 * points per unit of work, each row finished by the same nw_finish_row as the other paths. */
#include <string.h>

#include "fastsum.h"
#include "threads.h"

static size_t align8(size_t bytes) { return (bytes + 7) / 8 * 8; }

/* Doubles of a worker's row moments: both sides (Laplace family) or one array (Gaussian). */
static size_t row_doubles(size_t v, size_t k1) {
    return v * (2 * k1 > NW_FG_AMAX + 1 ? 2 * k1 : NW_FG_AMAX + 1) + NW_FG_LOCAL_DOUBLES(v);
}

size_t nw_fs_plan_bytes(const nw_model *model, size_t n, size_t threads) {
    const size_t v = 1 + model->dv, k1 = nw_fs_moments_needed(model, 1);
    size_t engine = nw_fs_bytes(n, v, k1), per_worker, total;
    if (engine != SIZE_MAX && model->kernel == NWATTN_KERNEL_GAUSSIAN) {
        size_t g = nw_fg_bytes(n, v);
        if (g == SIZE_MAX || !nw_add(engine, g, &engine))
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
    nw_fs_init(&fp->fs, p, n, v, k1);
    p += nw_fs_bytes(n, v, k1);
    fp->gauss = model->kernel == NWATTN_KERNEL_GAUSSIAN;
    fp->eps = eps;
    if (fp->gauss) {
        nw_fg_init(&fp->g, p, n, v, fp->fs.x, fp->fs.c);
        p += nw_fg_bytes(n, v);
    }
    fp->worker_mem = (double *)(void *)p;
    fp->worker_doubles = nw_fs_block_doubles(v, k1) + row_doubles(v, k1);
    for (size_t j = 0; j < n; j++) {
        fp->fs.x[j] = (double)plan->train.x[j];
        fp->fs.c[j] = 1.0;
    }
    for (size_t c = 0; c < model->dv; c++)
        for (size_t j = 0; j < n; j++)
            fp->fs.c[(1 + c) * n + j] = (double)plan->train.y[c * n + j];
    plan->fastsum = fp;
}

/* A worker's block buffers and its row's left and right moments. */
static void worker_scratch(const nw_plan *plan, size_t worker, nw_fs_block *blk, double **left,
                           double **right) {
    const struct nw_fs_plan *fp = plan->fastsum;
    double *mem = fp->worker_mem + worker * fp->worker_doubles;
    nw_fs_block_init(blk, mem);
    *left = mem + nw_fs_block_doubles(fp->fs.v, fp->fs.k1);
    *right = *left + fp->fs.v * fp->fs.k1;
}

typedef struct cv_job {
    nw_plan *plan;
    int want_grad;
} cv_job;

static void cv_block(void *arg, size_t b, size_t worker) {
    const cv_job *job = arg;
    nw_plan *plan = job->plan;
    const nw_model *model = &plan->model;
    const nw_fastsum *fs = &plan->fastsum->fs;
    nw_worker *wk = &plan->workers[worker];
    const size_t n = plan->n, d = model->d;
    nw_fs_block blk;
    double *left, *right;
    worker_scratch(plan, worker, &blk, &left, &right);
    nw_fs_fill(fs, b, &blk);
    for (size_t u = blk.s / NW_UNIT_ROWS; u < nw_units(blk.e); u++)
        memset(plan->partial + u * (3 + d), 0, (3 + d) * sizeof(double));
    for (size_t j = blk.s; j < blk.e; j++) {
        nw_sums s;
        nw_sums_init(&s, wk->sums_mem, model, job->want_grad);
        nw_fs_moments_loo(fs, &blk, j, left, right);
        nw_fs_row_sums(model, fs->k1, left, right, &s);
        unsigned flags = nw_finish_row(model, &s, 1, wk->work, wk->yhat,
                                       job->want_grad ? wk->dyhat : NULL, NULL);
        nw_cv_add_row(model, flags, wk->yhat, wk->dyhat, plan->train.y + j, n, job->want_grad, 1.0,
                      plan->partial + j / NW_UNIT_ROWS * (3 + d));
    }
}

/* The Gaussian: a block of NW_FS_BLOCK leave-one-out rows (whole units). Consecutive rows of
 * one dense cluster share its target expansion; the others walk the clusters. */
static void cv_gauss_block(void *arg, size_t blk_index, size_t worker) {
    const cv_job *job = arg;
    nw_plan *plan = job->plan;
    const nw_model *model = &plan->model;
    const nw_fs_gauss *g = &plan->fastsum->g;
    nw_worker *wk = &plan->workers[worker];
    const size_t n = plan->n, d = model->d, amax = nw_fg_amax(model, job->want_grad);
    nw_fs_block blk;
    double *mom, *unused;
    worker_scratch(plan, worker, &blk, &mom, &unused);
    nw_fg_local loc = {SIZE_MAX, 0.0, 0.0, 0.0, mom + g->v * (NW_FG_AMAX + 1)};
    int local = 0;
    const size_t s0 = blk_index * NW_FS_BLOCK, e0 = s0 + NW_FS_BLOCK < n ? s0 + NW_FS_BLOCK : n;
    for (size_t u = s0 / NW_UNIT_ROWS; u < nw_units(e0); u++)
        memset(plan->partial + u * (3 + d), 0, (3 + d) * sizeof(double));
    for (size_t j = s0; j < e0; j++) {
        nw_sums s;
        nw_sums_init(&s, wk->sums_mem, model, job->want_grad);
        const size_t k = nw_fg_cluster_of(g, j);
        if (k != loc.k)
            local = nw_fg_target(g, k, &loc), loc.k = k;
        if (local)
            nw_fg_moments_local(g, &loc, j, amax, mom);
        else /* the position of x_j: its last duplicate */
            nw_fg_moments(g, g->x[j], nw_fs_locate(&plan->fastsum->fs, g->x[j]), j, amax, mom);
        nw_fg_row_sums(model, amax, mom, &s);
        unsigned flags = nw_finish_row(model, &s, 1, wk->work, wk->yhat,
                                       job->want_grad ? wk->dyhat : NULL, NULL);
        nw_cv_add_row(model, flags, wk->yhat, wk->dyhat, plan->train.y + j, n, job->want_grad, 1.0,
                      plan->partial + j / NW_UNIT_ROWS * (3 + d));
    }
}

void nw_fs_cv_units(nw_plan *plan, int want_grad) {
    nw_fastsum *fs = &plan->fastsum->fs;
    if (plan->fastsum->gauss) {
        nw_fg_prepare(&plan->fastsum->g, plan->inv_h[0], plan->fastsum->eps);
        cv_job job = {plan, want_grad};
        nw_parallel_for(plan->team, plan->threads, fs->blocks, cv_gauss_block, &job);
        return;
    }
    nw_fs_prepare(fs, plan->inv_h[0], plan->team, plan->threads);
    cv_job job = {plan, want_grad};
    nw_parallel_for(plan->team, plan->threads, fs->blocks, cv_block, &job);
}

/* ---- Predictions --------------------------------------------------------------------------- */
typedef struct predict_job {
    nw_plan *plan;
    const float *xq;
    size_t ldq;
    float *yq;
    size_t ldyq;
    unsigned char *row_flags;
    const size_t *order, *start; /* queries by block: order[start[b] .. start[b+1]) */
    size_t *flagged;             /* per block */
} predict_job;

static size_t block_of(const nw_fastsum *fs, double q) {
    size_t j = nw_fs_locate(fs, q);
    return j == SIZE_MAX ? 0 : j / NW_FS_BLOCK;
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
    for (size_t r = job->start[b]; r < job->start[b + 1]; r++) {
        const size_t i = job->order[r];
        const double q = (double)job->xq[i * job->ldq];
        nw_sums s;
        nw_sums_init(&s, wk->sums_mem, model, 0);
        nw_fs_moments_at(fs, &blk, nw_fs_locate(fs, q), q, left, right);
        nw_fs_row_sums(model, fs->k1, left, right, &s);
        unsigned flags = nw_finish_row(model, &s, 1, wk->work, wk->yhat, NULL, NULL);
        for (size_t c = 0; c < model->dv; c++)
            job->yq[i * job->ldyq + c] = (float)wk->yhat[c];
        if (job->row_flags != NULL)
            job->row_flags[i] = (unsigned char)flags;
        job->flagged[b] += flags != 0;
    }
}

size_t nw_fs_predict_scratch(const nw_plan *plan, size_t m) {
    return m + 3 * (plan->fastsum->fs.blocks + 1);
}

/* The Gaussian: one unit of NW_UNIT_ROWS queries. */
static void predict_gauss_unit(void *arg, size_t unit, size_t worker) {
    const predict_job *job = arg;
    nw_plan *plan = job->plan;
    const nw_model *model = &plan->model;
    const nw_fs_gauss *g = &plan->fastsum->g;
    nw_worker *wk = &plan->workers[worker];
    const size_t amax = nw_fg_amax(model, 0), m = job->start[0];
    nw_fs_block blk;
    double *mom, *unused;
    worker_scratch(plan, worker, &blk, &mom, &unused);
    job->flagged[unit] = 0;
    const size_t end = (unit + 1) * NW_UNIT_ROWS < m ? (unit + 1) * NW_UNIT_ROWS : m;
    for (size_t i = unit * NW_UNIT_ROWS; i < end; i++) {
        const double q = (double)job->xq[i * job->ldq];
        nw_sums s;
        nw_sums_init(&s, wk->sums_mem, model, 0);
        nw_fg_moments(g, q, nw_fs_locate(&plan->fastsum->fs, q), SIZE_MAX, amax, mom);
        nw_fg_row_sums(model, amax, mom, &s);
        unsigned flags = nw_finish_row(model, &s, 1, wk->work, wk->yhat, NULL, NULL);
        for (size_t c = 0; c < model->dv; c++)
            job->yq[i * job->ldyq + c] = (float)wk->yhat[c];
        if (job->row_flags != NULL)
            job->row_flags[i] = (unsigned char)flags;
        job->flagged[unit] += flags != 0;
    }
}

size_t nw_fs_predict(nw_plan *plan, size_t m, const float *xq, size_t ldq, float *yq, size_t ldyq,
                     unsigned char *row_flags, size_t *scratch) {
    nw_fastsum *fs = &plan->fastsum->fs;
    if (plan->fastsum->gauss) { /* queries in units of rows; start[0] carries m */
        const size_t units = nw_units(m);
        size_t *flagged = scratch, count = m, total = 0;
        nw_fg_prepare(&plan->fastsum->g, plan->inv_h[0], plan->fastsum->eps);
        predict_job job = {plan, xq, ldq, yq, ldyq, row_flags, NULL, &count, flagged};
        nw_parallel_for(plan->team, plan->threads, units, predict_gauss_unit, &job);
        for (size_t u = 0; u < units; u++)
            total += flagged[u];
        return total;
    }
    const size_t blocks = fs->blocks;
    size_t *order = scratch, *start = order + m, *fill = start + blocks + 1,
           *flagged = fill + blocks + 1;
    nw_fs_prepare(fs, plan->inv_h[0], plan->team, plan->threads);
    /* counting sort of the queries by block: the blocks then run independently */
    memset(start, 0, (blocks + 1) * sizeof(size_t));
    for (size_t i = 0; i < m; i++)
        start[block_of(fs, (double)xq[i * ldq]) + 1]++;
    for (size_t b = 0; b < blocks; b++)
        start[b + 1] += start[b];
    memcpy(fill, start, (blocks + 1) * sizeof(size_t));
    for (size_t i = 0; i < m; i++)
        order[fill[block_of(fs, (double)xq[i * ldq])]++] = i;
    predict_job job = {plan, xq, ldq, yq, ldyq, row_flags, order, start, flagged};
    nw_parallel_for(plan->team, plan->threads, blocks, predict_block, &job);
    size_t total = 0;
    for (size_t b = 0; b < blocks; b++)
        total += flagged[b];
    return total;
}
