/* Operands as lattices of elements, and whether two of them share an element (checks.c's
 * aliasing test). Pure arithmetic on addresses: an object library of its own, so that
 * tests/test_aliasing.c can call it directly. */
#ifndef NWATTN_LATTICE_H
#define NWATTN_LATTICE_H

#include <stddef.h>
#include <stdint.h>

/* The bytes of an operand as "rows" of contiguous bytes: row (b, i), b < items, i < rows,
 * is [base + b·item_pitch + i·row_pitch, ... + width). Within an item the rows never overlap
 * (row_pitch >= width); items may (an input's stride may be smaller than its item), unless
 * items == 1. Normalised by nw_lattice_make: empty operands have items == 0; item_pitch > 0 and
 * row_pitch > 0 whenever the operand is not empty. */
typedef struct nw_lattice {
    uintptr_t base;
    size_t items, rows;
    uintptr_t item_pitch, row_pitch, width; /* bytes */
} nw_lattice;

/* The operand of elem-byte elements data[b·stride + i·ld + j], b < batch, i < rows, j < cols.
 * The caller has checked ld >= cols (when rows > 1 and cols > 0) and that the end,
 * data + ((batch-1)·stride + (rows-1)·ld + cols)·elem, fits in uintptr_t. stride is ignored
 * for batch 1 (and 0 broadcasts: the items coincide), ld for one row. */
void nw_lattice_make(nw_lattice *l, uintptr_t data, size_t elem, size_t batch, size_t rows,
                     size_t cols, size_t ld, size_t stride);

/* One past the last byte of a non-empty lattice (its first byte is base). */
uintptr_t nw_lattice_end(const nw_lattice *l);

/* 1 if some byte belongs to an element of both a and b, else 0. Exact; see checks.h for the
 * cost. */
int nw_lattices_share(const nw_lattice *a, const nw_lattice *b);

#endif /* NWATTN_LATTICE_H */
