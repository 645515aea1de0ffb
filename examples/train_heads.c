/*
 * train_heads — the seeds' training experiments with the library's forward and backward
 * passes (nwattn_attention / nwattn_attention_backward, nwattn_pool / nwattn_pool_backward).
 *
 *   train_heads [OUTDIR] [quick]      (then: /usr/bin/python3 examples/plot_train_heads.py OUTDIR)
 *
 * 1. Heads that specialise (seed 1, §3.4 and §4.1): a 4-head self-attention layer with
 *    sinusoidal positions learns, from sequences of 6 random tokens, to output the token one
 *    place to the left and the token three places to the right (cyclically): two heads must
 *    look at different offsets. Per-head heatmaps of sequence 0 before and after training
 *    (heads_before.csv, heads_after_*.csv), the per-head entropy of the weights over training
 *    (entropy_*.csv), once with the fixed scale 1/sqrt(d_k) and once with a learnable
 *    temperature (the score's scale, trained with the rest through grads.d_score). The
 *    projections start small, so every head starts near uniform (entropy near ln 10).
 * 2. §4.3: loss curves with and without the 1/sqrt(d_k) scale at three learning rates
 *    (scale_lr.csv).
 * 3. Seed 2's exercise: a learnable Laplace (exponential decay) pooling and a learnable-
 *    bandwidth Gaussian next to d2l's w model, trained on d2l's data with leave-one-out keys
 *    (bandwidth gradients from nwattn_pool_backward's d_bandwidth); their test weights
 *    (pool_weights_*.csv) and loss curves (pool_loss.csv).
 * Everything printed says what it shows. Adam (Kingma and Ba) on full batches; deterministic.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nwattn.h>

enum { VOCAB = 6, T = 10, E = 16, HEADS = 4, DOUT = 2 * VOCAB, BATCH = 64 };
#define DH (E / HEADS)

#define CHECK(ctx, expr)                                                                  \
    do {                                                                                  \
        nwattn_status s_ = (expr);                                                        \
        if (s_ != NWATTN_OK) {                                                            \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, nwattn_status_name(s_), \
                    nwattn_context_last_error(ctx));                                      \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static FILE *open_out(const char *dir, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    return f;
}

/* ---- Adam --------------------------------------------------------------------------------- */
typedef struct adam {
    size_t n, t;
    float *m, *v;
} adam;

static adam adam_new(size_t n) {
    adam a = {n, 0, calloc(n, sizeof(float)), calloc(n, sizeof(float))};
    return a;
}

static void adam_step(adam *a, float *x, const float *g, float lr) {
    a->t++;
    const double b1 = 0.9, b2 = 0.999, c1 = 1.0 - pow(b1, (double)a->t),
                 c2 = 1.0 - pow(b2, (double)a->t);
    for (size_t i = 0; i < a->n; i++) {
        a->m[i] = (float)(b1 * a->m[i] + (1 - b1) * g[i]);
        a->v[i] = (float)(b2 * a->v[i] + (1 - b2) * (double)g[i] * g[i]);
        x[i] -= (float)(lr * (a->m[i] / c1) / (sqrt(a->v[i] / c2) + 1e-8));
    }
}

/* ---- 1 and 2: the copy-from-offset task ------------------------------------------------------ */
typedef struct task {
    float x[BATCH][T][E];      /* token embedding + position */
    float target[BATCH][T][DOUT];
    int tokens[BATCH][T];
} task;

static void make_task(nwattn_context *ctx, task *tk) {
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 2026);
    float embed[VOCAB][E], pe[T][E];
    for (int v = 0; v < VOCAB; v++)
        for (int c = 0; c < E; c++)
            embed[v][c] = (float)nwattn_rng_normal(&rng);
    CHECK(ctx, nwattn_positional_encoding(ctx, T, E, 0, &pe[0][0], E));
    memset(tk->target, 0, sizeof tk->target);
    for (int b = 0; b < BATCH; b++) {
        for (int i = 0; i < T; i++)
            tk->tokens[b][i] = (int)(nwattn_rng_next(&rng) % VOCAB);
        for (int i = 0; i < T; i++) {
            for (int c = 0; c < E; c++)
                tk->x[b][i][c] = embed[tk->tokens[b][i]][c] + pe[i][c];
            tk->target[b][i][tk->tokens[b][(i + T - 1) % T]] = 1.0f;          /* left 1 */
            tk->target[b][i][VOCAB + tk->tokens[b][(i + 3) % T]] = 1.0f;      /* right 3 */
        }
    }
}

typedef struct layer {
    float w[4][E * E]; /* w_q, w_k, w_v (E × E), w_o (DOUT × E, in the first DOUT·E) */
    float scale;
} layer;

/* Normal weights of variance spread^2 / E for w_q and w_k (the scores' size), 1 / E for w_v
 * and w_o. */
static void init_layer(layer *l, float spread, uint64_t seed) {
    nwattn_rng rng;
    nwattn_rng_seed(&rng, seed);
    memset(l, 0, sizeof *l);
    for (int p = 0; p < 4; p++)
        for (int i = 0; i < (p == 3 ? DOUT * E : E * E); i++)
            l->w[p][i] = (float)((p < 2 ? spread : 1.0) * nwattn_rng_normal(&rng) /
                                 sqrt((double)E));
    l->scale = (float)(1.0 / sqrt((double)DH));
}

static nwattn_attention_params params_of(const layer *l) {
    nwattn_attention_params p = {HEADS, E, E, E, E, E, DOUT, l->w[0], l->w[1], l->w[2], l->w[3],
                                 NULL, NULL, NULL, NULL};
    return p;
}

/* Loss (mean squared error) and, with dy, its gradient dL/dY; weights (optional) for heatmaps. */
static double forward(nwattn_context *ctx, const layer *l, const task *tk, float *y,
                      float *dy, float *weights) {
    const nwattn_attention_params p = params_of(l);
    const nwattn_score sc = {NWATTN_SCORE_DOT, l->scale, 0.0f, NULL};
    CHECK(ctx, nwattn_attention(ctx, &p, &sc, NULL, BATCH, T, T, &tk->x[0][0][0], E, T * E,
                                &tk->x[0][0][0], E, T * E, &tk->x[0][0][0], E, T * E, y, DOUT,
                                T * DOUT, weights, T, HEADS * T * T));
    double loss = 0.0;
    const float *target = &tk->target[0][0][0];
    const double count = (double)BATCH * T;
    for (size_t i = 0; i < (size_t)BATCH * T * DOUT; i++) {
        const double r = (double)y[i] - (double)target[i];
        loss += r * r / count;
        if (dy != NULL)
            dy[i] = (float)(2.0 * r / count);
    }
    return loss;
}

/* Mean entropy (nats) of each head's rows over the batch. */
static void head_entropy(nwattn_context *ctx, const float *weights, double out[HEADS]) {
    static float ent[BATCH * HEADS * T];
    CHECK(ctx, nwattn_weights_diagnostics(ctx, (size_t)BATCH * HEADS * T, T, weights, T, ent,
                                          NULL));
    for (int h = 0; h < HEADS; h++) {
        double sum = 0.0;
        for (int b = 0; b < BATCH; b++)
            for (int i = 0; i < T; i++)
                sum += ent[(b * HEADS + h) * T + i];
        out[h] = sum / (BATCH * T);
    }
}

static void write_heatmap(const char *dir, const char *name, const float *weights) {
    FILE *f = open_out(dir, name);
    fprintf(f, "head,query,key,weight\n");
    for (int h = 0; h < HEADS; h++)
        for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++)
                fprintf(f, "%d,%d,%d,%.6f\n", h, i, j, weights[(h * T + i) * T + j]);
    fclose(f);
}

/* The key offset (j - i mod T) each head weighs most, averaged over sequence 0's rows. */
static void describe_heads(const float *weights, const double ent[HEADS]) {
    for (int h = 0; h < HEADS; h++) {
        double by_offset[T] = {0};
        for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++)
                by_offset[(j - i + T) % T] += weights[(h * T + i) * T + j] / T;
        int best = 0;
        for (int o = 1; o < T; o++)
            best = by_offset[o] > by_offset[best] ? o : best;
        printf("    head %d: entropy %.2f nats (uniform: %.2f), mean weight %.2f on offset %+d\n",
               h, ent[h], log((double)T), by_offset[best], best > T / 2 ? best - T : best);
    }
}

/* Trains a layer; returns the final loss. loss_csv/entropy_csv (optional) get the curves. */
static double train(nwattn_context *ctx, layer *l, const task *tk, int steps, float lr,
                    int learn_scale, FILE *loss_csv, const char *tag, FILE *entropy_csv) {
    static float y[BATCH * T * DOUT], dy[BATCH * T * DOUT], weights[BATCH * HEADS * T * T];
    layer g;
    adam opt[4] = {adam_new(E * E), adam_new(E * E), adam_new(E * E), adam_new(DOUT * E)};
    adam opt_scale = adam_new(1);
    double loss = 0.0;
    for (int step = 0; step <= steps; step++) {
        loss = forward(ctx, l, tk, y, dy, entropy_csv ? weights : NULL);
        if (loss_csv != NULL)
            fprintf(loss_csv, "%s,%d,%.6f\n", tag, step, loss);
        if (entropy_csv != NULL && step % 5 == 0) {
            double ent[HEADS];
            head_entropy(ctx, weights, ent);
            fprintf(entropy_csv, "%d,%.6f,%.4f", step, loss, l->scale);
            for (int h = 0; h < HEADS; h++)
                fprintf(entropy_csv, ",%.4f", ent[h]);
            fprintf(entropy_csv, "\n");
        }
        if (step == steps || !isfinite(loss))
            break;
        const nwattn_attention_params p = params_of(l);
        const nwattn_score sc = {NWATTN_SCORE_DOT, l->scale, 0.0f, NULL};
        nwattn_attention_grads gr = {0};
        gr.dw_q = g.w[0], gr.dw_k = g.w[1], gr.dw_v = g.w[2], gr.dw_o = g.w[3];
        gr.d_score = &g.scale;
        CHECK(ctx, nwattn_attention_backward(ctx, &p, &sc, NULL, BATCH, T, T, &tk->x[0][0][0], E,
                                             T * E, &tk->x[0][0][0], E, T * E, &tk->x[0][0][0],
                                             E, T * E, dy, DOUT, T * DOUT, &gr));
        for (int k = 0; k < 4; k++)
            adam_step(&opt[k], l->w[k], g.w[k], lr);
        if (learn_scale)
            adam_step(&opt_scale, &l->scale, &g.scale, lr);
    }
    for (int k = 0; k < 4; k++)
        free(opt[k].m), free(opt[k].v);
    free(opt_scale.m), free(opt_scale.v);
    return loss;
}

static void heads_experiment(nwattn_context *ctx, const task *tk, const char *dir, int steps) {
    static float y[BATCH * T * DOUT], weights[BATCH * HEADS * T * T];
    printf("1. Heads that specialise: targets are the tokens at offsets -1 and +3.\n");
    layer start;
    init_layer(&start, 0.1f, 7); /* small scores: every head starts near uniform */
    forward(ctx, &start, tk, y, NULL, weights);
    write_heatmap(dir, "heads_before.csv", weights);
    double ent[HEADS];
    head_entropy(ctx, weights, ent);
    printf("  before training (w_q, w_k 0.1 of the usual size):\n");
    describe_heads(weights, ent);
    for (int learn = 0; learn < 2; learn++) {
        layer l = start;
        FILE *ecsv = open_out(dir, learn ? "entropy_learned_scale.csv" : "entropy_fixed_scale.csv");
        fprintf(ecsv, "step,loss,scale,head0,head1,head2,head3\n");
        const double loss = train(ctx, &l, tk, steps, 0.01f, learn, NULL, NULL, ecsv);
        fclose(ecsv);
        forward(ctx, &l, tk, y, NULL, weights);
        write_heatmap(dir, learn ? "heads_after_learned_scale.csv" : "heads_after_fixed_scale.csv",
                      weights);
        head_entropy(ctx, weights, ent);
        printf("  after %d Adam steps, %s: loss %.4f, scale %.3f\n", steps,
               learn ? "learnable temperature" : "fixed scale 1/sqrt(d_k)", loss, l.scale);
        describe_heads(weights, ent);
    }
}

static void scale_experiment(nwattn_context *ctx, const task *tk, const char *dir, int steps) {
    printf("2. The 1/sqrt(d_k) scale and the learning rate (seed 1, section 4.3), w_q and w_k "
           "3 times the usual size:\n");
    FILE *csv = open_out(dir, "scale_lr.csv");
    fprintf(csv, "run,step,loss\n");
    const float lrs[3] = {0.003f, 0.01f, 0.03f};
    for (int scaled = 1; scaled >= 0; scaled--)
        for (int r = 0; r < 3; r++) {
            layer l;
            init_layer(&l, 3.0f, 11);
            l.scale = scaled ? (float)(1.0 / sqrt((double)DH)) : 1.0f;
            char tag[64];
            snprintf(tag, sizeof tag, "%s lr=%g", scaled ? "scale 1/sqrt(d_k)" : "scale 1", lrs[r]);
            const double loss = train(ctx, &l, tk, steps, lrs[r], 0, csv, tag, NULL);
            printf("  %-26s final loss %.4f\n", tag, loss);
        }
    fclose(csv);
}

/* ---- 3: learnable poolings on d2l's data ------------------------------------------------- */
enum { NTRAIN = 50, NTEST = 50 };

static void pool_experiment(nwattn_context *ctx, const char *dir, int steps) {
    printf("3. Seed 2's exercise: learnable-bandwidth Gaussian and Laplace pooling next to d2l's w "
           "model (leave-one-out training on d2l's data):\n");
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 1);
    float x[NTRAIN], y[NTRAIN], xt[NTEST];
    CHECK(ctx, nwattn_dataset_generate(ctx, NWATTN_DATASET_D2L, &rng, NTRAIN, x, y));
    for (int i = 0; i < NTEST; i++)
        xt[i] = 5.0f * (float)i / NTEST;
    FILE *loss_csv = open_out(dir, "pool_loss.csv");
    fprintf(loss_csv, "model,epoch,loss\n");
    const nwattn_mask loo = {NWATTN_MASK_LEAVE_ONE_OUT, NULL, NULL, 0, 0, NULL, 0, 0};
    const nwattn_score_kind kinds[2] = {NWATTN_SCORE_GAUSSIAN, NWATTN_SCORE_LAPLACE};
    const char *names[3] = {"gaussian_h", "laplace_h", "d2l_w"};
    float weights[NTEST * NTRAIN];
    for (int m = 0; m < 2; m++) {
        float log_h = 0.0f; /* h = 1 to start; gradient descent on log h */
        float o[NTRAIN], lse[NTRAIN], d_o[NTRAIN], dq[NTRAIN], dk[NTRAIN], dv[NTRAIN], dh = 0;
        double loss = 0.0;
        adam opt = adam_new(1);
        for (int epoch = 0; epoch <= steps; epoch++) {
            const nwattn_score sc = {kinds[m], 0.0f, expf(log_h), NULL};
            CHECK(ctx, nwattn_pool(ctx, &sc, &loo, 1, NTRAIN, NTRAIN, 1, 1, x, 1, 0, x, 1, 0, y,
                                   1, 0, o, 1, 0, NULL, 0, 0, lse, 0));
            loss = 0.0;
            for (int i = 0; i < NTRAIN; i++) {
                d_o[i] = o[i] - y[i];
                loss += 0.5 * (double)d_o[i] * d_o[i];
            }
            fprintf(loss_csv, "%s,%d,%.6f\n", names[m], epoch, loss);
            if (epoch == steps)
                break;
            const nwattn_pool_upstream up = {o, 1, 0, lse, 0, d_o, 1, 0};
            const nwattn_pool_grads g = {dq, 1, 0, dk, 1, 0, dv, 1, 0,
                                         NULL, &dh, NULL, NULL, 0, 0};
            CHECK(ctx, nwattn_pool_backward(ctx, &sc, &loo, 1, NTRAIN, NTRAIN, 1, 1, x, 1, 0, x, 1,
                                            0, y, 1, 0, &up, &g));
            const float d_log_h = dh * expf(log_h);
            adam_step(&opt, &log_h, &d_log_h, 0.05f);
        }
        free(opt.m), free(opt.v);
        const nwattn_score sc = {kinds[m], 0.0f, expf(log_h), NULL};
        float yt[NTEST];
        CHECK(ctx, nwattn_pool(ctx, &sc, NULL, 1, NTEST, NTRAIN, 1, 1, xt, 1, 0, x, 1, 0, y, 1, 0,
                               yt, 1, 0, weights, NTRAIN, 0, NULL, 0));
        char name[64];
        snprintf(name, sizeof name, "pool_weights_%s.csv", names[m]);
        FILE *f = open_out(dir, name);
        for (int i = 0; i < NTEST; i++)
            for (int j = 0; j < NTRAIN; j++)
                fprintf(f, "%.6f%s", weights[i * NTRAIN + j], j + 1 < NTRAIN ? "," : "\n");
        fclose(f);
        printf("  %-9s trained h = %.3f, leave-one-out loss %.3f\n",
               m ? "Laplace" : "Gaussian", expf(log_h), loss);
    }
    /* d2l's model with its own training loop, for comparison */
    float w = 1.0f;
    double curve[1024];
    const nwattn_sgd sgd = {0.5f, (size_t)steps};
    CHECK(ctx, nwattn_wmodel_train(ctx, &sgd, NTRAIN, 1, 1, x, 1, y, 1, &w, curve));
    for (int e = 0; e < steps; e++)
        fprintf(loss_csv, "d2l_w,%d,%.6f\n", e, curve[e]);
    fclose(loss_csv);
    CHECK(ctx, nwattn_wmodel_evaluate(ctx, w, NULL, NTEST, NTRAIN, 1, 1, xt, 1, x, 1, y, 1, NULL,
                                      0, NULL, 0, weights, NTRAIN, NULL, NULL));
    FILE *f = open_out(dir, "pool_weights_d2l_w.csv");
    for (int i = 0; i < NTEST; i++)
        for (int j = 0; j < NTRAIN; j++)
            fprintf(f, "%.6f%s", weights[i * NTRAIN + j], j + 1 < NTRAIN ? "," : "\n");
    fclose(f);
    printf("  d2l's w   trained w = %.3f (h = 1/w = %.3f), loss %.3f (its SGD, lr 0.5)\n", w,
           1.0 / fabs(w), curve[steps - 1]);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : ".";
    const int quick = argc > 2 && strcmp(argv[2], "quick") == 0;
    nwattn_context *ctx;
    if (nwattn_context_create(&ctx) != NWATTN_OK)
        return 1;
    static task tk;
    make_task(ctx, &tk);
    heads_experiment(ctx, &tk, dir, quick ? 3 : 600);
    scale_experiment(ctx, &tk, dir, quick ? 1 : 300);
    pool_experiment(ctx, dir, quick ? 3 : 200);
    nwattn_context_destroy(ctx);
    return 0;
}
