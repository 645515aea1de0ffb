/* The analytic gradient of the sharded leave-one-out CV: a second ring pass over the
 * training blocks, in double, from the fit and log normalisers of the CV's first pass. */
#ifndef NWATTN_MPI_CV_GRADIENT_H
#define NWATTN_MPI_CV_GRADIENT_H

#include "call.h"

typedef struct nm_grad_pass {
    int gaussian;          /* 1: score -t/2 (Gaussian); 0: -sqrt(t) (Laplace) */
    size_t n_local, d, dv;
    const float *x, *y;    /* this rank's training rows */
    size_t ldx, ldy;
    const float *yhat;     /* n_local × dv, packed: the leave-one-out fit */
    const float *lse;      /* n_local: log of each leave-one-out row's normaliser */
    const double *inv_h;   /* d */
} nm_grad_pass;

/* Collective. mine (d) = this rank's sum over its points i of
 * sum_c (yhat_ic - y_ic) · d yhat_ic / dlog h_k (counts: every rank's n; offset: this rank's
 * first global position). The same on every run; agreed failures as nm_agree. */
nwattn_status nm_cv_gradient(nm_call *call, const nm_grad_pass *g, const uint64_t *counts,
                             size_t offset, double *mine);

#endif
