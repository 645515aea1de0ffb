/* Every estimator of nwattn_nw_predict and nwattn_nw_cv over a sharded training set, through
 * the core's reference row pipeline (src/nw/ref_rows.c, finish.c and nearest.c, compiled into
 * this library too): each rank forms a row's moment sums over its own points in double,
 * shifted by its own nearest t; the parts are combined in rank order (rescaled to the smallest
 * shift, nw_ref_shift) and finished by nw_finish_row, the core's own rule. */
#ifndef NWATTN_MPI_NW_ROWS_H
#define NWATTN_MPI_NW_ROWS_H

#include "call.h"
#include "nw.h"

/* The validated model (kernel, degree and empty policy in range: the caller checked). */
void nm_rows_model(const nwattn_regression *model, size_t d, size_t dv, nw_model *out);

/* Predictions at m replicated queries: queries in blocks, each block's per-rank parts
 * gathered once (MPI_Allgather of doubles) and added in rank order on every rank, so every
 * rank computes the same bits. yq (m × dv), weights (m × n_local, this rank's columns,
 * optional), row_flags (m, optional), *n_flagged (optional): written only once every
 * collective has succeeded. Collective; failures agreed on as nm_agree. */
nwattn_status nm_rows_predict(nm_call *call, const nw_model *mod, const float *bandwidths,
                              size_t m, size_t n_local, const float *xq, size_t ldq,
                              const float *x, size_t ldx, const float *y, size_t ldy, float *yq,
                              size_t ldyq, float *weights, size_t ldw, unsigned char *row_flags,
                              size_t *n_flagged);

/* The leave-one-out rows of this rank's points at bandwidths h (d), by a ring pass of the
 * training blocks (blocking MPI_Sendrecv): out (3 + d) receives this rank's sum of the core's
 * nw_cv_add_row over its rows (squared errors, flagged, empty, gradient terms when
 * want_grad). With largest_t != NULL the pass only finds, instead, the largest over this
 * rank's points of the smallest t to another point (the compact kernels' admissible scale).
 * counts: every rank's n; offset: this rank's first global position. Collective. */
nwattn_status nm_rows_cv(nm_call *call, const nw_model *mod, const uint64_t *counts,
                         size_t n_local, const float *x, size_t ldx, const float *y, size_t ldy,
                         const double *h, int want_grad, double *out, double *largest_t);

#endif
