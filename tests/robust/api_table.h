/* The public computing functions of libnwattn, described once as data for the robustness tests:
 * the bad-input matrix (test_bad_inputs), allocation failure (test_alloc_failure), the thread
 * stress test (test_thread_stress) and the fuzzer (tests/fuzz). Each of them loops over
 * at_functions[]; a new public function becomes covered by all four with one table row and one
 * invoke shim in api_table.c (see "Adding a function" there).
 *
 * A case (at_case) is one concrete call: dimensions, one buffer per operand (with guard bytes
 * around it, poisoned under AddressSanitizer), score and mask settings. Buffers are filled with
 * data (inputs) or a sentinel (outputs and all padding), so that tests can check afterwards which
 * bytes a call wrote. */
#ifndef NWATTN_API_TABLE_H
#define NWATTN_API_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "nwattn.h"

/* Function identifiers: 1 .. AT_ID_TABLE_END - 1 for rows of at_functions[]; from
 * AT_ID_TABLE_END on, the fuzzer's own cases for the functions that compute nothing (context,
 * status, version, random numbers, option defaults: tests/fuzz/fuzz_nwattn.c). */
enum { AT_ID_TABLE_END = 200 };

enum { AT_MAX_DIMS = 12, AT_MAX_OPERANDS = 24, AT_MAX_PARAMS = 4, AT_MAX_STRUCTS = 4 };

/* The backends every check runs under, in this order. */
enum { AT_B_REF, AT_B_BLAS, AT_B_FUSED, AT_B_AUTO, AT_BACKENDS };
extern const nwattn_backend at_backends[AT_BACKENDS];
extern const char *const at_backend_names[AT_BACKENDS];

/* ---- Byte source: a seeded PRNG, or the fuzzer's input (zeros once it is used up) ---------- */
typedef struct at_src {
    const uint8_t *bytes;
    size_t size, pos;
    uint64_t state; /* PRNG state when bytes == NULL */
} at_src;

void at_src_seed(at_src *src, uint64_t seed);
void at_src_bytes(at_src *src, const uint8_t *bytes, size_t size);
uint64_t at_src_u64(at_src *src);
size_t at_src_below(at_src *src, size_t n);  /* 0 .. n-1 (n >= 1) */
int at_src_chance(at_src *src, unsigned percent);
float at_src_uniform(at_src *src, float lo, float hi);

/* ---- The description ---------------------------------------------------------------------- */
/* What a dimension of 0 means for a function (from the header's contract). */
typedef enum at_zero_rule {
    AT_ZERO_EMPTY,   /* NWATTN_OK and nothing written */
    AT_ZERO_DEFINED, /* NWATTN_OK; outputs written only within their (smaller) shape */
    AT_ZERO_INVALID  /* NWATTN_ERR_BAD_DIMENSION */
} at_zero_rule;

typedef struct at_dim {
    const char *name;
    size_t base[2]; /* the two base cases of the bad-input matrix */
    size_t max;     /* largest value random cases use (fuzzer, stress) */
    at_zero_rule zero;
    /* 1 if the dimension sizes no operand (an iteration count, or a factor of a product the
     * function checks for divisibility first): the overflow class skips it */
    int no_extent;
    /* An offset added to dimension offset_of (first + t - 1, key_offset + n): the overflow
     * class sets it to SIZE_MAX and expects NWATTN_ERR_OVERFLOW. -1 for ordinary dimensions. */
    int offset_of;
    /* The status of 0 when zero is AT_ZERO_INVALID, if not NWATTN_ERR_BAD_DIMENSION (a
     * regression without training points, say). 0: NWATTN_ERR_BAD_DIMENSION. */
    nwattn_status zero_status;
    /* The smallest valid size of random cases (0: 1), for functions that need several points
     * (cross-validation needs n >= 3); sizes from 1 to min - 1 are refused like 0. */
    size_t min;
} at_dim;

#define AT_ONE (-1) /* an extent of 1 */
typedef struct at_extent {
    int a, b; /* dimension indices whose product is the extent; AT_ONE for unused */
} at_extent;

/* AT_INOUT: read and written (a state merged into): filled like an input, checked like an
 * output. */
typedef enum at_role { AT_IN, AT_OUT, AT_IN_OPT, AT_OUT_OPT, AT_INOUT } at_role;
typedef enum at_elem { AT_F32, AT_F64, AT_SIZE, AT_U8 } at_elem;
typedef enum at_fill {
    AT_FILL_DATA,     /* floats: inputs of the computation */
    AT_FILL_POSITIVE, /* floats > 0: bandwidths (the function checks: bad entries are a class) */
    AT_FILL_NONNEG,   /* floats >= 0, some 0: weights (checked likewise) */
    AT_FILL_LENS,     /* size_t in 0 .. n: valid lengths */
    AT_FILL_KEEP,     /* bytes, mostly nonzero: keep mask */
    AT_FILL_ADDITIVE, /* floats, mostly 0, some -inf: additive mask */
    AT_FILL_STATE_MAX, /* a partial state's shifts: moderate floats, some -inf */
    AT_FILL_STATE_SUM  /* a partial state's sums: positive, some 0 (empty rows) */
} at_fill;

enum {
    AT_HAS_LD = 1u << 0,     /* passed with a leading dimension */
    AT_HAS_STRIDE = 1u << 1, /* passed with a batch stride */
    AT_BLAS = 1u << 2,       /* its leading dimension reaches a BLAS call (TOO_LARGE > INT_MAX) */
    AT_SHARED_STRIDE = 1u << 3, /* passed with the previous operand's stride (state.max, .sum) */
    AT_NULL_IF_EMPTY = 1u << 4  /* may be NULL when it has no elements (the header says so) */
};

typedef struct at_case at_case;

typedef struct at_operand {
    const char *name;
    at_role role;
    at_elem elem;
    at_fill fill;
    at_extent items, rows, cols; /* items: batch (strided); rows AT_ONE for vectors */
    unsigned flags;
    /* Optional: computes items/rows/cols when they depend on more than dimensions. */
    void (*shape)(const at_case *c, size_t *items, size_t *rows, size_t *cols);
} at_operand;

/* A scalar parameter of a function (learning rate, iteration count...), checked by the table's
 * generic bad-parameter class. The invoke shim reads it as c->param[index]. */
typedef enum at_param_rule {
    AT_PARAM_FINITE,          /* any finite value: bad are NaN, ±Inf (NWATTN_ERR_BAD_PARAMETER) */
    AT_PARAM_POSITIVE_FINITE, /* finite and > 0: bad are also 0, -0, negatives */
    AT_PARAM_ENUM             /* 0 .. count-1: bad are count, -1, INT_MAX (NWATTN_ERR_BAD_ENUM) */
} at_param_rule;
typedef struct at_param {
    const char *name;
    at_param_rule rule;
    double base; /* the value valid cases use */
    int count;   /* AT_PARAM_ENUM: the number of valid values */
    /* Random cases keep the base value too: the valid values depend on other operands (a
     * categorical column's bandwidths) or lie in a range the random draw would leave. */
    int random_base;
} at_param;

typedef struct at_fn {
    const char *name;
    /* Permanent identifier (1 .. AT_ID_TABLE_END - 1), the fuzzer's first input byte: never
     * renumbered or reused, so that a corpus entry keeps exercising the function it was found
     * with. A new row takes the next free number (see "Adding a function" in api_table.c);
     * test_bad_inputs checks that identifiers are unique and in range. */
    int id;
    int n_dims;
    at_dim dims[AT_MAX_DIMS];
    int batch_dim; /* the dimension that counts batch items (strides), or -1 */
    int n_ops;
    at_operand ops[AT_MAX_OPERANDS]; /* the function's own operands */
    /* Uses an nwattn_score: index of d (bandwidths has d entries), else -1; score_optional: a
     * NULL score is valid (a default). */
    int score_dim;
    int score_optional;
    /* Uses an nwattn_mask: indices of m and n (batch is batch_dim), else -1. */
    int mask_m_dim, mask_n_dim;
    int lens_any; /* valid lengths may exceed n (key shards) */
    /* Struct parameters the shim passes by pointer (a state, the layer's weights): the
     * NULL-struct class passes each as NULL, for NWATTN_ERR_NULL_POINTER. */
    int n_structs;
    const char *structs[AT_MAX_STRUCTS];
    int n_params;
    at_param params[AT_MAX_PARAMS];
    /* Output allowed to be the very same buffer and layout as an input (in place), or -1. */
    int in_place_out, in_place_in;
    nwattn_status (*invoke)(nwattn_context *ctx, const at_case *c);
    /* Optional: whether dimension `dim` matters for this case (d_out without w_o does not): an
     * unused dimension may be 0 or huge, the call then succeeds. NULL: all matter. */
    int (*dim_used)(const at_case *c, int dim);
    /* Optional: compares a BLAS result with a REFERENCE result of the same case within the
     * documented accuracy; returns 1 if they agree (prints the culprit otherwise). NULL: the
     * fuzzer compares statuses only. */
    int (*agree)(const at_case *reference, const at_case *blas);
    /* 1 if the function refuses non-finite data (the regression functions): random cases then
     * use moderate data only, so that they stay valid (the bad-entry class and
     * tests/test_nw_errors.c cover non-finite data). */
    int finite_data;
} at_fn;

extern const at_fn at_functions[];
extern const int at_function_count;
/* The row with this identifier, or NULL. */
const at_fn *at_function_by_id(int id);

/* ---- Cases ------------------------------------------------------------------------------- */
typedef struct at_buffer {
    void *data; /* what the call passes (NULL or a made-up address in some bad cases) */
    size_t ld, stride;
    unsigned char *block; /* guard | buffer | guard; NULL if not owned */
    size_t block_bytes;
    unsigned char *snapshot;
} at_buffer;

typedef enum at_data_mode {
    AT_DATA_MODERATE, /* values of a few units: results comparable between backends */
    AT_DATA_RAW       /* arbitrary float bits from the source: NaN, Inf, denormals, huge */
} at_data_mode;

/* Everything a case is built from. */
typedef struct at_config {
    size_t dim[AT_MAX_DIMS];
    size_t ld_pad[AT_MAX_OPERANDS], stride_pad[AT_MAX_OPERANDS];
    unsigned broadcast; /* inputs (bit per operand) passed with stride 0 */
    unsigned absent;    /* optional operands (bit per operand) passed as NULL */
    nwattn_score score; /* bandwidths is set by the case from its operand */
    int mask_null;
    unsigned mask_flags;
    double param[AT_MAX_PARAMS];
    at_data_mode data;
    uint64_t seed;
} at_config;

struct at_case {
    const at_fn *fn;
    at_config cfg;
    int n_ops; /* the function's operands, then bandwidths and the mask arrays if used */
    at_operand op[AT_MAX_OPERANDS];
    at_buffer buf[AT_MAX_OPERANDS];
    size_t dim[AT_MAX_DIMS];
    nwattn_score score;
    int score_null;
    unsigned null_structs; /* bit s: pass struct s as NULL */
    nwattn_mask mask;
    int mask_null;
    double param[AT_MAX_PARAMS];
    int op_bandwidths, op_lens, op_additive, op_keep; /* indices, or -1 */
};

/* A valid configuration: base case 0 or 1 of the matrix, or random (sizes up to each dim's
 * max, random layouts, optional operands, score, mask). */
void at_config_base(const at_fn *fn, int which, at_config *cfg);
void at_config_random(const at_fn *fn, at_src *src, at_config *cfg);

/* Builds the buffers; data from cfg->seed (or, with src != NULL, from src). */
void at_case_build(at_case *c, const at_fn *fn, const at_config *cfg, at_src *src);
/* A copy with fresh output buffers (same sentinel contents) and, if share_inputs, the inputs of
 * src itself (read-only sharing), else copies. */
void at_case_clone(at_case *dst, const at_case *src, int share_inputs);
void at_case_free(at_case *c);

/* Assembles score and mask from the buffers and calls the function. */
nwattn_status at_case_invoke(nwattn_context *ctx, at_case *c);

/* Shapes and sizes as the library sees them (saturating at SIZE_MAX). */
void at_operand_shape(const at_case *c, int op, size_t *items, size_t *rows, size_t *cols);
size_t at_elem_bytes(at_elem elem);
int at_is_output(const at_operand *op);
int at_is_optional(const at_operand *op);

/* Snapshot of every owned block; then checks: nothing changed at all, or nothing changed outside
 * the elements of output operands (for the current dims). They print the first culprit. */
void at_case_snapshot(at_case *c);
int at_case_unchanged(const at_case *c, const char *what);
int at_case_writes_confined(const at_case *c, const char *what);
/* Output elements bit-identical between two cases of the same configuration. */
int at_case_outputs_identical(const at_case *a, const at_case *b, const char *what);

/* ---- Counting, failing allocator ----------------------------------------------------------- */
typedef struct at_alloc_stats {
    size_t allocs, frees, failures;
    long budget; /* allocations left before failing; < 0: unlimited */
} at_alloc_stats;
nwattn_allocator at_counting_allocator(at_alloc_stats *stats);
size_t at_alloc_live(const at_alloc_stats *stats);

/* ---- Bad inputs ---------------------------------------------------------------------------- */
/* Class k, variant v turns a freshly built valid case into a bad (or deliberately valid) one.
 * expect[] is the documented status for each of at_backends; writes_allowed says
 * whether the call may write inside output elements (valid degenerate problems). */
typedef struct at_bad {
    char label[160];
    nwattn_status expect[AT_BACKENDS];
    int writes_allowed;
    int null_ctx; /* call with ctx == NULL */
} at_bad;

int at_bad_class_count(void);
const char *at_bad_class_name(int k);
/* Returns 0 if class k has no variant v for this case (the case is then left as it was). */
int at_bad_apply(int k, int v, at_case *c, at_bad *bad);

/* ---- Checks shared by the tests and the fuzzer -------------------------------------------- */
/* Runs bad case c under ctx (backend index: AT_B_REF ..) and checks status,
 * last error, untouched buffers and no allocation; returns 1 if all hold. */
int at_bad_check(nwattn_context *ctx, int backend, at_alloc_stats *stats, at_case *c,
                 const at_bad *bad);

#endif /* NWATTN_API_TABLE_H */
