/* The context's worker team (src/threads.c): kept between calls, restarted when the thread
 * count changes, woken from sleep, joined on destroy, usable in a fork child. Every result is
 * compared bit for bit with a one-thread context: the work is cut into the same units whatever
 * the thread count, so any mix-up between calls or workers shows as a difference. */
#define _GNU_SOURCE /* fork, waitpid, alarm, /proc */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "nwattn.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

/* d2l's weighted averages: (B, 1, n) × (B, n, 1), enough work to be spread over the team. */
#define BMM_B 1000
#define BMM_N 999
/* A Gaussian pooling on the fused backend: many units of query rows. */
#define POOL_M 301
#define POOL_N 257
#define POOL_D 3
#define POOL_DV 2

typedef struct data {
    float a[BMM_B * BMM_N], b[BMM_B * BMM_N];
    float q[POOL_M * POOL_D], k[POOL_N * POOL_D], v[POOL_N * POOL_DV];
} data;

typedef struct results {
    float bmm[BMM_B];
    float pool[POOL_M * POOL_DV];
} results;

static data g_data;
static results g_want; /* from a one-thread context */

static float uniform(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)(uint32_t)(*s >> 40) * (2.0f / 16777216.0f) - 1.0f; /* exact in float */
}

static nwattn_status compute(nwattn_context *ctx, results *out) {
    nwattn_status st = nwattn_bmm(ctx, BMM_B, 1, 1, BMM_N, g_data.a, BMM_N, BMM_N, g_data.b, 1,
                                  BMM_N, out->bmm, 1, 1);
    if (st != NWATTN_OK)
        return st;
    const nwattn_score score = {NWATTN_SCORE_GAUSSIAN, 0.0f, 0.7f, NULL};
    return nwattn_pool(ctx, &score, NULL, 1, POOL_M, POOL_N, POOL_D, POOL_DV, g_data.q, POOL_D,
                       0, g_data.k, POOL_D, 0, g_data.v, POOL_DV, 0, out->pool, POOL_DV, 0, NULL,
                       0, 0, NULL, 0);
}

static int same_as_wanted(const results *r) { return memcmp(r, &g_want, sizeof *r) == 0; }

static nwattn_context *context(size_t threads) {
    nwattn_context *ctx = NULL;
    assert_int_equal(nwattn_context_create(&ctx), NWATTN_OK);
    assert_int_equal(nwattn_context_set_backend(ctx, NWATTN_BACKEND_FUSED), NWATTN_OK);
    assert_int_equal(nwattn_context_set_threads(ctx, threads), NWATTN_OK);
    return ctx;
}

static void check(nwattn_context *ctx, const char *what) {
    results r;
    memset(&r, 0xff, sizeof r);
    assert_int_equal(compute(ctx, &r), NWATTN_OK);
    if (!same_as_wanted(&r))
        fail_msg("%s: results differ from the one-thread context", what);
}

static int setup(void **state) {
    (void)state;
    uint64_t s = 12345;
    float *all = (float *)(void *)&g_data;
    for (size_t i = 0; i < sizeof g_data / sizeof(float); i++)
        all[i] = uniform(&s);
    nwattn_context *one = context(1);
    assert_int_equal(compute(one, &g_want), NWATTN_OK);
    nwattn_context_destroy(one);
    return 0;
}

/* One team serves hundreds of calls of two kinds, back to back. */
static void test_team_reused_across_calls(void **state) {
    (void)state;
    nwattn_context *ctx = context(2);
    for (int i = 0; i < 200; i++)
        check(ctx, "back-to-back calls");
    nwattn_context_destroy(ctx);
}

/* Every change of the thread count replaces the team; more threads than cores or units. */
static void test_thread_count_changes(void **state) {
    (void)state;
    static const size_t counts[] = {2, 4, 1, 3, 8, 2, 2, 17};
    nwattn_context *ctx = context(1);
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        assert_int_equal(nwattn_context_set_threads(ctx, counts[i]), NWATTN_OK);
        assert_int_equal(nwattn_context_get_threads(ctx), counts[i]);
        char what[64];
        snprintf(what, sizeof what, "%zu threads", counts[i]);
        for (int rep = 0; rep < 5; rep++)
            check(ctx, what);
    }
    nwattn_context_destroy(ctx);
}

/* After a pause the members sleep; the next call must wake them (or run without them). */
static void test_sleeping_team_wakes(void **state) {
    (void)state;
    nwattn_context *ctx = context(3);
    const struct timespec pause = {0, 20 * 1000 * 1000};
    for (int i = 0; i < 5; i++) {
        check(ctx, "after a pause");
        nanosleep(&pause, NULL);
    }
    nwattn_context_destroy(ctx);
}

#if defined(__linux__)
/* Threads of this process named nwattn-w* (the team's members); with signals blocked when
 * *all_block_signals is given. */
static int count_members(int *all_block_signals) {
    DIR *dir = opendir("/proc/self/task");
    assert_non_null(dir);
    int count = 0;
    if (all_block_signals != NULL)
        *all_block_signals = 1;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], line[256];
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue; /* ended meanwhile */
        int member = 0;
        while (fgets(line, sizeof line, f) != NULL) {
            if (strncmp(line, "Name:\tnwattn-w", 14) == 0)
                member = 1;
            unsigned long long blocked;
            if (member && all_block_signals != NULL &&
                sscanf(line, "SigBlk:\t%llx", &blocked) == 1) {
                const unsigned long long want =
                    (1ULL << (SIGINT - 1)) | (1ULL << (SIGTERM - 1)) | (1ULL << (SIGCHLD - 1));
                if ((blocked & want) != want)
                    *all_block_signals = 0;
            }
        }
        fclose(f);
        count += member;
    }
    closedir(dir);
    return count;
}

/* The team starts with the first call that needs it, has threads - 1 members with the process's
 * signals blocked, and is joined when the count changes and on destroy. */
static void test_members_started_and_joined(void **state) {
    (void)state;
    assert_int_equal(count_members(NULL), 0);
    nwattn_context *ctx = context(3);
    assert_int_equal(count_members(NULL), 0); /* nothing before a call needs it */
    check(ctx, "3 threads");
    int blocked = 0;
    assert_int_equal(count_members(&blocked), 2);
    assert_true(blocked);
    assert_int_equal(nwattn_context_set_threads(ctx, 2), NWATTN_OK);
    assert_int_equal(count_members(NULL), 0);
    check(ctx, "2 threads");
    assert_int_equal(count_members(NULL), 1);
    assert_int_equal(nwattn_context_set_threads(ctx, 2), NWATTN_OK); /* same count: kept */
    assert_int_equal(count_members(NULL), 1);
    nwattn_context *other = context(2); /* contexts never share members */
    check(other, "second context");
    assert_int_equal(count_members(NULL), 2);
    nwattn_context_destroy(other);
    nwattn_context_destroy(ctx);
    assert_int_equal(count_members(NULL), 0);
}
#else
static void test_members_started_and_joined(void **state) {
    (void)state;
    skip();
}
#endif

/* A fork child inherits the context but not its members: its calls must still complete and
 * agree, and the parent's team must keep working. */
static void test_fork_child(void **state) {
    (void)state;
#if defined(UNDER_TSAN)
    skip(); /* ThreadSanitizer does not support threads started in a multithreaded fork child */
#else
    nwattn_context *ctx = context(2);
    check(ctx, "parent before fork");
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(60); /* a hang fails the test instead of stalling it */
        results r;
        int ok = compute(ctx, &r) == NWATTN_OK && same_as_wanted(&r);
        ok = ok && compute(ctx, &r) == NWATTN_OK && same_as_wanted(&r);
        nwattn_context_destroy(ctx);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    check(ctx, "parent after fork");
    nwattn_context_destroy(ctx);
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_team_reused_across_calls),
        cmocka_unit_test(test_thread_count_changes),
        cmocka_unit_test(test_sleeping_team_wakes),
        cmocka_unit_test(test_members_started_and_joined),
        cmocka_unit_test(test_fork_child),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
