/*
 * nwattn._fast: the optional compiled fast path of the Python binding (CPython C API + numpy's).
 *
 * ctypes costs about a microsecond per array argument (numpy's .ctypes.data) and more for the
 * prototype's conversions, which at the seeds' sizes (50 × 50) is several times the C call.
 * This module handles the common case of pool, pool_backward, softmax, bmm, scores and
 * nw_predict in C: arrays that are exactly numpy float32, C-contiguous and aligned, keywords of
 * the plain kinds (names, numbers, True/False, None). For anything else it returns NotImplemented and the Python
 * function goes on with the pure-Python path, which converts, broadcasts and explains errors;
 * so this file never raises an argument error of its own and never decides what is valid:
 * the C library does (its status is raised through the binding's own check()).
 *
 * The library's functions come from the binding (bind(), with the addresses ctypes resolved),
 * so this module is not linked against libnwattn and calls exactly the library the binding
 * loaded. Built by the CMake build (python/CMakeLists.txt) when Python's and numpy's headers
 * are found; never needed: without it the package is pure Python.
 *
 * Adding a function: a typedef of its C signature and a slot in S, its name in fast_bind's
 * table (and in _fastpath.py's list of addresses), a fast_NAME taking the Python function's
 * arguments positionally that returns NotImplemented (FALLBACK) for anything it does not
 * handle exactly as the pure path would, a methods[] entry, and in the Python function
 * `r = _fast.NAME(...)` before its pure path; tests/test_fastpath.py compares the two.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <math.h>
#include <string.h>

#include <nwattn.h>

typedef nwattn_status (*pool_fn)(nwattn_context *, const nwattn_score *, const nwattn_mask *,
                                 size_t, size_t, size_t, size_t, size_t, const float *, size_t,
                                 size_t, const float *, size_t, size_t, const float *, size_t,
                                 size_t, float *, size_t, size_t, float *, size_t, size_t,
                                 float *, size_t);
typedef nwattn_status (*pool_backward_fn)(nwattn_context *, const nwattn_score *,
                                          const nwattn_mask *, size_t, size_t, size_t, size_t,
                                          size_t, const float *, size_t, size_t, const float *,
                                          size_t, size_t, const float *, size_t, size_t,
                                          const nwattn_pool_upstream *, const nwattn_pool_grads *);
typedef nwattn_status (*softmax_fn)(nwattn_context *, const nwattn_mask *, size_t, size_t,
                                    size_t, const float *, size_t, size_t, float *, size_t,
                                    size_t, float *, size_t);
typedef nwattn_status (*bmm_fn)(nwattn_context *, size_t, size_t, size_t, size_t, const float *,
                                size_t, size_t, const float *, size_t, size_t, float *, size_t,
                                size_t);
typedef nwattn_status (*scores_fn)(nwattn_context *, const nwattn_score *, size_t, size_t,
                                   size_t, size_t, const float *, size_t, size_t, const float *,
                                   size_t, size_t, float *, size_t, size_t);
typedef nwattn_status (*predict_fn)(nwattn_context *, const nwattn_regression *, const float *,
                                    size_t, size_t, size_t, size_t, const float *, size_t,
                                    const float *, size_t, const float *, size_t, float *,
                                    size_t, float *, size_t, unsigned char *, size_t *);

/* What bind() gave: the library's functions and the binding's Python helpers. Module state
 * of an extension that lives as long as the interpreter. */
static struct {
    pool_fn pool;
    softmax_fn softmax;
    bmm_fn bmm;
    scores_fn scores;
    predict_fn predict;
    pool_backward_fn pool_backward;
    PyObject *check;          /* _errors.check(status, handle, function): raises */
    PyObject *default_handle; /* _context.default_handle(): this thread's default context */
    PyObject *context_type;   /* nwattn.Context */
    PyObject *handle_name;    /* "_handle" */
} S;

#define FALLBACK() Py_RETURN_NOTIMPLEMENTED

/* ---- Arguments ----------------------------------------------------------------------------- */

/* An array the C API can read as it is: exact ndarray, native float32, C-contiguous, aligned,
 * of ndim in [lo, hi]. Anything else is the Python path's to convert or refuse. */
static PyArrayObject *plain(PyObject *o, int lo, int hi)
{
    if (!PyArray_CheckExact(o))
        return NULL;
    PyArrayObject *a = (PyArrayObject *)o;
    int nd = PyArray_NDIM(a);
    if (nd < lo || nd > hi || PyArray_TYPE(a) != NPY_FLOAT32 || !PyArray_ISNOTSWAPPED(a) ||
        !PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISALIGNED(a))
        return NULL;
    return a;
}

/* A matrix operand (…, rows, cols) of a batched call: 2-D (shared by the batch: stride 0) or
 * 3-D (one per item). */
typedef struct mat {
    const float *p;
    npy_intp batch; /* -1: 2-D */
    npy_intp rows, cols;
} mat;

static int matrix(PyObject *o, mat *m)
{
    PyArrayObject *a = plain(o, 2, 3);
    if (!a)
        return 0;
    npy_intp *dims = PyArray_DIMS(a);
    int three = PyArray_NDIM(a) == 3;
    m->p = (const float *)PyArray_DATA(a);
    m->batch = three ? dims[0] : -1;
    m->rows = dims[three];
    m->cols = dims[three + 1];
    return 1;
}

static size_t ld_of(npy_intp cols) { return cols > 1 ? (size_t)cols : 1; }
static size_t stride_of(const mat *m) { return m->batch < 0 ? 0 : (size_t)(m->rows * m->cols); }

/* The batch of operands: -1 if all are 2-D, the common count if the 3-D ones agree, else -2
 * (numpy broadcasting of batch axes: the Python path's). */
static npy_intp common_batch(const mat *ops, int count)
{
    npy_intp batch = -1;
    for (int i = 0; i < count; ++i) {
        if (ops[i].batch < 0)
            continue;
        if (batch >= 0 && ops[i].batch != batch)
            return -2;
        batch = ops[i].batch;
    }
    return batch;
}

/* An output: a new float32 array, or the caller's array when it is plain, writeable and of
 * exactly that shape (otherwise the Python path explains what is wrong). Returns a new
 * reference, or NULL with no exception set for "fall back", or NULL with one set. */
static PyArrayObject *output(PyObject *given, int nd, npy_intp *dims, int *fallback)
{
    if (given == Py_None || given == Py_True)
        return (PyArrayObject *)PyArray_SimpleNew(nd, dims, NPY_FLOAT32);
    PyArrayObject *a = plain(given, nd, nd);
    if (!a || !PyArray_ISWRITEABLE(a) || memcmp(PyArray_DIMS(a), dims, nd * sizeof *dims)) {
        *fallback = 1;
        return NULL;
    }
    Py_INCREF(a);
    return a;
}

/* The context's handle: ctx None is this thread's default context; an nwattn.Context gives its
 * _handle. Returns a new reference to the handle as a Python int, NULL with no exception to
 * fall back (not a Context, closed: the Python path says so), or NULL with one set. */
static PyObject *handle_object(PyObject *ctx)
{
    if (ctx == Py_None)
        return PyObject_CallNoArgs(S.default_handle);
    if ((PyObject *)Py_TYPE(ctx) != S.context_type)
        return NULL;
    PyObject *h = PyObject_GetAttr(ctx, S.handle_name);
    if (h && !PyLong_CheckExact(h)) {
        Py_DECREF(h);
        return NULL;
    }
    return h;
}

/* A float keyword: None gives dflt, Python floats and ints their value. 0: fall back. */
static int real(PyObject *o, double dflt, double *x)
{
    if (o == Py_None)
        *x = dflt;
    else if (PyFloat_CheckExact(o))
        *x = PyFloat_AS_DOUBLE(o);
    else if (PyLong_CheckExact(o)) {
        *x = PyLong_AsDouble(o);
        if (*x == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
    } else
        return 0;
    return 1;
}

/* An enum keyword: one of names (exact lower case) or an int in [0, count). -1: fall back. */
static int choice(PyObject *o, const char *const *names, int count)
{
    if (PyUnicode_CheckExact(o)) {
        for (int i = 0; names[i]; ++i)
            if (PyUnicode_CompareWithASCIIString(o, names[i] + 2) == 0)
                return names[i][0] - '0';
        return -1;
    }
    if (PyLong_Check(o) && !PyBool_Check(o)) {
        int overflow = 0;
        long v = PyLong_AsLongAndOverflow(o, &overflow);
        if (overflow || v < 0 || v >= count) {
            PyErr_Clear();
            return -1;
        }
        return (int)v;
    }
    return -1;
}

/* "N:name": the value N is the name's (aliases share a value). */
static const char *const SCORE_NAMES[] = {"0:dot", "1:gaussian", "2:laplace", "3:cosine", NULL};
static const char *const KERNEL_NAMES[] = {"0:gaussian", "1:laplace", "2:epanechnikov",
                                           "3:tricube", "4:uniform", NULL};
static const char *const DEGREE_NAMES[] = {"0:constant", "0:local_constant", "0:nw", "1:linear",
                                           "1:local_linear", NULL};
static const char *const EMPTY_NAMES[] = {"0:nearest", "1:nan", "2:zero", NULL};

/* The score struct as make_score builds it (per-feature bandwidths: a plain (d,) array, which
 * the caller's arguments keep alive); 0: fall back (the Python path refuses the mix of
 * keywords or converts the bandwidths). */
static int score_of(PyObject *kind, PyObject *scale, PyObject *bandwidth, PyObject *bandwidths,
                    npy_intp d, nwattn_score *sc)
{
    int k = choice(kind, SCORE_NAMES, 4);
    double x;
    if (k < 0)
        return 0;
    memset(sc, 0, sizeof *sc);
    sc->kind = (nwattn_score_kind)k;
    if (k == NWATTN_SCORE_DOT || k == NWATTN_SCORE_COSINE) {
        double dflt = k == NWATTN_SCORE_DOT && d > 0 ? 1.0 / sqrt((double)d) : 1.0;
        if (bandwidth != Py_None || bandwidths != Py_None || !real(scale, dflt, &x))
            return 0;
        sc->scale = (float)x;
    } else {
        if (scale != Py_None || !real(bandwidth, 1.0, &x))
            return 0;
        sc->bandwidth = (float)x;
        if (bandwidths != Py_None) { /* d per-feature bandwidths, exactly (d,) float32 */
            PyArrayObject *b = plain(bandwidths, 1, 1);
            if (bandwidth != Py_None || !b || PyArray_DIM(b, 0) != d)
                return 0;
            sc->bandwidths = (const float *)PyArray_DATA(b);
        }
    }
    return 1;
}

/* causal / leave_one_out as given (True or False only), the other mask keywords None. */
static int mask_of(PyObject *valid_lens, PyObject *causal, PyObject *loo, PyObject *additive,
                   PyObject *keep, nwattn_mask *mask)
{
    if (valid_lens != Py_None || additive != Py_None || keep != Py_None)
        return 0;
    if (!PyBool_Check(causal) || !PyBool_Check(loo))
        return 0;
    memset(mask, 0, sizeof *mask);
    mask->flags = (causal == Py_True ? NWATTN_MASK_CAUSAL : 0u) |
                  (loo == Py_True ? NWATTN_MASK_LEAVE_ONE_OUT : 0u);
    return 1;
}

/* An optional output keyword: None/False none, True allocate, an array use. */
static int wanted(PyObject *o) { return o != Py_None && o != Py_False; }

/* Raises the status through the binding's check() (the library's message, NWAttnError). */
static PyObject *raise_status(nwattn_status status, PyObject *handle, const char *function)
{
    PyObject *r = PyObject_CallFunction(S.check, "iOs", (int)status, handle, function);
    Py_XDECREF(r);
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_SystemError, "nwattn: %s failed with status %d", function,
                     (int)status);
    return NULL;
}

static nwattn_context *ctx_ptr(PyObject *h) { return (nwattn_context *)PyLong_AsVoidPtr(h); }

/* ---- The functions ------------------------------------------------------------------------- */

/* The result of a call: the arrays, released on failure, returned as out or a tuple. */
typedef struct results {
    PyArrayObject *a[3];
    int count;
} results;

static void results_free(results *r)
{
    for (int i = 0; i < r->count; ++i)
        Py_XDECREF(r->a[i]);
    r->count = 0;
}

static PyObject *results_return(results *r)
{
    if (r->count == 1)
        return (PyObject *)r->a[0];
    PyObject *t = PyTuple_New(r->count);
    if (!t) {
        results_free(r);
        return NULL;
    }
    for (int i = 0; i < r->count; ++i)
        PyTuple_SET_ITEM(t, i, (PyObject *)r->a[i]);
    return t;
}

/* Adds an output (given or allocated) to r; 0 to fall back or on error (then r is freed). */
static int add_output(results *r, PyObject *given, int nd, npy_intp *dims)
{
    int fallback = 0;
    PyArrayObject *a = output(given, nd, dims, &fallback);
    if (!a) {
        results_free(r);
        return 0;
    }
    r->a[r->count++] = a;
    return 1;
}

#define OUT_PTR(r, i) ((float *)PyArray_DATA((r)->a[i]))
/* What a failed add_output means: an exception to propagate, or NotImplemented. */
#define ADD_OR_LEAVE(r, given, nd, dims)                                                        \
    do {                                                                                        \
        if (!add_output(r, given, nd, dims)) {                                                  \
            Py_DECREF(h);                                                                       \
            if (PyErr_Occurred())                                                               \
                return NULL;                                                                    \
            FALLBACK();                                                                         \
        }                                                                                       \
    } while (0)
#define HANDLE_OR_LEAVE(h, ctx)                                                                 \
    PyObject *h = handle_object(ctx);                                                           \
    if (!h) {                                                                                   \
        if (PyErr_Occurred())                                                                   \
            return NULL;                                                                        \
        FALLBACK();                                                                             \
    }

/* Output dims (…, rows, cols) of a batched call: batch < 0 is 2-D. Returns ndim. */
static int dims_of(npy_intp batch, npy_intp rows, npy_intp cols, npy_intp *dims)
{
    int nd = 0;
    if (batch >= 0)
        dims[nd++] = batch;
    dims[nd++] = rows;
    dims[nd++] = cols;
    return nd;
}

static PyObject *finish(nwattn_status status, PyObject *h, results *r, const char *function)
{
    if (status != NWATTN_OK) {
        results_free(r);
        raise_status(status, h, function);
        Py_DECREF(h);
        return NULL;
    }
    Py_DECREF(h);
    return results_return(r);
}

/* pool(q, k, v, score, scale, bandwidth, bandwidths, valid_lens, causal, leave_one_out,
 *      additive, keep, out, weights, lse, ctx) */
static PyObject *fast_pool(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 16 || !S.pool)
        FALLBACK();
    mat op[3];
    nwattn_score sc;
    nwattn_mask mask;
    if (!matrix(args[0], &op[0]) || !matrix(args[1], &op[1]) || !matrix(args[2], &op[2]))
        FALLBACK();
    npy_intp batch = common_batch(op, 3);
    npy_intp m = op[0].rows, d = op[0].cols, n = op[1].rows, dv = op[2].cols;
    if (batch == -2 || op[1].cols != d || op[2].rows != n ||
        !score_of(args[3], args[4], args[5], args[6], d, &sc) ||
        !mask_of(args[7], args[8], args[9], args[10], args[11], &mask))
        FALLBACK();
    HANDLE_OR_LEAVE(h, args[15]);
    npy_intp dims[3];
    results r = {{NULL}, 0};
    int nd = dims_of(batch, m, dv, dims);
    ADD_OR_LEAVE(&r, args[12], nd, dims);
    float *w = NULL, *lse = NULL;
    if (wanted(args[13])) {
        ADD_OR_LEAVE(&r, args[13], dims_of(batch, m, n, dims), dims);
        w = OUT_PTR(&r, r.count - 1);
    }
    if (wanted(args[14])) {
        nd = 0;
        if (batch >= 0)
            dims[nd++] = batch;
        dims[nd++] = m;
        ADD_OR_LEAVE(&r, args[14], nd, dims);
        lse = OUT_PTR(&r, r.count - 1);
    }
    size_t count = batch < 0 ? 1 : (size_t)batch, so = batch < 0 ? 0 : (size_t)(m * dv);
    nwattn_context *ctx = ctx_ptr(h);
    nwattn_status status;
    Py_BEGIN_ALLOW_THREADS
    status = S.pool(ctx, &sc, mask.flags ? &mask : NULL, count, (size_t)m, (size_t)n, (size_t)d,
                    (size_t)dv, op[0].p, ld_of(d), stride_of(&op[0]), op[1].p, ld_of(d),
                    stride_of(&op[1]), op[2].p, ld_of(dv), stride_of(&op[2]), OUT_PTR(&r, 0),
                    ld_of(dv), so, w, ld_of(n), batch < 0 ? 0 : (size_t)(m * n), lse,
                    batch < 0 ? 0 : (size_t)m);
    Py_END_ALLOW_THREADS
    return finish(status, h, &r, "nwattn_pool");
}

/* An upstream operand of pool_backward: plain, 2-D or 3-D like the forward's output. */
static int upstream_matrix(PyObject *o, npy_intp batch, npy_intp rows, npy_intp cols, mat *u)
{
    return matrix(o, u) && u->batch == batch && u->rows == rows && u->cols == cols;
}

/* pool_backward(q, k, v, o, lse, d_o, score, scale, bandwidth, bandwidths, valid_lens, causal,
 *               leave_one_out, additive, keep, ctx) -> (dq, dk, dv, d_param). Only when q, k,
 * v, o, d_o share one batch (or are all 2-D): broadcast batch axes need the Python path's
 * sums. d_param as the Python path gives it: a float, or a (d,) array for per-feature
 * bandwidths. */
static PyObject *fast_pool_backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 16 || !S.pool_backward)
        FALLBACK();
    mat op[3], uo, ud;
    nwattn_score sc;
    nwattn_mask mask;
    if (!matrix(args[0], &op[0]) || !matrix(args[1], &op[1]) || !matrix(args[2], &op[2]))
        FALLBACK();
    npy_intp batch = op[0].batch;
    npy_intp m = op[0].rows, d = op[0].cols, n = op[1].rows, dv = op[2].cols;
    if (op[1].batch != batch || op[2].batch != batch || op[1].cols != d || op[2].rows != n ||
        !upstream_matrix(args[3], batch, m, dv, &uo) ||
        !upstream_matrix(args[5], batch, m, dv, &ud) ||
        !score_of(args[6], args[7], args[8], args[9], d, &sc) ||
        !mask_of(args[10], args[11], args[12], args[13], args[14], &mask))
        FALLBACK();
    PyArrayObject *lse = plain(args[4], 1, 2);
    if (!lse || PyArray_NDIM(lse) != (batch < 0 ? 1 : 2) ||
        PyArray_DIM(lse, PyArray_NDIM(lse) - 1) != m ||
        (batch >= 0 && PyArray_DIM(lse, 0) != batch))
        FALLBACK();
    HANDLE_OR_LEAVE(h, args[15]);
    npy_intp dims[3];
    results r = {{NULL}, 0};
    ADD_OR_LEAVE(&r, Py_None, dims_of(batch, m, d, dims), dims);
    ADD_OR_LEAVE(&r, Py_None, dims_of(batch, n, d, dims), dims);
    ADD_OR_LEAVE(&r, Py_None, dims_of(batch, n, dv, dims), dims);
    int per_dim = sc.bandwidths != NULL;
    npy_intp pd = per_dim ? d : 1;
    PyArrayObject *param = (PyArrayObject *)PyArray_ZEROS(1, &pd, NPY_FLOAT32, 0);
    if (!param) {
        results_free(&r);
        Py_DECREF(h);
        return NULL;
    }
    float *dp = (float *)PyArray_DATA(param);
    int by_scale = sc.kind == NWATTN_SCORE_DOT || sc.kind == NWATTN_SCORE_COSINE;
    size_t b0 = batch < 0 ? 0 : 1; /* 0: strides of a shared 2-D operand */
    nwattn_pool_upstream up = {uo.p, ld_of(dv), b0 * (size_t)(m * dv),
                               (const float *)PyArray_DATA(lse), b0 * (size_t)m,
                               ud.p, ld_of(dv), b0 * (size_t)(m * dv)};
    nwattn_pool_grads g = {OUT_PTR(&r, 0), ld_of(d), b0 * (size_t)(m * d),
                           OUT_PTR(&r, 1), ld_of(d), b0 * (size_t)(n * d),
                           OUT_PTR(&r, 2), ld_of(dv), b0 * (size_t)(n * dv),
                           by_scale ? dp : NULL, !by_scale && !per_dim ? dp : NULL,
                           per_dim ? dp : NULL, NULL, 0, 0};
    size_t count = batch < 0 ? 1 : (size_t)batch;
    nwattn_context *ctx = ctx_ptr(h);
    nwattn_status status;
    Py_BEGIN_ALLOW_THREADS
    status = S.pool_backward(ctx, &sc, mask.flags ? &mask : NULL, count, (size_t)m, (size_t)n,
                             (size_t)d, (size_t)dv, op[0].p, ld_of(d), stride_of(&op[0]),
                             op[1].p, ld_of(d), stride_of(&op[1]), op[2].p, ld_of(dv),
                             stride_of(&op[2]), &up, &g);
    Py_END_ALLOW_THREADS
    if (status == NWATTN_OK && !per_dim) { /* the one parameter's gradient as a float */
        PyObject *x = PyFloat_FromDouble((double)dp[0]);
        Py_DECREF(param);
        if (!x) {
            results_free(&r);
            Py_DECREF(h);
            return NULL;
        }
        param = (PyArrayObject *)x;
    }
    if (status != NWATTN_OK)
        Py_DECREF(param);
    PyObject *t = finish(status, h, &r, "nwattn_pool_backward");
    if (!t) {
        if (status == NWATTN_OK)
            Py_DECREF(param);
        return NULL;
    }
    PyObject *all = PyTuple_Pack(4, PyTuple_GET_ITEM(t, 0), PyTuple_GET_ITEM(t, 1),
                                 PyTuple_GET_ITEM(t, 2), (PyObject *)param);
    Py_DECREF(t);
    Py_DECREF(param);
    return all;
}

/* softmax(s, valid_lens, causal, leave_one_out, additive, keep, out, lse, ctx) */
static PyObject *fast_softmax(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 9 || !S.softmax)
        FALLBACK();
    mat s;
    nwattn_mask mask;
    if (!matrix(args[0], &s) || !mask_of(args[1], args[2], args[3], args[4], args[5], &mask))
        FALLBACK();
    HANDLE_OR_LEAVE(h, args[8]);
    npy_intp dims[3];
    results r = {{NULL}, 0};
    ADD_OR_LEAVE(&r, args[6], dims_of(s.batch, s.rows, s.cols, dims), dims);
    float *lse = NULL;
    if (wanted(args[7])) {
        int nd = 0;
        if (s.batch >= 0)
            dims[nd++] = s.batch;
        dims[nd++] = s.rows;
        ADD_OR_LEAVE(&r, args[7], nd, dims);
        lse = OUT_PTR(&r, 1);
    }
    size_t count = s.batch < 0 ? 1 : (size_t)s.batch;
    nwattn_context *ctx = ctx_ptr(h);
    nwattn_status status;
    Py_BEGIN_ALLOW_THREADS
    status = S.softmax(ctx, mask.flags ? &mask : NULL, count, (size_t)s.rows, (size_t)s.cols,
                       s.p, ld_of(s.cols), stride_of(&s), OUT_PTR(&r, 0), ld_of(s.cols),
                       stride_of(&s), lse, s.batch < 0 ? 0 : (size_t)s.rows);
    Py_END_ALLOW_THREADS
    return finish(status, h, &r, "nwattn_softmax");
}

/* bmm(a, b, out, ctx) */
static PyObject *fast_bmm(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 4 || !S.bmm)
        FALLBACK();
    mat op[2];
    if (!matrix(args[0], &op[0]) || !matrix(args[1], &op[1]))
        FALLBACK();
    npy_intp batch = common_batch(op, 2), m = op[0].rows, k = op[0].cols, n = op[1].cols;
    if (batch == -2 || op[1].rows != k)
        FALLBACK();
    HANDLE_OR_LEAVE(h, args[3]);
    npy_intp dims[3];
    results r = {{NULL}, 0};
    ADD_OR_LEAVE(&r, args[2], dims_of(batch, m, n, dims), dims);
    size_t count = batch < 0 ? 1 : (size_t)batch;
    nwattn_context *ctx = ctx_ptr(h);
    nwattn_status status;
    Py_BEGIN_ALLOW_THREADS
    status = S.bmm(ctx, count, (size_t)m, (size_t)n, (size_t)k, op[0].p, ld_of(k),
                   stride_of(&op[0]), op[1].p, ld_of(n), stride_of(&op[1]), OUT_PTR(&r, 0),
                   ld_of(n), batch < 0 ? 0 : (size_t)(m * n));
    Py_END_ALLOW_THREADS
    return finish(status, h, &r, "nwattn_bmm");
}

/* scores(q, k, score, scale, bandwidth, bandwidths, out, ctx) */
static PyObject *fast_scores(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 8 || !S.scores)
        FALLBACK();
    mat op[2];
    nwattn_score sc;
    if (!matrix(args[0], &op[0]) || !matrix(args[1], &op[1]))
        FALLBACK();
    npy_intp batch = common_batch(op, 2), m = op[0].rows, d = op[0].cols, n = op[1].rows;
    if (batch == -2 || op[1].cols != d || !score_of(args[2], args[3], args[4], args[5], d, &sc))
        FALLBACK();
    HANDLE_OR_LEAVE(h, args[7]);
    npy_intp dims[3];
    results r = {{NULL}, 0};
    ADD_OR_LEAVE(&r, args[6], dims_of(batch, m, n, dims), dims);
    size_t count = batch < 0 ? 1 : (size_t)batch;
    nwattn_context *ctx = ctx_ptr(h);
    nwattn_status status;
    Py_BEGIN_ALLOW_THREADS
    status = S.scores(ctx, &sc, count, (size_t)m, (size_t)n, (size_t)d, op[0].p, ld_of(d),
                      stride_of(&op[0]), op[1].p, ld_of(d), stride_of(&op[1]), OUT_PTR(&r, 0),
                      ld_of(n), batch < 0 ? 0 : (size_t)(m * n));
    Py_END_ALLOW_THREADS
    return finish(status, h, &r, "nwattn_scores");
}

/* Points (n,) or (n, d) of the regression functions. */
static int points(PyObject *o, mat *p)
{
    PyArrayObject *a = plain(o, 1, 2);
    if (!a)
        return 0;
    p->p = (const float *)PyArray_DATA(a);
    p->batch = PyArray_NDIM(a) == 1 ? -1 : 0; /* -1: a vector */
    p->rows = PyArray_DIM(a, 0);
    p->cols = PyArray_NDIM(a) == 1 ? 1 : PyArray_DIM(a, 1);
    return 1;
}

#define MAX_FAST_D 64

/* nw_predict(xq, x, y, bandwidth, kernel, degree, empty, weights, row_flags, out, ctx) */
static PyObject *fast_nw_predict(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 11 || !S.predict)
        FALLBACK();
    mat q, x, y;
    if (!points(args[0], &q) || !points(args[1], &x) || !points(args[2], &y))
        FALLBACK();
    npy_intp m = q.rows, n = x.rows, d = x.cols, dv = y.cols;
    if (q.cols != d || y.rows != n || d > MAX_FAST_D || (args[8] != Py_False &&
                                                         args[8] != Py_True))
        FALLBACK();
    float bw[MAX_FAST_D];
    double h1;
    if (real(args[3], 0.0, &h1) && args[3] != Py_None) {
        for (npy_intp i = 0; i < d; ++i)
            bw[i] = (float)h1;
    } else {
        PyArrayObject *b = plain(args[3], 1, 1);
        if (!b || (PyArray_DIM(b, 0) != d && PyArray_DIM(b, 0) != 1))
            FALLBACK();
        const float *src = (const float *)PyArray_DATA(b);
        for (npy_intp i = 0; i < d; ++i)
            bw[i] = src[PyArray_DIM(b, 0) == 1 ? 0 : i];
    }
    nwattn_regression model;
    int kernel = choice(args[4], KERNEL_NAMES, 5), degree = choice(args[5], DEGREE_NAMES, 2),
        empty = choice(args[6], EMPTY_NAMES, 3);
    if (kernel < 0 || degree < 0 || empty < 0)
        FALLBACK();
    model.kernel = (nwattn_kernel)kernel;
    model.degree = (nwattn_degree)degree;
    model.empty = (nwattn_empty)empty;
    HANDLE_OR_LEAVE(h, args[10]);
    results r = {{NULL}, 0};
    npy_intp dims[2] = {m, dv};
    ADD_OR_LEAVE(&r, args[9], y.batch < 0 ? 1 : 2, dims);
    float *w = NULL;
    unsigned char *flags = NULL;
    if (wanted(args[7])) {
        dims[1] = n;
        ADD_OR_LEAVE(&r, args[7], 2, dims);
        w = OUT_PTR(&r, 1);
    }
    if (args[8] == Py_True) {
        PyArrayObject *f = (PyArrayObject *)PyArray_ZEROS(1, &m, NPY_UINT8, 0);
        if (!f) {
            results_free(&r);
            Py_DECREF(h);
            return NULL;
        }
        r.a[r.count++] = f;
        flags = (unsigned char *)PyArray_DATA(f);
    }
    nwattn_context *ctx = ctx_ptr(h);
    nwattn_status status;
    Py_BEGIN_ALLOW_THREADS
    status = S.predict(ctx, &model, bw, (size_t)m, (size_t)n, (size_t)d, (size_t)dv, q.p,
                       ld_of(d), x.p, ld_of(d), y.p, ld_of(dv), OUT_PTR(&r, 0), ld_of(dv), w,
                       ld_of(n), flags, NULL);
    Py_END_ALLOW_THREADS
    return finish(status, h, &r, "nwattn_nw_predict");
}

/* ---- Binding ------------------------------------------------------------------------------- */

static void *address(PyObject *functions, const char *name)
{
    PyObject *a = PyDict_GetItemString(functions, name); /* borrowed */
    if (!a || !PyLong_Check(a)) {
        PyErr_Format(PyExc_KeyError, "nwattn._fast.bind: no address for %s", name);
        return NULL;
    }
    return PyLong_AsVoidPtr(a);
}

/* bind(addresses: {name: int}, check, default_handle, context_type) */
static PyObject *fast_bind(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *functions, *check, *default_handle, *context_type;
    if (!PyArg_ParseTuple(args, "O!OOO", &PyDict_Type, &functions, &check, &default_handle,
                          &context_type))
        return NULL;
    void *p[6];
    static const char *const names[6] = {"nwattn_pool", "nwattn_softmax", "nwattn_bmm",
                                         "nwattn_scores", "nwattn_nw_predict",
                                         "nwattn_pool_backward"};
    for (int i = 0; i < 6; ++i)
        if (!(p[i] = address(functions, names[i])))
            return NULL;
    /* Converting object pointers to function pointers: what dlsym's users do (POSIX). */
    memcpy(&S.pool, &p[0], sizeof p[0]);
    memcpy(&S.softmax, &p[1], sizeof p[1]);
    memcpy(&S.bmm, &p[2], sizeof p[2]);
    memcpy(&S.scores, &p[3], sizeof p[3]);
    memcpy(&S.predict, &p[4], sizeof p[4]);
    memcpy(&S.pool_backward, &p[5], sizeof p[5]);
    Py_INCREF(check);
    Py_INCREF(default_handle);
    Py_INCREF(context_type);
    Py_XSETREF(S.check, check);
    Py_XSETREF(S.default_handle, default_handle);
    Py_XSETREF(S.context_type, context_type);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"bind", fast_bind, METH_VARARGS, "bind(addresses, check, default_handle, Context)"},
    {"pool", (PyCFunction)(void (*)(void))fast_pool, METH_FASTCALL, "nwattn_pool fast path"},
    {"pool_backward", (PyCFunction)(void (*)(void))fast_pool_backward, METH_FASTCALL,
     "nwattn_pool_backward fast path"},
    {"softmax", (PyCFunction)(void (*)(void))fast_softmax, METH_FASTCALL,
     "nwattn_softmax fast path"},
    {"bmm", (PyCFunction)(void (*)(void))fast_bmm, METH_FASTCALL, "nwattn_bmm fast path"},
    {"scores", (PyCFunction)(void (*)(void))fast_scores, METH_FASTCALL,
     "nwattn_scores fast path"},
    {"nw_predict", (PyCFunction)(void (*)(void))fast_nw_predict, METH_FASTCALL,
     "nwattn_nw_predict fast path"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "nwattn._fast",
    "The optional compiled fast path of nwattn (see nwattn/_fastpath.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fast(void); /* the one exported symbol */
PyMODINIT_FUNC PyInit__fast(void)
{
    import_array();
    S.handle_name = PyUnicode_InternFromString("_handle");
    if (!S.handle_name)
        return NULL;
    return PyModule_Create(&module);
}
