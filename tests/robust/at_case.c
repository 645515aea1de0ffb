/* Cases of the API table: byte sources, configurations, guarded buffers, snapshots and the
 * counting allocator. Nothing here knows a particular function; api_table.c describes them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_table.h"

/* Guard bytes on either side of every buffer; poisoned under AddressSanitizer, so that a stray
 * access is reported where it happens, and compared with the snapshot otherwise. */
#define GUARD_BYTES 64

#if defined(__SANITIZE_ADDRESS__)
#define AT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AT_ASAN 1
#endif
#endif
#ifdef AT_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

const nwattn_backend at_backends[AT_BACKENDS] = {NWATTN_BACKEND_REFERENCE, NWATTN_BACKEND_BLAS,
                                                 NWATTN_BACKEND_FUSED, NWATTN_BACKEND_AUTO};
const char *const at_backend_names[AT_BACKENDS] = {"REFERENCE", "BLAS", "FUSED", "AUTO"};

static const uint32_t float_sentinel_bits = 0x7fcdbeefu; /* a quiet NaN with a payload */
static const unsigned char byte_sentinel = 0xa5;

/* ---- Byte source ---------------------------------------------------------------------------- */
void at_src_seed(at_src *src, uint64_t seed) {
    memset(src, 0, sizeof *src);
    src->state = seed;
}

void at_src_bytes(at_src *src, const uint8_t *bytes, size_t size) {
    memset(src, 0, sizeof *src);
    src->bytes = bytes;
    src->size = size;
}

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* nbytes little-endian bytes of input (0 once it is used up), or PRNG bits. */
static uint64_t src_bits(at_src *src, int nbytes) {
    if (src->bytes == NULL) {
        uint64_t v = splitmix64(&src->state);
        return nbytes >= 8 ? v : v & ((UINT64_C(1) << (8 * nbytes)) - 1);
    }
    uint64_t v = 0;
    for (int i = 0; i < nbytes; i++, src->pos++)
        if (src->pos < src->size)
            v |= (uint64_t)src->bytes[src->pos] << (8 * i);
    return v;
}

uint64_t at_src_u64(at_src *src) { return src_bits(src, 8); }

size_t at_src_below(at_src *src, size_t n) {
    int nbytes = n <= 256 ? 1 : n <= 65536 ? 2 : 8;
    return (size_t)(src_bits(src, nbytes) % n);
}

int at_src_chance(at_src *src, unsigned percent) { return at_src_below(src, 100) < percent; }

float at_src_uniform(at_src *src, float lo, float hi) {
    double u = (double)src_bits(src, 2) / 65536.0;
    return (float)(lo + (hi - lo) * u);
}

static float src_raw_float(at_src *src) {
    uint32_t bits = (uint32_t)src_bits(src, 4);
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* ---- Sizes ---------------------------------------------------------------------------------- */
static size_t sat_mul(size_t a, size_t b) {
    if (a != 0 && b > SIZE_MAX / a)
        return SIZE_MAX;
    return a * b;
}

static size_t sat_add(size_t a, size_t b) { return b > SIZE_MAX - a ? SIZE_MAX : a + b; }

size_t at_elem_bytes(at_elem elem) {
    switch (elem) {
    case AT_F32:
        return sizeof(float);
    case AT_F64:
        return sizeof(double);
    case AT_SIZE:
        return sizeof(size_t);
    case AT_U8:
        return 1;
    }
    return 1;
}

int at_is_output(const at_operand *op) {
    return op->role == AT_OUT || op->role == AT_OUT_OPT || op->role == AT_INOUT;
}

/* Whether the operand's contents are read: filled with data when built. */
static int is_read(const at_operand *op) { return !at_is_output(op) || op->role == AT_INOUT; }

int at_is_optional(const at_operand *op) { return op->role == AT_IN_OPT || op->role == AT_OUT_OPT; }

static size_t extent_of(const at_case *c, at_extent e) {
    size_t a = e.a == AT_ONE ? 1 : c->dim[e.a];
    size_t b = e.b == AT_ONE ? 1 : c->dim[e.b];
    return sat_mul(a, b);
}

void at_operand_shape(const at_case *c, int i, size_t *items, size_t *rows, size_t *cols) {
    const at_operand *op = &c->op[i];
    if (op->shape != NULL) {
        op->shape(c, items, rows, cols);
        return;
    }
    *items = (op->flags & AT_HAS_STRIDE) ? extent_of(c, op->items) : 1;
    *rows = extent_of(c, op->rows);
    *cols = extent_of(c, op->cols);
}

/* Elements spanned: (items-1)·stride + (rows-1)·ld + cols, 0 when empty; saturating. */
static size_t span_elems(const at_case *c, int i) {
    size_t items, rows, cols;
    at_operand_shape(c, i, &items, &rows, &cols);
    if (items == 0 || rows == 0 || cols == 0)
        return 0;
    const at_buffer *b = &c->buf[i];
    size_t ld = (c->op[i].flags & AT_HAS_LD) ? b->ld : cols;
    return sat_add(sat_add(sat_mul(items - 1, b->stride), sat_mul(rows - 1, ld)), cols);
}

/* ---- Configurations --------------------------------------------------------------------------- */
static void lens_shape(const at_case *c, size_t *items, size_t *rows, size_t *cols) {
    *items = 1;
    *rows = 1;
    /* a function without a batch (the regression functions) has one item */
    size_t batch = c->fn->batch_dim >= 0 ? c->dim[c->fn->batch_dim] : 1;
    *cols = (c->mask.flags & NWATTN_MASK_LENS_PER_ROW) ? sat_mul(batch, c->dim[c->fn->mask_m_dim])
                                                       : batch;
}

/* The function's operands followed by the ones its score and mask bring. */
static int operand_list(const at_fn *fn, at_operand *ops, int *bw, int *lens, int *add,
                        int *keep) {
    int n = fn->n_ops;
    memcpy(ops, fn->ops, (size_t)n * sizeof *ops);
    *bw = *lens = *add = *keep = -1;
    if (fn->score_dim >= 0) {
        *bw = n;
        ops[n++] = (at_operand){"score.bandwidths", AT_IN_OPT, AT_F32, AT_FILL_POSITIVE,
                                {AT_ONE, AT_ONE}, {AT_ONE, AT_ONE}, {fn->score_dim, AT_ONE},
                                0, NULL};
    }
    if (fn->mask_m_dim >= 0) {
        const at_extent b = {fn->batch_dim >= 0 ? fn->batch_dim : AT_ONE, AT_ONE},
                        m = {fn->mask_m_dim, AT_ONE},
                        nn = {fn->mask_n_dim, AT_ONE};
        *lens = n;
        ops[n++] = (at_operand){"mask.valid_lens", AT_IN_OPT, AT_SIZE, AT_FILL_LENS,
                                b, {AT_ONE, AT_ONE}, b, 0, lens_shape};
        *add = n;
        ops[n++] = (at_operand){"mask.additive", AT_IN_OPT, AT_F32, AT_FILL_ADDITIVE, b, m, nn,
                                AT_HAS_LD | AT_HAS_STRIDE, NULL};
        *keep = n;
        ops[n++] = (at_operand){"mask.keep", AT_IN_OPT, AT_U8, AT_FILL_KEEP, b, m, nn,
                                AT_HAS_LD | AT_HAS_STRIDE, NULL};
    }
    return n;
}

static int total_operands(const at_fn *fn) {
    at_operand ops[AT_MAX_OPERANDS];
    int bw, lens, add, keep;
    return operand_list(fn, ops, &bw, &lens, &add, &keep);
}

void at_config_base(const at_fn *fn, int which, at_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    for (int i = 0; i < fn->n_dims; i++)
        cfg->dim[i] = fn->dims[i].base[which];
    const int n = total_operands(fn);
    for (int i = 0; i < n; i++) {
        cfg->ld_pad[i] = which == 0 ? 1 : (size_t)(i % 2);
        cfg->stride_pad[i] = which == 0 ? 2 : 0;
        const at_operand *op = i < fn->n_ops ? &fn->ops[i] : NULL;
        /* Base 1 passes optional outputs as NULL and broadcasts inputs. */
        if (which == 1 && op != NULL && op->role == AT_OUT_OPT)
            cfg->absent |= 1u << i;
        if (which == 1 && op != NULL && op->role == AT_IN && (op->flags & AT_HAS_STRIDE))
            cfg->broadcast |= 1u << i;
    }
    if (fn->score_dim >= 0) {
        cfg->score.kind = which == 0 ? NWATTN_SCORE_GAUSSIAN : NWATTN_SCORE_LAPLACE;
        cfg->score.scale = 0.5f;
        cfg->score.bandwidth = 0.75f;
        if (which == 1)
            cfg->absent |= 1u << fn->n_ops; /* scalar bandwidth */
    }
    if (fn->mask_m_dim >= 0) {
        /* Base 0: every mask part at once. Base 1: per-row lengths only. */
        int first = fn->n_ops + (fn->score_dim >= 0);
        cfg->mask_flags = which == 0 ? NWATTN_MASK_CAUSAL : NWATTN_MASK_LENS_PER_ROW;
        if (which == 1)
            cfg->absent |= (1u << (first + 1)) | (1u << (first + 2));
    }
    for (int p = 0; p < fn->n_params; p++)
        cfg->param[p] = fn->params[p].base;
    cfg->data = AT_DATA_MODERATE;
    cfg->seed = 0x5eed0000u + (uint64_t)which;
}

void at_config_random(const at_fn *fn, at_src *src, at_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    for (int i = 0; i < fn->n_dims; i++) {
        const at_dim *d = &fn->dims[i];
        /* Mostly small sizes, where layouts and masks vary most; 0 now and then if valid. */
        size_t hi = at_src_chance(src, 75) ? (d->max < 6 ? d->max : 6) : d->max;
        cfg->dim[i] = 1 + at_src_below(src, hi);
        if (cfg->dim[i] < d->min)
            cfg->dim[i] = d->min;
        if (d->zero != AT_ZERO_INVALID && at_src_chance(src, 4))
            cfg->dim[i] = 0;
    }
    const int n = total_operands(fn);
    for (int i = 0; i < n; i++) {
        cfg->ld_pad[i] = at_src_chance(src, 50) ? 0 : at_src_below(src, 4);
        cfg->stride_pad[i] = at_src_chance(src, 50) ? 0 : at_src_below(src, 5);
        const at_operand *op = i < fn->n_ops ? &fn->ops[i] : NULL;
        if (op != NULL && op->role == AT_IN && (op->flags & AT_HAS_STRIDE) &&
            at_src_chance(src, 20))
            cfg->broadcast |= 1u << i;
        if ((op == NULL || at_is_optional(op)) && at_src_chance(src, 40))
            cfg->absent |= 1u << i;
        if (op == NULL && i >= fn->n_ops && at_src_chance(src, 30)) /* additive, keep too */
            cfg->broadcast |= 1u << i;
    }
    if (fn->score_dim >= 0) {
        cfg->score.kind = (nwattn_score_kind)at_src_below(src, 4); /* dot .. cosine */
        cfg->score.scale = at_src_uniform(src, -1.5f, 1.5f);
        cfg->score.bandwidth = at_src_uniform(src, 0.25f, 3.0f);
    }
    if (fn->mask_m_dim >= 0) {
        cfg->mask_null = at_src_chance(src, 25);
        cfg->mask_flags = (unsigned)at_src_below(src, 8); /* every combination of known flags */
        const int lens = fn->n_ops + (fn->score_dim >= 0);
        if (cfg->absent >> lens & 1u)
            cfg->mask_flags &= ~(unsigned)NWATTN_MASK_LENS_PER_ROW; /* would be NULL_POINTER */
    }
    cfg->data = at_src_chance(src, 15) && !fn->finite_data ? AT_DATA_RAW : AT_DATA_MODERATE;
    cfg->seed = at_src_u64(src);
    /* Scalar parameters: any valid enumerator (every kernel, degree, empty-row rule), and
     * numbers within a factor of 4 of the base value (valid for both rules). Drawn from the
     * seed, not from src: the fuzz corpus's inputs keep the byte layout they were found with. */
    at_src ps;
    at_src_seed(&ps, cfg->seed ^ UINT64_C(0x9a4a3e7e5eed0001));
    for (int p = 0; p < fn->n_params; p++) {
        const at_param *par = &fn->params[p];
        if (par->random_base)
            cfg->param[p] = par->base;
        else if (par->rule == AT_PARAM_ENUM)
            cfg->param[p] = (double)at_src_below(&ps, (size_t)par->count);
        else
            cfg->param[p] = par->base * (double)at_src_uniform(&ps, 0.25f, 4.0f);
    }
}

/* ---- Buffers ----------------------------------------------------------------------------------- */
static void fill_sentinel(unsigned char *p, size_t bytes, at_elem elem) {
    if (elem == AT_F32) {
        for (size_t i = 0; i + sizeof(float) <= bytes; i += sizeof(float))
            memcpy(p + i, &float_sentinel_bits, sizeof(float));
        memset(p + bytes / sizeof(float) * sizeof(float), byte_sentinel, bytes % sizeof(float));
    } else {
        memset(p, byte_sentinel, bytes);
    }
}

/* Calls fn(c, op, element pointer) for every element of operand i. */
static void for_each_element(const at_case *c, int i,
                             void (*fn)(const at_case *, int, void *, void *), void *user) {
    size_t items, rows, cols;
    at_operand_shape(c, i, &items, &rows, &cols);
    const at_buffer *b = &c->buf[i];
    const size_t elem = at_elem_bytes(c->op[i].elem);
    const size_t ld = (c->op[i].flags & AT_HAS_LD) ? b->ld : cols;
    for (size_t t = 0; t < items; t++)
        for (size_t r = 0; r < rows; r++)
            for (size_t j = 0; j < cols; j++)
                fn(c, i, (unsigned char *)b->data + (t * b->stride + r * ld + j) * elem,
                   user);
}

static void fill_element(const at_case *c, int i, void *p, void *user) {
    at_src *src = user;
    const int raw = c->cfg.data == AT_DATA_RAW;
    float x;
    switch (c->op[i].fill) {
    case AT_FILL_DATA:
        x = raw ? src_raw_float(src) : at_src_uniform(src, -2.0f, 2.0f);
        if (c->op[i].elem == AT_F64) {
            const double xd = (double)x;
            memcpy(p, &xd, sizeof xd);
        } else {
            memcpy(p, &x, sizeof x);
        }
        break;
    case AT_FILL_POSITIVE: /* valid in both modes: raw ones are any positive finite float */
        x = raw && at_src_chance(src, 30) ? fabsf(src_raw_float(src)) : 0.0f;
        if (!(isfinite(x) && x > 0.0f))
            x = at_src_uniform(src, 0.5f, 2.0f);
        memcpy(p, &x, sizeof x);
        break;
    case AT_FILL_NONNEG:
        x = at_src_chance(src, 20) ? 0.0f : at_src_uniform(src, 0.0f, 2.0f);
        memcpy(p, &x, sizeof x);
        break;
    case AT_FILL_LENS: {
        size_t n = c->dim[c->fn->mask_n_dim];
        size_t len = at_src_below(src, n + 1);
        memcpy(p, &len, sizeof len);
        break;
    }
    case AT_FILL_KEEP:
        *(unsigned char *)p = at_src_chance(src, 85) ? (unsigned char)(1 + at_src_below(src, 255))
                                                      : 0;
        break;
    case AT_FILL_STATE_MAX:
        x = at_src_chance(src, 20) ? -INFINITY : at_src_uniform(src, -3.0f, 3.0f);
        if (raw && at_src_chance(src, 30))
            x = src_raw_float(src);
        memcpy(p, &x, sizeof x);
        break;
    case AT_FILL_STATE_SUM:
        x = at_src_chance(src, 20) ? 0.0f : at_src_uniform(src, 0.5f, 4.0f);
        if (raw && at_src_chance(src, 30))
            x = src_raw_float(src);
        memcpy(p, &x, sizeof x);
        break;
    case AT_FILL_ADDITIVE: {
        unsigned pick = (unsigned)at_src_below(src, 10);
        x = pick < 6 ? 0.0f : pick < 7 ? -INFINITY : at_src_uniform(src, -1.0f, 1.0f);
        if (raw && pick >= 8)
            x = src_raw_float(src);
        memcpy(p, &x, sizeof x);
        break;
    }
    }
}

static size_t data_bytes_of(const at_buffer *b) { return b->block_bytes - 2 * GUARD_BYTES; }

static void poison_block(const at_buffer *b) {
    if (b->block == NULL)
        return;
    POISON(b->block, GUARD_BYTES);
    POISON(b->block + GUARD_BYTES + data_bytes_of(b), GUARD_BYTES);
}

static void unpoison_block(const at_buffer *b) {
    if (b->block != NULL)
        UNPOISON(b->block, b->block_bytes);
}

static void alloc_buffer(at_case *c, int i) {
    at_buffer *b = &c->buf[i];
    const size_t elem = at_elem_bytes(c->op[i].elem);
    const size_t bytes = sat_mul(span_elems(c, i), elem);
    b->block_bytes = bytes + 2 * GUARD_BYTES;
    b->block = malloc(b->block_bytes);
    b->snapshot = malloc(b->block_bytes);
    if (b->block == NULL || b->snapshot == NULL) {
        fprintf(stderr, "api_table: out of memory for %s (%zu bytes)\n", c->op[i].name, bytes);
        abort();
    }
    fill_sentinel(b->block, b->block_bytes, c->op[i].elem);
    b->data = b->block + GUARD_BYTES;
}

void at_case_build(at_case *c, const at_fn *fn, const at_config *cfg, at_src *src) {
    memset(c, 0, sizeof *c);
    c->fn = fn;
    c->cfg = *cfg;
    c->n_ops = operand_list(fn, c->op, &c->op_bandwidths, &c->op_lens, &c->op_additive,
                            &c->op_keep);
    memcpy(c->dim, cfg->dim, sizeof c->dim);
    memcpy(c->param, cfg->param, sizeof c->param);
    c->score = cfg->score;
    c->mask.flags = cfg->mask_flags;
    c->mask_null = fn->mask_m_dim < 0 || cfg->mask_null;
    c->score_null = fn->score_dim < 0;
    at_src own;
    if (src == NULL) {
        at_src_seed(&own, cfg->seed);
        src = &own;
    }
    for (int i = 0; i < c->n_ops; i++) {
        at_buffer *b = &c->buf[i];
        const at_operand *op = &c->op[i];
        if (at_is_optional(op) && (cfg->absent >> i & 1u))
            continue; /* passed as NULL */
        size_t items, rows, cols;
        at_operand_shape(c, i, &items, &rows, &cols);
        b->ld = (op->flags & AT_HAS_LD) ? cols + cfg->ld_pad[i] : cols;
        if (b->ld == 0)
            b->ld = 1;
        const size_t rows_eff = rows > 0 ? rows : 1;
        const size_t item = (rows_eff - 1) * b->ld + cols;
        if ((op->flags & AT_SHARED_STRIDE) && i > 0)
            b->stride = c->buf[i - 1].stride; /* one stride for both (state max and sum) */
        else if (op->flags & AT_HAS_STRIDE)
            b->stride = (!at_is_output(op) && (cfg->broadcast >> i & 1u)) ? 0
                                                                            : item + cfg->stride_pad[i];
        alloc_buffer(c, i);
        if (is_read(op))
            for_each_element(c, i, fill_element, src);
    }
    for (int i = 0; i < c->n_ops; i++)
        poison_block(&c->buf[i]);
}

void at_case_clone(at_case *dst, const at_case *src, int share_inputs) {
    *dst = *src;
    for (int i = 0; i < src->n_ops; i++) {
        const at_buffer *sb = &src->buf[i];
        at_buffer *db = &dst->buf[i];
        if (sb->block == NULL)
            continue;
        if (share_inputs && !at_is_output(&src->op[i])) {
            db->block = NULL; /* borrowed */
            db->snapshot = NULL;
            continue;
        }
        db->block = malloc(sb->block_bytes);
        db->snapshot = malloc(sb->block_bytes);
        if (db->block == NULL || db->snapshot == NULL)
            abort();
        /* Fresh guards, and the buffer between them: the source's guards stay untouched (and
         * poisoned), since other threads may be cloning the same source. */
        fill_sentinel(db->block, sb->block_bytes, src->op[i].elem);
        memcpy(db->block + GUARD_BYTES, sb->block + GUARD_BYTES, data_bytes_of(sb));
        db->data = db->block + ((unsigned char *)sb->data - sb->block);
        poison_block(db);
    }
}

void at_case_free(at_case *c) {
    for (int i = 0; i < c->n_ops; i++) {
        unpoison_block(&c->buf[i]);
        free(c->buf[i].block);
        free(c->buf[i].snapshot);
    }
    memset(c, 0, sizeof *c);
}

/* ---- Calls ------------------------------------------------------------------------------------- */
nwattn_status at_case_invoke(nwattn_context *ctx, at_case *c) {
    if (c->op_bandwidths >= 0)
        c->score.bandwidths = c->buf[c->op_bandwidths].data;
    if (c->op_lens >= 0) {
        c->mask.valid_lens = c->buf[c->op_lens].data;
        c->mask.additive = c->buf[c->op_additive].data;
        c->mask.ld_additive = c->buf[c->op_additive].ld;
        c->mask.stride_additive = c->buf[c->op_additive].stride;
        c->mask.keep = c->buf[c->op_keep].data;
        c->mask.ld_keep = c->buf[c->op_keep].ld;
        c->mask.stride_keep = c->buf[c->op_keep].stride;
    }
    return c->fn->invoke(ctx, c);
}

/* ---- Snapshots --------------------------------------------------------------------------------- */
void at_case_snapshot(at_case *c) {
    for (int i = 0; i < c->n_ops; i++) {
        at_buffer *b = &c->buf[i];
        if (b->block == NULL)
            continue;
        unpoison_block(b);
        memcpy(b->snapshot, b->block, b->block_bytes);
        poison_block(b);
    }
}

static void report_byte(const at_case *c, int i, size_t offset, const char *what) {
    const at_buffer *b = &c->buf[i];
    long rel = (long)offset - (long)((unsigned char *)b->data - b->block);
    fprintf(stderr, "%s: %s: byte %ld (from the data pointer) changed: %02x -> %02x\n", what,
            c->op[i].name, rel, b->snapshot[offset], b->block[offset]);
}

int at_case_unchanged(const at_case *c, const char *what) {
    int ok = 1;
    for (int i = 0; i < c->n_ops && ok; i++) {
        const at_buffer *b = &c->buf[i];
        if (b->block == NULL)
            continue;
        unpoison_block(b);
        for (size_t t = 0; t < b->block_bytes; t++)
            if (b->block[t] != b->snapshot[t]) {
                report_byte(c, i, t, what);
                ok = 0;
                break;
            }
        poison_block(b);
    }
    return ok;
}

static void mark_element(const at_case *c, int i, void *p, void *user) {
    unsigned char *allowed = user;
    size_t offset = (size_t)((unsigned char *)p - c->buf[i].block);
    memset(allowed + offset, 1, at_elem_bytes(c->op[i].elem));
}

int at_case_writes_confined(const at_case *c, const char *what) {
    int ok = 1;
    for (int i = 0; i < c->n_ops && ok; i++) {
        const at_buffer *b = &c->buf[i];
        if (b->block == NULL)
            continue;
        unsigned char *allowed = calloc(b->block_bytes, 1);
        if (allowed == NULL)
            abort();
        if (at_is_output(&c->op[i]))
            for_each_element(c, i, mark_element, allowed);
        unpoison_block(b);
        for (size_t t = 0; t < b->block_bytes; t++)
            if (!allowed[t] && b->block[t] != b->snapshot[t]) {
                report_byte(c, i, t, what);
                ok = 0;
                break;
            }
        poison_block(b);
        free(allowed);
    }
    return ok;
}

typedef struct compare_state {
    const at_case *other;
    int differs;
    size_t index;
} compare_state;

static void compare_element(const at_case *c, int i, void *p, void *user) {
    compare_state *st = user;
    const size_t offset = (size_t)((unsigned char *)p - (unsigned char *)c->buf[i].data);
    const void *q = (const unsigned char *)st->other->buf[i].data + offset;
    if (!st->differs && memcmp(p, q, at_elem_bytes(c->op[i].elem)) != 0)
        st->differs = 1;
    if (!st->differs)
        st->index++;
}

int at_case_outputs_identical(const at_case *a, const at_case *b, const char *what) {
    for (int i = 0; i < a->n_ops; i++) {
        if (!at_is_output(&a->op[i]) || a->buf[i].data == NULL)
            continue;
        compare_state st = {b, 0, 0};
        for_each_element(a, i, compare_element, &st);
        if (st.differs) {
            fprintf(stderr, "%s: %s differs at element %zu\n", what, a->op[i].name, st.index);
            return 0;
        }
    }
    return 1;
}

/* ---- Counting allocator ------------------------------------------------------------------------ */
static void *counting_alloc(void *user, size_t bytes) {
    at_alloc_stats *stats = user;
    if (stats->budget == 0) {
        stats->failures++;
        return NULL;
    }
    if (stats->budget > 0)
        stats->budget--;
    void *p = malloc(bytes);
    if (p != NULL)
        stats->allocs++;
    return p;
}

static void counting_free(void *user, void *ptr) {
    at_alloc_stats *stats = user;
    stats->frees++;
    free(ptr);
}

nwattn_allocator at_counting_allocator(at_alloc_stats *stats) {
    memset(stats, 0, sizeof *stats);
    stats->budget = -1;
    nwattn_allocator a = {counting_alloc, counting_free, stats};
    return a;
}

size_t at_alloc_live(const at_alloc_stats *stats) { return stats->allocs - stats->frees; }
