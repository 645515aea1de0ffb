/* Which kind of kernels the BLAS runs (blas_kernels.h nw_blas_small_products). */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>

#include "blas_kernels.h"

/* OpenBLAS 0.3.21's cores whose sgemm takes products up to m·n·k = 2^18 through its small-matrix
 * kernels, without packing (interface/gemm.c, SMALL_MATRIX_OPT: the Skylake-X kernels). */
static int small_kernels(const char *core) {
    static const char *const names[] = {"skylakex", "cooperlake", "sapphirerapids"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(core, names[i]) == 0)
            return 1;
    return 0;
}

/* OpenBLAS names its core through openblas_get_corename (looked up, not linked: any CBLAS
 * will do for the library); NULL for another BLAS. */
const char *nw_blas_core(void) {
    char *(*corename)(void) = NULL;
    void *symbol = dlsym(RTLD_DEFAULT, "openblas_get_corename");
    memcpy(&corename, &symbol, sizeof corename); /* object to function pointer, as POSIX allows */
    return corename != NULL ? corename() : NULL;
}

int nw_blas_threads(void) {
    int (*threads)(void) = NULL;
    void *symbol = dlsym(RTLD_DEFAULT, "openblas_get_num_threads");
    memcpy(&threads, &symbol, sizeof threads);
    return threads != NULL ? threads() : 0;
}

/* Another BLAS counts as having no small kernels. */
static int probe(void) {
    const char *core = nw_blas_core();
    return core != NULL && small_kernels(core);
}

int nw_blas_small_products(void) {
    /* -1: not probed yet. Depends on the process's BLAS (and its OPENBLAS_CORETYPE) only. */
    static atomic_int cached = -1;
    int value = atomic_load_explicit(&cached, memory_order_relaxed);
    if (value < 0) {
        value = probe();
        atomic_store_explicit(&cached, value, memory_order_relaxed);
    }
    return value;
}
