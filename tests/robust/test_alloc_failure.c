/* Allocation failure: every function of the API table, both base cases and a few random ones,
 * every backend. With a counting allocator that lets exactly k allocations succeed, the call
 * must either succeed with the result of an unconstrained run, or return NWATTN_ERR_ALLOC with
 * every buffer untouched, a message, and no memory held beyond the context itself; k runs from 0
 * until the call succeeds. Also: a context that fails to grow its workspace keeps working, and
 * context creation itself fails cleanly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "api_table.h"

static size_t total_calls, total_failures_injected;

static nwattn_context *counting_context(at_alloc_stats *stats, int backend) {
    nwattn_allocator a = at_counting_allocator(stats);
    nwattn_context *ctx = NULL;
    assert_int_equal(nwattn_context_create_with_allocator(&ctx, &a), NWATTN_OK);
    assert_int_equal(nwattn_context_set_backend(ctx, at_backends[backend]), NWATTN_OK);
    if (backend == AT_B_FUSED) /* workers: their scratch comes from the same allocation */
        assert_int_equal(nwattn_context_set_threads(ctx, 2), NWATTN_OK);
    return ctx;
}

/* Returns how many allocation failures the sweep injected for this case and backend. */
static size_t sweep(const at_fn *fn, const at_config *cfg, int backend) {
    /* The unconstrained result. */
    at_alloc_stats free_stats;
    nwattn_context *free_ctx = counting_context(&free_stats, backend);
    at_case want;
    at_case_build(&want, fn, cfg, NULL);
    const nwattn_status free_status = at_case_invoke(free_ctx, &want);
    if (free_status != NWATTN_OK)
        fail_msg("%s: unconstrained call: %s", fn->name, nwattn_context_last_error(free_ctx));
    nwattn_context_destroy(free_ctx);

    size_t injected = 0;
    for (long k = 0;; k++) {
        at_alloc_stats stats;
        nwattn_context *ctx = counting_context(&stats, backend);
        at_case c;
        at_case_build(&c, fn, cfg, NULL);
        at_case_snapshot(&c);
        stats.budget = k;
        const nwattn_status status = at_case_invoke(ctx, &c);
        total_calls++;
        char what[200];
            snprintf(what, sizeof what, "%s [%s], %ld allocations allowed", fn->name,
                 at_backend_names[backend], k);
        if (status == NWATTN_ERR_ALLOC) {
            injected++;
            assert_true(stats.failures > 0);
            assert_true(at_case_unchanged(&c, what));
            assert_int_equal(at_alloc_live(&stats), 1); /* the context, nothing else */
            assert_int_equal(nwattn_context_workspace_bytes(ctx), 0);
            assert_true(strncmp(nwattn_context_last_error(ctx), "NWATTN_ERR_ALLOC", 16) == 0);
        } else {
            if (status != NWATTN_OK)
                fail_msg("%s: status %s (%s)", what, nwattn_status_name(status),
                         nwattn_context_last_error(ctx));
            assert_int_equal(stats.failures, 0);
            assert_true(at_case_outputs_identical(&c, &want, what));
        }
        nwattn_context_destroy(ctx);
        assert_int_equal(at_alloc_live(&stats), 0);
        at_case_free(&c);
        if (status == NWATTN_OK)
            break;
        assert_true(k < 16); /* a call makes a handful of allocations at most */
    }
    at_case_free(&want);
    return injected;
}

static void test_function(void **state) {
    const at_fn *fn = *state;
    size_t injected = 0;
    at_src src;
    at_src_seed(&src, 0xa110c);
    for (int which = 0; which < 6; which++) {
        at_config cfg;
        if (which < 2)
            at_config_base(fn, which, &cfg);
        else
            at_config_random(fn, &src, &cfg);
        cfg.data = AT_DATA_MODERATE;
        for (int b = 0; b < AT_BACKENDS; b++)
            injected += sweep(fn, &cfg, b);
    }
    printf("%s: %zu injected allocation failures\n", fn->name, injected);
    total_failures_injected += injected;
}

/* A context whose workspace cannot grow fails the call, holds no workspace, and works again once
 * memory is there. */
static void test_growth_failure(void **state) {
    (void)state;
    for (int f = 0; f < at_function_count; f++) {
        const at_fn *fn = &at_functions[f];
        for (int b = 0; b < AT_BACKENDS; b++) {
            at_alloc_stats stats;
            nwattn_context *ctx = counting_context(&stats, b);
            at_config small, large;
            at_config_base(fn, 1, &small);
            at_config_base(fn, 0, &large);
            for (int i = 0; i < fn->n_dims; i++)
                large.dim[i] = fn->dims[i].base[0] * 3; /* needs more working memory */
            at_case c;
            at_case_build(&c, fn, &small, NULL);
            assert_int_equal(at_case_invoke(ctx, &c), NWATTN_OK);
            at_case_free(&c);
            const size_t held = nwattn_context_workspace_bytes(ctx);

            at_case_build(&c, fn, &large, NULL);
            at_case_snapshot(&c);
            stats.budget = 0;
            nwattn_status status = at_case_invoke(ctx, &c);
            if (status == NWATTN_ERR_ALLOC) {
                assert_true(at_case_unchanged(&c, fn->name));
                assert_int_equal(nwattn_context_workspace_bytes(ctx), 0);
                assert_int_equal(at_alloc_live(&stats), 1);
            } else {
                assert_int_equal(status, NWATTN_OK); /* the old block was large enough */
                assert_true(nwattn_context_workspace_bytes(ctx) == held);
            }
            stats.budget = -1;
            assert_int_equal(at_case_invoke(ctx, &c), NWATTN_OK);
            at_case_free(&c);
            nwattn_context_release_workspace(ctx);
            assert_int_equal(at_alloc_live(&stats), 1);
            nwattn_context_destroy(ctx);
            assert_int_equal(at_alloc_live(&stats), 0);
        }
    }
}

static void test_context_creation(void **state) {
    (void)state;
    at_alloc_stats stats;
    nwattn_allocator a = at_counting_allocator(&stats);
    stats.budget = 0;
    nwattn_context *ctx = (nwattn_context *)(uintptr_t)0x1;
    assert_int_equal(nwattn_context_create_with_allocator(&ctx, &a), NWATTN_ERR_ALLOC);
    assert_true(ctx == (nwattn_context *)(uintptr_t)0x1);
    assert_int_equal(at_alloc_live(&stats), 0);
}

static void test_summary(void **state) {
    (void)state;
    printf("allocation failure: %zu calls, %zu injected failures\n", total_calls,
           total_failures_injected);
    assert_true(total_failures_injected > 0); /* the sweep reached real allocations */
}

int main(void) {
    struct CMUnitTest tests[64];
    size_t count = 0;
    for (int f = 0; f < at_function_count; f++)
        tests[count++] = (struct CMUnitTest){at_functions[f].name, test_function, NULL, NULL,
                                             (void *)(uintptr_t)&at_functions[f]};
    tests[count++] = (struct CMUnitTest){"growth_failure", test_growth_failure, NULL, NULL, NULL};
    tests[count++] = (struct CMUnitTest){"context_creation", test_context_creation, NULL, NULL,
                                         NULL};
    tests[count++] = (struct CMUnitTest){"summary", test_summary, NULL, NULL, NULL};
    return _cmocka_run_group_tests("alloc_failure", tests, count, NULL, NULL);
}
