/*
 * persistent_mwcas: a persistent multi-word CAS whose state lives in a file
 * mapping, recorded with pmlin.h, to be crash-tested by
 *
 *     pmlin fuzz --exec "./persistent_mwcas"          # correct: no violation
 *     pmlin fuzz --exec "./persistent_mwcas --bug"    # caught within seconds
 *
 * (recorders/README.md, "Crash-testing your C/C++ program", walks through
 * it). Copy it, and put your own primitive where the MwCAS is.
 *
 * The primitive. The state is a file mapped MAP_SHARED: a lock word, a
 * redo record, and the words. A MwCAS takes the lock, compares, writes the
 * redo record (the addresses and the new values, then "valid" by a
 * release store), writes the words, clears "valid", and lets the lock go.
 * A start recovers first: the lock is free (its holder is dead) and a
 * valid redo record is applied again. So an operation cut off by a kill
 * took effect entirely (its record was valid) or not at all: the MwCAS
 * is linearizable across kills. --bug writes the words without the redo
 * record: a kill between two of them leaves half an operation, which the
 * next start's read shows. Both variants yield the CPU between the words
 * (sched_yield), which makes the window where a kill matters wide.
 *
 * The crash model is a process crash: a kill leaves every store to the
 * mapping in the page cache, so no flush is needed (on real persistent
 * memory the redo record would be flushed and fenced before the words;
 * pmlin fuzz --exec does not model a power failure).
 *
 * The protocol of pmlin fuzz --exec (recorders/README.md). pmlin starts
 * the program several times a run, each start with
 *   PMLIN_ROLE       run: recover, read back, run the workload until
 *                    killed; recover: recover, read back, exit 0
 *   PMLIN_LOG_DIR    where pmlin_open_logs puts this start's logs
 *   PMLIN_STATE_DIR  the program's own directory, kept across the run's
 *                    starts: the state file goes there
 *   PMLIN_SEED       a seed for the program's random choices
 *   PMLIN_READY_FD   where pmlin_ready() says "ready": from then on pmlin
 *                    may kill the program (SIGKILL) at any moment
 * and each start does, in this order: open the logs, map and recover the
 * state, record a read of every word (process THREADS), and in role run
 * start the threads and call pmlin_ready().
 *
 * By hand: PMLIN_LOG_DIR=logs PMLIN_STATE_DIR=. ./persistent_mwcas, then
 * pmlin gather logs -o h.hist && pmlin check h.hist.
 *
 * Flags: --threads N (4) --words N (8) --k N (2) --ops N (operations per
 * thread and start, 100000) --seed N (without PMLIN_SEED) --bug; --bool
 * records each failure as a MwCAS that returns only a bool must, with
 * pmlin_ret_fail_unknown (recorders/README.md, rule 6: with k > 1 the
 * failed operation is left out of the history).
 * Exit 0, 1 on an error (said on standard error), 2 on usage.
 */
#include "../pmlin.h" /* first: it asks for POSIX under -std=c11 */

#include <pthread.h>
#include <sched.h>

#define MAX_K 8
#define MAX_WORDS 1024

/* The state file, in words: the lock, the redo record, the words. */
struct state {
    uint64_t lock;
    uint64_t valid, k, addrs[MAX_K], values[MAX_K];
    uint64_t words[MAX_WORDS];
};

static struct state *st;
static pmlin_recorder *rec;
static int threads = 4, words = 8, k = 2, ops = 100000, bug, boolean;
static uint64_t seed = 1;

static void lock(void)
{
    while (__atomic_exchange_n(&st->lock, 1, __ATOMIC_ACQUIRE))
        sched_yield();
}

static void unlock(void)
{
    __atomic_store_n(&st->lock, 0, __ATOMIC_RELEASE);
}

/* mwread reads k words at once. */
static void mwread(int n, const uint64_t *addrs, uint64_t *out)
{
    int i;
    lock();
    for (i = 0; i < n; i++)
        out[i] = st->words[addrs[i]];
    unlock();
}

/* mwcas writes new values to k words if they hold the expected ones; on
 * a failure *blamed is a word that differed. */
static int mwcas(int n, const uint64_t *addrs, const uint64_t *expected, const uint64_t *nv, uint64_t *blamed)
{
    int i;
    lock();
    for (i = 0; i < n; i++)
        if (st->words[addrs[i]] != expected[i]) {
            *blamed = addrs[i];
            unlock();
            return 0;
        }
    if (!bug) { /* the redo record: all or nothing across a kill */
        st->k = (uint64_t)n;
        for (i = 0; i < n; i++) {
            st->addrs[i] = addrs[i];
            st->values[i] = nv[i];
        }
        __atomic_store_n(&st->valid, 1, __ATOMIC_RELEASE);
    }
    for (i = 0; i < n; i++) {
        __atomic_store_n(&st->words[addrs[i]], nv[i], __ATOMIC_RELEASE);
        sched_yield(); /* a wide window between two words */
    }
    __atomic_store_n(&st->valid, 0, __ATOMIC_RELEASE);
    unlock();
    return 1;
}

/* recover runs at every start, before anything else touches the state. */
static void recover(void)
{
    uint64_t i;
    st->lock = 0;
    if (st->valid) {
        for (i = 0; i < st->k && i < MAX_K; i++)
            st->words[st->addrs[i]] = st->values[i];
        st->valid = 0;
    }
}

static uint64_t next_random(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* worker: read k words, then a MwCAS of them from what it read to new
 * values, each operation recorded around the call. */
static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg, n, i, j;
    pmlin_thread *t = pmlin_thread_get(rec, id);
    uint64_t rng = seed + 0x632be59bd9b4e019u * (uint64_t)(id + 1);
    uint64_t a[MAX_K], v[MAX_K], nv[MAX_K], blamed = 0;
    for (n = 0; n < ops; n++) {
        for (i = 0; i < k; i++) { /* k distinct words */
            int fresh;
            do {
                a[i] = next_random(&rng) % (uint64_t)words;
                for (fresh = 1, j = 0; j < i; j++)
                    fresh &= a[j] != a[i];
            } while (!fresh);
        }
        pmlin_inv_read(t, (size_t)k, a);
        mwread(k, a, v);
        pmlin_ret_read(t, v);
        for (i = 0; i < k; i++)
            nv[i] = pmlin_tag(t); /* a value never written before */
        pmlin_inv_cas(t, (size_t)k, a, v, nv);
        if (mwcas(k, a, v, nv, &blamed))
            pmlin_ret_ok(t);
        else if (boolean)
            pmlin_ret_fail_unknown(t);
        else
            pmlin_ret_fail(t, blamed);
    }
    return NULL;
}

/* map_state maps the state file, created zeroed if missing. */
static struct state *map_state(const char *dir)
{
    char path[4096];
    void *p;
    int fd;
    snprintf(path, sizeof path, "%s/state", dir);
    fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0 || ftruncate(fd, sizeof(struct state)) != 0) {
        perror(path);
        exit(1);
    }
    p = mmap(NULL, sizeof(struct state), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        perror(path);
        exit(1);
    }
    return (struct state *)p;
}

static int usage(void)
{
    fprintf(stderr, "usage: persistent_mwcas [--threads N] [--words N] [--k N] [--ops N] [--seed N] [--bug] [--bool]\n"
                    "run it under pmlin fuzz --exec (recorders/README.md), or set PMLIN_LOG_DIR and PMLIN_STATE_DIR\n");
    return 2;
}

int main(int argc, char **argv)
{
    pthread_t tid[64];
    uint64_t all[MAX_WORDS], vals[MAX_WORDS];
    const char *role = getenv("PMLIN_ROLE"), *dir = getenv("PMLIN_STATE_DIR"), *s = getenv("PMLIN_SEED");
    int i;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bug"))
            bug = 1;
        else if (!strcmp(argv[i], "--bool"))
            boolean = 1;
        else if (i + 1 < argc && !strcmp(argv[i], "--threads"))
            threads = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--words"))
            words = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--k"))
            k = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--ops"))
            ops = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--seed"))
            seed = strtoull(argv[++i], NULL, 0);
        else
            return usage();
    }
    if (threads < 1 || threads > 64 || k < 1 || k > MAX_K || words < k || words > MAX_WORDS || ops < 0 || !dir)
        return usage();
    if (s)
        seed = strtoull(s, NULL, 10);

    /* 1. The logs, first: before the state is touched. */
    rec = pmlin_new(threads + 1); /* process THREADS reads after recovery */
    if (!rec || pmlin_open_logs(rec, NULL, 0) != 0 || pmlin_set_init(rec, 0) != 0) {
        fprintf(stderr, "persistent_mwcas: %s\n", rec ? pmlin_error(rec) : "out of memory");
        return 1;
    }
    /* 2. Recover, and record a read of every word: what recovery left. */
    st = map_state(dir);
    recover();
    for (i = 0; i < words; i++)
        all[i] = (uint64_t)i;
    pmlin_inv_read(pmlin_thread_get(rec, threads), (size_t)words, all);
    for (i = 0; i < words; i++)
        vals[i] = st->words[i];
    pmlin_ret_read(pmlin_thread_get(rec, threads), vals);
    /* 3. Role run: the workload; pmlin may kill it once it is ready. */
    if (!role || strcmp(role, "recover") != 0) {
        for (i = 0; i < threads; i++)
            pthread_create(&tid[i], NULL, worker, (void *)(intptr_t)i);
        if (pmlin_ready() != 0)
            perror("persistent_mwcas: pmlin_ready");
        for (i = 0; i < threads; i++)
            pthread_join(tid[i], NULL);
    }
    /* Marks the logs closed: this start ended by itself, no crash line. */
    pmlin_free(rec);
    return 0;
}
