/* nw_parallel_for on pthreads: one atomic counter hands out the units. */
#include <pthread.h>
#include <stdatomic.h>

#include "nwattn.h"
#include "threads.h"

#define MAX_WORKERS NWATTN_MAX_THREADS /* nwattn_context_set_threads refuses more */

typedef struct job {
    void (*fn)(void *arg, size_t unit, size_t worker);
    void *arg;
    size_t units;
    atomic_size_t next;
} job;

typedef struct worker {
    job *job;
    size_t index;
} worker;

static void run_units(job *j, size_t index) {
    for (;;) {
        size_t unit = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (unit >= j->units)
            return;
        j->fn(j->arg, unit, index);
    }
}

static void *worker_main(void *arg) {
    worker *w = arg;
    run_units(w->job, w->index);
    return NULL;
}

void nw_parallel_for(size_t threads, size_t units,
                     void (*fn)(void *arg, size_t unit, size_t worker), void *arg) {
    size_t count = threads < units ? threads : units;
    if (count > MAX_WORKERS)
        count = MAX_WORKERS;
    job j = {fn, arg, units, 0};
    if (count <= 1) {
        run_units(&j, 0);
        return;
    }
    pthread_t ids[MAX_WORKERS];
    worker workers[MAX_WORKERS];
    size_t started = 0;
    for (size_t t = 1; t < count; t++) {
        workers[started] = (worker){&j, t};
        if (pthread_create(&ids[started], NULL, worker_main, &workers[started]) != 0)
            break; /* the threads already running (and this one) take its units */
        started++;
    }
    run_units(&j, 0);
    for (size_t t = 0; t < started; t++)
        pthread_join(ids[t], NULL);
}
