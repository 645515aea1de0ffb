/* BLAS products of any size: sgemm, or sgemv/sdot for single-row and single-column products
 * (several times faster there), split so that every dimension fits the BLAS integer. */
#include <cblas.h>
#include <string.h>

#include "blas_kernels.h"
#include "frame/tiled.h"
#include "threads.h"

#if NWATTN_USE_SGEMM_BATCH
#include "sgemm_batch.h"
#endif

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* c = alpha · op(a) · op(b) + beta · c in chunks whose every dimension fits the BLAS limit;
 * op(a) is m×k (a^T: a is k×m), op(b) k×n (b^T: b is n×k). */
static void sgemm_split(int transpose_a, int transpose_b, size_t m, size_t n, size_t k,
                        float alpha, const float *a, size_t lda, const float *b, size_t ldb,
                        float beta, float *c, size_t ldc) {
    const size_t limit = NW_BLAS_DIM_LIMIT;
    if (beta == 0.0f && !nw_blas_small_products() && k > 0 && m <= NW_TILE_MNK &&
        n <= NW_TILE_MNK && k <= NW_TILE_MNK && m * n * k <= NW_TILE_MNK) {
        /* A tile's product over zeros with beta 1: the same bits (C = 0 + alpha·AB either
         * way), without OpenBLAS's beta pass, which costs a 64×64×64 product several percent
         * more than zeroing C here (the fused backward forms S and dP with beta 0). Not where
         * it has small-matrix kernels: they have a beta = 0 variant, which the zeroing would
         * turn into a read of C (3 % of a 4096^2 fused SDPA on a Xeon). */
        for (size_t i = 0; i < m; i++)
            memset(c + i * ldc, 0, n * sizeof(float));
        beta = 1.0f;
    }
    for (size_t i0 = 0; i0 < m; i0 += limit) {
        size_t mb = min_size(limit, m - i0);
        for (size_t j0 = 0; j0 < n; j0 += limit) {
            size_t nb = min_size(limit, n - j0);
            for (size_t p0 = 0; p0 < k; p0 += limit) {
                size_t kb = min_size(limit, k - p0);
                const float *ablock = transpose_a ? a + p0 * lda + i0 : a + i0 * lda + p0;
                const float *bblock = transpose_b ? b + j0 * ldb + p0 : b + p0 * ldb + j0;
                cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans,
                            transpose_b ? CblasTrans : CblasNoTrans, (blasint)mb, (blasint)nb,
                            (blasint)kb, alpha, ablock, (blasint)lda, bblock, (blasint)ldb,
                            p0 == 0 ? beta : 1.0f, c + i0 * ldc + j0, (blasint)ldc);
            }
        }
    }
}

void nw_blas_sgemm(int transpose_b, size_t m, size_t n, size_t k, float alpha, const float *a,
                   size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc) {
    sgemm_split(0, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void nw_blas_sgemm_tn(size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                      const float *b, size_t ldb, float beta, float *c, size_t ldc) {
    sgemm_split(1, 0, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* y = A x for A m×k (row pitch lda), x with increment incx, y with increment incy. */
static void gemv_rows(size_t m, size_t k, const float *a, size_t lda, const float *x,
                      size_t incx, float *y, size_t incy) {
    const size_t limit = NW_BLAS_DIM_LIMIT;
    for (size_t i0 = 0; i0 < m; i0 += limit) {
        size_t mb = min_size(limit, m - i0);
        for (size_t p0 = 0; p0 < k; p0 += limit) {
            size_t kb = min_size(limit, k - p0);
            cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)mb, (blasint)kb, 1.0f,
                        a + i0 * lda + p0, (blasint)lda, x + p0 * incx, (blasint)incx,
                        p0 == 0 ? 0.0f : 1.0f, y + i0 * incy, (blasint)incy);
        }
    }
}

/* y = B^T x for B k×n (row pitch ldb), x contiguous, y contiguous. */
static void gemv_cols(size_t k, size_t n, const float *b, size_t ldb, const float *x, float *y) {
    const size_t limit = NW_BLAS_DIM_LIMIT;
    for (size_t j0 = 0; j0 < n; j0 += limit) {
        size_t nb = min_size(limit, n - j0);
        for (size_t p0 = 0; p0 < k; p0 += limit) {
            size_t kb = min_size(limit, k - p0);
            cblas_sgemv(CblasRowMajor, CblasTrans, (blasint)kb, (blasint)nb, 1.0f,
                        b + p0 * ldb + j0, (blasint)ldb, x + p0, 1, p0 == 0 ? 0.0f : 1.0f,
                        y + j0, 1);
        }
    }
}

/* x·y with y strided. */
static float dot(size_t k, const float *x, const float *y, size_t incy) {
    const size_t limit = NW_BLAS_DIM_LIMIT;
    float sum = 0.0f;
    for (size_t p0 = 0; p0 < k; p0 += limit)
        sum += cblas_sdot((blasint)min_size(limit, k - p0), x + p0, 1, y + p0 * incy,
                          (blasint)incy);
    return sum;
}

void nw_blas_gemm(size_t m, size_t n, size_t k, const float *a, size_t lda, const float *b,
                  size_t ldb, float *c, size_t ldc) {
    if (m == 0 || n == 0)
        return;
    if (k == 0) {
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++)
                c[i * ldc + j] = 0.0f;
    } else if (m == 1 && n == 1) {
        c[0] = dot(k, a, b, ldb);
    } else if (n == 1) {
        gemv_rows(m, k, a, lda, b, ldb, c, ldc);
    } else if (m == 1) {
        gemv_cols(k, n, b, ldb, a, c);
    } else {
        nw_blas_sgemm(0, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
    }
}

/* Where the BLAS runs single-threaded, a projection goes in blocks of NW_LINEAR_ROWS rows,
 * whatever the context's thread count (so no row's result depends on it), spread over the
 * context's workers (a 4096 × 512 × 512 projection otherwise keeps one core busy while the
 * other waits), each block's bias rows still in cache when its product adds to them. A BLAS
 * with threads of its own gets the whole product in one call: blocks of it ran at 0.75 of that
 * speed on two OpenBLAS threads. Head by head (nw_heads_out), a block goes through its
 * worker's buffer, still in cache when it is scattered to the heads: 3.7 % of an 8 × 512 ×
 * 512, 8-head layer's forward (one thread, Zen 4), against rearranging the whole projection
 * afterwards (the buffer rows are the same products: the same bits). */
typedef struct linear_job {
    size_t rows, out, in, ldx, ldy;
    const float *x, *w, *bias;
    float *y;
    size_t block_rows;
    const nw_heads_out *heads;
} linear_job;

/* Rows i0 .. i0+rows-1 of the product, at y (pitch ldy): the bias rows, then beta = 1 adds. */
static void linear_rows(const linear_job *j, size_t i0, size_t rows, float *y, size_t ldy) {
    if (j->bias != NULL)
        for (size_t i = 0; i < rows; i++)
            memcpy(y + i * ldy, j->bias, j->out * sizeof(float));
    nw_blas_sgemm(1, rows, j->out, j->in, 1.0f, j->x + i0 * j->ldx, j->ldx, j->w, j->in,
                  j->bias ? 1.0f : 0.0f, y, ldy);
}

static void linear_block(void *arg, size_t block, size_t worker) {
    const linear_job *j = arg;
    const size_t i0 = block * j->block_rows, rows = min_size(j->block_rows, j->rows - i0);
    const nw_heads_out *h = j->heads;
    if (h == NULL) {
        linear_rows(j, i0, rows, j->y + i0 * j->ldy, j->ldy);
        return;
    }
    float *buffer = h->buffer + worker * j->block_rows * j->out;
    linear_rows(j, i0, rows, buffer, j->out);
    const size_t width = j->out / h->heads;
    for (size_t head = 0; head < h->heads; head++)
        for (size_t i = 0; i < rows; i++)
            memcpy(j->y + (head * h->rows + h->row0 + i0 + i) * width,
                   buffer + i * j->out + head * width, width * sizeof(float));
}

void nw_blas_linear(nw_workers *workers, size_t rows, size_t out, size_t in, const float *x,
                    size_t ldx, const float *w, const float *bias, float *y, size_t ldy,
                    const nw_heads_out *heads) {
    linear_job job = {rows, out, in, ldx, ldy, x, w, bias, y, NW_LINEAR_ROWS, heads};
    if (nw_blas_threads() != 1) { /* the BLAS's own threads, or a BLAS that does not say */
        job.block_rows = rows;
        linear_block(&job, 0, 0);
        return;
    }
    const size_t blocks = (rows + NW_LINEAR_ROWS - 1) / NW_LINEAR_ROWS;
    if (workers != NULL && workers->threads > 1 && blocks > 1) {
        nw_parallel_for(workers, min_size(workers->threads, blocks), blocks, linear_block, &job);
        return;
    }
    for (size_t b = 0; b < blocks; b++)
        linear_block(&job, b, 0);
}

#if NWATTN_USE_SGEMM_BATCH
/* Items per cblas_sgemm_batch call: bounds the pointer arrays kept in the workspace. */
#define BATCH_CHUNK ((size_t)4096)

size_t nw_blas_bmm_workspace(size_t batch) {
    return 3 * min_size(batch, BATCH_CHUNK) * sizeof(void *);
}

static int batch_api_fits(size_t m, size_t n, size_t k) {
    /* Single rows and columns go to sgemv/sdot instead; huge ones to the splitting loop. */
    return m > 1 && n > 1 && k > 0 && m <= NW_BLAS_DIM_LIMIT && n <= NW_BLAS_DIM_LIMIT &&
           k <= NW_BLAS_DIM_LIMIT;
}

static void bmm_batch_api(size_t batch, size_t m, size_t n, size_t k, const float *a,
                          size_t lda, size_t stride_a, const float *b, size_t ldb,
                          size_t stride_b, float *c, size_t ldc, size_t stride_c,
                          void *scratch) {
    /* Three arrays of `chunk` pointers: the size nw_blas_bmm_workspace(batch) provides. */
    const size_t chunk = min_size(batch, BATCH_CHUNK);
    void **slots = scratch;
    const float **a_array = (const float **)(void *)slots;
    const float **b_array = (const float **)(void *)(slots + chunk);
    float **c_array = (float **)(void *)(slots + 2 * chunk);
    const enum CBLAS_TRANSPOSE no_trans = CblasNoTrans;
    const blasint mi = (blasint)m, ni = (blasint)n, ki = (blasint)k;
    const blasint ldai = (blasint)lda, ldbi = (blasint)ldb, ldci = (blasint)ldc;
    const float one = 1.0f, zero = 0.0f;
    for (size_t first = 0; first < batch; first += chunk) {
        size_t count = min_size(chunk, batch - first);
        for (size_t t = 0; t < count; t++) {
            a_array[t] = a + (first + t) * stride_a;
            b_array[t] = b + (first + t) * stride_b;
            c_array[t] = c + (first + t) * stride_c;
        }
        const blasint group_size = (blasint)count;
        NW_SGEMM_BATCH(CblasRowMajor, &no_trans, &no_trans, &mi, &ni, &ki, &one, a_array, &ldai,
                       b_array, &ldbi, &zero, c_array, &ldci, 1, &group_size);
    }
}
#else
size_t nw_blas_bmm_workspace(size_t batch) {
    (void)batch;
    return 0;
}
#endif

/* The items of a batched product, for nw_parallel_for. */
typedef struct bmm_job {
    const nw_simd *simd;
    size_t m, n, k, per_unit, batch;
    const float *a, *b;
    float *c;
    size_t lda, stride_a, ldb, stride_b, ldc, stride_c;
} bmm_job;

/* Items first .. first+count-1. A 1×1 product with a contiguous column is a dot product: the
 * vector kernel does it in one pass, where a BLAS call per item costs more in overhead than
 * the arithmetic (d2l's (B, 1, n) × (B, n, 1) weighted averages). */
static void bmm_items(const bmm_job *j, size_t first, size_t count) {
    if (j->m == 1 && j->n == 1 && j->ldb == 1 && j->k <= NW_BLAS_DIM_LIMIT) {
        for (size_t item = first; item < first + count; item++)
            j->c[item * j->stride_c] =
                j->simd->dot(j->a + item * j->stride_a, j->b + item * j->stride_b, j->k);
        return;
    }
    for (size_t item = first; item < first + count; item++)
        nw_blas_gemm(j->m, j->n, j->k, j->a + item * j->stride_a, j->lda,
                     j->b + item * j->stride_b, j->ldb, j->c + item * j->stride_c, j->ldc);
}

static void bmm_unit(void *arg, size_t unit, size_t worker) {
    (void)worker;
    const bmm_job *j = arg;
    const size_t first = unit * j->per_unit;
    bmm_items(j, first, min_size(j->per_unit, j->batch - first));
}

/* Items whose product OpenBLAS runs on the calling thread (m·n·k at most 2^18, see
 * NW_FUSED_TILE_MNK) are spread over the context's workers, a few at a time, when the whole
 * batch is worth handing to them (2^18 multiply-adds: some 15 µs of dot products on one core,
 * where waking a waiting team member costs a few µs); larger items run one after the other,
 * each with the BLAS's own threads. */
#define BMM_SMALL_MNK ((double)(1u << 18))
#define BMM_PARALLEL_MIN_WORK ((double)(1u << 18))
#define BMM_UNITS_PER_WORKER 8

void nw_blas_bmm(const nw_exec *exec, size_t batch, size_t m, size_t n, size_t k,
                 const float *a, size_t lda, size_t stride_a, const float *b, size_t ldb,
                 size_t stride_b, float *c, size_t ldc, size_t stride_c, void *scratch) {
    bmm_job job = {exec->simd, m, n, k, batch, batch, a, b, c,
                   lda, stride_a, ldb, stride_b, ldc, stride_c};
    const double mnk = (double)m * (double)n * (double)k;
    const size_t threads = exec->workers->threads;
    if (threads > 1 && batch > 1 && mnk <= BMM_SMALL_MNK &&
        mnk * (double)batch >= BMM_PARALLEL_MIN_WORK) {
        size_t units = min_size(batch, threads * BMM_UNITS_PER_WORKER);
        job.per_unit = (batch + units - 1) / units;
        units = (batch + job.per_unit - 1) / job.per_unit;
        nw_parallel_for(exec->workers, threads, units, bmm_unit, &job);
        return;
    }
    if (m == 1 && n == 1) {
        bmm_items(&job, 0, batch);
        return;
    }
#if NWATTN_USE_SGEMM_BATCH
    if (batch > 1 && batch_api_fits(m, n, k)) {
        bmm_batch_api(batch, m, n, k, a, lda, stride_a, b, ldb, stride_b, c, ldc, stride_c,
                      scratch);
        return;
    }
#else
    (void)scratch;
#endif
    bmm_items(&job, 0, batch);
}
