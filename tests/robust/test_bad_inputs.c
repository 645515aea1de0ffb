/* The bad-input matrix: every function of the API table × every class of bad input (at_bad.c) ×
 * both base cases × the REFERENCE, BLAS and AUTO backends. Each call must return its documented
 * status, name it in the last error, leave every byte of every buffer (and the guards around
 * them) as it was and allocate nothing. The context and status functions, which take no
 * buffers, have their own table below. Prints how many cases ran. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "api_table.h"

static size_t class_cases[64];
static size_t total_cases;

static void test_function(void **state) {
    const at_fn *fn = *state;
    at_alloc_stats stats[AT_BACKENDS];
    nwattn_context *ctx[AT_BACKENDS];
    for (int b = 0; b < AT_BACKENDS; b++) {
        nwattn_allocator a = at_counting_allocator(&stats[b]);
        assert_int_equal(nwattn_context_create_with_allocator(&ctx[b], &a), NWATTN_OK);
        assert_int_equal(nwattn_context_set_backend(ctx[b], at_backends[b]), NWATTN_OK);
    }
    /* The fused context with workers: the valid cases among the bad ones run threaded. */
    assert_int_equal(nwattn_context_set_threads(ctx[AT_B_FUSED], 3), NWATTN_OK);
    size_t cases = 0, failures = 0;
    for (int base = 0; base < 2; base++) {
        at_config cfg;
        at_config_base(fn, base, &cfg);
        for (int k = 0; k < at_bad_class_count(); k++)
            for (int v = 0;; v++) {
                at_case c;
                at_bad bad;
                at_case_build(&c, fn, &cfg, NULL);
                if (!at_bad_apply(k, v, &c, &bad)) {
                    at_case_free(&c);
                    break;
                }
                for (int b = 0; b < AT_BACKENDS; b++) {
                    if (!at_bad_check(ctx[b], b, &stats[b], &c, &bad))
                        failures++;
                    cases++;
                    class_cases[k]++;
                }
                at_case_free(&c);
            }
    }
    for (int b = 0; b < AT_BACKENDS; b++) {
        nwattn_context_destroy(ctx[b]);
        assert_int_equal(at_alloc_live(&stats[b]), 0);
    }
    printf("%s: %zu bad-input cases, %zu failed\n", fn->name, cases, failures);
    total_cases += cases;
    assert_int_equal(failures, 0);
}

/* ---- Context, version and status functions --------------------------------------------------- */
static void *never_alloc(void *user, size_t bytes) {
    (void)user, (void)bytes;
    return NULL;
}
static void plain_free(void *user, void *ptr) {
    (void)user, (void)ptr;
}

static size_t context_cases;
#define CHECK(cond)                 \
    do {                            \
        context_cases++;            \
        assert_true(cond);          \
    } while (0)

static void test_context_functions(void **state) {
    (void)state;
    nwattn_context *const untouched = (nwattn_context *)(uintptr_t)0x1234;
    nwattn_context *ctx = untouched;
    at_alloc_stats stats;
    nwattn_allocator good = at_counting_allocator(&stats);

    CHECK(nwattn_context_create(NULL) == NWATTN_ERR_NULL_POINTER);
    CHECK(nwattn_context_create_with_allocator(NULL, &good) == NWATTN_ERR_NULL_POINTER);
    CHECK(nwattn_context_create_with_allocator(&ctx, NULL) == NWATTN_ERR_NULL_POINTER);
    nwattn_allocator no_alloc = {NULL, plain_free, NULL}, no_free = {never_alloc, NULL, NULL};
    CHECK(nwattn_context_create_with_allocator(&ctx, &no_alloc) == NWATTN_ERR_NULL_POINTER);
    CHECK(nwattn_context_create_with_allocator(&ctx, &no_free) == NWATTN_ERR_NULL_POINTER);
    nwattn_allocator failing = {never_alloc, plain_free, NULL};
    CHECK(nwattn_context_create_with_allocator(&ctx, &failing) == NWATTN_ERR_ALLOC);
    CHECK(ctx == untouched);

    CHECK(nwattn_context_create_with_allocator(&ctx, &good) == NWATTN_OK);
    static const int bad_backends[] = {4, -1, INT_MAX, INT_MIN};
    for (size_t i = 0; i < sizeof bad_backends / sizeof bad_backends[0]; i++) {
        CHECK(nwattn_context_set_backend(ctx, NWATTN_BACKEND_BLAS) == NWATTN_OK);
        CHECK(nwattn_context_set_backend(ctx, (nwattn_backend)bad_backends[i]) ==
              NWATTN_ERR_BAD_ENUM);
        CHECK(nwattn_context_get_backend(ctx) == NWATTN_BACKEND_BLAS);
        CHECK(strncmp(nwattn_context_last_error(ctx), "NWATTN_ERR_BAD_ENUM", 19) == 0);
    }
    static const size_t bad_threads[] = {0, NWATTN_MAX_THREADS + 1, SIZE_MAX};
    for (size_t i = 0; i < sizeof bad_threads / sizeof bad_threads[0]; i++) {
        CHECK(nwattn_context_set_threads(ctx, 2) == NWATTN_OK);
        CHECK(nwattn_context_set_threads(ctx, bad_threads[i]) == NWATTN_ERR_BAD_PARAMETER);
        CHECK(nwattn_context_get_threads(ctx) == 2);
        CHECK(strncmp(nwattn_context_last_error(ctx), "NWATTN_ERR_BAD_PARAMETER", 24) == 0);
    }
    CHECK(nwattn_context_set_threads(ctx, NWATTN_MAX_THREADS) == NWATTN_OK);
    CHECK(nwattn_context_set_threads(NULL, 2) == NWATTN_ERR_NULL_POINTER);
    CHECK(nwattn_context_get_threads(NULL) == 1);
    CHECK(nwattn_context_set_backend(NULL, NWATTN_BACKEND_AUTO) == NWATTN_ERR_NULL_POINTER);
    CHECK(nwattn_context_get_backend(NULL) == NWATTN_BACKEND_AUTO);
    CHECK(nwattn_context_workspace_bytes(NULL) == 0);
    nwattn_context_release_workspace(NULL);
    nwattn_context_release_workspace(ctx); /* nothing to release yet */
    CHECK(nwattn_context_workspace_bytes(ctx) == 0);
    CHECK(nwattn_context_last_error(NULL) != NULL);
    nwattn_context_destroy(NULL);
    nwattn_context_destroy(ctx);
    CHECK(at_alloc_live(&stats) == 0);

    static const int not_status[] = {-1, NWATTN_ERR_DEGENERATE_DATA + 1, 100, INT_MAX, INT_MIN};
    for (size_t i = 0; i < sizeof not_status / sizeof not_status[0]; i++) {
        CHECK(strcmp(nwattn_status_name((nwattn_status)not_status[i]), "NWATTN_ERR_UNKNOWN") == 0);
        CHECK(nwattn_status_describe((nwattn_status)not_status[i]) != NULL);
    }
    for (int s = 0; s <= NWATTN_ERR_DEGENERATE_DATA; s++) {
        CHECK(strncmp(nwattn_status_name((nwattn_status)s), "NWATTN_", 7) == 0);
        CHECK(nwattn_status_describe((nwattn_status)s)[0] != '\0');
    }
    CHECK(nwattn_version_number() == NWATTN_VERSION_NUMBER);
    CHECK(strcmp(nwattn_version_string(), NWATTN_VERSION_STRING) == 0);
    printf("context, version and status functions: %zu cases\n", context_cases);
    total_cases += context_cases;
}

/* The fuzzer's corpus names functions by these: unique, and below the fuzzer's own range. */
static void test_ids_unique(void **state) {
    (void)state;
    for (int f = 0; f < at_function_count; f++) {
        const int id = at_functions[f].id;
        assert_true(id >= 1 && id < AT_ID_TABLE_END);
        assert_ptr_equal(at_function_by_id(id), &at_functions[f]);
    }
    assert_null(at_function_by_id(0));
}

/* Every class must have run somewhere, or the matrix has a hole. */
static void test_every_class_ran(void **state) {
    (void)state;
    int has_params = 0;
    for (int f = 0; f < at_function_count; f++)
        has_params |= at_functions[f].n_params > 0;
    for (int k = 0; k < at_bad_class_count(); k++) {
        printf("  %-45s %5zu cases\n", at_bad_class_name(k), class_cases[k]);
        if (strcmp(at_bad_class_name(k), "bad scalar parameter") == 0 && !has_params)
            continue;
        assert_true(class_cases[k] > 0);
    }
    printf("bad-input matrix total: %zu cases (%d functions, %d classes)\n", total_cases,
           at_function_count, at_bad_class_count());
}

int main(void) {
    struct CMUnitTest tests[64];
    size_t count = 0;
    for (int f = 0; f < at_function_count; f++)
        tests[count++] = (struct CMUnitTest){at_functions[f].name, test_function, NULL, NULL,
                                             (void *)(uintptr_t)&at_functions[f]};
    tests[count++] = (struct CMUnitTest){"context_functions", test_context_functions, NULL, NULL,
                                         NULL};
    tests[count++] = (struct CMUnitTest){"ids_unique", test_ids_unique, NULL, NULL, NULL};
    tests[count++] = (struct CMUnitTest){"every_class_ran", test_every_class_ran, NULL, NULL,
                                         NULL};
    return _cmocka_run_group_tests("bad_inputs", tests, count, NULL, NULL);
}
