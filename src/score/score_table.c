/* The public score kinds and their descriptors. */
#include "score.h"

const nw_score_desc *nw_score_desc_of(nwattn_score_kind kind) {
    switch (kind) {
    case NWATTN_SCORE_DOT:
        return &nw_score_dot;
    case NWATTN_SCORE_GAUSSIAN:
        return &nw_score_gaussian;
    case NWATTN_SCORE_LAPLACE:
        return &nw_score_laplace;
    case NWATTN_SCORE_COSINE:
        return &nw_score_cosine;
    }
    return NULL;
}
