/* The softmax row contract's partial-state rules (row_state.h). */
#include <float.h>

#include "row_state.h"

double nw_row_store(const nw_row *r, float *max, float *sum) {
    if (isnan(r->sum) || (isfinite(r->max) && fabs(r->max) > FLT_MAX)) {
        *max = *sum = NAN;
        return NAN;
    }
    const float stored = (float)r->max;
    const double factor = isfinite(r->max) ? exp(r->max - (double)stored) : 1.0;
    *max = stored;
    *sum = (float)(r->sum * factor);
    return factor;
}

void nw_row_merge(nw_row *into, const nw_row *from, double *a_into, double *a_from) {
    if (from->sum == 0.0) { /* from is empty */
        *a_into = 1.0;
        *a_from = 0.0;
        return;
    }
    if (into->sum == 0.0) { /* into is empty: take from */
        *into = *from;
        *a_into = 0.0;
        *a_from = 1.0;
        return;
    }
    const double m = into->max > from->max ? into->max : from->max;
    *a_into = into->max == m ? 1.0 : exp(into->max - m);
    *a_from = from->max == m ? 1.0 : exp(from->max - m);
    into->sum = *a_into * into->sum + *a_from * from->sum;
    into->max = m;
}
