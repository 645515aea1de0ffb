/* libnwattn_mpi benchmark: throughput of the two sharding schemes against one rank, the
 * ring's exposed communication, and the two reductions.
 *
 *   mpirun -np P bench_mpi [n = 16384] [d = 64] [reps = 3] [reduce]
 * ("reduce": the reductions only)
 *
 * m = n queries, n keys, d = dv. All ratios come from one run: the one-rank baselines run on
 * rank 0 while the other ranks sleep (MPI_Ibarrier polled every millisecond, so they leave
 * their cores alone). Times are the median of `reps` runs, each the slowest rank's.
 *   one-rank       nwattn_pool (AUTO: fused) of the whole problem on rank 0
 *   sharded-keys   nwattn_mpi_pool_sharded_keys, m queries on every rank, n / P keys each
 *   ring           nwattn_mpi_ring_attention, n / P rows each (contiguous, no mask)
 *   ring-compute   the ring's tiles (512 keys, pool_partial + merge) over P local blocks of
 *                  the same size, no transfers: ring - ring-compute is the exposed
 *                  communication
 *   ring-causal    zigzag layout, causal mask (one-rank baseline: causal nwattn_pool)
 *   reduce-*       the reduction alone (every rank holds zero keys) of m × dv states, and of
 *                  one query row (decoding) */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nwattn_mpi.h"

static int rank_, size_;

static float *data(size_t count, unsigned seed) {
    float *x = malloc(count * sizeof(float));
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < count && x; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(s >> 40) * 0x1p-24 * 2.0 - 1.0);
    }
    return x;
}

static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The other ranks sleep until rank 0 is done. */
static void idle_until_rank0(void) {
    MPI_Request r;
    MPI_Ibarrier(MPI_COMM_WORLD, &r);
    int done = 0;
    while (!done) {
        MPI_Test(&r, &done, MPI_STATUS_IGNORE);
        if (!done)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
}

typedef int (*job)(void *);

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU seconds of the last timed() job, summed over the ranks (median run): on a loaded
 * machine the work, unlike the wall time, does not depend on what else runs. */
static double last_cpu;

/* Median over reps of the slowest rank's time (all ranks, or rank 0 alone). */
static double timed(job fn, void *arg, int reps, int alone) {
    double t[32], cpu[32];
    for (int r = 0; r <= reps; r++) { /* run 0 warms up */
        if (alone && rank_ != 0) {
            idle_until_rank0();
            t[r] = cpu[r] = 0;
            continue;
        }
        MPI_Barrier(alone ? MPI_COMM_SELF : MPI_COMM_WORLD);
        double t0 = MPI_Wtime(), c0 = cpu_now();
        if (fn(arg) != 0) {
            fprintf(stderr, "rank %d: a call failed\n", rank_);
            MPI_Abort(MPI_COMM_WORLD, 1); /* a benchmark, not the library */
        }
        t[r] = MPI_Wtime() - t0;
        cpu[r] = cpu_now() - c0;
        if (alone)
            idle_until_rank0();
    }
    double worst[32], work[32];
    MPI_Allreduce(t, worst, reps + 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(cpu, work, reps + 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    qsort(worst + 1, (size_t)reps, sizeof(double), cmp);
    qsort(work + 1, (size_t)reps, sizeof(double), cmp);
    last_cpu = work[1 + reps / 2];
    return worst[1 + reps / 2];
}

typedef struct setup {
    nwattn_context *ctx;
    size_t n, d, n_local, offset, m;
    float *q, *k, *v, *o, *lse;
    float *zq, *zk, *zv, *zo; /* zigzag copies */
    nwattn_score score;
    nwattn_mpi_reduction how;
    unsigned flags;
} setup;

static int one_rank(void *p) {
    setup *s = p;
    nwattn_mask mask = {0};
    mask.flags = s->flags;
    return nwattn_pool(s->ctx, &s->score, &mask, 1, s->n, s->n, s->d, s->d, s->q, s->d, 0,
                       s->k, s->d, 0, s->v, s->d, 0, s->o, s->d, 0, NULL, 0, 0, NULL, 0);
}

static int sharded(void *p) {
    setup *s = p;
    return nwattn_mpi_pool_sharded_keys(s->ctx, MPI_COMM_WORLD, s->how, &s->score, NULL, 1,
                                        s->m, s->n_local, s->d, s->d, s->q, s->d, 0,
                                        s->k + s->offset * s->d, s->d, 0,
                                        s->v + s->offset * s->d, s->d, 0, s->o, s->d, 0, NULL,
                                        0, NULL);
}

static int ring(void *p) {
    setup *s = p;
    const size_t at = s->offset * s->d;
    return nwattn_mpi_ring_attention(s->ctx, MPI_COMM_WORLD, &s->score, 0,
                                     NWATTN_MPI_LAYOUT_CONTIGUOUS, s->n_local, s->d, s->d,
                                     s->q + at, s->d, s->k + at, s->d, s->v + at, s->d, s->o,
                                     s->d, NULL, NULL);
}

static int ring_causal(void *p) {
    setup *s = p;
    return nwattn_mpi_ring_attention(s->ctx, MPI_COMM_WORLD, &s->score, NWATTN_MASK_CAUSAL,
                                     NWATTN_MPI_LAYOUT_ZIGZAG, s->n_local, s->d, s->d, s->zq,
                                     s->d, s->zk, s->d, s->zv, s->d, s->zo, s->d, NULL, NULL);
}

/* The ring's local work without the ring: P blocks of this rank's own keys. */
static int ring_compute(void *p) {
    setup *s = p;
    const size_t rows = s->n_local, d = s->d, at = s->offset * d;
    float *acc = calloc(rows * d, sizeof(float)), *mx = malloc(rows * sizeof(float));
    float *sm = calloc(rows, sizeof(float));
    float *tacc = malloc(2048 * d * sizeof(float));
    float *tmx = malloc(2048 * sizeof(float)), *tsm = malloc(2048 * sizeof(float));
    for (size_t i = 0; i < rows; i++)
        mx[i] = -INFINITY;
    int rc = 0;
    for (int b = 0; b < size_ && !rc; b++)
        for (size_t i0 = 0; i0 < rows; i0 += 2048)
            for (size_t j0 = 0; j0 < rows && !rc; j0 += 512) {
                const size_t qn = rows - i0 < 2048 ? rows - i0 : 2048;
                const size_t kn = rows - j0 < 512 ? rows - j0 : 512;
                nwattn_pool_state t = {tacc, d, 0, tmx, tsm, 0};
                nwattn_pool_state into = {acc + i0 * d, d, 0, mx + i0, sm + i0, 0};
                rc = nwattn_pool_partial(s->ctx, &s->score, NULL, 1, qn, kn, d, d, 0,
                                         s->q + at + i0 * d, d, 0, s->k + at + j0 * d, d, 0,
                                         s->v + at + j0 * d, d, 0, &t) ||
                     nwattn_pool_state_merge(s->ctx, 1, qn, d, &into, &t);
            }
    nwattn_pool_state st = {acc, d, 0, mx, sm, 0};
    rc = rc || nwattn_pool_state_finish(s->ctx, 1, rows, d, &st, s->o, d, 0, NULL, 0);
    free(acc);
    free(mx);
    free(sm);
    free(tacc);
    free(tmx);
    free(tsm);
    return rc;
}

static int reduce_only(void *p) {
    setup *s = p;
    return nwattn_mpi_pool_sharded_keys(s->ctx, MPI_COMM_WORLD, s->how, &s->score, NULL, 1,
                                        s->m, 0, s->d, s->d, s->q, s->d, 0, NULL, s->d, 0, NULL,
                                        s->d, 0, s->o, s->d, 0, NULL, 0, NULL);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    setup s = {0};
    s.n = argc > 1 ? (size_t)atol(argv[1]) : 16384;
    s.d = argc > 2 ? (size_t)atol(argv[2]) : 64;
    const int reps = argc > 3 ? atoi(argv[3]) : 3;
    const size_t n = s.n, d = s.d;
    nwattn_context_create(&s.ctx);
    s.score = (nwattn_score){NWATTN_SCORE_DOT, 1.0f / sqrtf((float)d), 1.0f, NULL};
    s.q = data(n * d, 1);
    s.k = data(n * d, 2);
    s.v = data(n * d, 3);
    s.o = calloc(n * d, sizeof(float));
    s.n_local = n / (size_t)size_ + ((size_t)rank_ < n % (size_t)size_);
    s.offset = (size_t)rank_ * (n / (size_t)size_) +
               ((size_t)rank_ < n % (size_t)size_ ? (size_t)rank_ : n % (size_t)size_);
    s.m = n;
    /* zigzag copies */
    size_t off[2], cnt[2];
    nwattn_mpi_zigzag_chunks(n, size_, rank_, off, cnt);
    const size_t zr = cnt[0] + cnt[1];
    s.zq = malloc((zr + 1) * d * 4);
    s.zk = malloc((zr + 1) * d * 4);
    s.zv = malloc((zr + 1) * d * 4);
    s.zo = malloc((zr + 1) * d * 4);
    for (int c = 0, row = 0; c < 2; c++)
        for (size_t i = 0; i < cnt[c]; i++, row++) {
            memcpy(s.zq + row * d, s.q + (off[c] + i) * d, d * 4);
            memcpy(s.zk + row * d, s.k + (off[c] + i) * d, d * 4);
            memcpy(s.zv + row * d, s.v + (off[c] + i) * d, d * 4);
        }
    const double pairs = (double)n * (double)n;
    const int reduce_alone = argc > 4 && strcmp(argv[4], "reduce") == 0;
    double t1 = 0, t1c = 0, tk = 0, tr = 0, trc = 0, tz = 0;
    double c1 = 0, c1c = 0, ck = 0, cr = 0, crc = 0, cz = 0; /* CPU seconds, all ranks */
    if (reduce_alone)
        goto reductions;
    t1 = timed(one_rank, &s, reps, 1);
    c1 = last_cpu;
    s.flags = NWATTN_MASK_CAUSAL;
    t1c = timed(one_rank, &s, reps, 1);
    c1c = last_cpu;
    s.flags = 0;
    s.how = NWATTN_MPI_REDUCTION_AUTO;
    tk = timed(sharded, &s, reps, 0);
    ck = last_cpu;
    tr = timed(ring, &s, reps, 0);
    cr = last_cpu;
    trc = timed(ring_compute, &s, reps, 0);
    crc = last_cpu;
    const size_t keep_local = s.n_local;
    s.n_local = zr;
    tz = timed(ring_causal, &s, reps, 0);
    cz = last_cpu;
    s.n_local = keep_local;
reductions:;
    double red[2][2];
    for (int how = 1; how <= 2; how++) {
        s.how = (nwattn_mpi_reduction)how;
        s.m = n;
        red[how - 1][0] = timed(reduce_only, &s, reps, 0);
        s.m = 1;
        red[how - 1][1] = timed(reduce_only, &s, 15, 0);
    }
    if (rank_ == 0 && !reduce_alone) {
        printf("bench_mpi: P = %d ranks, m = n = %zu, d = dv = %zu, dot score, median of %d\n",
               size_, n, d, reps);
        printf("  (cpu: CPU seconds summed over the ranks; work = one rank's cpu / this cpu)\n");
        printf("  %-14s %9.3f s  %7.2f Gpairs/s  cpu %7.3f s\n", "one-rank", t1,
               pairs / t1 * 1e-9, c1);
        printf("  %-14s %9.3f s  %7.2f Gpairs/s  %5.2fx one rank  cpu %7.3f s  work %.2f\n",
               "sharded-keys", tk, pairs / tk * 1e-9, t1 / tk, ck, c1 / ck);
        printf("  %-14s %9.3f s  %7.2f Gpairs/s  %5.2fx one rank  cpu %7.3f s  work %.2f\n",
               "ring", tr, pairs / tr * 1e-9, t1 / tr, cr, c1 / cr);
        printf("  %-14s %9.3f s  exposed communication %.1f %% of the ring  cpu %7.3f s\n",
               "ring-compute", trc, 100.0 * (tr - trc) / tr, crc);
        printf("  %-14s %9.3f s  (one rank causal %.3f s)  %5.2fx one rank  cpu %7.3f s  "
               "work %.2f\n", "ring-causal", tz, t1c, t1c / tz, cz, c1c / cz);
    }
    if (rank_ == 0) {
        printf("  reductions: P = %d, m = %zu (and 1), dv = %zu, median of %d\n", size_, n, d,
               reps);
        printf("  %-14s %9.3f ms (m = n)  %9.3f ms (m = 1)\n", "reduce-userop",
               red[0][0] * 1e3, red[0][1] * 1e3);
        printf("  %-14s %9.3f ms (m = n)  %9.3f ms (m = 1)\n", "reduce-maxsum",
               red[1][0] * 1e3, red[1][1] * 1e3);
    }
    nwattn_context_destroy(s.ctx);
    free(s.q), free(s.k), free(s.v), free(s.o), free(s.zq), free(s.zk), free(s.zv), free(s.zo);
    MPI_Finalize();
    return 0;
}
