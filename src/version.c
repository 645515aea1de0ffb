/* Version queries and status names. */
#include "nwattn.h"

unsigned nwattn_version_number(void) { return NWATTN_VERSION_NUMBER; }

const char *nwattn_version_string(void) { return NWATTN_VERSION_STRING; }

typedef struct status_text {
    const char *name;
    const char *description;
} status_text;

/* Indexed by status value: the values are fixed, so is this table's order. */
static const status_text status_texts[] = {
    {"NWATTN_OK", "success"},
    {"NWATTN_ERR_NULL_POINTER", "a required pointer is NULL"},
    {"NWATTN_ERR_BAD_DIMENSION", "a dimension is out of its allowed range"},
    {"NWATTN_ERR_BAD_LEADING_DIM", "a leading dimension is smaller than the row it holds"},
    {"NWATTN_ERR_BAD_STRIDE", "an output batch stride makes batch items overlap"},
    {"NWATTN_ERR_BAD_PARAMETER", "a bandwidth or scale is not finite or not positive"},
    {"NWATTN_ERR_BAD_ENUM", "an unknown enum value or flag bit"},
    {"NWATTN_ERR_BAD_MASK", "a mask is inconsistent with the problem (valid length > n)"},
    {"NWATTN_ERR_ALIASING", "an output overlaps an input or another output"},
    {"NWATTN_ERR_OVERFLOW", "a size or byte count overflows size_t"},
    {"NWATTN_ERR_TOO_LARGE", "a leading dimension or stride exceeds the BLAS integer type"},
    {"NWATTN_ERR_ALLOC", "memory allocation failed"},
    {"NWATTN_ERR_UNSUPPORTED", "the selected backend cannot perform this operation"},
    {"NWATTN_ERR_DEGENERATE_DATA",
     "the data cannot support the request: too few points, or a coordinate without spread"},
};

static const status_text *lookup(nwattn_status status) {
    unsigned index = (unsigned)status;
    if (index >= sizeof status_texts / sizeof status_texts[0])
        return NULL;
    return &status_texts[index];
}

const char *nwattn_status_name(nwattn_status status) {
    const status_text *text = lookup(status);
    return text ? text->name : "NWATTN_ERR_UNKNOWN";
}

const char *nwattn_status_describe(nwattn_status status) {
    const status_text *text = lookup(status);
    return text ? text->description : "unknown status code";
}
