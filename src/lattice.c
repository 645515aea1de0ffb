/* Whether two operands share an element: exact, in the operands' rows rather than elements.
 *
 * An operand is a union of byte intervals ("rows", nw_lattice): two operands share an element
 * exactly when a row of one intersects a row of the other. Every address computed below lies
 * within an operand's [base, end], which fits in uintptr_t (checked by the caller), so no sum
 * or product overflows. */
#include "lattice.h"

static uintptr_t gcd(uintptr_t a, uintptr_t b) {
    while (b != 0) {
        uintptr_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* (a + b) mod m for a, b < m, without overflow. */
static uintptr_t add_mod(uintptr_t a, uintptr_t b, uintptr_t m) {
    return a >= m - b ? a - (m - b) : a + b;
}

/* (x - y) mod m. */
static uintptr_t sub_mod(uintptr_t x, uintptr_t y, uintptr_t m) {
    const uintptr_t xm = x % m, ym = y % m;
    return xm >= ym ? xm - ym : xm + (m - ym);
}

void nw_lattice_make(nw_lattice *l, uintptr_t data, size_t elem, size_t batch, size_t rows,
                     size_t cols, size_t ld, size_t stride) {
    l->base = data;
    if (batch == 0 || rows == 0 || cols == 0 || elem == 0) {
        l->items = l->rows = 0;
        l->item_pitch = l->row_pitch = l->width = 0;
        return;
    }
    l->width = (uintptr_t)cols * elem;
    l->rows = rows;
    l->row_pitch = rows == 1 ? l->width : (uintptr_t)ld * elem;
    if (l->row_pitch == l->width) { /* contiguous rows: one row */
        l->width *= rows;
        l->rows = 1;
        l->row_pitch = l->width;
    }
    const uintptr_t item = (uintptr_t)(l->rows - 1) * l->row_pitch + l->width;
    l->items = batch;
    l->item_pitch = (uintptr_t)stride * elem;
    if (batch == 1 || stride == 0) { /* stride ignored, or every item the same */
        l->items = 1;
        l->item_pitch = item;
        return;
    }
    if (l->rows == 1 && l->item_pitch <= l->width) {
        /* Items of one row that touch or overlap: one row. */
        l->width += (uintptr_t)(l->items - 1) * l->item_pitch;
        l->items = 1;
        l->rows = 1;
        l->row_pitch = l->item_pitch = l->width;
        return;
    }
    if (l->rows > 1 && l->item_pitch % l->row_pitch == 0 &&
        l->item_pitch / l->row_pitch <= l->rows) {
        /* Items a whole number of rows apart that leave no row out between them (batch items
         * one after the other, or sliding windows over a sequence): one item. */
        l->rows += (l->items - 1) * (size_t)(l->item_pitch / l->row_pitch);
        l->items = 1;
        l->item_pitch = (uintptr_t)(l->rows - 1) * l->row_pitch + l->width;
    }
}

uintptr_t nw_lattice_end(const nw_lattice *l) {
    return l->base + (uintptr_t)(l->items - 1) * l->item_pitch +
           (uintptr_t)(l->rows - 1) * l->row_pitch + l->width;
}

/* n intervals [first + k·pitch, + width), pitch > 0 (they may overlap only if pitch < width). */
typedef struct seq {
    uintptr_t first;
    size_t n;
    uintptr_t pitch, width;
} seq;

static uintptr_t seq_end(const seq *s) {
    return s->first + (uintptr_t)(s->n - 1) * s->pitch + s->width;
}

/* The intervals of s that intersect [lo, hi), lo < hi: k0 <= k < k1. Their ends and starts
 * both grow with k, so they are consecutive. */
static void seq_within(const seq *s, uintptr_t lo, uintptr_t hi, size_t *k0, size_t *k1) {
    uintptr_t a = 0, b;
    /* first k whose end first + k·pitch + width > lo */
    if (lo >= s->first && lo - s->first >= s->width)
        a = (lo - s->first - s->width) / s->pitch + 1;
    /* first k whose start first + k·pitch >= hi */
    b = hi <= s->first ? 0 : (hi - s->first - 1) / s->pitch + 1;
    if (b > s->n)
        b = s->n;
    if (a > b)
        a = b;
    *k0 = (size_t)a;
    *k1 = (size_t)b;
}

static int seq_meets_interval(const seq *s, uintptr_t lo, uintptr_t hi) {
    size_t k0, k1;
    seq_within(s, lo, hi, &k0, &k1);
    return k0 < k1;
}

/* Whether two sequences of disjoint rows (pitch >= width) intersect. */
static int rows_meet(seq p, seq r) {
    size_t i0, i1, k0, k1;
    seq_within(&p, r.first, seq_end(&r), &i0, &i1);
    seq_within(&r, p.first, seq_end(&p), &k0, &k1);
    if (i0 == i1 || k0 == k1)
        return 0;
    /* Keep the rows that reach the other's span. Every row of p but its first and last now
     * lies inside r's span, and the other way round. */
    p.first += (uintptr_t)i0 * p.pitch;
    p.n = i1 - i0;
    r.first += (uintptr_t)k0 * r.pitch;
    r.n = k1 - k0;
    if (p.n > r.n) {
        const seq t = p;
        p = r;
        r = t;
    }
    if (seq_meets_interval(&r, p.first, p.first + p.width))
        return 1;
    const uintptr_t last = p.first + (uintptr_t)(p.n - 1) * p.pitch;
    if (p.n > 1 && seq_meets_interval(&r, last, last + p.width))
        return 1;
    if (p.n <= 2)
        return 0;
    /* A row x of p inside r's span meets r iff it meets the unbounded sequence of r's rows
     * (those before r's first row end before its span, those after its last begin after):
     * iff v = (x - r.first + p.width - 1) mod r.pitch < p.width + r.width - 1. */
    if (p.width - 1 >= r.pitch - r.width)
        return 1; /* every position meets a row */
    const uintptr_t window = p.width + r.width - 1; /* < r.pitch */
    const uintptr_t m = r.pitch;
    const uintptr_t x = p.first + p.pitch; /* the first interior row */
    uintptr_t v = add_mod(sub_mod(x, r.first, m), (p.width - 1) % m, m);
    const uintptr_t step = p.pitch % m;
    /* v takes the values v + t·step mod m, all congruent to v mod g, and every one of them
     * within a period of m/g rows. */
    const uintptr_t g = gcd(step, m);
    if (v % g >= window)
        return 0;
    const size_t interior = p.n - 2;
    if ((uintptr_t)interior >= m / g)
        return 1; /* a whole period: the smallest value, v mod g, is among them */
    for (size_t t = 0; t < interior; t++) {
        if (v < window)
            return 1;
        v = add_mod(v, step, m);
    }
    return 0;
}

static seq item_of(const nw_lattice *l, size_t b) {
    seq s = {l->base + (uintptr_t)b * l->item_pitch, l->rows, l->row_pitch, l->width};
    return s;
}

static seq items_of(const nw_lattice *l) {
    seq s = {l->base, l->items, l->item_pitch,
             (uintptr_t)(l->rows - 1) * l->row_pitch + l->width};
    return s;
}

int nw_lattices_share(const nw_lattice *a, const nw_lattice *b) {
    if (a->items == 0 || b->items == 0)
        return 0;
    const uintptr_t a_end = nw_lattice_end(a), b_end = nw_lattice_end(b);
    if (a_end <= b->base || b_end <= a->base)
        return 0;
    /* Every row of a starts at a->base plus a multiple of g, and so does every row of b at
     * b->base: rows meet only if some difference of starts d = x - y, -a.width < d < b.width,
     * is congruent to a->base - b->base mod g. */
    uintptr_t g = 0;
    if (a->items > 1)
        g = gcd(g, a->item_pitch);
    if (a->rows > 1)
        g = gcd(g, a->row_pitch);
    if (b->items > 1)
        g = gcd(g, b->item_pitch);
    if (b->rows > 1)
        g = gcd(g, b->row_pitch);
    if (g == 0)
        return 1; /* two single rows whose spans overlap */
    if (a->width - 1 < g && b->width - 1 < g) {
        /* u = d + a.width - 1 in [0, a.width + b.width - 2], u ≡ r mod g */
        const uintptr_t r = add_mod(sub_mod(a->base, b->base, g), a->width - 1, g);
        if (r > a->width - 1 && r - (a->width - 1) > b->width - 1)
            return 0;
    }
    /* Go through the items of the side with fewer items in the other's span, and for each
     * through the other's items in its span. */
    const seq ia = items_of(a), ib = items_of(b);
    size_t a0, a1, b0, b1;
    seq_within(&ia, b->base, b_end, &a0, &a1);
    seq_within(&ib, a->base, a_end, &b0, &b1);
    const nw_lattice *p = a, *q = b;
    size_t p0 = a0, p1 = a1;
    if (b1 - b0 < a1 - a0) {
        p = b;
        q = a;
        p0 = b0;
        p1 = b1;
    }
    const seq iq = items_of(q);
    for (size_t i = p0; i < p1; i++) {
        const seq pi = item_of(p, i);
        size_t q0, q1;
        seq_within(&iq, pi.first, seq_end(&pi), &q0, &q1);
        for (size_t k = q0; k < q1; k++)
            if (rows_meet(pi, item_of(q, k)))
                return 1;
    }
    return 0;
}
