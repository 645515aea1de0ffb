"""
    NWAttn

Julia binding of libnwattn: attention pooling as Nadaraya-Watson kernel regression,
`O = softmax(score(Q, K) + mask) · V`, computed by the C library through `@ccall`.

Column-major arrays map onto the row-major C API without copies by transposition: a Julia
matrix with one item per *column* has the memory of a row-major matrix with one item per row.
So every shape is the C shape reversed:

| C (row-major)         | Julia (column-major)           |
|-----------------------|--------------------------------|
| Q  m×d                | `Q`  d×m (a query per column)  |
| K  n×d, V n×dv        | `K`  d×n, `V` dv×n             |
| scores, weights m×n   | `S`, `W` n×m (a query's weights in its column, which sums to 1) |
| O  m×dv               | `O`  dv×m                      |
| lse m                 | `lse` length m                 |
| batch items           | trailing dimensions: `Q` d×m×batch… |

The library is `ENV["NWATTN_LIBRARY"]` (a file or a directory) if set, else `libnwattn.so.0`
through the dynamic loader, else a build tree of this checkout (`build*/src`).
"""
module NWAttn

using Libdl
using LinearAlgebra: Adjoint, Transpose

export Context, NWAttnError, scores, softmax, softmax!, bmm, pool, average_pool,
       backend, backend!, threads, threads!, workspace_bytes, release_workspace!, last_error,
       default_context, positional_encoding, attention, PoolState, pool_partial,
       merge_states!, finish_state, nw_predict, nw_cv, bandwidth_rule_of_thumb,
       select_bandwidth, cv_options_default, wmodel_evaluate, wmodel_train,
       weights_diagnostics, Rng, next!, uniform!, normal!, dataset_generate, dataset_truth

const ENV_VAR = "NWATTN_LIBRARY"
const SONAME = "libnwattn.so.0"
const PACKAGE_VERSION = v"0.1.0"

const SYMBOLS = (:nwattn_version_number, :nwattn_version_string, :nwattn_status_name,
                 :nwattn_status_describe, :nwattn_context_create, :nwattn_context_destroy,
                 :nwattn_context_set_backend, :nwattn_context_get_backend,
                 :nwattn_context_workspace_bytes, :nwattn_context_release_workspace,
                 :nwattn_context_last_error, :nwattn_scores, :nwattn_softmax, :nwattn_bmm,
                 :nwattn_pool, :nwattn_average_pool, :nwattn_context_set_threads,
                 :nwattn_context_get_threads, :nwattn_pool_partial, :nwattn_pool_state_merge,
                 :nwattn_pool_state_finish, :nwattn_positional_encoding, :nwattn_attention,
                 :nwattn_nw_predict, :nwattn_nw_cv, :nwattn_bandwidth_rule_of_thumb,
                 :nwattn_cv_options_default, :nwattn_nw_select_bandwidth,
                 :nwattn_wmodel_evaluate, :nwattn_wmodel_train, :nwattn_weights_diagnostics,
                 :nwattn_rng_seed, :nwattn_rng_next, :nwattn_rng_uniform, :nwattn_rng_normal,
                 :nwattn_dataset_generate, :nwattn_dataset_truth)
const MAX_THREADS = 256  # NWATTN_MAX_THREADS

const library_path = Ref{String}("")
const _handle = Ref{Ptr{Cvoid}}(C_NULL)
const _syms = Dict{Symbol,Ptr{Cvoid}}()  # filled once by __init__, read-only afterwards

_sym(name::Symbol) = _syms[name]

# ---- Loading -------------------------------------------------------------------------------

function _build_tree_candidates()
    repo = normpath(joinpath(@__DIR__, "..", ".."))
    isfile(joinpath(repo, "include", "nwattn.h")) || return String[]
    found = String[]
    for dir in readdir(repo)
        startswith(dir, "build") || continue
        lib = joinpath(repo, dir, "src", SONAME)
        isfile(lib) && push!(found, lib)
    end
    return sort(found; by = mtime, rev = true)  # the most recently built first
end

function _load()
    tried = String[]
    function attempt(target, how)
        try
            return Libdl.dlopen(target, Libdl.RTLD_LAZY | Libdl.RTLD_LOCAL)
        catch err
            push!(tried, "  $how: $target: $(sprint(showerror, err))")
            return C_NULL
        end
    end
    override = get(ENV, ENV_VAR, "")
    if !isempty(override)
        target = abspath(isdir(override) ? joinpath(override, SONAME) : override)
        h = attempt(target, "\$$ENV_VAR")
        h != C_NULL && return h, target
    else
        push!(tried, "  \$$ENV_VAR: not set")
        h = attempt(SONAME, "installed library (dynamic loader search)")
        h != C_NULL && return h, SONAME
        candidates = _build_tree_candidates()
        isempty(candidates) && push!(tried, "  build tree: no build*/src/$SONAME in this checkout")
        for target in candidates
            h = attempt(target, "build tree")
            h != C_NULL && return h, target
        end
    end
    error("NWAttn: cannot load the C library libnwattn. Tried, in order:\n" * join(tried, "\n") *
          "\nBuild it (cmake -S . -B build && cmake --build build), install it, or set " *
          "$ENV_VAR to the path of $SONAME.")
end

function __init__()
    h, path = _load()
    for name in SYMBOLS
        p = Libdl.dlsym_e(h, name)
        p == C_NULL && error("NWAttn: $path lacks $name: it is older than this package")
        _syms[name] = p
    end
    _handle[] = h
    library_path[] = path
    major = version_number() ÷ 10000
    major == PACKAGE_VERSION.major ||
        error("NWAttn: $path is version $(version()), this package needs $(PACKAGE_VERSION.major).x")
    return nothing
end

"""The loaded C library's version string (`nwattn_version_string`)."""
version() = unsafe_string(@ccall $(_sym(:nwattn_version_string))()::Cstring)
"""`nwattn_version_number`: major·10000 + minor·100 + patch."""
version_number() = Int(@ccall $(_sym(:nwattn_version_number))()::Cuint)

# ---- Errors --------------------------------------------------------------------------------

"""
    NWAttnError

A libnwattn call returned a status other than `NWATTN_OK`. `message` is the C library's own
message (`nwattn_context_last_error`), which begins with the status name, `name`.
"""
struct NWAttnError <: Exception
    status::Int
    name::String
    message::String
    func::Symbol
end

Base.showerror(io::IO, e::NWAttnError) = print(io, "NWAttnError (", e.func, "): ", e.message)

status_name(s::Integer) = unsafe_string(@ccall $(_sym(:nwattn_status_name))(s::Cint)::Cstring)
status_describe(s::Integer) =
    unsafe_string(@ccall $(_sym(:nwattn_status_describe))(s::Cint)::Cstring)

function _check(status::Cint, handle::Ptr{Cvoid}, func::Symbol)
    status == 0 && return nothing
    msg = handle == C_NULL ? "" :
          unsafe_string(@ccall $(_sym(:nwattn_context_last_error))(handle::Ptr{Cvoid})::Cstring)
    isempty(msg) && (msg = status_name(status) * ": " * status_describe(status))
    throw(NWAttnError(Int(status), status_name(status), msg, func))
end

# ---- Context -------------------------------------------------------------------------------

const BACKENDS = (auto = 0, reference = 1, blas = 2, fused = 3)

"""
    Context(backend = :auto)
    Context(f, backend = :auto)   # do-block: closed when f returns

A libnwattn context: backend (`:auto`, `:reference`, `:blas`, `:fused`), worker threads
(`threads!`), reusable working memory, last
error. Closed by `close(ctx)`, at the end of a do-block, or by the garbage collector. Not to be
used by two threads at once; the functions' default context is one per task.
"""
mutable struct Context
    handle::Ptr{Cvoid}
    function Context(backend::Union{Symbol,Integer} = :auto)
        out = Ref{Ptr{Cvoid}}(C_NULL)
        st = @ccall $(_sym(:nwattn_context_create))(out::Ptr{Ptr{Cvoid}})::Cint
        _check(st, C_NULL, :nwattn_context_create)
        ctx = new(out[])
        finalizer(close, ctx)
        backend === :auto || backend!(ctx, backend)
        return ctx
    end
end

function Context(f::Function, backend::Union{Symbol,Integer} = :auto)
    ctx = Context(backend)
    try
        return f(ctx)
    finally
        close(ctx)
    end
end

function Base.close(ctx::Context)
    if ctx.handle != C_NULL
        @ccall $(_sym(:nwattn_context_destroy))(ctx.handle::Ptr{Cvoid})::Cvoid
        ctx.handle = C_NULL
    end
    return nothing
end

Base.isopen(ctx::Context) = ctx.handle != C_NULL

function _h(ctx::Context)
    ctx.handle == C_NULL && throw(ArgumentError("NWAttn: the context is closed"))
    return ctx.handle
end

"""This task's default context, created on first use."""
function default_context()
    ctx = get(task_local_storage(), :nwattn_context, nothing)
    if ctx === nothing || !isopen(ctx)
        ctx = Context()
        task_local_storage(:nwattn_context, ctx)
    end
    return ctx::Context
end

function backend(ctx::Context)
    b = @ccall $(_sym(:nwattn_context_get_backend))(_h(ctx)::Ptr{Cvoid})::Cint
    for (name, value) in pairs(BACKENDS)
        value == b && return name
    end
    return Int(b)
end

function backend!(ctx::Context, b::Union{Symbol,Integer})
    value = b isa Symbol ? get(BACKENDS, b, nothing) : b
    value === nothing && throw(ArgumentError("unknown backend :$b; expected :auto, :reference or :blas"))
    h = _h(ctx)
    st = @ccall $(_sym(:nwattn_context_set_backend))(h::Ptr{Cvoid}, value::Cint)::Cint
    _check(st, h, :nwattn_context_set_backend)
    return ctx
end

"""Worker threads for the fused pooling (`nwattn_context_get_threads`)."""
threads(ctx::Context) =
    Int(@ccall $(_sym(:nwattn_context_get_threads))(_h(ctx)::Ptr{Cvoid})::Csize_t)

"""`nwattn_context_set_threads`: 1 ≤ n ≤ NWAttn.MAX_THREADS."""
function threads!(ctx::Context, n::Integer)
    n >= 0 || throw(ArgumentError("threads = $n must be >= 1"))
    h = _h(ctx)
    st = @ccall $(_sym(:nwattn_context_set_threads))(h::Ptr{Cvoid}, n::Csize_t)::Cint
    _check(st, h, :nwattn_context_set_threads)
    return ctx
end

workspace_bytes(ctx::Context) =
    Int(@ccall $(_sym(:nwattn_context_workspace_bytes))(_h(ctx)::Ptr{Cvoid})::Csize_t)
release_workspace!(ctx::Context) =
    (@ccall $(_sym(:nwattn_context_release_workspace))(_h(ctx)::Ptr{Cvoid})::Cvoid; ctx)
last_error(ctx::Context) =
    unsafe_string(@ccall $(_sym(:nwattn_context_last_error))(_h(ctx)::Ptr{Cvoid})::Cstring)

# ---- Arrays --------------------------------------------------------------------------------
# A matrix argument is an array of size (c, r, batch...): c is the C row length (features),
# r the C rows (items). It is passed as it is when its memory is describable: Float32, strided,
# unit first stride, second stride >= c, the batch dimensions one progression. Inputs that are
# not are copied into an Array{Float32} (any Real element type but Bool is converted); outputs
# that are not are refused.

# The batch stride of dims from..N, or nothing if they are not one progression.
function _batch_stride(sz, st, from)
    stride = 0
    expected = nothing
    for k in from:length(sz)
        sz[k] == 1 && continue
        st[k] > 0 || return nothing
        expected === nothing || st[k] == expected || return nothing
        expected === nothing && (stride = st[k])
        expected = st[k] * sz[k]
    end
    return stride
end

function _layout(A)
    A isa StridedArray{Float32} || return nothing
    c, r = size(A, 1), size(A, 2)
    length(A) == 0 && return (max(c, 1), 0)
    st = strides(A)
    (c <= 1 || st[1] == 1) || return nothing
    ld = max(c, 1)
    if r > 1
        st[2] >= max(c, 1) || return nothing
        ld = st[2]
    end
    stride = _batch_stride(size(A), st, 3)
    stride === nothing && return nothing
    return (ld, stride)
end

function _realarray(A, name)
    A isa AbstractArray || throw(ArgumentError("$name: expected an array, got $(typeof(A))"))
    T = eltype(A)
    (T <: Real && !(T <: Bool)) ||
        throw(ArgumentError("$name: element type $T is not a real number type"))
    ndims(A) >= 2 || throw(ArgumentError("$name: expected a matrix (…, with items as columns), got size $(size(A))"))
    return A
end

function _input(A, name)
    A = _realarray(A, name)
    lay = _layout(A)
    if lay === nothing
        A = Array{Float32}(A)
        lay = _layout(A)
    end
    return A, lay[1], lay[2]
end

function _output(out, dims, name)
    if out === nothing
        out = Array{Float32}(undef, dims...)
    else
        out isa StridedArray{Float32} ||
            throw(ArgumentError("$name: expected a strided Float32 array, got $(typeof(out)) (outputs are never converted)"))
        size(out) == dims || throw(DimensionMismatch("$name: size $(size(out)), expected $dims"))
    end
    lay = _layout(out)
    lay === nothing && throw(ArgumentError("$name: its layout (strides $(strides(out))) cannot be passed without a copy"))
    return out, lay[1], lay[2]
end

# A per-query output such as the log-sum-exp, size (m, batch...): m adjacent entries per item.
function _vector_output(out, dims, name)
    if out === nothing
        out = Array{Float32}(undef, dims...)
    else
        out isa StridedArray{Float32} ||
            throw(ArgumentError("$name: expected a strided Float32 array, got $(typeof(out))"))
        size(out) == dims || throw(DimensionMismatch("$name: size $(size(out)), expected $dims"))
    end
    st = strides(out)
    stride = length(out) == 0 ? 0 : _batch_stride(size(out), st, 2)
    (stride === nothing || (length(out) > 0 && size(out, 1) > 1 && st[1] != 1)) &&
        throw(ArgumentError("$name: its layout (strides $st) cannot be passed without a copy"))
    return out, stride
end

_batchshape(A) = size(A)[3:end]

# Operands whose batch dimensions are all 1 (or absent) are shared by every item (stride 0);
# the others must have the same batch shape, which is the result's.
function _common_batch(named...)
    shape = nothing
    longest = ()
    for (name, A) in named
        A === nothing && continue
        s = _batchshape(A)
        length(s) > length(longest) && (longest = s)
        prod(s) == 1 && continue
        if shape === nothing
            shape = s
        elseif s != shape
            throw(DimensionMismatch("batch dimensions differ: $name has $s, expected $shape (or none, to share one matrix)"))
        end
    end
    return shape === nothing ? longest : shape
end

# ---- Scores and masks ----------------------------------------------------------------------

struct Score  # struct nwattn_score
    kind::Cint
    scale::Cfloat
    bandwidth::Cfloat
    bandwidths::Ptr{Cfloat}
end

struct Mask  # struct nwattn_mask
    flags::Cuint
    valid_lens::Ptr{Csize_t}
    additive::Ptr{Cfloat}
    ld_additive::Csize_t
    stride_additive::Csize_t
    keep::Ptr{UInt8}
    ld_keep::Csize_t
    stride_keep::Csize_t
end

const SCORES = (dot = 0, gaussian = 1, laplace = 2, cosine = 3)
const MASK_LEAVE_ONE_OUT = Cuint(1) << 0
const MASK_CAUSAL = Cuint(1) << 1
const MASK_LENS_PER_ROW = Cuint(1) << 2

# (Score, the bandwidth array it points to or nothing): the caller must GC.@preserve the latter.
function _score(kind, scale, bandwidth, bandwidths, d)
    k = kind isa Symbol ? get(SCORES, kind, nothing) : kind
    k === nothing && throw(ArgumentError("unknown score :$kind; expected :dot, :gaussian, :laplace or :cosine"))
    if k == SCORES.dot
        (bandwidth === nothing && bandwidths === nothing) ||
            throw(ArgumentError("bandwidth/bandwidths apply to :gaussian and :laplace, not :dot"))
        s = scale === nothing ? (d > 0 ? 1 / sqrt(d) : 1.0) : scale
        return Score(k, s, 0, Ptr{Cfloat}(C_NULL)), nothing
    end
    if k == SCORES.cosine  # untested here: no Julia on the development machines
        (bandwidth === nothing && bandwidths === nothing) ||
            throw(ArgumentError("bandwidth/bandwidths apply to :gaussian and :laplace, not :cosine"))
        return Score(k, scale === nothing ? 1.0 : scale, 0, Ptr{Cfloat}(C_NULL)), nothing
    end
    scale === nothing || throw(ArgumentError("scale applies to the :dot and :cosine scores only"))
    if bandwidths !== nothing
        bandwidth === nothing || throw(ArgumentError("give bandwidth or bandwidths, not both"))
        bws = Vector{Float32}(bandwidths)
        length(bws) == d || throw(DimensionMismatch("bandwidths: $(length(bws)) values, expected d = $d"))
        return Score(k, 0, 0, pointer(bws)), bws
    end
    return Score(k, 0, bandwidth === nothing ? 1 : bandwidth, Ptr{Cfloat}(C_NULL)), nothing
end

# (Ref{Mask} or nothing, (lens, additive, keep)): the caller GC.@preserve's the three arrays
# while the Mask, which points into them, is in use.
function _mask(bshape, m, n; valid_lens = nothing, causal = false, leave_one_out = false,
               additive = nothing, keep = nothing)
    flags = (causal ? MASK_CAUSAL : Cuint(0)) | (leave_one_out ? MASK_LEAVE_ONE_OUT : Cuint(0))
    if flags == 0 && valid_lens === nothing && additive === nothing && keep === nothing
        return nothing, (nothing, nothing, nothing)
    end
    nb = prod(bshape)
    lens = nothing
    if valid_lens !== nothing
        if valid_lens isa Integer
            lens = fill(valid_lens, nb)
        else
            eltype(valid_lens) <: Integer && !(eltype(valid_lens) <: Bool) ||
                throw(ArgumentError("valid_lens: element type $(eltype(valid_lens)) is not an integer type"))
            if ndims(valid_lens) == length(bshape) + 1
                size(valid_lens) == (m, bshape...) ||
                    throw(DimensionMismatch("valid_lens: size $(size(valid_lens)), expected ($m, $(join(bshape, ", "))) for one length per query"))
                flags |= MASK_LENS_PER_ROW
            else
                length(valid_lens) == nb ||
                    throw(DimensionMismatch("valid_lens: $(length(valid_lens)) lengths for $nb items"))
            end
            lens = vec(valid_lens)
        end
        any(<(0), lens) && throw(ArgumentError("valid_lens: lengths must be >= 0"))
        lens = Vector{Csize_t}(lens)
    end
    add = nothing
    ld_add = stride_add = 0
    if additive !== nothing
        (size(additive, 1), size(additive, 2)) == (n, m) ||
            throw(DimensionMismatch("additive: size $(size(additive)), expected ($n, $m, batch...)"))
        add, ld_add, stride_add = _input(additive, "additive")
    end
    kp = nothing
    ld_keep = stride_keep = 0
    if keep !== nothing
        eltype(keep) <: Union{Bool,Integer} ||
            throw(ArgumentError("keep: element type $(eltype(keep)) is not Bool or integer"))
        (size(keep, 1), size(keep, 2)) == (n, m) ||
            throw(DimensionMismatch("keep: size $(size(keep)), expected ($n, $m, batch...)"))
        kp = Array{UInt8}(keep .!= 0)  # bytes, 0 masks (always a copy)
        ld_keep, stride_keep = max(n, 1), prod(_batchshape(kp)) > 1 ? n * m : 0
    end
    mask = Mask(flags,
                lens === nothing ? Ptr{Csize_t}(C_NULL) : pointer(lens),
                add === nothing ? Ptr{Cfloat}(C_NULL) : pointer(add), ld_add, stride_add,
                kp === nothing ? Ptr{UInt8}(C_NULL) : pointer(kp), ld_keep, stride_keep)
    return Ref(mask), (lens, add, kp)
end

_maskbatch(additive, keep) = (("additive", additive), ("keep", keep))

# ---- The primitives ------------------------------------------------------------------------

"""
    scores(Q, K; score = :dot, scale = nothing, bandwidth = nothing, bandwidths = nothing,
           out = nothing, ctx = default_context())

`nwattn_scores`: Q d×m(×batch), K d×n(×batch) → S n×m(×batch), `S[j, i] = score(Q[:, i], K[:, j])`.
`:dot` is `scale · q·k` (scale defaults to 1/√d), `:gaussian` `-|q-k|²/(2h²)`, `:laplace`
`-|q-k|/h` with `h = bandwidth` (default 1) or per-feature `bandwidths` (d values).
"""
function scores(Q, K; score = :dot, scale = nothing, bandwidth = nothing, bandwidths = nothing,
                out = nothing, ctx::Context = default_context())
    d, m = size(Q, 1), size(Q, 2)
    dk, n = size(K, 1), size(K, 2)
    d == dk || throw(DimensionMismatch("Q has d = $d features but K has $dk"))
    bshape = _common_batch(("Q", Q), ("K", K))
    q, ldq, sq = _input(Q, "Q")
    k, ldk, sk = _input(K, "K")
    S, lds, ss = _output(out, (n, m, bshape...), "out")
    sc, bws = _score(score, scale, bandwidth, bandwidths, d)
    h = _h(ctx)
    st = GC.@preserve bws @ccall $(_sym(:nwattn_scores))(
        h::Ptr{Cvoid}, Ref(sc)::Ref{Score}, prod(bshape)::Csize_t, m::Csize_t, n::Csize_t,
        d::Csize_t, q::Ptr{Float32}, ldq::Csize_t, sq::Csize_t, k::Ptr{Float32}, ldk::Csize_t,
        sk::Csize_t, S::Ptr{Float32}, lds::Csize_t, ss::Csize_t)::Cint
    _check(st, h, :nwattn_scores)
    return S
end

"""
    softmax(S; valid_lens, causal, leave_one_out, additive, keep, lse = false, out = nothing, ctx)
    softmax!(S; ...)   # in place

`nwattn_softmax` over each column of S n×m(×batch) (a query's scores). Masks combine; a masked
key gets exactly zero weight, a fully masked column zeros and lse = -Inf.
- `valid_lens`: per item (an integer, or `batch` lengths) or per query (`m×batch`).
- `causal`, `leave_one_out`: keys j > i, or key i, masked for query i.
- `additive` (n×m(×batch) floats added to the scores), `keep` (n×m(×batch), false masks).
`lse = true` (or an array m(×batch)) also returns each query's log-sum-exp: `(W, lse)`.
"""
function softmax(S; out = nothing, lse = false, ctx::Context = default_context(), mask...)
    n, m = size(S, 1), size(S, 2)
    bshape = _common_batch(("S", S), _maskbatch(get(mask, :additive, nothing),
                                                get(mask, :keep, nothing))...)
    s, lds, ss = _input(S, "S")
    W, ldw, sw = _output(out, (n, m, bshape...), "out")
    L, sl = lse === false ? (nothing, 0) :
            _vector_output(lse === true ? nothing : lse, (m, bshape...), "lse")
    mref, (lens, add, kp) = _mask(bshape, m, n; mask...)
    h = _h(ctx)
    st = GC.@preserve lens add kp @ccall $(_sym(:nwattn_softmax))(
        h::Ptr{Cvoid}, (mref === nothing ? C_NULL : mref)::Ptr{Mask}, prod(bshape)::Csize_t,
        m::Csize_t, n::Csize_t, s::Ptr{Float32}, lds::Csize_t, ss::Csize_t, W::Ptr{Float32},
        ldw::Csize_t, sw::Csize_t, (L === nothing ? C_NULL : L)::Ptr{Float32}, sl::Csize_t)::Cint
    _check(st, h, :nwattn_softmax)
    return L === nothing ? W : (W, L)
end

softmax!(S::StridedArray{Float32}; kw...) = softmax(S; out = S, kw...)

"""
    bmm(X, Y; out = nothing, ctx)

`nwattn_bmm` in Julia's terms: `Z[:, :, b] = X[:, :, b] * Y[:, :, b]` (NNlib's `batched_mul`),
X p×q(×batch), Y q×r(×batch). (The row-major C call computes Zᵀ = Yᵀ·Xᵀ on the same memory.)
"""
function bmm(X, Y; out = nothing, ctx::Context = default_context())
    p, q = size(X, 1), size(X, 2)
    qy, r = size(Y, 1), size(Y, 2)
    q == qy || throw(DimensionMismatch("X is $p×$q but Y is $qy×$r"))
    bshape = _common_batch(("X", X), ("Y", Y))
    a, lda, sa = _input(Y, "Y")  # C's A: r×q row-major
    b, ldb, sb = _input(X, "X")  # C's B: q×p row-major
    Z, ldc, sc = _output(out, (p, r, bshape...), "out")
    h = _h(ctx)
    st = @ccall $(_sym(:nwattn_bmm))(
        h::Ptr{Cvoid}, prod(bshape)::Csize_t, r::Csize_t, p::Csize_t, q::Csize_t,
        a::Ptr{Float32}, lda::Csize_t, sa::Csize_t, b::Ptr{Float32}, ldb::Csize_t, sb::Csize_t,
        Z::Ptr{Float32}, ldc::Csize_t, sc::Csize_t)::Cint
    _check(st, h, :nwattn_bmm)
    return Z
end

"""
    pool(Q, K, V; score = :dot, scale, bandwidth, bandwidths, <mask keywords>,
         weights = false, lse = false, out = nothing, ctx)

`nwattn_pool`: O = V · softmax(scores) in Julia's layout: Q d×m, K d×n, V dv×n → O dv×m
(×batch each). `weights = true` (or an n×m(×batch) array) and `lse = true` (or m(×batch)) also
return the weights (for heatmaps) and the log-sum-exps: `(O, W)`, `(O, lse)` or `(O, W, lse)`.
"""
function pool(Q, K, V; score = :dot, scale = nothing, bandwidth = nothing,
              bandwidths = nothing, out = nothing, weights = false, lse = false,
              ctx::Context = default_context(), mask...)
    d, m = size(Q, 1), size(Q, 2)
    dk, n = size(K, 1), size(K, 2)
    dv, nv = size(V, 1), size(V, 2)
    d == dk || throw(DimensionMismatch("Q has d = $d features but K has $dk"))
    n == nv || throw(DimensionMismatch("K has n = $n keys but V has $nv values"))
    bshape = _common_batch(("Q", Q), ("K", K), ("V", V),
                           _maskbatch(get(mask, :additive, nothing), get(mask, :keep, nothing))...)
    q, ldq, sq = _input(Q, "Q")
    k, ldk, sk = _input(K, "K")
    v, ldv, sv = _input(V, "V")
    O, ldo, so = _output(out, (dv, m, bshape...), "out")
    W, ldw, sw = weights === false ? (nothing, 0, 0) :
                 _output(weights === true ? nothing : weights, (n, m, bshape...), "weights")
    L, sl = lse === false ? (nothing, 0) :
            _vector_output(lse === true ? nothing : lse, (m, bshape...), "lse")
    sc, bws = _score(score, scale, bandwidth, bandwidths, d)
    mref, (lens, add, kp) = _mask(bshape, m, n; mask...)
    h = _h(ctx)
    st = GC.@preserve bws lens add kp @ccall $(_sym(:nwattn_pool))(
        h::Ptr{Cvoid}, Ref(sc)::Ref{Score}, (mref === nothing ? C_NULL : mref)::Ptr{Mask},
        prod(bshape)::Csize_t, m::Csize_t, n::Csize_t, d::Csize_t, dv::Csize_t,
        q::Ptr{Float32}, ldq::Csize_t, sq::Csize_t, k::Ptr{Float32}, ldk::Csize_t, sk::Csize_t,
        v::Ptr{Float32}, ldv::Csize_t, sv::Csize_t, O::Ptr{Float32}, ldo::Csize_t, so::Csize_t,
        (W === nothing ? C_NULL : W)::Ptr{Float32}, ldw::Csize_t, sw::Csize_t,
        (L === nothing ? C_NULL : L)::Ptr{Float32}, sl::Csize_t)::Cint
    _check(st, h, :nwattn_pool)
    extra = Tuple(x for x in (W, L) if x !== nothing)
    return isempty(extra) ? O : (O, extra...)
end

"""
    average_pool(V, m; <mask keywords>, out = nothing, ctx)

`nwattn_average_pool`: every unmasked key gets the same weight; V dv×n(×batch) → O dv×m(×batch),
each column the mean of the columns of V its mask keeps.
"""
function average_pool(V, m::Integer; out = nothing, ctx::Context = default_context(), mask...)
    m >= 0 || throw(ArgumentError("m = $m must be >= 0"))
    dv, n = size(V, 1), size(V, 2)
    bshape = _common_batch(("V", V), _maskbatch(get(mask, :additive, nothing),
                                                get(mask, :keep, nothing))...)
    v, ldv, sv = _input(V, "V")
    O, ldo, so = _output(out, (dv, m, bshape...), "out")
    mref, (lens, add, kp) = _mask(bshape, m, n; mask...)
    h = _h(ctx)
    st = GC.@preserve lens add kp @ccall $(_sym(:nwattn_average_pool))(
        h::Ptr{Cvoid}, (mref === nothing ? C_NULL : mref)::Ptr{Mask}, prod(bshape)::Csize_t,
        m::Csize_t, n::Csize_t, dv::Csize_t, v::Ptr{Float32}, ldv::Csize_t, sv::Csize_t,
        O::Ptr{Float32}, ldo::Csize_t, so::Csize_t)::Cint
    _check(st, h, :nwattn_average_pool)
    return O
end

# ---- The transformer module ----------------------------------------------------------------

"""
    positional_encoding(t, d; first = 0, out = nothing, ctx)

`nwattn_positional_encoding` in Julia's layout: a d×t matrix whose column i is the encoding of
position first + i - 1: P[2j+1, i] = sin(p / 10000^(2j/d)), P[2j+2, i] = cos(p / 10000^(2j/d)).
"""
function positional_encoding(t::Integer, d::Integer; first::Integer = 0, out = nothing,
                             ctx::Context = default_context())
    (t >= 0 && d >= 0 && first >= 0) || throw(ArgumentError("t, d and first must be >= 0"))
    P, ldp, _ = _output(out, (d, t), "out")
    h = _h(ctx)
    st = @ccall $(_sym(:nwattn_positional_encoding))(h::Ptr{Cvoid}, t::Csize_t, d::Csize_t,
                                                     first::Csize_t, P::Ptr{Float32},
                                                     ldp::Csize_t)::Cint
    _check(st, h, :nwattn_positional_encoding)
    return P
end

struct AttentionParams  # struct nwattn_attention_params
    heads::Csize_t
    d_q_in::Csize_t
    d_k_in::Csize_t
    d_v_in::Csize_t
    d_qk::Csize_t
    d_v::Csize_t
    d_out::Csize_t
    w_q::Ptr{Cfloat}
    w_k::Ptr{Cfloat}
    w_v::Ptr{Cfloat}
    w_o::Ptr{Cfloat}
    b_q::Ptr{Cfloat}
    b_k::Ptr{Cfloat}
    b_v::Ptr{Cfloat}
    b_o::Ptr{Cfloat}
end

# A weight W given the Julia (Flux) way, out×in with y = W*x, as the C library wants it: dense
# row-major out×in, which is the memory of a column-major in×out matrix. A transpose of a dense
# Float32 matrix already is that memory; anything else is copied.
function _weight(W, name, out, in)
    W === nothing && return nothing
    size(W) == (out, in) || throw(DimensionMismatch("$name: size $(size(W)), expected ($out, $in)"))
    if W isa Union{Transpose{Float32,Matrix{Float32}},Adjoint{Float32,Matrix{Float32}}}
        return parent(W)
    end
    return Matrix{Float32}(permutedims(_realarray(W, name)))
end

function _bias(b, name, n)
    b === nothing && return nothing
    length(b) == n || throw(DimensionMismatch("$name: $(length(b)) values, expected $n"))
    return Vector{Float32}(vec(b))
end

_ptr(a) = a === nothing ? Ptr{Cfloat}(C_NULL) : pointer(a)

"""
    attention(Xq, Xk = Xq, Xv = Xk; Wq, Wk, Wv, Wo = nothing, bq, bk, bv, bo, heads = 1,
              score = :dot, <mask keywords>, weights = false, out = nothing, ctx)

`nwattn_attention` in Julia's layout: Xq d_q_in×t_q(×batch), Xk d_k_in×t_kv, Xv d_v_in×t_kv;
weights the Flux way, `Wq` d_qk×d_q_in (Q = Wq*Xq .+ bq), `Wk` d_qk×d_k_in, `Wv` d_v×d_v_in,
optional `Wo` d_out×d_v. Returns Y d_out×t_q(×batch) (d_v without Wo), or `(Y, W)` with the
per-head weights W t_kv×t_q×heads(×batch) when `weights = true`.
"""
function attention(Xq, Xk = Xq, Xv = Xk; Wq, Wk, Wv, Wo = nothing, bq = nothing,
                   bk = nothing, bv = nothing, bo = nothing, heads::Integer = 1, score = :dot,
                   scale = nothing, bandwidth = nothing, bandwidths = nothing, out = nothing,
                   weights = false, ctx::Context = default_context(), mask...)
    d_q_in, t_q = size(Xq, 1), size(Xq, 2)
    d_k_in, t_kv = size(Xk, 1), size(Xk, 2)
    d_v_in, t_v = size(Xv, 1), size(Xv, 2)
    t_v == t_kv || throw(DimensionMismatch("Xk has $t_kv positions but Xv has $t_v"))
    heads >= 0 || throw(ArgumentError("heads = $heads must be >= 1"))
    d_qk, d_v = size(Wq, 1), size(Wv, 1)
    d_out = Wo === nothing ? d_v : size(Wo, 1)
    wq, wk = _weight(Wq, "Wq", d_qk, d_q_in), _weight(Wk, "Wk", d_qk, d_k_in)
    wv, wo = _weight(Wv, "Wv", d_v, d_v_in), _weight(Wo, "Wo", d_out, d_v)
    (bo === nothing || Wo !== nothing) || throw(ArgumentError("bo needs Wo"))
    b_q, b_k = _bias(bq, "bq", d_qk), _bias(bk, "bk", d_qk)
    b_v, b_o = _bias(bv, "bv", d_v), _bias(bo, "bo", d_out)
    params = AttentionParams(heads, d_q_in, d_k_in, d_v_in, d_qk, d_v, d_out, _ptr(wq),
                             _ptr(wk), _ptr(wv), _ptr(wo), _ptr(b_q), _ptr(b_k), _ptr(b_v),
                             _ptr(b_o))
    bshape = _common_batch(("Xq", Xq), ("Xk", Xk), ("Xv", Xv),
                           _maskbatch(get(mask, :additive, nothing), get(mask, :keep, nothing))...)
    xq, ldxq, sxq = _input(Xq, "Xq")
    xk, ldxk, sxk = _input(Xk, "Xk")
    xv, ldxv, sxv = _input(Xv, "Xv")
    Y, ldy, sy = _output(out, (d_out, t_q, bshape...), "out")
    W = nothing
    ldw = sw = 0
    if weights !== false
        dims = (t_kv, t_q, heads, bshape...)
        W = weights === true ? Array{Float32}(undef, dims...) : weights
        (W isa Array{Float32} && size(W) == dims) ||
            throw(ArgumentError("weights: expected true or an Array{Float32} of size $dims"))
        ldw, sw = max(t_kv, 1), t_kv * t_q * heads
    end
    sc, bws = _score(score, scale, bandwidth, bandwidths, heads > 0 ? d_qk ÷ heads : 0)
    mref, (lens, add, kp) = _mask(bshape, t_q, t_kv; mask...)
    h = _h(ctx)
    st = GC.@preserve wq wk wv wo b_q b_k b_v b_o bws lens add kp @ccall $(_sym(:nwattn_attention))(
        h::Ptr{Cvoid}, Ref(params)::Ref{AttentionParams}, Ref(sc)::Ref{Score},
        (mref === nothing ? C_NULL : mref)::Ptr{Mask}, prod(bshape)::Csize_t, t_q::Csize_t,
        t_kv::Csize_t, xq::Ptr{Float32}, ldxq::Csize_t, sxq::Csize_t, xk::Ptr{Float32},
        ldxk::Csize_t, sxk::Csize_t, xv::Ptr{Float32}, ldxv::Csize_t, sxv::Csize_t,
        Y::Ptr{Float32}, ldy::Csize_t, sy::Csize_t, (W === nothing ? C_NULL : W)::Ptr{Float32},
        ldw::Csize_t, sw::Csize_t)::Cint
    _check(st, h, :nwattn_attention)
    return W === nothing ? Y : (Y, W)
end

struct PoolStateC  # struct nwattn_pool_state
    acc::Ptr{Cfloat}
    ld_acc::Csize_t
    stride_acc::Csize_t
    max::Ptr{Cfloat}
    sum::Ptr{Cfloat}
    stride_stats::Csize_t
end

"""
    PoolState(dv, m, batch...)

A partial pooling state in Julia's layout: `acc` dv×m(×batch), `max` and `sum` m(×batch)
(dense arrays). Starts empty (sum 0, max -Inf, acc 0): the identity of `merge_states!`.
"""
struct PoolState
    acc::Array{Float32}
    max::Array{Float32}
    sum::Array{Float32}
end

PoolState(dv::Integer, m::Integer, batch::Integer...) =
    PoolState(zeros(Float32, dv, m, batch...), fill(-Inf32, m, batch...), zeros(Float32, m, batch...))

function _cstate(s::PoolState)
    dv, m = size(s.acc, 1), size(s.acc, 2)
    size(s.max) == size(s.sum) == (m, _batchshape(s.acc)...) ||
        throw(DimensionMismatch("PoolState: acc is $(size(s.acc)) but max, sum are $(size(s.max)), $(size(s.sum))"))
    return PoolStateC(pointer(s.acc), max(dv, 1), dv * m, pointer(s.max), pointer(s.sum), m)
end

"""
    pool_partial(Q, K, V; key_offset = 0, score..., <mask keywords>, state = nothing, ctx)

`nwattn_pool_partial`: the state of queries Q d×m pooled over keys key_offset+1 ..
key_offset+n of a larger problem, K d×n and V dv×n holding those keys (×batch each).
Causal, leave-one-out and valid lengths count whole-problem keys; `additive` and `keep` are
the shard's rows (n×m). Returns the (new or given) `PoolState`.
"""
function pool_partial(Q, K, V; key_offset::Integer = 0, score = :dot, scale = nothing,
                      bandwidth = nothing, bandwidths = nothing, state = nothing,
                      ctx::Context = default_context(), mask...)
    d, m = size(Q, 1), size(Q, 2)
    dk, n = size(K, 1), size(K, 2)
    dv, nv = size(V, 1), size(V, 2)
    d == dk || throw(DimensionMismatch("Q has d = $d features but K has $dk"))
    n == nv || throw(DimensionMismatch("K has n = $n keys but V has $nv values"))
    key_offset >= 0 || throw(ArgumentError("key_offset must be >= 0"))
    bshape = _common_batch(("Q", Q), ("K", K), ("V", V),
                           _maskbatch(get(mask, :additive, nothing), get(mask, :keep, nothing))...)
    q, ldq, sq = _input(Q, "Q")
    k, ldk, sk = _input(K, "K")
    v, ldv, sv = _input(V, "V")
    state === nothing && (state = PoolState(dv, m, bshape...))
    size(state.acc) == (dv, m, bshape...) ||
        throw(DimensionMismatch("state: acc is $(size(state.acc)), expected $((dv, m, bshape...))"))
    cs = _cstate(state)
    sc, bws = _score(score, scale, bandwidth, bandwidths, d)
    mref, (lens, add, kp) = _mask(bshape, m, n; mask...)
    h = _h(ctx)
    st = GC.@preserve state bws lens add kp @ccall $(_sym(:nwattn_pool_partial))(
        h::Ptr{Cvoid}, Ref(sc)::Ref{Score}, (mref === nothing ? C_NULL : mref)::Ptr{Mask},
        prod(bshape)::Csize_t, m::Csize_t, n::Csize_t, d::Csize_t, dv::Csize_t,
        key_offset::Csize_t, q::Ptr{Float32}, ldq::Csize_t, sq::Csize_t, k::Ptr{Float32},
        ldk::Csize_t, sk::Csize_t, v::Ptr{Float32}, ldv::Csize_t, sv::Csize_t,
        Ref(cs)::Ref{PoolStateC})::Cint
    _check(st, h, :nwattn_pool_partial)
    return state
end

"""`nwattn_pool_state_merge`: `into` merged with `from` (disjoint key subsets); returns into."""
function merge_states!(into::PoolState, from::PoolState; ctx::Context = default_context())
    size(into.acc) == size(from.acc) ||
        throw(DimensionMismatch("states of different sizes: $(size(into.acc)) and $(size(from.acc))"))
    dv, m = size(into.acc, 1), size(into.acc, 2)
    a, b = _cstate(into), _cstate(from)
    h = _h(ctx)
    st = GC.@preserve into from @ccall $(_sym(:nwattn_pool_state_merge))(
        h::Ptr{Cvoid}, prod(_batchshape(into.acc))::Csize_t, m::Csize_t, dv::Csize_t,
        Ref(a)::Ref{PoolStateC}, Ref(b)::Ref{PoolStateC})::Cint
    _check(st, h, :nwattn_pool_state_merge)
    return into
end

"""`nwattn_pool_state_finish`: O = acc ./ sum' (dv×m(×batch)), and with `lse = true` also
max + log(sum): `(O, lse)`. `out = state.acc` finishes in place."""
function finish_state(s::PoolState; out = nothing, lse = false, ctx::Context = default_context())
    dv, m = size(s.acc, 1), size(s.acc, 2)
    bshape = _batchshape(s.acc)
    cs = _cstate(s)
    O, ldo, so = _output(out, (dv, m, bshape...), "out")
    L, sl = lse === false ? (nothing, 0) :
            _vector_output(lse === true ? nothing : lse, (m, bshape...), "lse")
    h = _h(ctx)
    st = GC.@preserve s @ccall $(_sym(:nwattn_pool_state_finish))(
        h::Ptr{Cvoid}, prod(bshape)::Csize_t, m::Csize_t, dv::Csize_t, Ref(cs)::Ref{PoolStateC},
        O::Ptr{Float32}, ldo::Csize_t, so::Csize_t, (L === nothing ? C_NULL : L)::Ptr{Float32},
        sl::Csize_t)::Cint
    _check(st, h, :nwattn_pool_state_finish)
    return L === nothing ? O : (O, L)
end

# ---- Nadaraya-Watson regression ------------------------------------------------------------
# One data set per call. Points are columns: x is d×n (or a Vector when d = 1), y is dv×n (or a
# Vector: predictions are then a Vector too), queries d×m (or a Vector).

const KERNELS = (gaussian = 0, laplace = 1, epanechnikov = 2, tricube = 3, uniform = 4)
const DEGREES = (constant = 0, linear = 1)
const EMPTIES = (nearest = 0, nan = 1, zero = 2)
const RULES = (silverman = 0, scott = 1, normal_reference = 2)
const DATASETS = (d2l = 0, sine = 1)
const ROW_EMPTY = UInt8(1) << 0
const ROW_SINGULAR = UInt8(1) << 1

struct Regression  # struct nwattn_regression
    kernel::Cint
    degree::Cint
    empty::Cint
end

function _pick(table, value, what)
    value isa Integer && return Int(value)  # the C library refuses unknown numbers
    v = get(table, value, nothing)
    v === nothing && throw(ArgumentError("unknown $what :$value; expected one of $(keys(table))"))
    return v
end

_model(kernel, degree, empty) = Regression(_pick(KERNELS, kernel, "kernel"),
                                           _pick(DEGREES, degree, "degree"),
                                           _pick(EMPTIES, empty, "empty"))

# (array, ld, rows n, cols d, was a Vector) of a point set given as d×n or a Vector.
function _pointset(X, name)
    isvec = X isa AbstractVector
    A = isvec ? reshape(X, 1, :) : X
    A, ld, _ = _input(A, name)
    ndims(A) == 2 || throw(ArgumentError("$name: expected a Vector or a d×n matrix"))
    return A, ld, size(A, 2), size(A, 1), isvec
end

_bwvec(h, d) = h isa Real ? fill(Float32(h), d) :
    (length(h) == d ? Vector{Float32}(vec(h)) :
     throw(DimensionMismatch("bandwidth: $(length(h)) values for d = $d")))

"""
    nw_predict(xq, x, y, bandwidth; kernel = :gaussian, degree = :constant, empty = :nearest,
               weights = false, row_flags = false, out = nothing, ctx)

`nwattn_nw_predict`. kernel ∈ (:gaussian, :laplace, :epanechnikov, :tricube, :uniform), degree
:constant (Nadaraya-Watson) or :linear. Returns the predictions, or a tuple with the weights
(n×m: column i is query i's weights) and the row flags (Vector{UInt8}) when requested.
"""
function nw_predict(xq, x, y, bandwidth; kernel = :gaussian, degree = :constant,
                    empty = :nearest, weights = false, row_flags = false, out = nothing,
                    ctx::Context = default_context())
    X, ldx, n, d, _ = _pointset(x, "x")
    Q, ldq, m, dq, _ = _pointset(xq, "xq")
    dq == d || throw(DimensionMismatch("xq has $dq features but x has $d"))
    Y, ldy, ny, dv, yvec = _pointset(y, "y")
    ny == n || throw(DimensionMismatch("x has $n points but y has $ny"))
    bw = _bwvec(bandwidth, d)
    model = _model(kernel, degree, empty)
    O, ldo, _ = _output(out === nothing ? nothing : (yvec ? reshape(out, 1, :) : out), (dv, m), "out")
    W, ldw = nothing, 0
    if weights !== false
        W, ldw, _ = _output(weights === true ? nothing : weights, (n, m), "weights")
    end
    flags = row_flags ? zeros(UInt8, m) : nothing
    h = _h(ctx)
    st = @ccall $(_sym(:nwattn_nw_predict))(
        h::Ptr{Cvoid}, Ref(model)::Ref{Regression}, bw::Ptr{Float32}, m::Csize_t, n::Csize_t,
        d::Csize_t, dv::Csize_t, Q::Ptr{Float32}, ldq::Csize_t, X::Ptr{Float32}, ldx::Csize_t,
        Y::Ptr{Float32}, ldy::Csize_t, O::Ptr{Float32}, ldo::Csize_t,
        (W === nothing ? C_NULL : W)::Ptr{Float32}, ldw::Csize_t,
        (flags === nothing ? C_NULL : flags)::Ptr{UInt8}, C_NULL::Ptr{Csize_t})::Cint
    _check(st, h, :nwattn_nw_predict)
    pred = out !== nothing ? out : (yvec ? vec(O) : O)
    extra = Tuple(e for e in (W, flags) if e !== nothing)
    return isempty(extra) ? pred : (pred, extra...)
end

"""
    nw_cv(x, y, bandwidths; kernel = :gaussian, degree = :constant, gradient = false,
          flagged = false, ctx)

`nwattn_nw_cv`: the exact leave-one-out CV score of each bandwidth vector. `bandwidths`: a
number or a Vector grid when d = 1, a Vector of d values, or a d×n_bw matrix (a column per
bandwidth vector). Returns the scores (Float64; a number for one bandwidth vector), and with
`gradient` the d×n_bw gradient, with `flagged` the flagged-row counts.
"""
function nw_cv(x, y, bandwidths; kernel = :gaussian, degree = :constant, gradient = false,
               flagged = false, ctx::Context = default_context())
    X, ldx, n, d, _ = _pointset(x, "x")
    Y, ldy, ny, dv, _ = _pointset(y, "y")
    ny == n || throw(DimensionMismatch("x has $n points but y has $ny"))
    single = bandwidths isa Real || (bandwidths isa AbstractVector && d > 1)
    B = bandwidths isa Real ? fill(Float32(bandwidths), 1, 1) :
        bandwidths isa AbstractVector ? (d == 1 ? reshape(Vector{Float32}(bandwidths), 1, :) :
                                         reshape(Vector{Float32}(bandwidths), d, 1)) :
        Matrix{Float32}(bandwidths)
    size(B, 1) == d || throw(DimensionMismatch("bandwidths: size $(size(B)) for d = $d"))
    n_bw = size(B, 2)
    model = _model(kernel, degree, :nearest)
    cv = Vector{Float64}(undef, n_bw)
    G = gradient ? Matrix{Float64}(undef, d, n_bw) : nothing
    F = flagged ? zeros(Csize_t, n_bw) : nothing
    h = _h(ctx)
    st = @ccall $(_sym(:nwattn_nw_cv))(
        h::Ptr{Cvoid}, Ref(model)::Ref{Regression}, n::Csize_t, d::Csize_t, dv::Csize_t,
        X::Ptr{Float32}, ldx::Csize_t, Y::Ptr{Float32}, ldy::Csize_t, n_bw::Csize_t,
        B::Ptr{Float32}, d::Csize_t, cv::Ptr{Float64}, (G === nothing ? C_NULL : G)::Ptr{Float64},
        d::Csize_t, (F === nothing ? C_NULL : F)::Ptr{Csize_t})::Cint
    _check(st, h, :nwattn_nw_cv)
    result = (single ? cv[1] : cv,)
    G === nothing || (result = (result..., single ? G[:, 1] : G))
    F === nothing || (result = (result..., single ? Int(F[1]) : Int.(F)))
    return length(result) == 1 ? result[1] : result
end

"""`nwattn_bandwidth_rule_of_thumb`: rule ∈ (:silverman, :scott, :normal_reference); d values."""
function bandwidth_rule_of_thumb(x, rule = :normal_reference; ctx::Context = default_context())
    X, ldx, n, d, _ = _pointset(x, "x")
    out = Vector{Float32}(undef, d)
    h = _h(ctx)
    st = @ccall $(_sym(:nwattn_bandwidth_rule_of_thumb))(
        h::Ptr{Cvoid}, _pick(RULES, rule, "rule")::Cint, n::Csize_t, d::Csize_t,
        X::Ptr{Float32}, ldx::Csize_t, out::Ptr{Float32})::Cint
    _check(st, h, :nwattn_bandwidth_rule_of_thumb)
    return out
end

mutable struct CvOptions  # struct nwattn_cv_options (mutable: filled in by the C library)
    grid_points::Csize_t
    scale_min::Cfloat
    scale_max::Cfloat
    start::Ptr{Cfloat}
    max_evaluations::Csize_t
    tolerance::Cdouble
    CvOptions() = new(0, 0, 0, C_NULL, 0, 0)
end

mutable struct CvReport  # struct nwattn_cv_report
    cv::Cdouble
    evaluations::Csize_t
    flagged_rows::Csize_t
    at_grid_edge::Cint
    converged::Cint
    CvReport() = new(0, 0, 0, 0, 0)
end

function _cv_defaults()
    o = CvOptions()
    @ccall $(_sym(:nwattn_cv_options_default))(o::Ref{CvOptions})::Cvoid
    return o
end

"""The defaults of `select_bandwidth`'s search (`nwattn_cv_options_default`), a NamedTuple."""
function cv_options_default()
    o = _cv_defaults()
    return (grid_points = Int(o.grid_points), scale_min = o.scale_min, scale_max = o.scale_max,
            start = nothing, max_evaluations = Int(o.max_evaluations), tolerance = o.tolerance)
end

"""
    select_bandwidth(x, y; kernel, degree, grid_points, scale_min, scale_max, start,
                     max_evaluations, tolerance, ctx)

`nwattn_nw_select_bandwidth`: bandwidths minimising the leave-one-out CV score. `nothing`
takes the C default. Returns a NamedTuple (bandwidths, cv, evaluations, flagged_rows,
at_grid_edge, converged, curve_scales, curve_cv).
"""
function select_bandwidth(x, y; kernel = :gaussian, degree = :constant, grid_points = nothing,
                          scale_min = nothing, scale_max = nothing, start = nothing,
                          max_evaluations = nothing, tolerance = nothing,
                          ctx::Context = default_context())
    X, ldx, n, d, _ = _pointset(x, "x")
    Y, ldy, ny, dv, _ = _pointset(y, "y")
    ny == n || throw(DimensionMismatch("x has $n points but y has $ny"))
    o = _cv_defaults()
    grid_points === nothing || (o.grid_points = grid_points)
    scale_min === nothing || (o.scale_min = scale_min)
    scale_max === nothing || (o.scale_max = scale_max)
    max_evaluations === nothing || (o.max_evaluations = max_evaluations)
    tolerance === nothing || (o.tolerance = tolerance)
    s0 = start === nothing ? nothing : _bwvec(start, d)
    s0 === nothing || (o.start = pointer(s0))
    model = _model(kernel, degree, :nearest)
    bw = Vector{Float32}(undef, d)
    report = CvReport()
    scales = Vector{Float32}(undef, Int(o.grid_points))
    curve = Vector{Float64}(undef, Int(o.grid_points))
    h = _h(ctx)
    st = GC.@preserve s0 @ccall $(_sym(:nwattn_nw_select_bandwidth))(
        h::Ptr{Cvoid}, Ref(model)::Ref{Regression}, n::Csize_t, d::Csize_t, dv::Csize_t,
        X::Ptr{Float32}, ldx::Csize_t, Y::Ptr{Float32}, ldy::Csize_t, o::Ref{CvOptions},
        bw::Ptr{Float32}, report::Ref{CvReport}, scales::Ptr{Float32}, curve::Ptr{Float64})::Cint
    _check(st, h, :nwattn_nw_select_bandwidth)
    return (bandwidths = bw, cv = report.cv, evaluations = Int(report.evaluations),
            flagged_rows = Int(report.flagged_rows), at_grid_edge = Int(report.at_grid_edge),
            converged = report.converged != 0, curve_scales = scales, curve_cv = curve)
end

"""
    wmodel_evaluate(w, xq, x, y; target = nothing, <mask keywords>, weights = false, ctx)

`nwattn_wmodel_evaluate`: d2l's model yhat_i = Σ_j softmax_j(-((xq_i - x_j) w)²/2) y_j, and
with `target` its loss Σ (yhat - target)²/2 and dL/dw. Returns a NamedTuple (yhat, weights,
loss, grad) with `nothing` for what was not requested.
"""
function wmodel_evaluate(w::Real, xq, x, y; target = nothing, weights = false,
                         ctx::Context = default_context(), mask...)
    X, ldx, n, d, _ = _pointset(x, "x")
    Q, ldq, m, dq, _ = _pointset(xq, "xq")
    dq == d || throw(DimensionMismatch("xq has $dq features but x has $d"))
    Y, ldy, ny, dv, yvec = _pointset(y, "y")
    ny == n || throw(DimensionMismatch("x has $n points but y has $ny"))
    T, ldt = nothing, 0
    if target !== nothing
        T, ldt, mt, dvt, _ = _pointset(target, "target")
        (mt, dvt) == (m, dv) || throw(DimensionMismatch("target: size $(size(target)), expected ($dv, $m)"))
    end
    Yh = Matrix{Float32}(undef, dv, m)
    W = weights === false ? nothing : Matrix{Float32}(undef, n, m)
    loss, grad = Ref{Cdouble}(0), Ref{Cdouble}(0)
    mref, (lens, add, kp) = _mask((), m, n; mask...)
    h = _h(ctx)
    st = GC.@preserve lens add kp @ccall $(_sym(:nwattn_wmodel_evaluate))(
        h::Ptr{Cvoid}, w::Cfloat, (mref === nothing ? C_NULL : mref)::Ptr{Mask}, m::Csize_t,
        n::Csize_t, d::Csize_t, dv::Csize_t, Q::Ptr{Float32}, ldq::Csize_t, X::Ptr{Float32},
        ldx::Csize_t, Y::Ptr{Float32}, ldy::Csize_t, (T === nothing ? C_NULL : T)::Ptr{Float32},
        ldt::Csize_t, Yh::Ptr{Float32}, max(dv, 1)::Csize_t,
        (W === nothing ? C_NULL : W)::Ptr{Float32}, max(n, 1)::Csize_t,
        (T === nothing ? C_NULL : loss)::Ptr{Cdouble},
        (T === nothing ? C_NULL : grad)::Ptr{Cdouble})::Cint
    _check(st, h, :nwattn_wmodel_evaluate)
    return (yhat = yvec ? vec(Yh) : Yh, weights = W,
            loss = T === nothing ? nothing : loss[], grad = T === nothing ? nothing : grad[])
end

struct Sgd  # struct nwattn_sgd
    learning_rate::Cfloat
    epochs::Csize_t
end

"""
    wmodel_train(x, y, w; learning_rate, epochs, ctx) -> (w, losses)

`nwattn_wmodel_train`: d2l's training of w (leave-one-out, loss Σ (yhat - y)²/2, one SGD step
per epoch). Returns the trained w and the loss of each epoch (before its step).
"""
function wmodel_train(x, y, w::Real; learning_rate::Real, epochs::Integer,
                      ctx::Context = default_context())
    X, ldx, n, d, _ = _pointset(x, "x")
    Y, ldy, ny, dv, _ = _pointset(y, "y")
    ny == n || throw(DimensionMismatch("x has $n points but y has $ny"))
    epochs >= 0 || throw(ArgumentError("epochs must be >= 0"))
    wref = Ref{Cfloat}(w)
    losses = Vector{Float64}(undef, epochs)
    h = _h(ctx)
    st = @ccall $(_sym(:nwattn_wmodel_train))(
        h::Ptr{Cvoid}, Ref(Sgd(learning_rate, epochs))::Ref{Sgd}, n::Csize_t, d::Csize_t,
        dv::Csize_t, X::Ptr{Float32}, ldx::Csize_t, Y::Ptr{Float32}, ldy::Csize_t,
        wref::Ptr{Cfloat}, losses::Ptr{Float64})::Cint
    _check(st, h, :nwattn_wmodel_train)
    return wref[], losses
end

"""`nwattn_weights_diagnostics`: for each column (query) of non-negative weights n×m, the
entropy of the normalised column (nats) and the effective number of neighbours."""
function weights_diagnostics(W; ctx::Context = default_context())
    A, ldw, _ = _input(W, "W")
    n, m = size(A, 1), size(A, 2)
    entropy, n_eff = Vector{Float32}(undef, m), Vector{Float32}(undef, m)
    h = _h(ctx)
    st = @ccall $(_sym(:nwattn_weights_diagnostics))(
        h::Ptr{Cvoid}, m::Csize_t, n::Csize_t, A::Ptr{Float32}, ldw::Csize_t,
        entropy::Ptr{Float32}, n_eff::Ptr{Float32})::Cint
    _check(st, h, :nwattn_weights_diagnostics)
    return entropy, n_eff
end

"""
    Rng(seed = 0)

The library's deterministic generator (SplitMix64, `nwattn_rng`): `rand(rng)`-like functions
`next!`, `uniform!`, `normal!` give the same numbers as C and Python for the same seed.
"""
mutable struct Rng  # struct nwattn_rng
    state::UInt64
    function Rng(seed::Integer = 0)
        r = new(0)
        @ccall $(_sym(:nwattn_rng_seed))(r::Ref{Rng}, (seed % UInt64)::UInt64)::Cvoid
        return r
    end
end

next!(r::Rng) = @ccall $(_sym(:nwattn_rng_next))(r::Ref{Rng})::UInt64
uniform!(r::Rng) = @ccall $(_sym(:nwattn_rng_uniform))(r::Ref{Rng})::Cdouble
normal!(r::Rng) = @ccall $(_sym(:nwattn_rng_normal))(r::Ref{Rng})::Cdouble
uniform!(r::Rng, n::Integer) = [uniform!(r) for _ in 1:n]
normal!(r::Rng, n::Integer) = [normal!(r) for _ in 1:n]

"""`nwattn_dataset_generate`: n pairs of :d2l or :sine data from rng (advanced): (x, y)."""
function dataset_generate(dataset, n::Integer, rng::Rng; ctx::Context = default_context())
    n >= 0 || throw(ArgumentError("n must be >= 0"))
    x, y = Vector{Float32}(undef, n), Vector{Float32}(undef, n)
    h = _h(ctx)
    st = @ccall $(_sym(:nwattn_dataset_generate))(
        h::Ptr{Cvoid}, _pick(DATASETS, dataset, "dataset")::Cint, rng::Ref{Rng}, n::Csize_t,
        x::Ptr{Float32}, y::Ptr{Float32})::Cint
    _check(st, h, :nwattn_dataset_generate)
    return x, y
end

"""`nwattn_dataset_truth`: the data set's noise-free function at x."""
function dataset_truth(dataset, x::AbstractVector; ctx::Context = default_context())
    xs = Vector{Float32}(x)
    f = similar(xs)
    h = _h(ctx)
    st = @ccall $(_sym(:nwattn_dataset_truth))(
        h::Ptr{Cvoid}, _pick(DATASETS, dataset, "dataset")::Cint, length(xs)::Csize_t,
        xs::Ptr{Float32}, f::Ptr{Float32})::Cint
    _check(st, h, :nwattn_dataset_truth)
    return f
end

end # module
