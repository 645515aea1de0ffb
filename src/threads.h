/* Worker threads for the fused path: a call's units of work spread over plain pthreads, each
 * worker running its units with single-call BLAS products. No pool outlives a call, so nothing
 * is shared between calls or contexts. */
#ifndef NWATTN_THREADS_H
#define NWATTN_THREADS_H

#include <stddef.h>

/* Runs fn(arg, unit, worker) for every unit in 0 .. units-1 on min(threads, units) workers: the
 * calling thread (worker 0) and up to threads-1 pthreads (workers 1 ..), which take units in
 * order from a shared atomic counter. Each worker index is held by one thread at a time, so
 * it can select that worker's scratch. If a thread cannot be started, the workers that run do
 * its share: the call never fails. Returns when every unit is done. */
void nw_parallel_for(size_t threads, size_t units,
                     void (*fn)(void *arg, size_t unit, size_t worker), void *arg);

#endif /* NWATTN_THREADS_H */
