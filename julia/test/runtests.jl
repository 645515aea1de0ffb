# Tests of the NWAttn wrappers against plain-loop Float64 implementations of the formulas,
# in Julia's layout (items as columns). Run: NWATTN_LIBRARY=build/src julia --project=julia -e 'using Pkg; Pkg.test()'
using Test
using NWAttn

# ---- The oracle: S[j, i] = score(Q[:, i], K[:, j]); softmax over each column ---------------

function ref_scores(Q, K; kind = :dot, scale = nothing, h = 1.0)
    d, m = size(Q)
    n = size(K, 2)
    S = zeros(n, m)
    for i in 1:m, j in 1:n
        if kind == :dot
            S[j, i] = (scale === nothing ? 1 / sqrt(d) : scale) * sum(Float64(Q[t, i]) * K[t, j] for t in 1:d)
        else
            sq = sum(((Float64(Q[t, i]) - K[t, j]) / (h isa Number ? h : h[t]))^2 for t in 1:d)
            S[j, i] = kind == :gaussian ? -sq / 2 : -sqrt(sq)
        end
    end
    return S
end

function ref_softmax(S; ok = trues(size(S)))
    n, m = size(S)
    W = zeros(n, m)
    lse = fill(-Inf, m)
    for i in 1:m
        keys = [j for j in 1:n if ok[j, i] && S[j, i] != -Inf]
        isempty(keys) && continue
        top = maximum(S[j, i] for j in keys)
        total = sum(exp(S[j, i] - top) for j in keys)
        for j in keys
            W[j, i] = exp(S[j, i] - top) / total
        end
        lse[i] = log(total) + top
    end
    return W, lse
end

ref_pool(Q, K, V; ok = trues(size(K, 2), size(Q, 2)), kw...) =
    (W = ref_softmax(ref_scores(Q, K; kw...); ok = ok)[1]; (Float64.(V) * W, W))

tol(ctx) = NWAttn.backend(ctx) == :reference ? 2e-6 : 5e-5
close_to(a, b, t) = size(a) == size(b) && all(abs.(Float64.(a) .- b) .<= t .* (1 .+ abs.(b)))

rnd(dims...) = 2 .* rand(Float32, dims...) .- 1

@testset "NWAttn" begin
    @test NWAttn.version() == "0.1.0"
    @test NWAttn.version_number() == 100
    @test !isempty(NWAttn.library_path[])

    for b in (:auto, :reference, :blas)
        Context(b) do ctx
            @testset "backend $b" begin
                @test backend(ctx) == b
                t = tol(ctx)
                for (d, m, n, dv) in ((1, 1, 1, 1), (3, 7, 5, 2), (8, 33, 17, 1))
                    Q, K, V = rnd(d, m), rnd(d, n), rnd(dv, n)
                    for (kind, kw) in ((:dot, (scale = 0.7,)), (:gaussian, (bandwidth = 0.8,)),
                                       (:laplace, (bandwidth = 1.3,)))
                        S = scores(Q, K; score = kind, ctx = ctx, kw...)
                        h = kind == :dot ? 1.0 : kw.bandwidth
                        sc = kind == :dot ? kw.scale : nothing
                        @test close_to(S, ref_scores(Q, K; kind = kind, scale = sc, h = h), t * d)
                        O, W, lse = pool(Q, K, V; score = kind, weights = true, lse = true,
                                         ctx = ctx, kw...)
                        RO, RW = ref_pool(Q, K, V; kind = kind, scale = sc, h = h)
                        @test close_to(O, RO, t)
                        @test close_to(W, RW, t)
                        @test size(lse) == (m,)
                    end
                end

                # softmax with every kind of mask, per item and per query lengths
                n = m = 6
                S = 3 .* rnd(n, m, 2)
                lens = [2, 6]
                W, lse = softmax(S; valid_lens = lens, causal = true, lse = true, ctx = ctx)
                for item in 1:2
                    ok = [j <= lens[item] && j <= i for j in 1:n, i in 1:m]
                    RW, Rl = ref_softmax(Float64.(S[:, :, item]); ok = ok)
                    @test close_to(W[:, :, item], RW, t)
                    @test all(W[:, :, item][.!ok] .== 0)
                end
                rows = [1 6; 2 5; 3 4; 4 3; 5 2; 6 1]  # m×batch: one length per query
                W = softmax(S; valid_lens = rows, leave_one_out = true, ctx = ctx)
                ok = [j <= rows[i, 2] && j != i for j in 1:n, i in 1:m]
                @test close_to(W[:, :, 2], ref_softmax(Float64.(S[:, :, 2]); ok = ok)[1], t)
                keep = rand(Bool, n, m)
                additive = rnd(n, m)
                W = softmax(S[:, :, 1]; keep = keep, additive = additive, ctx = ctx)
                @test close_to(W, ref_softmax(Float64.(S[:, :, 1]) .+ additive; ok = keep)[1], t)
                W, lse = softmax(zeros(Float32, 4, 3); valid_lens = 0, lse = true, ctx = ctx)
                @test all(W .== 0) && all(lse .== -Inf)

                # bmm is batched_mul: Z[:, :, b] = X[:, :, b] * Y[:, :, b]
                X, Y = rnd(4, 3, 2), rnd(3, 5, 2)
                Z = bmm(X, Y; ctx = ctx)
                @test size(Z) == (4, 5, 2)
                for item in 1:2
                    @test close_to(Z[:, :, item], Float64.(X[:, :, item]) * Float64.(Y[:, :, item]), t * 3)
                end
                @test size(bmm(ones(Float32, 2, 1, 4), ones(Float32, 1, 6); ctx = ctx)) == (2, 6, 4)

                # average pooling: each output column is the mean of the kept columns of V
                V = rnd(3, 5)
                O = average_pool(V, 4; ctx = ctx)
                @test close_to(O, repeat(sum(Float64.(V); dims = 2) ./ 5, 1, 4), t)
                O = average_pool(V, 4; valid_lens = 2, ctx = ctx)
                @test close_to(O, repeat(sum(Float64.(V[:, 1:2]); dims = 2) ./ 2, 1, 4), t)

                # batches: K and V shared (no batch dimensions) by a batch of queries
                Q = rnd(2, 3, 4)
                K, V = rnd(2, 5), rnd(3, 5)
                O = pool(Q, K, V; ctx = ctx)
                for item in 1:4
                    @test close_to(O[:, :, item], ref_pool(Q[:, :, item], K, V)[1], t)
                end
            end
        end
    end

    @testset "the seeds' formulas" begin
        # d2l: softmax(-(x - x_i)^2 / 2) · y; seed 1: exp(-(x - x_i)^2 / (2h^2)), normalised
        x_train = sort(5 .* rand(Float32, 50))
        y_train = 2 .* sin.(x_train) .+ x_train .^ 0.8f0 .+ 0.5f0 .* randn(Float32, 50)
        x_test = Float32.(0:0.1:4.9)
        for h in (0.5, 1.0, 10.0)
            y_hat = pool(x_test', x_train', y_train'; score = :gaussian, bandwidth = h)
            e = [exp(-(Float64(x) - xi)^2 / (2h^2)) for xi in x_train, x in x_test]
            want = (Float64.(y_train)' * e) ./ sum(e; dims = 1)
            @test close_to(y_hat, want, 5e-5)
        end
        # d2l's average pooling
        @test close_to(average_pool(y_train', 50), fill(sum(Float64.(y_train)) / 50, 1, 50), 5e-5)
    end

    @testset "layouts: views without copies, conversions, refusals" begin
        big = rnd(10, 8)
        Q = view(big, 3:5, :)          # 3×8 with leading dimension 10: passed as it is
        K, V = rnd(3, 4), rnd(2, 4)
        @test NWAttn._layout(Q) == (10, 0)
        # an output overlapping the input is refused by the C library: it saw the view's memory
        err = try
            pool(Q, K, V; out = view(big, 7:8, :)); nothing
        catch e
            e
        end
        @test err isa NWAttnError && err.name == "NWATTN_ERR_ALIASING"
        @test close_to(pool(Q, K, V), ref_pool(Q, K, V)[1], 5e-5)
        # converted: Float64, integers, transposes (a permuted layout is copied)
        @test close_to(pool(Float64.(Q), K, V), ref_pool(Q, K, V)[1], 5e-5)
        @test bmm([1 2; 3 4], [1 1; 1 1]) == Float32[3 3; 7 7]
        Qt = permutedims(Q)'           # an Adjoint: not strided with unit first stride
        @test close_to(pool(Qt, K, V), ref_pool(Q, K, V)[1], 5e-5)
        # refused
        @test_throws ArgumentError pool(trues(3, 8), K, V)
        @test_throws ArgumentError pool(Q, K, V; out = zeros(Float64, 2, 8))
        @test_throws DimensionMismatch pool(Q, K, V; out = zeros(Float32, 2, 7))
        @test_throws DimensionMismatch pool(Q, rnd(2, 4), V)
        @test_throws ArgumentError pool(Q, K, V; bandwidth = 0.5)   # :dot takes no bandwidth
        @test_throws ArgumentError pool(Q, K, V; score = :cosine)
    end

    @testset "errors carry the C message and leave outputs untouched" begin
        Q, K, V = rnd(2, 3), rnd(2, 4), rnd(1, 4)
        out = fill(42f0, 1, 3)
        for (call, name) in (
                (() -> pool(Q, K, V; score = :gaussian, bandwidth = -1, out = out), "NWATTN_ERR_BAD_PARAMETER"),
                (() -> pool(Q, K, V; valid_lens = 9, out = out), "NWATTN_ERR_BAD_MASK"),
                (() -> pool(zeros(Float32, 0, 3), zeros(Float32, 0, 4), V; out = out), "NWATTN_ERR_BAD_DIMENSION"),
                (() -> pool(Q, K, V; score = 7, out = out), "NWATTN_ERR_BAD_ENUM"))
            err = try
                call(); nothing
            catch e
                e
            end
            @test err isa NWAttnError
            @test err.name == name
            @test startswith(err.message, name * ": ")
            @test all(out .== 42f0)
        end
        Context() do ctx
            @test_throws NWAttnError backend!(ctx, 7)
            @test occursin("unknown backend", last_error(ctx))
            @test_throws ArgumentError backend!(ctx, :gpu)
        end
    end

    @testset "contexts" begin
        ctx = Context(:reference)
        @test backend(ctx) == :reference
        @test workspace_bytes(ctx) == 0
        X = rnd(3, 64)
        pool(X, X, X; ctx = ctx)
        @test workspace_bytes(ctx) > 0
        release_workspace!(ctx)
        @test workspace_bytes(ctx) == 0
        close(ctx)
        @test !isopen(ctx)
        close(ctx)                      # idempotent
        @test_throws ArgumentError pool(X, X, X; ctx = ctx)
        @test default_context() === default_context()
        other = fetch(Threads.@spawn default_context())
        @test other !== default_context()
    end

    @testset "transformer module" begin
        # positional encoding: column i is position first + i - 1
        P = positional_encoding(5, 7; first = 3)
        @test size(P) == (7, 5)
        for i in 1:5, c in 1:7
            p = 3 + i - 1
            j = (c - 1) ÷ 2
            want = isodd(c) ? sin(p / 10000^(2j / 7)) : cos(p / 10000^(2j / 7))
            @test abs(P[c, i] - want) <= 1e-6
        end

        # attention: two heads with Flux-style weights, against a per-head loop
        d_in, d_qk, d_v, d_out, t, heads = 6, 4, 4, 3, 5, 2
        X = rnd(d_in, t, 2)
        Wq, Wk, Wv, Wo = rnd(d_qk, d_in), rnd(d_qk, d_in), rnd(d_v, d_in), rnd(d_out, d_v)
        bq, bk, bv, bo = rnd(d_qk), rnd(d_qk), rnd(d_v), rnd(d_out)
        for b in (:reference, :blas, :fused)
            Context(b) do ctx
                Y, W = attention(X; Wq = Wq, Wk = Wk, Wv = Wv, Wo = Wo, bq = bq, bk = bk,
                                 bv = bv, bo = bo, heads = heads, causal = true,
                                 weights = true, ctx = ctx)
                @test size(Y) == (d_out, t, 2) && size(W) == (t, t, heads, 2)
                for item in 1:2
                    x = Float64.(X[:, :, item])
                    Q, K, V = Wq * x .+ bq, Wk * x .+ bk, Wv * x .+ bv
                    dh = d_qk ÷ heads
                    heads_out = Matrix{Float64}[]
                    for hd in 1:heads
                        r = (hd - 1) * dh + 1:hd * dh
                        ok = [j <= i for j in 1:t, i in 1:t]
                        A, _ = ref_softmax(ref_scores(Q[r, :], K[r, :]); ok = ok)
                        @test close_to(W[:, :, hd, item], A, 5e-5)
                        push!(heads_out, V[r, :] * A)
                    end
                    @test close_to(Y[:, :, item], Float64.(Wo) * vcat(heads_out...) .+ bo, 5e-5)
                end
            end
        end

        # partial states: two shards of the keys merged give the pooling
        Q, K, V = rnd(3, 6), rnd(3, 9), rnd(2, 9)
        whole = pool(Q, K, V; score = :gaussian, causal = true)
        s1 = pool_partial(Q, K[:, 1:4], V[:, 1:4]; score = :gaussian, causal = true)
        s2 = pool_partial(Q, K[:, 5:9], V[:, 5:9]; key_offset = 4, score = :gaussian,
                          causal = true)
        total = merge_states!(merge_states!(PoolState(2, 6), s2), s1)
        @test close_to(finish_state(total), Float64.(whole), 1e-4)

        Context(:fused) do ctx
            threads!(ctx, 2)
            @test threads(ctx) == 2
            @test_throws NWAttnError threads!(ctx, 0)
            Q, K, V = rnd(8, 130), rnd(8, 300), rnd(5, 300)
            @test close_to(pool(Q, K, V; ctx = ctx), ref_pool(Q, K, V)[1], 1e-4)
        end
    end

    @testset "Nadaraya-Watson regression" begin
        r1, r2 = Rng(7), Rng(7)
        @test [next!(r1) for _ in 1:3] == [next!(r2) for _ in 1:3]
        @test next!(Rng(0)) == 0xe220a8397b1dcdaf  # SplitMix64's first value from seed 0
        x, y = dataset_generate(:d2l, 50, Rng(1322))
        @test issorted(x) && length(y) == 50
        xq = Float32.(0:0.1:4.9)
        @test maximum(abs.(dataset_truth(:d2l, xq) .- (2 .* sin.(xq) .+ xq .^ 0.8f0))) < 1e-5

        # local constant Gaussian: softmax weights, columns sum to 1
        yq, W = nw_predict(xq, x, y, 0.7; weights = true)
        e = [exp(-((Float64(q) - xi) / 0.7)^2 / 2) for xi in x, q in xq]
        want = (Float64.(y)' * e) ./ sum(e; dims = 1)
        @test maximum(abs.(yq .- vec(want))) < 1e-4
        @test all(abs.(sum(W; dims = 1) .- 1) .< 1e-5)
        # local linear reproduces a line, also beyond the data
        xl = Float32.(collect(0.5:0.25:4.0))
        @test maximum(abs.(nw_predict(Float32[1.0, 2.2], xl, 3 .* xl .- 1, 0.7; degree = :linear) .-
                           Float32[2.0, 5.6])) < 1e-4
        # empty rows of a compact kernel
        p, flags = nw_predict(Float32[10.0], x, y, 0.1; kernel = :uniform, empty = :zero,
                              row_flags = true)
        @test p == Float32[0.0] && flags == UInt8[NWAttn.ROW_EMPTY]

        # exact leave-one-out CV against refitting without each point
        function loo(h)
            s = 0.0
            for i in eachindex(x)
                keep = [j for j in eachindex(x) if j != i]
                k = [exp(-((Float64(x[i]) - x[j]) / h)^2 / 2) for j in keep]
                s += (sum(k .* y[keep]) / sum(k) - y[i])^2
            end
            return s / length(x)
        end
        cv, g = nw_cv(x, y, [0.3, 0.6]; gradient = true)
        @test abs(cv[1] - loo(0.3)) < 1e-4 * loo(0.3) && abs(cv[2] - loo(0.6)) < 1e-4 * loo(0.6)
        @test size(g) == (1, 2)
        sel = select_bandwidth(x, y)
        @test sel.converged && sel.cv <= minimum(nw_cv(x, y, collect(0.05:0.01:2.0))) + 1e-7
        @test cv_options_default().grid_points == 16
        @test length(bandwidth_rule_of_thumb(x, :silverman)) == 1

        # d2l's learnable w: training takes the steps wmodel_evaluate's gradient gives
        w, losses = wmodel_train(x, y, 0.7; learning_rate = 0.5, epochs = 3)
        wv = 0.7f0
        for epoch in 1:3
            r = wmodel_evaluate(wv, x, x, y; target = y, leave_one_out = true)
            @test abs(losses[epoch] - r.loss) <= 1e-6 * r.loss
            wv = Float32(wv - 0.5 * r.grad)
        end
        @test abs(w - wv) <= 1e-5 * abs(wv)
        r = wmodel_evaluate(w, xq, x, y; weights = true)
        entropy, n_eff = weights_diagnostics(r.weights)
        @test length(entropy) == 50 && all(0 .<= entropy .<= log(50) + 1e-5)
        @test all(1 .- 1e-4 .<= n_eff .<= 50 + 1e-3)

        err = try
            nw_predict(xq, Float32[], Float32[], 1.0); nothing
        catch e
            e
        end
        @test err isa NWAttnError && err.name == "NWATTN_ERR_DEGENERATE_DATA"
        @test_throws ArgumentError nw_predict(xq, x, y, 1.0; kernel = :cosine)
    end
end
