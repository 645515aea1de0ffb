/* libFuzzer harness for the whole public API. The first input byte is a function's permanent
 * identifier: a row of the API table (tests/robust/api_table.h, its `id`), or one of this file's
 * cases for the functions that compute nothing (fuzz_utility below, AT_ID_TABLE_END on); bytes
 * naming neither are skipped. Identifiers are never reused, so a corpus entry exercises the same
 * function however the table grows. For a table function the input then picks its dimensions, layouts, optional operands, score, mask and data
 * (moderate values, or raw float bits: NaN, Inf, denormals, huge), and one of four modes:
 *
 *   valid      REFERENCE, BLAS, FUSED (with 1 to 3 workers) and AUTO must return the same
 *              status; on success none may write outside its output elements, and with moderate
 *              data and parameters each must agree with REFERENCE within the documented
 *              accuracy (the table's `agree` functions); the fast backends take the
 *              regression rows' method (AUTO, DIRECT or FASTSUM: the byte after the case) so
 *              that the fast kernel sums are fuzzed too, AUTO alone choosing them only for large
 *              n; a FASTSUM the call cannot take (d > 1, a compact kernel, a weights output)
 *              must be refused with NWATTN_ERR_BAD_PARAMETER and untouched buffers, and the
 *              backend then runs DIRECT;
 *   raw params the same with the score's scale and bandwidth taken as raw float bits (often
 *              invalid: then both must fail alike and leave every buffer untouched);
 *   bad input  a class and variant of the bad-input matrix (at_bad.c) applied to the case, when
 *              the case itself is valid: the documented status, untouched buffers, no
 *              allocation;
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

/* A fast backend's call under the regression method `method`. FASTSUM where the call cannot
 * take it is refused (NWATTN_ERR_BAD_PARAMETER, nothing written) while REFERENCE, which
 * ignores the method, succeeds; the backend then runs DIRECT. */
static nwattn_status invoke_fast(int b, at_case *c, nwattn_nw_method method, nwattn_status sr) {
    nwattn_context_set_nw_method(ctx[b], method);
    nwattn_status sf = at_case_invoke(ctx[b], c);
    if (method == NWATTN_NW_METHOD_FASTSUM && sf == NWATTN_ERR_BAD_PARAMETER && sr == NWATTN_OK) {
        check(at_case_unchanged(c, "FASTSUM refused"), "refused FASTSUM but wrote");
        nwattn_context_set_nw_method(ctx[b], NWATTN_NW_METHOD_DIRECT);
        sf = at_case_invoke(ctx[b], c);
    }
    nwattn_context_set_nw_method(ctx[b], NWATTN_NW_METHOD_AUTO);
    return sf;
}

static void run_valid(at_case *ref, int compare, size_t threads, nwattn_nw_method method) {
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
        const nwattn_status sf = invoke_fast(b, &fast[b], method, sr);
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

/* The bad-input contract is one bad argument in an otherwise valid call. The robustness
 * matrix's cases are valid by construction; a fuzzed one need not be (every x equal, fewer
 * than three points with positive weight: the first 3.6e6 executions of this rule's absence
 * trapped on nwattn_nw_inference with m = 0 and the bootstrap bands with a NaN level or
 * 2^64 - 1 replicates on such data, where the data's status is as right as the argument's).
 * So the unmodified case must succeed on REFERENCE first. */
static int base_is_valid(const at_case *c) {
    at_case base;
    at_case_clone(&base, c, 0);
    const nwattn_status st = at_case_invoke(ctx[AT_B_REF], &base);
    at_case_free(&base);
    return st == NWATTN_OK;
}

static void run_bad(at_case *c, at_src *src) {
    const int k = (int)at_src_below(src, (size_t)at_bad_class_count());
    const int v = (int)at_src_below(src, 64);
    if (!base_is_valid(c))
        return;
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

/* ---- Functions that compute nothing: each checked against its documented contract ------- */
enum {
    FZ_CONTEXT = AT_ID_TABLE_END, /* 200: create, setters and getters, workspace, destroy */
    FZ_STATUS,                    /* 201: status names and descriptions of any int */
    FZ_VERSION,                   /* 202: the loaded version against the header */
    FZ_RNG,                       /* 203: SplitMix64 streams against the definition */
    FZ_CV_DEFAULTS,               /* 204: nwattn_cv_options_default's documented values */
    FZ_SAVED_FLOATS               /* 205: nwattn_attention_saved_floats against its formula */
};

/* The header's definition of the generator (SplitMix64), the reference for nwattn_rng_next. */
static uint64_t splitmix64_ref(uint64_t *state) {
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static void fuzz_context(at_src *src) {
    at_alloc_stats st = {0, 0, 0, -1};
    nwattn_allocator a = at_counting_allocator(&st);
    st.budget = at_src_chance(src, 20) ? (long)at_src_below(src, 2) : -1;
    nwattn_context *c = NULL;
    const nwattn_status sc = at_src_chance(src, 50) ? nwattn_context_create_with_allocator(&c, &a)
                                                    : nwattn_context_create(&c);
    if (sc != NWATTN_OK) {
        check(sc == NWATTN_ERR_ALLOC && c == NULL && at_alloc_live(&st) == 0,
              "context creation failed without NWATTN_ERR_ALLOC, or leaked");
        return;
    }
    st.budget = -1;
    check(nwattn_context_get_backend(c) == NWATTN_BACKEND_AUTO, "new context not on AUTO");
    check(nwattn_context_get_threads(c) == 1, "new context without one thread");
    check(nwattn_context_get_nw_method(c) == NWATTN_NW_METHOD_AUTO &&
              nwattn_context_get_nw_tolerance(c) == NWATTN_NW_TOLERANCE_DEFAULT,
          "new context not on the default regression method and tolerance");
    for (int step = 0; step < 4; step++) {
        const nwattn_backend before_b = nwattn_context_get_backend(c);
        const size_t before_t = nwattn_context_get_threads(c);
        const int raw = (int)(uint32_t)at_src_u64(src);
        const nwattn_backend b = at_src_chance(src, 70) ? (nwattn_backend)(raw & 3)
                                                         : (nwattn_backend)raw;
        if (nwattn_context_set_backend(c, b) == NWATTN_OK)
            check(nwattn_context_get_backend(c) == b, "backend not what was set");
        else
            check(nwattn_context_get_backend(c) == before_b &&
                      nwattn_context_last_error(c)[0] != '\0',
                  "refused backend changed the context or gave no message");
        const size_t t = at_src_chance(src, 70) ? at_src_below(src, 8) : (size_t)at_src_u64(src);
        if (nwattn_context_set_threads(c, t) == NWATTN_OK)
            check(t >= 1 && t <= NWATTN_MAX_THREADS && nwattn_context_get_threads(c) == t,
                  "thread count not what was set");
        else
            check((t == 0 || t > NWATTN_MAX_THREADS) && nwattn_context_get_threads(c) == before_t,
                  "valid thread count refused, or a refused one changed the context");
        const nwattn_nw_method before_m = nwattn_context_get_nw_method(c);
        const nwattn_nw_method m = at_src_chance(src, 70) ? (nwattn_nw_method)(raw % 3)
                                                           : (nwattn_nw_method)raw;
        if (nwattn_context_set_nw_method(c, m) == NWATTN_OK)
            check((int)m >= 0 && (int)m <= 2 && nwattn_context_get_nw_method(c) == m,
                  "regression method not what was set");
        else
            check(nwattn_context_get_nw_method(c) == before_m,
                  "refused regression method changed the context");
        const double before_e = nwattn_context_get_nw_tolerance(c);
        const double e = at_src_chance(src, 70) ? pow(10.0, -(double)at_src_below(src, 18))
                                                : (double)at_src_uniform(src, -1.0f, 1.0f);
        if (nwattn_context_set_nw_tolerance(c, e) == NWATTN_OK)
            check(e >= 1e-15 && e <= 1e-2 && nwattn_context_get_nw_tolerance(c) == e,
                  "tolerance refused within [1e-15, 1e-2] or not what was set");
        else
            check(!(e >= 1e-15 && e <= 1e-2) && nwattn_context_get_nw_tolerance(c) == before_e,
                  "valid tolerance refused, or a refused one changed the context");
        size_t before_rows, before_keys, rows, keys;
        check(nwattn_context_get_tiles(c, &before_rows, &before_keys) == NWATTN_OK,
              "tile override not readable");
        const size_t tr = at_src_chance(src, 70) ? at_src_below(src, 300) : (size_t)at_src_u64(src);
        const size_t tk = at_src_chance(src, 70) ? at_src_below(src, 5000) : (size_t)at_src_u64(src);
        const int tiles_ok = tr <= NWATTN_MAX_TILE_ROWS && tk <= NWATTN_MAX_TILE_KEYS;
        check((nwattn_context_set_tiles(c, tr, tk) == NWATTN_OK) == tiles_ok,
              "tile sizes refused within the limits, or accepted beyond them");
        check(nwattn_context_get_tiles(c, &rows, &keys) == NWATTN_OK &&
                  (tiles_ok ? rows == tr && keys == tk
                            : rows == before_rows && keys == before_keys),
              "tile override not what was set, or a refused one changed the context");
        char line[8];
        const size_t need = nwattn_context_describe(c, line, sizeof line);
        check(need > 0 && strlen(line) == (need < sizeof line ? need : sizeof line - 1),
              "describe not truncated like snprintf");
        if (at_src_chance(src, 30)) {
            nwattn_context_release_workspace(c);
            check(nwattn_context_workspace_bytes(c) == 0, "workspace held after release");
        }
        check(nwattn_context_last_error(c) != NULL, "last error NULL");
    }
    nwattn_context_destroy(c);
    check(at_alloc_live(&st) == 0, "context destroy leaked");
}

static void fuzz_status(at_src *src) {
    const nwattn_status s = (nwattn_status)(int)(uint32_t)at_src_u64(src);
    const char *name = nwattn_status_name(s), *text = nwattn_status_describe(s);
    check(name != NULL && text != NULL && text[0] != '\0', "status strings NULL or empty");
    const int known = (int)s >= 0 && (int)s <= NWATTN_ERR_DEGENERATE_DATA;
    check(known ? strncmp(name, "NWATTN_", 7) == 0 && strcmp(name, "NWATTN_ERR_UNKNOWN") != 0
                : strcmp(name, "NWATTN_ERR_UNKNOWN") == 0,
          "status name wrong");
}

static void fuzz_version(void) {
    char want[32];
    const unsigned v = nwattn_version_number();
    snprintf(want, sizeof want, "%u.%u.%u", v / 10000, v / 100 % 100, v % 100);
    check(v == NWATTN_VERSION_NUMBER && strcmp(nwattn_version_string(), NWATTN_VERSION_STRING) == 0
              && strcmp(nwattn_version_string(), want) == 0,
          "version functions disagree with the header or each other");
}

static void fuzz_rng(at_src *src) {
    const uint64_t seed = at_src_u64(src);
    const size_t draws = 1 + at_src_below(src, 64);
    nwattn_rng r, again;
    nwattn_rng_seed(&r, seed);
    nwattn_rng_seed(&again, seed);
    uint64_t ref = r.state;
    for (size_t i = 0; i < draws; i++) {
        const int what = (int)at_src_below(src, 3);
        if (what == 0) {
            const uint64_t x = nwattn_rng_next(&r);
            check(x == splitmix64_ref(&ref), "rng_next is not SplitMix64");
            check(x == nwattn_rng_next(&again), "rng stream not reproducible");
        } else if (what == 1) {
            const double u = nwattn_rng_uniform(&r);
            const double want = (double)(splitmix64_ref(&ref) >> 11) * 0x1p-53;
            check(u == want && u >= 0.0 && u < 1.0, "rng_uniform is not top-53-bits / 2^53");
            check(u == nwattn_rng_uniform(&again), "rng stream not reproducible");
        } else {
            const double z = nwattn_rng_normal(&r);
            double u, v, s2;
            do { /* the header's polar method, with the C library's logarithm */
                u = 2.0 * ((double)(splitmix64_ref(&ref) >> 11) * 0x1p-53) - 1.0;
                v = 2.0 * ((double)(splitmix64_ref(&ref) >> 11) * 0x1p-53) - 1.0;
                s2 = u * u + v * v;
            } while (!(s2 > 0.0 && s2 < 1.0));
            const double want = u * sqrt(-2.0 * log(s2) / s2);
            check(fabs(z - want) <= 1e-12 * (1.0 + fabs(want)), "rng_normal is not the polar form");
            check(z == nwattn_rng_normal(&again), "rng stream not reproducible");
        }
    }
    check(nwattn_rng_next(NULL) == 0 && nwattn_rng_uniform(NULL) == 0.0 &&
              nwattn_rng_normal(NULL) == 0.0,
          "NULL rng did not return 0");
    nwattn_rng_seed(NULL, seed);
}

static void fuzz_cv_defaults(at_src *src) {
    nwattn_cv_options o;
    memset(&o, (int)at_src_below(src, 256), sizeof o); /* whatever was there is overwritten */
    nwattn_cv_options_default(&o);
    check(o.grid_points == 16 && o.scale_min == 0.05f && o.scale_max == 20.0f &&
              o.start == NULL && o.max_evaluations == 100 && o.tolerance == 1e-4,
          "cv option defaults differ from the header");
}

/* a + b and a · b, or 0 with *ok cleared when they overflow. */
static size_t add_ok(size_t a, size_t b, int *ok) {
    *ok = *ok && a <= SIZE_MAX - b;
    return *ok ? a + b : 0;
}
static size_t mul_ok(size_t a, size_t b, int *ok) {
    *ok = *ok && (a == 0 || b <= SIZE_MAX / a);
    return *ok ? a * b : 0;
}

/* Sizes from small to SIZE_MAX: the formula's overflow edge is reachable. */
static size_t any_size(at_src *src) {
    const size_t v = (size_t)at_src_u64(src);
    return at_src_chance(src, 50) ? v % 9 : v >> at_src_below(src, 64);
}

static void fuzz_saved_floats(at_src *src) {
    nwattn_attention_params p = {0};
    p.heads = any_size(src), p.d_q_in = p.d_k_in = p.d_v_in = 1 + at_src_below(src, 4);
    p.d_qk = any_size(src), p.d_v = any_size(src), p.d_out = 1;
    const size_t batch = any_size(src), t_q = any_size(src), t_kv = any_size(src);
    size_t floats = 12345;
    const nwattn_status st = nwattn_attention_saved_floats(ctx[AT_B_REF], &p, batch, t_q, t_kv,
                                                           &floats);
    const int valid = p.heads > 0 && p.d_qk > 0 && p.d_v > 0 && p.d_qk % p.heads == 0 &&
                      p.d_v % p.heads == 0;
    int ok = 1; /* the header's five parts: Q, K, V, C, lse */
    const size_t rq = mul_ok(batch, t_q, &ok), rkv = mul_ok(batch, t_kv, &ok);
    const size_t parts[5] = {mul_ok(rq, p.d_qk, &ok), mul_ok(rkv, p.d_qk, &ok),
                             mul_ok(rkv, p.d_v, &ok), mul_ok(rq, p.d_v, &ok),
                             mul_ok(rq, p.heads, &ok)};
    size_t want = 0;
    for (int i = 0; i < 5; i++)
        want = add_ok(want, parts[i], &ok);
    const nwattn_status expect = !valid ? NWATTN_ERR_BAD_DIMENSION
                                 : ok   ? NWATTN_OK
                                        : NWATTN_ERR_OVERFLOW;
    check(st == expect, "nwattn_attention_saved_floats: unexpected status");
    check(st == NWATTN_OK ? floats == want : floats == 12345,
          "nwattn_attention_saved_floats: wrong count, or written on failure");
}

/* Returns 0 if id names none of these. */
static int fuzz_utility(int id, at_src *src) {
    switch (id) {
    case FZ_CONTEXT: fuzz_context(src); return 1;
    case FZ_STATUS: fuzz_status(src); return 1;
    case FZ_VERSION: fuzz_version(); return 1;
    case FZ_RNG: fuzz_rng(src); return 1;
    case FZ_CV_DEFAULTS: fuzz_cv_defaults(src); return 1;
    case FZ_SAVED_FLOATS: fuzz_saved_floats(src); return 1;
    default: return 0;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    at_src src;
    at_src_bytes(&src, data, size);
    const int id = (int)at_src_below(&src, 256);
    const at_fn *fn = at_function_by_id(id);
    if (fn == NULL) {
        fuzz_utility(id, &src);
        return 0;
    }
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
        /* read last, so that an input that ends with its case keeps AUTO, as before */
        run_valid(&c, moderate, threads, (nwattn_nw_method)at_src_below(&src, 3));
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
