#include "mpi_testutil.h"
static void t(void **s){(void)s;}
int main(int argc,char**argv){const struct CMUnitTest tests[]={cmocka_unit_test(t)};MPI_Init(&argc,&argv);int f=cmocka_run_group_tests(tests,NULL,NULL);MPI_Finalize();return f;}
