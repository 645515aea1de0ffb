/* The loops a user would write without this library: plain C, expf, the softmax in two passes
 * (row maximum, then exponentials, sum and weighted sum), one thread. They are the baseline
 * of every "x naive" ratio; compiled with the project's flags (no -ffast-math). */
#include "bench.h"

#include <math.h>

void naive_nw(size_t m, size_t n, size_t d, float h, const float *q, const float *k,
              const float *v, float *o) {
    const float c = -0.5f / (h * h);
    for (size_t i = 0; i < m; i++) {
        const float *qi = q + i * d;
        float max = -INFINITY;
        for (size_t j = 0; j < n; j++) {
            float dist = 0.0f;
            for (size_t p = 0; p < d; p++) {
                float t = qi[p] - k[j * d + p];
                dist += t * t;
            }
            float s = c * dist;
            max = s > max ? s : max;
        }
        float sum = 0.0f, acc = 0.0f;
        for (size_t j = 0; j < n; j++) {
            float dist = 0.0f;
            for (size_t p = 0; p < d; p++) {
                float t = qi[p] - k[j * d + p];
                dist += t * t;
            }
            float e = expf(c * dist - max);
            sum += e;
            acc += e * v[j];
        }
        o[i] = acc / sum;
    }
}

void naive_sdpa(size_t m, size_t n, size_t d, size_t dv, int causal, const float *q,
                const float *k, const float *v, float *o) {
    const float scale = 1.0f / sqrtf((float)d);
    for (size_t i = 0; i < m; i++) {
        const float *qi = q + i * d;
        float *oi = o + i * dv;
        const size_t keys = causal && i + 1 < n ? i + 1 : n;
        float max = -INFINITY;
        for (size_t j = 0; j < keys; j++) {
            float s = 0.0f;
            for (size_t p = 0; p < d; p++)
                s += qi[p] * k[j * d + p];
            s *= scale;
            max = s > max ? s : max;
        }
        for (size_t c = 0; c < dv; c++)
            oi[c] = 0.0f;
        float sum = 0.0f;
        for (size_t j = 0; j < keys; j++) {
            float s = 0.0f;
            for (size_t p = 0; p < d; p++)
                s += qi[p] * k[j * d + p];
            float e = expf(s * scale - max);
            sum += e;
            for (size_t c = 0; c < dv; c++)
                oi[c] += e * v[j * dv + c];
        }
        for (size_t c = 0; c < dv; c++)
            oi[c] /= sum;
    }
}

void naive_linear(size_t rows, size_t out, size_t in, const float *x, const float *w,
                  const float *b, float *y) {
    for (size_t i = 0; i < rows; i++)
        for (size_t o = 0; o < out; o++) {
            float s = b ? b[o] : 0.0f;
            for (size_t p = 0; p < in; p++)
                s += x[i * in + p] * w[o * in + p];
            y[i * out + o] = s;
        }
}

void naive_bmm(size_t batch, size_t m, size_t n, size_t k, const float *a, const float *b,
               float *c) {
    for (size_t t = 0; t < batch; t++)
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
                float s = 0.0f;
                for (size_t p = 0; p < k; p++)
                    s += a[(t * m + i) * k + p] * b[(t * k + p) * n + j];
                c[(t * m + i) * n + j] = s;
            }
}

void naive_mha(size_t batch, size_t t, size_t e, size_t heads, const float *x, const float *wq,
               const float *wk, const float *wv, const float *wo, const float *bq,
               const float *bk, const float *bv, const float *bo, float *y, float *scratch) {
    const size_t rows = batch * t, dh = e / heads;
    float *q = scratch, *k = q + rows * e, *v = k + rows * e, *c = v + rows * e;
    float *head = c + rows * e; /* q, k, v and o of one head: 4 · t · dh floats */
    naive_linear(rows, e, e, x, wq, bq, q);
    naive_linear(rows, e, e, x, wk, bk, k);
    naive_linear(rows, e, e, x, wv, bv, v);
    float *hq = head, *hk = hq + t * dh, *hv = hk + t * dh, *ho = hv + t * dh;
    for (size_t b = 0; b < batch; b++)
        for (size_t h = 0; h < heads; h++) {
            for (size_t i = 0; i < t; i++)
                for (size_t p = 0; p < dh; p++) {
                    size_t at = (b * t + i) * e + h * dh + p;
                    hq[i * dh + p] = q[at], hk[i * dh + p] = k[at], hv[i * dh + p] = v[at];
                }
            naive_sdpa(t, t, dh, dh, 0, hq, hk, hv, ho);
            for (size_t i = 0; i < t; i++)
                for (size_t p = 0; p < dh; p++)
                    c[(b * t + i) * e + h * dh + p] = ho[i * dh + p];
        }
    naive_linear(rows, e, e, c, wo, bo, y);
}
