/* Switches the tests read from the environment; header-only, for every test's helpers. */
#ifndef NWATTN_TEST_ENV_H
#define NWATTN_TEST_ENV_H

#include <stdlib.h>
#include <string.h>

/* Whether environment variable `name` is set to something other than "" or "0". */
static inline int test_env_flag(const char *name) {
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

/* NWATTN_TEST_SMALL (set by CI's valgrind, tsan, batch-shim and dim-limit stages): the heaviest
 * tests take smaller data, fewer cases or fewer score kinds, through the same code, so that
 * memcheck's ~50x slowdown stays affordable. The checks are the same; the README build and
 * asan run the full sizes. */
static inline int test_small_shapes(void) { return test_env_flag("NWATTN_TEST_SMALL"); }

#endif
