/*
 * mwcas_example: a small multi-word CAS (MwCAS) of its own, run by pthreads
 * and recorded with pmlin.h, for `pmlin check`.
 *
 * The MwCAS locks its words (one mutex per word, taken in address order, so
 * two operations never deadlock), compares, writes the new values if every
 * word held its expected value, and unlocks. The multi-word read locks the
 * same way. Both are linearizable: each takes effect while it holds all its
 * locks.
 *
 * --bug plants a check-then-act race: the MwCAS compares under the locks,
 * lets them go, and takes them again to write, without comparing again.
 * Two operations that expect the same values can then both succeed, and
 * one overwrites the other's value unseen: two successful cas replace the
 * same value (pmlin reports a fork, or a cycle). Both variants yield the
 * CPU at the same place (sched_yield(), like a preemption), which makes the
 * window wide enough that the bug shows in every run of a few hundred
 * operations.
 *
 * Each thread repeats: read k distinct random words, then (sometimes a
 * swap instead, with --swaps) a MwCAS on them that expects the values read
 * and writes fresh tags (pmlin_tag), so the history keeps the method's two
 * assumptions. --crashes N stops every thread N times at its next
 * operation boundary (an operation cut off before it touched memory, or
 * after it took effect but before it returned: both are pending in the
 * history), records a crash, "recovers" (the words keep their values: this
 * MwCAS never leaves one half done at those points), reads every word as
 * process <threads>, and goes on with new threads.
 *
 * --coarse-clock stamps the steps with CLOCK_MONOTONIC_COARSE (Linux: a
 * tick every few milliseconds) through pmlin_set_clock, to show what a
 * clock too coarse does: threads that each return and start their next
 * operation within one tick leave no honest order, and pmlin_write (like
 * `pmlin merge` of the --log) refuses the recording rather than guess.
 *
 * Usage: mwcas_example [--bug] [--threads N] [--ops N] [--words N] [--k N]
 *          [--crashes N] [--swaps PERCENT] [--fail-values] [--coarse-clock]
 *          [--seed N] [-o FILE] [--log FILE] [--force]
 * -o: the history (default standard output); --log: also the unmerged
 * per-thread logs with timestamps, for `pmlin merge`. Neither file is
 * overwritten without --force. Exit 0, 1 on a recording error, 2 on usage.
 */
#define _POSIX_C_SOURCE 200809L
#include "../pmlin.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define MAX_K 8

typedef struct {
    pthread_mutex_t lock;
    uint64_t value; /* accessed only under lock */
} word_t;

typedef struct {
    int bug, threads, ops, words, k, crashes, swaps, fail_values, force, coarse_clock;
    uint64_t seed;
    const char *out, *log;
} config;

static word_t *words;
static config cfg;
static atomic_int ops_started;   /* operations started in this segment */
static atomic_int stop;          /* a crash is under way */
static int crash_after;          /* operations started before the crash */
static pthread_barrier_t start;  /* the threads of a segment start together */

/* ---- the MwCAS under test ------------------------------------------- */

/* sorted_order fills idx with 0..k-1 ordered by address. */
static void sorted_order(size_t k, const uint64_t *addrs, size_t *idx)
{
    size_t i, j;
    for (i = 0; i < k; i++) {
        size_t x = i;
        for (j = i; j > 0 && addrs[idx[j - 1]] > addrs[x]; j--)
            idx[j] = idx[j - 1];
        idx[j] = x;
    }
}

static void lock_all(size_t k, const uint64_t *addrs, const size_t *idx)
{
    size_t i;
    for (i = 0; i < k; i++)
        pthread_mutex_lock(&words[addrs[idx[i]]].lock);
}

static void unlock_all(size_t k, const uint64_t *addrs, const size_t *idx)
{
    size_t i;
    for (i = k; i > 0; i--)
        pthread_mutex_unlock(&words[addrs[idx[i - 1]]].lock);
}

static void mwread(size_t k, const uint64_t *addrs, uint64_t *out)
{
    size_t idx[MAX_K], i;
    sorted_order(k, addrs, idx);
    lock_all(k, addrs, idx);
    for (i = 0; i < k; i++)
        out[i] = words[addrs[i]].value;
    unlock_all(k, addrs, idx);
}

/* mwcas returns 1 on success; on failure *blamed is the first address
 * (in the invocation's order) that did not hold its expected value, seen
 * under the locks, and seen[] what every word held then. */
static int mwcas(size_t k, const uint64_t *addrs, const uint64_t *exp, const uint64_t *nw, uint64_t *blamed,
                 uint64_t *seen)
{
    size_t idx[MAX_K], i;
    int ok = 1;
    sorted_order(k, addrs, idx);
    lock_all(k, addrs, idx);
    for (i = 0; i < k; i++) {
        seen[i] = words[addrs[i]].value;
        if (ok && seen[i] != exp[i]) {
            ok = 0;
            *blamed = addrs[i];
        }
    }
    if (cfg.bug) {
        /* The planted bug: the decision is taken, the locks let go. */
        unlock_all(k, addrs, idx);
        sched_yield();
        if (!ok)
            return 0;
        lock_all(k, addrs, idx);
    } else {
        sched_yield();
    }
    if (ok)
        for (i = 0; i < k; i++)
            words[addrs[i]].value = nw[i];
    unlock_all(k, addrs, idx);
    return ok;
}

static void mwswap(size_t k, const uint64_t *addrs, const uint64_t *nw, uint64_t *old)
{
    size_t idx[MAX_K], i;
    sorted_order(k, addrs, idx);
    lock_all(k, addrs, idx);
    for (i = 0; i < k; i++) {
        old[i] = words[addrs[i]].value;
        words[addrs[i]].value = nw[i];
    }
    unlock_all(k, addrs, idx);
}

/* ---- the workload --------------------------------------------------- */

static uint64_t next_random(uint64_t *s)
{
    /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

typedef struct {
    pmlin_thread *t;
    uint64_t rng;
    int quota; /* operations left for this thread in the run */
} worker;

/* crash_point reports whether the thread must stop here: a crash is due. */
static int crash_point(void)
{
    return atomic_load(&stop) != 0;
}

/* begin_op counts an operation; the crash_after-th one triggers a crash. */
static void begin_op(void)
{
    int n = atomic_fetch_add(&ops_started, 1) + 1;
    if (crash_after > 0 && n >= crash_after)
        atomic_store(&stop, 1);
}

static void *run_worker(void *arg)
{
    worker *w = (worker *)arg;
    size_t k = (size_t)cfg.k, i, j;
    uint64_t addrs[MAX_K], vals[MAX_K], nw[MAX_K], seen[MAX_K], blamed = 0;
    pthread_barrier_wait(&start);
    while (w->quota > 0 && !crash_point()) {
        /* k distinct random words */
        for (i = 0; i < k; i++) {
            int fresh;
            do {
                addrs[i] = next_random(&w->rng) % (uint64_t)cfg.words;
                fresh = 1;
                for (j = 0; j < i; j++)
                    fresh &= addrs[j] != addrs[i];
            } while (!fresh);
        }
        begin_op();
        w->quota--;
        pmlin_inv_read(w->t, k, addrs);
        if (crash_point())
            return NULL; /* cut off before it read: pending, no effect */
        mwread(k, addrs, vals);
        pmlin_ret_read(w->t, vals);
        if (w->quota <= 0 || crash_point())
            break;
        for (i = 0; i < k; i++)
            nw[i] = pmlin_tag(w->t);
        begin_op();
        w->quota--;
        if ((int)(next_random(&w->rng) % 100) < cfg.swaps) {
            pmlin_inv_swap(w->t, k, addrs, nw);
            if (crash_point())
                return NULL;
            mwswap(k, addrs, nw, seen);
            if (crash_point())
                return NULL; /* took effect, cut off before it returned */
            pmlin_ret_swap(w->t, seen);
            continue;
        }
        pmlin_inv_cas(w->t, k, addrs, vals, nw);
        if (crash_point())
            return NULL;
        if (mwcas(k, addrs, vals, nw, &blamed, seen)) {
            if (crash_point())
                return NULL;
            pmlin_ret_ok(w->t);
        } else if (cfg.fail_values) {
            pmlin_ret_fail_values(w->t, blamed, seen);
        } else {
            pmlin_ret_fail(w->t, blamed);
        }
    }
    return NULL;
}

/* recovery_read reads every word as process cfg.threads after a crash. */
static void recovery_read(pmlin_recorder *rec)
{
    pmlin_thread *t = pmlin_thread_get(rec, cfg.threads);
    uint64_t *addrs = (uint64_t *)calloc((size_t)cfg.words, sizeof *addrs);
    uint64_t *vals = (uint64_t *)calloc((size_t)cfg.words, sizeof *vals);
    int i;
    /* No lock is held: every thread stopped outside its critical sections. */
    for (i = 0; i < cfg.words; i++)
        addrs[i] = (uint64_t)i;
    pmlin_inv_read(t, (size_t)cfg.words, addrs);
    for (i = 0; i < cfg.words; i++)
        vals[i] = words[i].value;
    pmlin_ret_read(t, vals);
    free(addrs);
    free(vals);
}

static int usage(const char *msg)
{
    fprintf(stderr,
            "mwcas_example: %s\nusage: mwcas_example [--bug] [--threads N] [--ops N] [--words N] [--k N] "
            "[--crashes N] [--swaps PERCENT] [--fail-values] [--coarse-clock] [--seed N] [-o FILE] [--log FILE] "
            "[--force]\n",
            msg);
    return 2;
}

#ifdef CLOCK_MONOTONIC_COARSE
/* coarse_clock is --coarse-clock's clock (pmlin_set_clock). */
static uint64_t coarse_clock(void *arg)
{
    struct timespec ts;
    (void)arg;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif

static int parse(int argc, char **argv)
{
    int i;
    cfg.threads = 4;
    cfg.ops = 400;
    cfg.words = 4;
    cfg.k = 2;
    cfg.seed = 1;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        int *num = NULL;
        if (!strcmp(a, "--bug")) {
            cfg.bug = 1;
            continue;
        } else if (!strcmp(a, "--fail-values")) {
            cfg.fail_values = 1;
            continue;
        } else if (!strcmp(a, "--force")) {
            cfg.force = 1;
            continue;
        } else if (!strcmp(a, "--coarse-clock")) {
#ifndef CLOCK_MONOTONIC_COARSE
            return usage("--coarse-clock: this system has no CLOCK_MONOTONIC_COARSE");
#endif
            cfg.coarse_clock = 1;
            continue;
        }
        if (i + 1 >= argc)
            return usage("a flag without its value, or an unknown flag");
        if (!strcmp(a, "-o"))
            cfg.out = argv[++i];
        else if (!strcmp(a, "--log"))
            cfg.log = argv[++i];
        else if (!strcmp(a, "--seed"))
            cfg.seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(a, "--threads"))
            num = &cfg.threads;
        else if (!strcmp(a, "--ops"))
            num = &cfg.ops;
        else if (!strcmp(a, "--words"))
            num = &cfg.words;
        else if (!strcmp(a, "--k"))
            num = &cfg.k;
        else if (!strcmp(a, "--crashes"))
            num = &cfg.crashes;
        else if (!strcmp(a, "--swaps"))
            num = &cfg.swaps;
        else
            return usage("unknown flag");
        if (num)
            *num = atoi(argv[++i]);
    }
    if (cfg.threads < 1 || cfg.ops < 1 || cfg.k < 1 || cfg.k > MAX_K || cfg.words < cfg.k || cfg.crashes < 0 ||
        cfg.swaps < 0 || cfg.swaps > 100)
        return usage("need threads, ops >= 1, 1 <= k <= 8, words >= k, crashes >= 0, swaps in 0..100");
    return 0;
}

/* run_segments runs the workload, with a crash between segments. */
static int run_segments(pmlin_recorder *rec, worker *ws, pthread_t *tids)
{
    int seg, i, per_segment = cfg.ops / (cfg.crashes + 1);
    for (seg = 0; seg <= cfg.crashes; seg++) {
        int last = seg == cfg.crashes;
        atomic_store(&ops_started, 0);
        atomic_store(&stop, 0);
        crash_after = last ? 0 : per_segment;
        pthread_barrier_init(&start, NULL, (unsigned)cfg.threads);
        for (i = 0; i < cfg.threads; i++)
            if (pthread_create(&tids[i], NULL, run_worker, &ws[i]) != 0) {
                fprintf(stderr, "mwcas_example: pthread_create failed\n");
                return -1;
            }
        for (i = 0; i < cfg.threads; i++)
            pthread_join(tids[i], NULL);
        pthread_barrier_destroy(&start);
        if (last)
            break;
        if (pmlin_crash(rec) != 0)
            return -1;
        recovery_read(rec);
    }
    return 0;
}

int main(int argc, char **argv)
{
    pmlin_recorder *rec;
    worker *ws;
    pthread_t *tids;
    char cmdline[1024] = "mwcas_example";
    int i, rc;
    if ((rc = parse(argc, argv)) != 0)
        return rc;
    for (i = 1; i < argc; i++) {
        size_t n = strlen(cmdline);
        snprintf(cmdline + n, sizeof cmdline - n, " %s", argv[i]);
    }
    words = (word_t *)calloc((size_t)cfg.words, sizeof *words);
    ws = (worker *)calloc((size_t)cfg.threads, sizeof *ws);
    tids = (pthread_t *)calloc((size_t)cfg.threads, sizeof *tids);
    rec = pmlin_new(cfg.threads + 1); /* the last one reads after each crash */
    if (!words || !ws || !tids || !rec) {
        fprintf(stderr, "mwcas_example: out of memory\n");
        return 1;
    }
    for (i = 0; i < cfg.words; i++)
        pthread_mutex_init(&words[i].lock, NULL);
    pmlin_comment(rec, cmdline);
    pmlin_set_init(rec, 0);
#ifdef CLOCK_MONOTONIC_COARSE
    if (cfg.coarse_clock)
        pmlin_set_clock(rec, coarse_clock, NULL);
#endif
    for (i = 0; i < cfg.threads; i++) {
        ws[i].t = pmlin_thread_get(rec, i);
        ws[i].rng = cfg.seed * 1000003u + (uint64_t)i;
        ws[i].quota = cfg.ops / cfg.threads + (i < cfg.ops % cfg.threads);
        pmlin_reserve(ws[i].t, (size_t)ws[i].quota, (size_t)cfg.k);
    }
    rc = run_segments(rec, ws, tids);
    if (rc == 0 && cfg.log)
        rc = pmlin_write_log_file(rec, cfg.log, cfg.force);
    if (rc == 0)
        rc = (cfg.out && strcmp(cfg.out, "-")) ? pmlin_write_file(rec, cfg.out, cfg.force) : pmlin_write(rec, stdout);
    if (rc != 0)
        fprintf(stderr, "mwcas_example: %s\n", pmlin_error(rec));
    pmlin_free(rec);
    free(words);
    free(ws);
    free(tids);
    return rc == 0 ? 0 : 1;
}
