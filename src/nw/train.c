/* The fast path's copy of the training set: dimension-major floats, sorted by x when d == 1
 * so that a query's relevant points form one window. The sort is a stable merge sort in the
 * caller-sized working memory (no qsort: it may call malloc behind the context's back), or
 * where it can, the same order by a radix sort. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "nw.h"

/* Bytes of each part, rounded to doubles so that the parts stay aligned. */
static size_t floats_bytes(size_t count) {
    size_t bytes;
    if (!nw_mul(count, sizeof(float), &bytes) || !nw_add(bytes, sizeof(double) - 1, &bytes))
        return SIZE_MAX;
    return bytes / sizeof(double) * sizeof(double);
}

size_t nw_strips(size_t n) {
    size_t s = (size_t)sqrt((double)n);
    return s > 0 ? s : 1;
}

/* d == 2: the strips' bytes (their positions, their y ranges) and n more indices of scratch. */
static size_t strips_bytes(size_t n) {
    const size_t s = nw_strips(n);
    size_t idx, total, fy;
    if (!nw_add(n, s + 1, &idx) || !nw_mul(idx, sizeof(size_t), &total) ||
        (fy = floats_bytes(2 * s)) == SIZE_MAX || !nw_add(total, fy, &total))
        return SIZE_MAX;
    return total;
}

size_t nw_train_bytes(size_t n, size_t d, size_t dv) {
    size_t nx, ny, bx, by, bidx, total;
    if (!nw_mul(n, d, &nx) || !nw_mul(n, dv, &ny))
        return SIZE_MAX;
    bx = floats_bytes(nx);
    by = floats_bytes(ny);
    if (bx == SIZE_MAX || by == SIZE_MAX || !nw_mul(n, 2 * sizeof(size_t), &bidx) ||
        !nw_add(bx, by, &total) || !nw_add(total, bidx, &total))
        return SIZE_MAX;
    if (d == 2) {
        size_t sb = strips_bytes(n);
        if (sb == SIZE_MAX || !nw_add(total, sb, &total))
            return SIZE_MAX;
    }
    return total;
}

/* Orders indices by (x value, index): stable, so ties keep the caller's order. */
static int before(const float *x, size_t ldx, size_t a, size_t b) {
    float xa = x[a * ldx], xb = x[b * ldx];
    return xa < xb || (xa == xb && a < b);
}

/* Bottom-up merge sort of idx[0..n) by x, with tmp[0..n) as scratch. */
static void sort_indices(size_t n, const float *x, size_t ldx, size_t *idx, size_t *tmp) {
    size_t *src = idx, *dst = tmp;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = mid + width < n ? mid + width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = before(x, ldx, src[j], src[i]) ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        size_t *swap = src;
        src = dst;
        dst = swap;
        if (width > n / 2)
            break;
    }
    if (src != idx)
        for (size_t i = 0; i < n; i++)
            idx[i] = src[i];
}

/* The same order by a stable LSD radix sort, 4 passes of 8 bits over (key << 32 | index)
 * items, the key being x's float bits made monotone (-0 as +0, so that zeros tie as in
 * before()): O(n) with sequential access, where the merge sort's indirect compares cost
 * ~20 cache-missing passes at n = 10^6. Needs 64-bit size_t and n < 2^32 (else the merge). */
static int radix_sort_indices(size_t n, const float *x, size_t ldx, size_t *idx, size_t *tmp) {
#if SIZE_MAX >= 0xffffffffffffffffu
    if (n >= ((size_t)1 << 32))
        return 0;
    for (size_t i = 0; i < n; i++) {
        float v = x[i * ldx];
        uint32_t bits;
        if (v == 0.0f)
            v = 0.0f;
        memcpy(&bits, &v, sizeof bits);
        bits = bits & 0x80000000u ? ~bits : bits | 0x80000000u;
        idx[i] = (size_t)bits << 32 | i;
    }
    size_t *src = idx, *dst = tmp;
    for (unsigned shift = 32; shift < 64; shift += 8) {
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++)
            count[((src[i] >> shift) & 0xffu) + 1]++;
        for (size_t b = 0; b < 256; b++)
            count[b + 1] += count[b];
        for (size_t i = 0; i < n; i++)
            dst[count[(src[i] >> shift) & 0xffu]++] = src[i];
        size_t *swap = src;
        src = dst;
        dst = swap;
    }
    for (size_t i = 0; i < n; i++) /* 4 passes: the result is back in idx */
        idx[i] = src[i] & 0xffffffffu;
    return 1;
#else
    (void)n, (void)x, (void)ldx, (void)idx, (void)tmp;
    return 0;
#endif
}

void nw_sort_order(size_t n, const float *x, size_t ldx, size_t *idx, size_t *tmp) {
    if (radix_sort_indices(n, x, ldx, idx, tmp))
        return;
    for (size_t j = 0; j < n; j++)
        idx[j] = j;
    sort_indices(n, x, ldx, idx, tmp);
}

/* d == 2: perm = the caller's indices ordered by (strip, x, index), the strips cut by the
 * rank of (y, index) into nw_strips(n) runs of equal count (within one): a stable sort by x,
 * then a stable counting sort by strip. after: the n scratch indices, then the strips. */
static void bin_strips(nw_train *t, size_t *after, size_t n, const float *x, size_t ldx) {
    size_t *perm = t->perm, *tmp = perm + n, *extra = after;
    const size_t strips = nw_strips(n);
    t->strips = strips;
    t->strip = after + n;
    t->strip_y = (float *)(void *)(t->strip + strips + 1);
    size_t *start = t->strip;
    nw_sort_order(n, x + 1, ldx, extra, tmp); /* by y */
    for (size_t r = 0; r < n; r++)              /* tmp[caller's index] = its strip */
        tmp[extra[r]] = (size_t)((double)r * (double)strips / (double)n);
    nw_sort_order(n, x, ldx, perm, extra); /* by x */
    for (size_t s = 0; s <= strips; s++)
        start[s] = 0;
    for (size_t j = 0; j < n; j++)
        start[tmp[j] + 1]++;
    for (size_t s = 0; s < strips; s++)
        start[s + 1] += start[s];
    for (size_t j = 0; j < n; j++) /* start[s] moves to the end of strip s */
        extra[start[tmp[perm[j]]]++] = perm[j];
    for (size_t s = strips; s > 0; s--)
        start[s] = start[s - 1];
    start[0] = 0;
    for (size_t j = 0; j < n; j++)
        perm[j] = extra[j];
    for (size_t s = 0; s < strips; s++) {
        float lo = INFINITY, hi = -INFINITY;
        for (size_t j = start[s]; j < start[s + 1]; j++) {
            const float v = x[perm[j] * ldx + 1];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        t->strip_y[2 * s] = lo;
        t->strip_y[2 * s + 1] = hi;
    }
}

void nw_train_fill(nw_train *t, void *mem, size_t n, size_t d, size_t dv, const float *x,
                   size_t ldx, const float *y, size_t ldy) {
    char *p = mem;
    t->n = n;
    t->d = d;
    t->dv = dv;
    t->x = (float *)(void *)p;
    p += floats_bytes(n * d);
    t->y = (float *)(void *)p;
    p += floats_bytes(n * dv);
    t->perm = (size_t *)(void *)p;
    t->strips = 0;
    t->strip = NULL;
    t->strip_y = NULL;
    if (d == 1)
        nw_sort_order(n, x, ldx, t->perm, t->perm + n);
    else if (d == 2)
        bin_strips(t, t->perm + 2 * n, n, x, ldx);
    else
        for (size_t j = 0; j < n; j++)
            t->perm[j] = j;
    for (size_t j = 0; j < n; j++) {
        size_t src = t->perm[j];
        for (size_t k = 0; k < d; k++)
            t->x[k * n + j] = x[src * ldx + k];
        for (size_t c = 0; c < dv; c++)
            t->y[c * n + j] = y[src * ldy + c];
    }
}
