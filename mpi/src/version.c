/* Version and status names of libnwattn_mpi. */
#include "nwattn_mpi.h"

unsigned nwattn_mpi_version_number(void) { return NWATTN_VERSION_NUMBER; }

const char *nwattn_mpi_status_name(nwattn_status status) {
    if (status == NWATTN_MPI_ERR_COMM)
        return "NWATTN_MPI_ERR_COMM";
    return nwattn_status_name(status);
}
