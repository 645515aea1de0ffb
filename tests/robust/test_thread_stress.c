/* Thread stress: many threads, each with its own context, call every function of the API table
 * on every backend, over and over, in a different order per thread, reading the same input
 * buffers concurrently (the header allows sharing read-only inputs). Half the threads give
 * their context workers (nwattn_context_set_threads), so the fused path runs threads of its
 * own inside the stressing threads. Every result must be bit-identical to a serial run on one
 * thread. Built under ThreadSanitizer in CI.
 *
 * NWATTN_STRESS_THREADS (default 8) and NWATTN_STRESS_ROUNDS (default 10) scale it. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "api_table.h"

enum { MAX_JOBS = 1024, MAX_THREADS = 64, RANDOM_CONFIGS = 3, LARGE_FACTOR = 6 };

typedef struct job {
    at_case input;    /* owns the inputs every thread reads */
    at_case expected; /* the serial result */
    int backend;
} job;

static job jobs[MAX_JOBS];
static int n_jobs;

typedef struct worker {
    pthread_t thread;
    int index, rounds;
    size_t calls, mismatches, errors;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    nwattn_context *ctx = NULL;
    if (nwattn_context_create(&ctx) != NWATTN_OK ||
        nwattn_context_set_threads(ctx, (size_t)1 + (size_t)(w->index % 2) * 2) != NWATTN_OK) {
        w->errors++;
        return NULL;
    }
    for (int round = 0; round < w->rounds; round++)
        for (int t = 0; t < n_jobs; t++) {
            /* A different order per thread and round: workspaces grow and get reused. */
            const job *jb = &jobs[(t * (2 * w->index + 1) + round * 7 + w->index) % n_jobs];
            at_case mine;
            at_case_clone(&mine, &jb->input, 1);
            if (nwattn_context_set_backend(ctx, at_backends[jb->backend]) != NWATTN_OK ||
                at_case_invoke(ctx, &mine) != NWATTN_OK)
                w->errors++;
            else if (!at_case_outputs_identical(&mine, &jb->expected, jb->input.fn->name))
                w->mismatches++;
            w->calls++;
            at_case_free(&mine);
        }
    nwattn_context_destroy(ctx);
    return NULL;
}

static int env_int(const char *name, int fallback, int max) {
    const char *s = getenv(name);
    int v = s ? atoi(s) : fallback;
    return v < 1 ? 1 : v > max ? max : v;
}

static void test_stress(void **state) {
    (void)state;
    /* The jobs and their serial results. */
    nwattn_context *serial = NULL;
    assert_int_equal(nwattn_context_create(&serial), NWATTN_OK);
    at_src src;
    at_src_seed(&src, 0x7423);
    for (int f = 0; f < at_function_count; f++)
        for (int c = 0; c < 3 + RANDOM_CONFIGS; c++) {
            at_config cfg;
            if (c < 2) {
                at_config_base(&at_functions[f], c, &cfg);
            } else if (c == 2) { /* large enough for the BLAS to use its own threads */
                at_config_base(&at_functions[f], 0, &cfg);
                for (int i = 1; i < at_functions[f].n_dims; i++)
                    cfg.dim[i] *= LARGE_FACTOR;
            } else {
                at_config_random(&at_functions[f], &src, &cfg);
            }
            for (int b = 0; b < AT_BACKENDS; b++) {
                assert_true(n_jobs < MAX_JOBS);
                job *jb = &jobs[n_jobs++];
                jb->backend = b;
                at_case_build(&jb->input, &at_functions[f], &cfg, NULL);
                at_case_clone(&jb->expected, &jb->input, 0);
                assert_int_equal(nwattn_context_set_backend(serial, at_backends[b]), NWATTN_OK);
                nwattn_status status = at_case_invoke(serial, &jb->expected);
                if (status != NWATTN_OK)
                    fail_msg("%s: %s", at_functions[f].name, nwattn_context_last_error(serial));
            }
        }
    nwattn_context_destroy(serial);

    const int threads = env_int("NWATTN_STRESS_THREADS", 8, MAX_THREADS);
    const int rounds = env_int("NWATTN_STRESS_ROUNDS", 10, 1000);
    static worker workers[MAX_THREADS];
    for (int t = 0; t < threads; t++) {
        workers[t] = (worker){.index = t, .rounds = rounds};
        assert_int_equal(pthread_create(&workers[t].thread, NULL, work, &workers[t]), 0);
    }
    size_t calls = 0, mismatches = 0, errors = 0;
    for (int t = 0; t < threads; t++) {
        assert_int_equal(pthread_join(workers[t].thread, NULL), 0);
        calls += workers[t].calls;
        mismatches += workers[t].mismatches;
        errors += workers[t].errors;
    }
    printf("thread stress: %d threads × %d rounds × %d jobs = %zu calls, %zu mismatches, "
           "%zu errors\n",
           threads, rounds, n_jobs, calls, mismatches, errors);
    for (int j = 0; j < n_jobs; j++) {
        at_case_free(&jobs[j].input);
        at_case_free(&jobs[j].expected);
    }
    assert_int_equal(mismatches, 0);
    assert_int_equal(errors, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_stress)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
