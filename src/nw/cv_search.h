/* The bandwidth search of nwattn_nw_select_bandwidth on any CV evaluator: a grid of common
 * scales of the start bandwidths, then a derivative-driven refinement (d == 1) or BFGS on
 * log h (d > 1). Public API types only, so that libnwattn_mpi compiles this same file around
 * its sharded CV: one search, two evaluators. */
#ifndef NWATTN_NW_CV_SEARCH_H
#define NWATTN_NW_CV_SEARCH_H

#include <stddef.h>

#include "nwattn.h"

/* CV at h (d values); grad (d), unless NULL, receives dCV/dh_k; *flagged the rows on the
 * local constant fallback. */
typedef double (*nw_cv_eval_fn)(void *arg, const double *h, double *grad, size_t *flagged);

typedef struct nw_search {
    nw_cv_eval_fn eval;
    void *arg;
    int values_only;  /* CV is piecewise constant (uniform kernel): golden section, d == 1 */
    size_t d;
    double *start;    /* d */
    double *h, *grad; /* d: the last evaluation's bandwidths and dCV/dh */
    size_t evals, max_evals;
    /* best point so far (ties to the larger h_0) */
    double best_cv;
    double *best_h; /* d */
    size_t best_flagged;
} nw_search;

/* The grid xs[g] = lo + (hi - lo) g / (grid - 1) of log scales of start (fs: CV there, gs:
 * scratch), then the refinement to tolerance tol; vec: 11 d + d·d doubles. *best_out: the
 * best grid point. Returns 0 (nothing refined) when CV is not finite anywhere on the grid.
 * Every decision is taken from the evaluator's values, in a fixed order. */
int nw_search_run(nw_search *s, double lo, double hi, size_t grid, double tol, double *xs,
                  double *fs, double *gs, double *vec, size_t *best_out, int *converged);

/* The grid's lower end lo (a log scale of start) raised for a compact kernel to the smallest
 * common scale at which every point has a neighbour with a positive weight: largest_t is the
 * largest over points of the smallest t to another point at start (0: not compact, nothing
 * raised). hi moves up to keep at least one grid step above lo. */
void nw_search_raise_grid(double largest_t, size_t grid, double *lo, double *hi);

/* options with defaults filled in (NULL: all defaults) and checked; a failure's message in
 * message (bytes). options->start is not read. */
nwattn_status nw_search_options(const nwattn_cv_options *given, nwattn_cv_options *out,
                                char *message, size_t bytes);

#endif
