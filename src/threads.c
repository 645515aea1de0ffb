/* nw_parallel_for on a team of pthreads kept by the context between calls.
 *
 * Why a team that outlives the call: starting and joining a pthread costs tens of microseconds,
 * as much as the whole of a short call (d2l's 1000 dot products of 999 take about 0.09 ms), so
 * per-call threads lost to OpenBLAS's and OpenMP's persistent pools on short work.
 *
 * Protocol. `word` holds the generation (high half) and, for the current one, a CLOSED bit and
 * the count of members that entered the job (low half). The caller publishes a job and bumps
 * the generation; a member that sees a new generation enters it with a compare-and-swap unless
 * it is already closed, runs units until none is left, and counts itself in `finished`. Once
 * the caller has run out of units it closes the generation and waits only for the members that
 * entered: a member the OS has not scheduled yet costs nothing (on a busy machine the caller
 * simply does all units), and a member that arrives late sees CLOSED and never touches the
 * job, which lives on the caller's stack. Waiting on either side spins for TEAM_SPIN_NS (the
 * next call of a loop arrives well within that, even when this member finished its last unit
 * well before the caller: with 0.1 ms it often fell asleep, and waking a thread costs tens of
 * µs here) and then sleeps on a condition variable, so an idle team costs no CPU. */
#define _GNU_SOURCE /* pthread_setname_np */
#include <stdio.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "threads.h"

#define TEAM_SPIN_NS 1000000 /* 1 ms of spinning before a waiter sleeps */
#define WORD_CLOSED ((uint64_t)1 << 31)
#define WORD_ENTERED ((uint64_t)WORD_CLOSED - 1)
#define WORD_GENERATION(w) ((w) >> 32)

typedef struct nw_job {
    void (*fn)(void *arg, size_t unit, size_t worker);
    void *arg;
    size_t units, workers;
    atomic_size_t next;
} job;

static void run_units(job *j, size_t index) {
    for (;;) {
        size_t unit = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (unit >= j->units)
            return;
        j->fn(j->arg, unit, index);
    }
}

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Spins until ready(t, x) or TEAM_SPIN_NS have passed; returns whether ready. */
static int spin_until(int (*ready)(nw_team *, uint64_t), nw_team *t, uint64_t x) {
    long long start = -1;
    for (unsigned spin = 1;; spin++) {
        if (ready(t, x))
            return 1;
        cpu_relax();
        if ((spin & 127) == 0) { /* reading the clock costs more than a pause */
            long long now = now_ns();
            if (start < 0)
                start = now;
            else if (now - start > TEAM_SPIN_NS)
                return 0;
            sched_yield(); /* a thread waiting for this core (another pool's) goes first */
        }
    }
}

static int generation_moved(nw_team *t, uint64_t seen) {
    return WORD_GENERATION(atomic_load_explicit(&t->word, memory_order_acquire)) != seen;
}

/* Waits for a generation after `seen`; enters it unless it is closed. Returns the job entered,
 * or NULL (closed, or the team stops), with *seen updated. */
static job *await_job(nw_team *t, uint64_t *seen) {
    if (!spin_until(generation_moved, t, *seen)) {
        pthread_mutex_lock(&t->lock);
        while (!generation_moved(t, *seen))
            pthread_cond_wait(&t->wake, &t->lock);
        pthread_mutex_unlock(&t->lock);
    }
    uint64_t w = atomic_load_explicit(&t->word, memory_order_acquire);
    for (;;) {
        *seen = WORD_GENERATION(w);
        if ((w & WORD_CLOSED) || atomic_load_explicit(&t->stop, memory_order_acquire))
            return NULL;
        if (atomic_compare_exchange_weak_explicit(&t->word, &w, w + 1, memory_order_acq_rel,
                                                  memory_order_acquire))
            return t->job;
    }
}

static void *member_main(void *arg) {
    nw_member *self = arg;
    nw_team *t = self->team;
    uint64_t seen = 0;
    while (!atomic_load_explicit(&t->stop, memory_order_acquire)) {
        job *j = await_job(t, &seen);
        if (j == NULL)
            continue;
        if (self->index < j->workers)
            run_units(j, self->index);
        atomic_fetch_add_explicit(&t->finished, 1, memory_order_seq_cst);
        if (atomic_load_explicit(&t->caller_asleep, memory_order_seq_cst)) {
            pthread_mutex_lock(&t->lock);
            pthread_cond_signal(&t->done);
            pthread_mutex_unlock(&t->lock);
        }
    }
    return NULL;
}

/* Starts the next generation with job j (NULL with stop). */
static void publish(nw_team *t, job *j, int stop) {
    pthread_mutex_lock(&t->lock); /* a member going to sleep checks the generation under it */
    t->job = j;
    atomic_store_explicit(&t->finished, 0, memory_order_relaxed);
    atomic_store_explicit(&t->stop, stop, memory_order_relaxed);
    const uint64_t w = atomic_load_explicit(&t->word, memory_order_relaxed);
    atomic_store_explicit(&t->word, (WORD_GENERATION(w) + 1) << 32, memory_order_release);
    pthread_cond_broadcast(&t->wake);
    pthread_mutex_unlock(&t->lock);
}

static int finished_reaches(nw_team *t, uint64_t entered) {
    return atomic_load_explicit(&t->finished, memory_order_acquire) == entered;
}

/* Closes the generation and waits for the members that entered it. */
static void close_and_wait(nw_team *t) {
    const uint64_t entered =
        atomic_fetch_or_explicit(&t->word, WORD_CLOSED, memory_order_acq_rel) & WORD_ENTERED;
    if (spin_until(finished_reaches, t, entered))
        return;
    pthread_mutex_lock(&t->lock);
    atomic_store_explicit(&t->caller_asleep, 1, memory_order_seq_cst);
    while (atomic_load_explicit(&t->finished, memory_order_seq_cst) != entered)
        pthread_cond_wait(&t->done, &t->lock);
    atomic_store_explicit(&t->caller_asleep, 0, memory_order_relaxed);
    pthread_mutex_unlock(&t->lock);
}

/* Starts up to `size` members in t (t->size says how many started). Members start with every
 * signal blocked, so the process's signals keep going to the application's own threads. */
static void start_team(nw_team *t, size_t size) {
    t->size = 0;
    if (pthread_mutex_init(&t->lock, NULL) != 0)
        return;
    if (pthread_cond_init(&t->wake, NULL) != 0)
        goto no_wake;
    if (pthread_cond_init(&t->done, NULL) != 0)
        goto no_done;
    atomic_init(&t->word, 0);
    atomic_init(&t->finished, 0);
    atomic_init(&t->caller_asleep, 0);
    atomic_init(&t->stop, 0);
    t->job = NULL;
    t->pid = getpid();
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (size_t i = 0; i < size; i++) {
        nw_member *m = &t->members[i];
        m->team = t;
        m->index = i + 1;
        if (pthread_create(&m->id, NULL, member_main, m) != 0)
            break; /* the members already running (and the caller) take its units */
#if defined(__GLIBC__)
        char name[16]; /* what top -H and debuggers show */
        snprintf(name, sizeof name, "nwattn-w%u", (unsigned)((i + 1) % 1000)); /* <= 255 */
        pthread_setname_np(m->id, name);
#endif
        t->size++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (t->size > 0)
        return;
    pthread_cond_destroy(&t->done);
no_done:
    pthread_cond_destroy(&t->wake);
no_wake:
    pthread_mutex_destroy(&t->lock);
}

void nw_workers_stop(nw_workers *w) {
    if (w == NULL || w->team.size == 0)
        return;
    nw_team *t = &w->team;
    const size_t size = t->size;
    t->size = 0;
    if (t->pid != getpid()) /* a fork child: the members were not copied, nothing to join */
        return;
    publish(t, NULL, 1);
    for (size_t i = 0; i < size; i++)
        pthread_join(t->members[i].id, NULL);
    pthread_cond_destroy(&t->done);
    pthread_cond_destroy(&t->wake);
    pthread_mutex_destroy(&t->lock);
}

void nw_parallel_for(nw_workers *w, size_t count, size_t units,
                     void (*fn)(void *arg, size_t unit, size_t worker), void *arg) {
    if (w == NULL)
        count = 1;
    else if (count > w->threads)
        count = w->threads;
    if (count > units)
        count = units;
    job j = {fn, arg, units, count, 0};
    if (count > 1 && w->team.size > 0 && w->team.pid != getpid())
        nw_workers_stop(w); /* forked since the members started */
    if (count > 1 && w->team.size == 0)
        start_team(&w->team, w->threads - 1);
    if (count <= 1 || w->team.size == 0) {
        run_units(&j, 0);
        return;
    }
    if (j.workers > w->team.size + 1) /* some members could not be started */
        j.workers = w->team.size + 1;
    publish(&w->team, &j, 0);
    run_units(&j, 0);
    close_and_wait(&w->team);
}
