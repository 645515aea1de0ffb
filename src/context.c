/* The caller-owned context: allocator, backend choice, reusable working memory, last error. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas/blas_kernels.h"
#include "internal.h"

static void *default_alloc(void *user, size_t bytes) {
    (void)user;
    return malloc(bytes);
}

static void default_free(void *user, void *ptr) {
    (void)user;
    free(ptr);
}

nwattn_status nwattn_context_create(nwattn_context **out) {
    const nwattn_allocator allocator = {default_alloc, default_free, NULL};
    return nwattn_context_create_with_allocator(out, &allocator);
}

nwattn_status nwattn_context_create_with_allocator(nwattn_context **out,
                                                   const nwattn_allocator *allocator) {
    if (out == NULL || allocator == NULL || allocator->alloc == NULL || allocator->free == NULL)
        return NWATTN_ERR_NULL_POINTER;
    nwattn_context *ctx = allocator->alloc(allocator->user, sizeof *ctx);
    if (ctx == NULL)
        return NWATTN_ERR_ALLOC;
    memset(ctx, 0, sizeof *ctx);
    ctx->allocator = *allocator;
    ctx->backend = NWATTN_BACKEND_AUTO;
    ctx->workers.threads = 1;
    ctx->simd = nw_simd_select();
    nw_tiles_probe(&ctx->tiles);
    *out = ctx;
    return NWATTN_OK;
}

void nwattn_context_destroy(nwattn_context *ctx) {
    if (ctx == NULL)
        return;
    nw_workers_stop(&ctx->workers);
    nwattn_context_release_workspace(ctx);
    nwattn_allocator allocator = ctx->allocator;
    allocator.free(allocator.user, ctx);
}

nwattn_status nwattn_context_set_backend(nwattn_context *ctx, nwattn_backend backend) {
    NW_TRY(nw_begin(ctx));
    switch (backend) {
    case NWATTN_BACKEND_AUTO:
    case NWATTN_BACKEND_REFERENCE:
    case NWATTN_BACKEND_BLAS:
    case NWATTN_BACKEND_FUSED:
        ctx->backend = backend;
        return NWATTN_OK;
    }
    return nw_fail(ctx, NWATTN_ERR_BAD_ENUM, "unknown backend %d", (int)backend);
}

nwattn_backend nwattn_context_get_backend(const nwattn_context *ctx) {
    return ctx ? ctx->backend : NWATTN_BACKEND_AUTO;
}

nwattn_status nwattn_context_set_threads(nwattn_context *ctx, size_t threads) {
    NW_TRY(nw_begin(ctx));
    if (threads == 0 || threads > NWATTN_MAX_THREADS)
        return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER, "threads is %zu, not in 1 .. %d", threads,
                       NWATTN_MAX_THREADS);
    if (threads != ctx->workers.threads)
        nw_workers_stop(&ctx->workers); /* the next parallel call starts a team of the new size */
    ctx->workers.threads = threads;
    return NWATTN_OK;
}

size_t nwattn_context_get_threads(const nwattn_context *ctx) { return ctx ? ctx->workers.threads : 1; }

nwattn_status nwattn_context_set_tiles(nwattn_context *ctx, size_t rows, size_t keys) {
    NW_TRY(nw_begin(ctx));
    if (rows > NWATTN_MAX_TILE_ROWS || keys > NWATTN_MAX_TILE_KEYS)
        return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER,
                       "tiles %zu x %zu: at most %d rows and %d keys (0: derived)", rows, keys,
                       NWATTN_MAX_TILE_ROWS, NWATTN_MAX_TILE_KEYS);
    ctx->tiles.rows = rows;
    ctx->tiles.keys = keys;
    return NWATTN_OK;
}

nwattn_status nwattn_context_get_tiles(const nwattn_context *ctx, size_t *rows, size_t *keys) {
    if (ctx == NULL || rows == NULL || keys == NULL)
        return NWATTN_ERR_NULL_POINTER;
    *rows = ctx->tiles.rows;
    *keys = ctx->tiles.keys;
    return NWATTN_OK;
}

static const char *cpu_level_name(int level) {
    return level >= NW_SIMD_LEVEL_AVX512 ? "avx512" : level >= NW_SIMD_LEVEL_AVX2 ? "avx2" : "generic";
}

size_t nwattn_context_describe(const nwattn_context *ctx, char *buf, size_t size) {
    if (ctx == NULL || (buf == NULL && size > 0))
        return 0;
    const nw_tiles *t = &ctx->tiles;
    size_t dot[2], nw1[2], dist8[2];
    nw_tile_shape(t, SIZE_MAX, SIZE_MAX, 64, 64, 0, &dot[0], &dot[1]);
    nw_tile_shape(t, SIZE_MAX, SIZE_MAX, 1, 1, 1, &nw1[0], &nw1[1]);
    nw_tile_shape(t, SIZE_MAX, SIZE_MAX, 8, 1, 0, &dist8[0], &dist8[1]);
    const int len = snprintf(
        buf, size,
        "simd=%s cpu=%s blas=%s small_products=%d l1d=%zu l2=%zu caches=%s override=%zux%zu "
        "tiles: dot64=%zux%zu nw1d=%zux%zu dist8=%zux%zu groups<=%zu chunks=%zu",
        ctx->simd->name, cpu_level_name(nw_cpu_level()),
        nw_blas_core() != NULL ? nw_blas_core() : "unknown", nw_blas_small_products(), t->l1d, t->l2,
        t->from_cpu ? "sysconf" : "default", t->rows, t->keys, dot[0], dot[1], nw1[0], nw1[1],
        dist8[0], dist8[1], nw_tile_groups(t, SIZE_MAX, 1, 0), nw_tile_key_chunks(t, dot[0], dot[1], 0));
    return len > 0 ? (size_t)len : 0;
}

size_t nwattn_context_workspace_bytes(const nwattn_context *ctx) {
    return ctx ? ctx->workspace_bytes : 0;
}

void nwattn_context_release_workspace(nwattn_context *ctx) {
    if (ctx == NULL || ctx->workspace == NULL)
        return;
    ctx->allocator.free(ctx->allocator.user, ctx->workspace);
    ctx->workspace = NULL;
    ctx->workspace_bytes = 0;
}

const char *nwattn_context_last_error(const nwattn_context *ctx) {
    if (ctx == NULL)
        return "context is NULL";
    return ctx->errmsg;
}

nwattn_status nw_begin(nwattn_context *ctx) {
    if (ctx == NULL)
        return NWATTN_ERR_NULL_POINTER;
    ctx->errmsg[0] = '\0';
    return NWATTN_OK;
}

nwattn_status nw_fail(nwattn_context *ctx, nwattn_status status, const char *fmt, ...) {
    if (ctx != NULL) {
        int used = snprintf(ctx->errmsg, sizeof ctx->errmsg, "%s: ", nwattn_status_name(status));
        if (used > 0 && (size_t)used < sizeof ctx->errmsg) {
            va_list args;
            va_start(args, fmt);
            vsnprintf(ctx->errmsg + used, sizeof ctx->errmsg - (size_t)used, fmt, args);
            va_end(args);
        }
    }
    return status;
}

nwattn_status nw_workspace(nwattn_context *ctx, size_t bytes, void **out) {
    if (bytes == SIZE_MAX) /* what size computations return on overflow */
        return nw_fail(ctx, NWATTN_ERR_OVERFLOW, "working memory size overflows size_t");
    if (bytes <= ctx->workspace_bytes) {
        *out = ctx->workspace;
        return NWATTN_OK;
    }
    /* Free first: the old block's contents are never needed, and peak memory stays lower. */
    nwattn_context_release_workspace(ctx);
    void *block = ctx->allocator.alloc(ctx->allocator.user, bytes);
    if (block == NULL)
        return nw_fail(ctx, NWATTN_ERR_ALLOC, "could not allocate %zu bytes of working memory",
                       bytes);
    ctx->workspace = block;
    ctx->workspace_bytes = bytes;
    *out = block;
    return NWATTN_OK;
}
