/* libFuzzer harness for the whole public API, through the API table (tests/robust/api_table.h):
 * the input picks a function, its dimensions, layouts, optional operands, score, mask and data
 * (moderate values, or raw float bits: NaN, Inf, denormals, huge), and one of four modes:
 *
 *   valid      REFERENCE, BLAS, FUSED (with 1 to 3 workers) and AUTO must return the same
 *              status; on success none may write outside its output elements, and with moderate
 *              data and parameters each must agree with REFERENCE within the documented
 *              accuracy (the table's `agree` functions);
 *   raw params the same with the score's scale and bandwidth taken as raw float bits (often
 *              invalid: then both must fail alike and leave every buffer untouched);
 *   bad input  a class and variant of the bad-input matrix (at_bad.c) applied to the case: the
 *              documented status, untouched buffers, no allocation;
 *   no memory  an allocator that fails after 0-2 allocations: success, or NWATTN_ERR_ALLOC with
 *              untouched buffers.
 *
 * Any violation traps, which libFuzzer reports as a crash. Built with -fsanitize=fuzzer,address,
 * undefined; the library itself is instrumented for coverage (NWATTN_BUILD_FUZZERS). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_table.h"

static nwattn_context *ctx[AT_BACKENDS]; /* workspaces persist across inputs */
static at_alloc_stats stats[AT_BACKENDS];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    for (int b = 0; b < AT_BACKENDS; b++) {
        nwattn_allocator a = at_counting_allocator(&stats[b]);
        if (nwattn_context_create_with_allocator(&ctx[b], &a) != NWATTN_OK ||
            nwattn_context_set_backend(ctx[b], at_backends[b]) != NWATTN_OK)
            __builtin_trap();
    }
    return 0;
}

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_nwattn: %s\n", what);
        __builtin_trap();
    }
}

static float raw_float(at_src *src) {
    uint32_t bits = (uint32_t)at_src_u64(src);
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

static void run_valid(at_case *ref, int compare, size_t threads) {
    nwattn_context_set_threads(ctx[AT_B_FUSED], threads);
    /* Copies first: a call may update its in-out operands (a merged state). */
    at_case fast[AT_BACKENDS];
    for (int b = AT_B_REF + 1; b < AT_BACKENDS; b++) {
        at_case_clone(&fast[b], ref, 1);
        at_case_snapshot(&fast[b]);
    }
    at_case_snapshot(ref);
    const nwattn_status sr = at_case_invoke(ctx[AT_B_REF], ref);
    if (sr == NWATTN_OK)
        check(at_case_writes_confined(ref, "REFERENCE"), "REFERENCE wrote outside its outputs");
    else
        check(at_case_unchanged(ref, "REFERENCE"), "REFERENCE failed but wrote");
    for (int b = AT_B_REF + 1; b < AT_BACKENDS; b++) {
        const nwattn_status sf = at_case_invoke(ctx[b], &fast[b]);
        if (sf != sr)
            fprintf(stderr, "REFERENCE: %s\n%s: %s\n", nwattn_context_last_error(ctx[AT_B_REF]),
                    at_backend_names[b], nwattn_context_last_error(ctx[b]));
        check(sf == sr, "backends disagree on the status");
        if (sf == NWATTN_OK) {
            check(at_case_writes_confined(&fast[b], at_backend_names[b]),
                  "wrote outside its outputs");
            if (compare && ref->fn->agree != NULL && !ref->fn->agree(ref, &fast[b])) {
                fprintf(stderr, "backend %s\n", at_backend_names[b]);
                check(0, "a backend disagrees with REFERENCE");
            }
        } else {
            check(at_case_unchanged(&fast[b], at_backend_names[b]), "failed but wrote");
        }
        at_case_free(&fast[b]);
    }
}

static void run_bad(at_case *c, at_src *src) {
    const int k = (int)at_src_below(src, (size_t)at_bad_class_count());
    const int v = (int)at_src_below(src, 64);
    at_bad bad;
    if (!at_bad_apply(k, v, c, &bad))
        return;
    if (getenv("NWATTN_FUZZ_VERBOSE") != NULL)
        fprintf(stderr, "%s: %s: %s\n", c->fn->name, at_bad_class_name(k), bad.label);
    for (int b = 0; b < AT_BACKENDS; b++)
        check(at_bad_check(ctx[b], b, &stats[b], c, &bad), bad.label);
}

static void run_no_memory(at_case *c, at_src *src) {
    const int b = (int)at_src_below(src, AT_BACKENDS);
    nwattn_context_release_workspace(ctx[b]); /* so that the call has to allocate */
    at_case_snapshot(c);
    stats[b].budget = (long)at_src_below(src, 3);
    const nwattn_status status = at_case_invoke(ctx[b], c);
    stats[b].budget = -1;
    if (status == NWATTN_ERR_ALLOC) {
        check(at_case_unchanged(c, "allocation failure"), "failed allocation but wrote");
        check(nwattn_context_workspace_bytes(ctx[b]) == 0, "workspace held after failure");
    } else if (status == NWATTN_OK) {
        check(at_case_writes_confined(c, "allocation"), "wrote outside its outputs");
    } else {
        check(at_case_unchanged(c, "error"), "failed but wrote");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    at_src src;
    at_src_bytes(&src, data, size);
    const at_fn *fn = &at_functions[at_src_below(&src, (size_t)at_function_count)];
    const int mode = (int)at_src_below(&src, 4);
    const size_t threads = 1 + at_src_below(&src, 3);
    at_config cfg;
    at_config_random(fn, &src, &cfg);
    int moderate = cfg.data == AT_DATA_MODERATE;
    if (mode == 1) {
        cfg.score.scale = raw_float(&src);
        cfg.score.bandwidth = raw_float(&src);
        moderate = 0;
    }
    at_case c;
    at_case_build(&c, fn, &cfg, &src);
    if (getenv("NWATTN_FUZZ_VERBOSE") != NULL) {
        fprintf(stderr, "%s mode %d data %d:", fn->name, mode, (int)cfg.data);
        for (int i = 0; i < fn->n_dims; i++)
            fprintf(stderr, " %s=%zu", fn->dims[i].name, c.dim[i]);
        for (int i = 0; i < c.n_ops; i++)
            fprintf(stderr, " %s(%s ld %zu stride %zu)", c.op[i].name,
                    c.buf[i].data ? "set" : "NULL", c.buf[i].ld, c.buf[i].stride);
        fprintf(stderr, " kind %d mask %s flags %u\n", (int)c.score.kind,
                c.mask_null ? "NULL" : "set", c.mask.flags);
    }
    switch (mode) {
    case 0:
    case 1:
        run_valid(&c, moderate, threads);
        break;
    case 2:
        run_bad(&c, &src);
        break;
    default:
        run_no_memory(&c, &src);
        break;
    }
    at_case_free(&c);
    return 0;
}
