/* A context's worker threads: a call's units of work spread over the calling thread and a team
 * of pthreads that the context keeps between calls (started by the first call that needs them,
 * joined when the context is destroyed or its thread count changes). Nothing is shared between
 * contexts. */
#ifndef NWATTN_THREADS_H
#define NWATTN_THREADS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nwattn.h"

struct nw_job;  /* threads.c */
struct nw_team;

typedef struct nw_member {
    struct nw_team *team;
    size_t index; /* worker index: 1 .. team size */
    pthread_t id;
} nw_member;

/* The members and what they wait on (protocol in threads.c). It lives inside the context, so
 * keeping a team allocates nothing. */
typedef struct nw_team {
    size_t size; /* members running; 0: none started, nothing below initialised */
    pid_t pid;   /* the process that started them: a fork child has none of them */
    pthread_mutex_t lock;
    pthread_cond_t wake; /* members: a new generation */
    pthread_cond_t done; /* caller: every member that entered has finished */
    _Atomic uint64_t word;    /* generation << 32 | CLOSED bit | members entered */
    atomic_size_t finished;   /* members done with the current job */
    atomic_int caller_asleep; /* the caller waits on `done` */
    atomic_int stop;
    struct nw_job *job; /* the current generation's: written before the release of the bump */
    nw_member members[NWATTN_MAX_THREADS - 1];
} nw_team;

/* Lives in the context; kernels get a pointer to it. */
typedef struct nw_workers {
    size_t threads; /* workers a call may use, >= 1 (the calling thread is one) */
    nw_team team;   /* threads - 1 members once a call needed them */
} nw_workers;

/* Runs fn(arg, unit, worker) for every unit in 0 .. units-1 on min(count, workers->threads,
 * units) workers: the calling thread (worker 0) and members of the team (workers 1 ..), which
 * take units in order from a shared atomic counter. Each worker index is held by one thread at
 * a time, so it can select that worker's scratch. If members cannot be started
 * (pthread_create), the ones that did start, or the calling thread alone, do all units: the
 * call never fails. Returns when every unit is done. workers may be NULL: one worker. */
void nw_parallel_for(nw_workers *workers, size_t count, size_t units,
                     void (*fn)(void *arg, size_t unit, size_t worker), void *arg);

/* Stops and joins the members (if any). The next parallel call starts new ones. */
void nw_workers_stop(nw_workers *workers);

#endif /* NWATTN_THREADS_H */
