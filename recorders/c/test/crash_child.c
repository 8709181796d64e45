/*
 * crash_child: a persistent MwCAS on a file mapping, recorded with pmlin.h
 * into logs that survive a kill, for the crash tests of package recorders
 * (recorders_test.go kills it with SIGKILL at random moments, restarts it,
 * and gathers the logs with pmlin gather's package).
 *
 * The state is a file mapping (MAP_SHARED: a kill leaves every store in
 * the page cache): one lock word, a redo record, and the words. A MwCAS or
 * a swap takes the lock, compares, writes the redo record (the addresses
 * and the new values, then "valid" by a release store), writes the words,
 * clears "valid" and lets the lock go. A start recovers: the lock is
 * free (its holder is dead), a valid redo record is applied again. So an
 * operation cut off by a kill took effect entirely (its redo record was
 * valid) or not at all: the MwCAS is linearizable across kills.
 *
 * --bug writes the words without the redo record: a kill between two of
 * them leaves half an operation, which the recovery's read shows.
 *
 * Every run (generation) opens its logs first (pmlin_open_logs: the
 * directory of $PMLIN_LOG_DIR, or --buffer FILE --generation N: a file of
 * its own, through pmlin_open_buffer), then recovers, then reads every word
 * as process <threads>, then (unless --recover-only) runs its threads'
 * operations until killed or done.
 *
 * Usage: crash_child STATE [--threads N] [--words N] [--k N] [--ops N]
 *          [--swaps PERCENT] [--pause N] [--kill-after-us N] [--seed N] [--bug] [--recover-only]
 *          [--log-bytes N] [--buffer FILE --generation N] [-o FILE]
 * -o: the history as the program itself writes it (pmlin_write), at its
 * end. It prints "running" once its threads are started; --kill-after-us
 * N: then it kills itself with SIGKILL N microseconds later (a kill at a
 * precise moment of the recording, which a parent's signal is not).
 * Exit 0, 1 on a recording error, 2 on usage.
 */
#define _POSIX_C_SOURCE 200809L
#include "../pmlin.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>

#define MAX_K 8

/* The state file's layout, in words. */
enum { S_LOCK = 0, S_VALID = 1, S_K = 2, S_ADDRS = 3, S_NEW = 3 + MAX_K, S_WORDS = 32 };

typedef struct {
    int threads, words, k, ops, swaps, bug, recover_only, pause;
    long kill_after_us; /* > 0: SIGKILL itself that long after its threads start */
    uint64_t seed, generation;
    size_t log_bytes;
    const char *state, *buffer, *out;
} config;

static config cfg;
static uint64_t *st; /* the state mapping */
static pmlin_recorder *rec;

static void *map_file(const char *path, size_t size)
{
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    void *p;
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
        perror(path);
        exit(1);
    }
    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        perror(path);
        exit(1);
    }
    return p;
}

static void lock(void)
{
    while (__atomic_exchange_n(&st[S_LOCK], 1, __ATOMIC_ACQUIRE))
        sched_yield();
}

static void unlock(void)
{
    __atomic_store_n(&st[S_LOCK], 0, __ATOMIC_RELEASE);
}

/* pause_between widens the window between the writes of two words, where
 * a kill leaves half an operation if nothing can redo it (--pause N: N
 * iterations of a loop). */
static void pause_between(void)
{
    volatile int i;
    for (i = 0; i < cfg.pause; i++)
        ;
}

/* apply writes the new values, under a redo record unless --bug. */
static void apply(size_t k, const uint64_t *addrs, const uint64_t *nw)
{
    size_t i;
    if (!cfg.bug) {
        st[S_K] = k;
        for (i = 0; i < k; i++) {
            st[S_ADDRS + i] = addrs[i];
            st[S_NEW + i] = nw[i];
        }
        __atomic_store_n(&st[S_VALID], 1, __ATOMIC_RELEASE);
    }
    for (i = 0; i < k; i++) {
        __atomic_store_n(&st[S_WORDS + addrs[i]], nw[i], __ATOMIC_RELEASE);
        pause_between();
    }
    __atomic_store_n(&st[S_VALID], 0, __ATOMIC_RELEASE);
}

static void recover(void)
{
    size_t i;
    st[S_LOCK] = 0;
    if (st[S_VALID]) {
        for (i = 0; i < st[S_K] && i < MAX_K; i++)
            st[S_WORDS + st[S_ADDRS + i]] = st[S_NEW + i];
        st[S_VALID] = 0;
    }
}

static uint64_t next_random(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg, n;
    pmlin_thread *t = pmlin_thread_get(rec, id);
    uint64_t rng = cfg.seed * 1000003u + (uint64_t)id + cfg.generation * 7919u;
    uint64_t a[MAX_K], v[MAX_K], nw[MAX_K], seen[MAX_K];
    size_t k = (size_t)cfg.k, i, j;
    for (n = 0; n < cfg.ops; n++) {
        int ok = 1;
        uint64_t blamed = 0;
        for (i = 0; i < k; i++) {
            int fresh;
            do {
                a[i] = next_random(&rng) % (uint64_t)cfg.words;
                fresh = 1;
                for (j = 0; j < i; j++)
                    fresh &= a[j] != a[i];
            } while (!fresh);
        }
        pmlin_inv_read(t, k, a);
        lock();
        for (i = 0; i < k; i++)
            v[i] = st[S_WORDS + a[i]];
        unlock();
        pmlin_ret_read(t, v);
        for (i = 0; i < k; i++)
            nw[i] = pmlin_tag(t);
        if ((int)(next_random(&rng) % 100) < cfg.swaps) {
            pmlin_inv_swap(t, k, a, nw);
            lock();
            for (i = 0; i < k; i++)
                seen[i] = st[S_WORDS + a[i]];
            apply(k, a, nw);
            unlock();
            pmlin_ret_swap(t, seen);
            continue;
        }
        pmlin_inv_cas(t, k, a, v, nw);
        lock();
        for (i = 0; i < k && ok; i++)
            if (st[S_WORDS + a[i]] != v[i]) {
                ok = 0;
                blamed = a[i];
            }
        if (ok)
            apply(k, a, nw);
        unlock();
        if (ok)
            pmlin_ret_ok(t);
        else
            pmlin_ret_fail(t, blamed);
    }
    return NULL;
}

static int usage(const char *msg)
{
    fprintf(stderr,
            "crash_child: %s\nusage: crash_child STATE [--threads N] [--words N] [--k N] [--ops N] [--swaps P] [--pause N] [--kill-after-us N] "
            "[--seed N] [--bug] [--recover-only] [--log-bytes N] [--buffer FILE --generation N] [-o FILE]\n",
            msg);
    return 2;
}

static int parse(int argc, char **argv)
{
    int i;
    cfg.threads = 3;
    cfg.words = 6;
    cfg.k = 2;
    cfg.ops = 20000;
    cfg.swaps = 20;
    cfg.seed = 1;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-') {
            cfg.state = a;
            continue;
        }
        if (!strcmp(a, "--bug")) {
            cfg.bug = 1;
            continue;
        }
        if (!strcmp(a, "--recover-only")) {
            cfg.recover_only = 1;
            continue;
        }
        if (i + 1 >= argc)
            return usage("a flag without its value, or an unknown flag");
        if (!strcmp(a, "--threads"))
            cfg.threads = atoi(argv[++i]);
        else if (!strcmp(a, "--words"))
            cfg.words = atoi(argv[++i]);
        else if (!strcmp(a, "--k"))
            cfg.k = atoi(argv[++i]);
        else if (!strcmp(a, "--ops"))
            cfg.ops = atoi(argv[++i]);
        else if (!strcmp(a, "--kill-after-us"))
            cfg.kill_after_us = atol(argv[++i]);
        else if (!strcmp(a, "--pause"))
            cfg.pause = atoi(argv[++i]);
        else if (!strcmp(a, "--swaps"))
            cfg.swaps = atoi(argv[++i]);
        else if (!strcmp(a, "--seed"))
            cfg.seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(a, "--log-bytes"))
            cfg.log_bytes = (size_t)strtoull(argv[++i], NULL, 0);
        else if (!strcmp(a, "--buffer"))
            cfg.buffer = argv[++i];
        else if (!strcmp(a, "-o"))
            cfg.out = argv[++i];
        else if (!strcmp(a, "--generation"))
            cfg.generation = strtoull(argv[++i], NULL, 0);
        else
            return usage("unknown flag");
    }
    if (!cfg.state)
        return usage("no state file");
    if (cfg.threads < 1 || cfg.threads > 64 || cfg.k < 1 || cfg.k > MAX_K || cfg.words < cfg.k ||
        S_WORDS + cfg.words > 4096 || (cfg.buffer && cfg.generation < 1))
        return usage("need 1 <= threads <= 64, 1 <= k <= 8, k <= words <= 4000, --generation with --buffer");
    return 0;
}

int main(int argc, char **argv)
{
    pthread_t tid[64];
    uint64_t *addrs, *vals;
    char cmdline[512] = "crash_child";
    int i, rc;
    if ((rc = parse(argc, argv)) != 0)
        return rc;
    for (i = 1; i < argc; i++) {
        size_t n = strlen(cmdline);
        snprintf(cmdline + n, sizeof cmdline - n, " %s", argv[i]);
    }
    rec = pmlin_new(cfg.threads + 1); /* the last one reads after recovery */
    if (!rec)
        return 1;
    /* The logs first: before the state is touched. */
    if (cfg.buffer) {
        size_t size = pmlin_logs_size(cfg.threads + 1, cfg.log_bytes);
        rc = pmlin_open_buffer(rec, map_file(cfg.buffer, size), size, cfg.generation);
    } else {
        rc = pmlin_open_logs(rec, NULL, cfg.log_bytes);
    }
    if (rc != 0 || pmlin_set_init(rec, 0) != 0 || pmlin_comment(rec, cmdline) != 0) {
        fprintf(stderr, "crash_child: %s\n", pmlin_error(rec));
        return 1;
    }
    cfg.generation = pmlin_generation(rec);
    st = (uint64_t *)map_file(cfg.state, 8 * 4096);
    recover();
    addrs = (uint64_t *)calloc((size_t)cfg.words, sizeof *addrs);
    vals = (uint64_t *)calloc((size_t)cfg.words, sizeof *vals);
    for (i = 0; i < cfg.words; i++)
        addrs[i] = (uint64_t)i;
    pmlin_inv_read(pmlin_thread_get(rec, cfg.threads), (size_t)cfg.words, addrs);
    for (i = 0; i < cfg.words; i++)
        vals[i] = st[S_WORDS + i];
    pmlin_ret_read(pmlin_thread_get(rec, cfg.threads), vals);
    if (!cfg.recover_only) {
        /* Room for the first operations, its pages touched, before the
         * threads start (pthread_create hands each handle over). */
        for (i = 0; i < cfg.threads; i++)
            pmlin_reserve(pmlin_thread_get(rec, i), 2048, (size_t)cfg.k);
        for (i = 0; i < cfg.threads; i++)
            pthread_create(&tid[i], NULL, worker, (void *)(intptr_t)i);
        /* For a test that kills it while its threads record. */
        printf("running\n");
        fflush(stdout);
        if (cfg.kill_after_us > 0) {
            struct timespec d;
            d.tv_sec = cfg.kill_after_us / 1000000;
            d.tv_nsec = cfg.kill_after_us % 1000000 * 1000;
            nanosleep(&d, NULL);
            kill(getpid(), SIGKILL);
        }
        for (i = 0; i < cfg.threads; i++)
            pthread_join(tid[i], NULL);
    }
    /* The history as the program itself merges it (to /dev/null: a check
     * of its logs, which pmlin_write validates). */
    rc = pmlin_write_file(rec, cfg.out ? cfg.out : "/dev/null", 1) == 0 ? 0 : 1;
    if (rc)
        fprintf(stderr, "crash_child: %s\n", pmlin_error(rec));
    pmlin_free(rec);
    free(addrs);
    free(vals);
    return rc;
}
