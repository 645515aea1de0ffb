/* Helpers for the MPI tests: every rank runs the same cmocka group; a test decides on every
 * rank together (an MPI_Allreduce of the verdict) before it asserts, so a failure on one rank
 * fails the test everywhere and never leaves the others waiting in a collective. Data are made
 * from the same seed on every rank: each rank holds the whole problem (for the one-process
 * call it is compared with) and takes its shard of it. */
#ifndef NWATTN_MPI_TESTUTIL_H
#define NWATTN_MPI_TESTUTIL_H

#include "attn_testutil.h"
#include "nwattn_mpi.h"

static inline int mt_rank(void) {
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}
static inline int mt_size(void) {
    int s;
    MPI_Comm_size(MPI_COMM_WORLD, &s);
    return s;
}

/* 1 on every rank iff ok on every rank. */
static inline int mt_all(int ok) {
    int all = ok;
    MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return all;
}
static inline double mt_max(double x) {
    MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return x;
}

/* Random shard sizes of n over the ranks (counts[size]), from the rng every rank shares:
 * cut points uniform in 0 .. n, so empty shards happen; `empty_rank` >= 0 forces that rank's
 * shard to be empty (its keys go to the next rank). Returns this rank's offset. */
static inline size_t mt_split(at_rng *rng, size_t n, size_t *counts, int empty_rank) {
    const int p = mt_size();
    size_t cuts[65];
    cuts[0] = 0;
    cuts[p] = n;
    for (int r = 1; r < p; r++)
        cuts[r] = at_below(rng, n + 1);
    for (int r = 1; r < p; r++) /* insertion sort of the inner cuts */
        for (int s = r; s > 1 && cuts[s - 1] > cuts[s]; s--) {
            size_t t = cuts[s];
            cuts[s] = cuts[s - 1];
            cuts[s - 1] = t;
        }
    if (empty_rank >= 0 && empty_rank < p)
        cuts[empty_rank + 1] = cuts[empty_rank];
    for (int r = 0; r < p; r++) {
        if (cuts[r + 1] < cuts[r])
            cuts[r + 1] = cuts[r];
        counts[r] = cuts[r + 1] - cuts[r];
    }
    counts[p - 1] = n - cuts[p - 1];
    return cuts[mt_rank()];
}

/* The same bits on every rank: rank 0's hash of the buffer against everyone's. */
static inline int mt_same_everywhere(const void *data, size_t bytes) {
    const unsigned char *p = data;
    unsigned long long h = 1469598103934665603ull, h0;
    for (size_t i = 0; i < bytes; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    h0 = h;
    MPI_Bcast(&h0, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    return mt_all(h0 == h);
}

/* Largest |a - b| / scale over rows × cols with pitches; NaN counts as infinite unless both
 * are NaN. */
static inline double mt_diff(const float *a, size_t lda, const float *b, size_t ldb,
                             size_t rows, size_t cols) {
    double worst = 0.0;
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) {
            const double x = a[i * lda + j], y = b[i * ldb + j];
            double e = (isnan(x) && isnan(y)) || x == y ? 0.0 : fabs(x - y);
            if (isnan(e))
                e = INFINITY;
            if (e > worst)
                worst = e;
        }
    return worst;
}

/* cmocka's runner inside MPI; the program fails if any rank's tests failed. */
#define MT_MAIN(tests)                                                                  \
    int main(int argc, char **argv) {                                                   \
        MPI_Init(&argc, &argv);                                                         \
        int any = cmocka_run_group_tests(tests, NULL, NULL) != 0;                       \
        MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);         \
        MPI_Finalize();                                                                 \
        return any;                                                                     \
    }

#endif
