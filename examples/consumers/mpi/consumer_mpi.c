/* A C11 program built against an installed libnwattn_mpi, the two documented ways:
 *   mpicc consumer_mpi.c $(pkg-config --cflags --libs nwattn-mpi)
 *   find_package(nwattn REQUIRED COMPONENTS mpi) + target_link_libraries(... nwattn::mpi)
 * Run under mpiexec: every rank holds a few keys (rank r: keys 3r .. 3r+2), the queries are
 * replicated, and the sharded pooling must equal nwattn_pool over all the keys on every rank. */
#include <nwattn_mpi.h>

#include <math.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    enum { M = 2, PER = 3, MAXN = 3 * 16 };
    const size_t n = (size_t)PER * (size_t)size;
    float q[M] = {0.5f, 2.0f}, k[MAXN], v[MAXN], o[M], o1[M];
    for (size_t j = 0; j < n && j < MAXN; j++) {
        k[j] = 0.25f * (float)j;
        v[j] = sinf((float)j);
    }
    nwattn_context *ctx = NULL;
    int bad = nwattn_context_create(&ctx) != NWATTN_OK || n > MAXN;
    const nwattn_score score = {NWATTN_SCORE_GAUSSIAN, 1.0f, 0.7f, NULL};
    nwattn_mpi_error err;
    if (!bad)
        bad = nwattn_mpi_pool_sharded_keys(ctx, MPI_COMM_WORLD, NWATTN_MPI_REDUCTION_AUTO,
                                           &score, NULL, 1, M, PER, 1, 1, q, 1, 0,
                                           k + (size_t)rank * PER, 1, 0,
                                           v + (size_t)rank * PER, 1, 0, o, 1, 0, NULL, 0,
                                           &err) != NWATTN_OK ||
              nwattn_pool(ctx, &score, NULL, 1, M, n, 1, 1, q, 1, 0, k, 1, 0, v, 1, 0, o1, 1,
                          0, NULL, 0, 0, NULL, 0) != NWATTN_OK;
    for (int i = 0; !bad && i < M; i++)
        bad = fabsf(o[i] - o1[i]) > 1e-5f;
    int any = bad;
    MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: libnwattn_mpi %u on %d ranks\n", any ? "FAIL" : "ok",
               nwattn_mpi_version_number(), size);
    nwattn_context_destroy(ctx);
    MPI_Finalize();
    return any;
}
