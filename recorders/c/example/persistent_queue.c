/*
 * persistent_queue: a persistent bounded FIFO queue whose state lives in a
 * file mapping, recorded as version 2 operations (an object of model
 * queue, its enq and deq) with pmlin.h, to be crash-tested by
 *
 *     pmlin fuzz --exec "./persistent_queue"          # correct: no violation
 *     pmlin fuzz --exec "./persistent_queue --bug"    # caught within seconds
 *
 * (recorders/README.md, "Recording version 2 operations"). Copy it, and put
 * your own data structure where the queue is.
 *
 * The queue. The state is a file mapped MAP_SHARED: a lock word, head and
 * tail (how many elements were ever dequeued and enqueued: the queue holds
 * slots head .. tail-1, modulo the capacity), and the slots. An enq takes
 * the lock, fails if the queue is full, writes the value into slot tail,
 * then advances tail by one store; a deq returns empty if head == tail,
 * else reads slot head, then advances head by one store. Each operation
 * takes effect at that one store, its commit: a kill before it leaves the
 * queue as it was (the slot written beyond tail is not in the queue), a
 * kill after it leaves the operation done. So recovery has only the lock
 * to free (its holder is dead), and the queue is linearizable across
 * kills. --bug advances tail before it writes the slot: a kill between the
 * two leaves an element in the queue that holds whatever the slot held
 * before (an element dequeued a lap ago, or 0), which the next start's
 * read-back dequeues. Both variants yield the CPU between the two stores
 * (sched_yield), which widens the window where a kill matters.
 *
 * The crash model is a process crash: a kill leaves every store to the
 * mapping in the page cache, so no flush is needed (on persistent memory
 * the slot would be flushed and fenced before tail is written, and tail
 * flushed before the lock is let go).
 *
 * The protocol of pmlin fuzz --exec (recorders/README.md, "The protocol
 * of pmlin fuzz --exec"): each start opens its logs, declares the queue
 * (the same in every start), maps and recovers the state, reads it back
 * (process THREADS dequeues until the queue is empty, each deq recorded:
 * what recovery left is then judged like any operation), and in role run
 * starts the threads, each enqueuing values never enqueued before
 * (pmlin_tag) and dequeuing at random, and calls pmlin_ready().
 *
 * By hand: PMLIN_LOG_DIR=logs PMLIN_STATE_DIR=. ./persistent_queue, then
 * pmlin gather logs -o h.hist && pmlin check h.hist.
 *
 * Flags: --threads N (3) --cap N (capacity, 4) --ops N (operations per
 * thread and start, 100000) --seed N (without PMLIN_SEED) --bug.
 * Exit 0, 1 on an error (said on standard error), 2 on usage.
 */
#include "../pmlin.h" /* first: it asks for POSIX under -std=c11 */

#include <pthread.h>
#include <sched.h>

#define MAX_CAP 1024

/* The state file, in words. */
struct state {
    uint64_t lock;
    uint64_t head, tail; /* dequeued and enqueued ever: the commits */
    uint64_t slots[MAX_CAP];
};

static struct state *st;
static pmlin_recorder *rec;
static int queue_id; /* pmlin_object's id of the queue */
static int threads = 3, cap = 4, ops = 100000, bug;
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

/* enq appends v; 0 if the queue is full. */
static int enq(uint64_t v)
{
    uint64_t t;
    lock();
    t = st->tail;
    if (t - st->head == (uint64_t)cap) {
        unlock();
        return 0;
    }
    if (bug) /* the commit before the slot: a kill between them exposes the slot's old value */
        __atomic_store_n(&st->tail, t + 1, __ATOMIC_RELEASE);
    else
        __atomic_store_n(&st->slots[t % (uint64_t)cap], v, __ATOMIC_RELEASE);
    sched_yield(); /* a wide window between the two stores */
    if (bug)
        __atomic_store_n(&st->slots[t % (uint64_t)cap], v, __ATOMIC_RELEASE);
    else
        __atomic_store_n(&st->tail, t + 1, __ATOMIC_RELEASE); /* the commit */
    unlock();
    return 1;
}

/* deq removes the front element into *v; 0 if the queue is empty. */
static int deq(uint64_t *v)
{
    uint64_t h;
    lock();
    h = st->head;
    if (h == st->tail) {
        unlock();
        return 0;
    }
    *v = st->slots[h % (uint64_t)cap];
    sched_yield();
    __atomic_store_n(&st->head, h + 1, __ATOMIC_RELEASE); /* the commit */
    unlock();
    return 1;
}

/* recover runs at every start, before anything else touches the state:
 * the lock's holder is dead. Nothing else is half done (above). */
static void recover(void)
{
    st->lock = 0;
}

/* recorded_deq dequeues as thread t, recorded; 0 when it found the queue
 * empty. */
static int recorded_deq(pmlin_thread *t)
{
    uint64_t v;
    pmlin_value r;
    int got;
    pmlin_inv_op(t, queue_id, "deq", 0, NULL);
    got = deq(&v);
    r = got ? pmlin_num(v) : pmlin_sym(PMLIN_EMPTY);
    pmlin_ret_op(t, 1, &r);
    return got;
}

static uint64_t next_random(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* worker: enq a new value or deq, half and half, each recorded around
 * the call. */
static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg, n;
    pmlin_thread *t = pmlin_thread_get(rec, id);
    uint64_t rng = seed + 0x632be59bd9b4e019u * (uint64_t)(id + 1);
    for (n = 0; n < ops; n++) {
        if (next_random(&rng) & 1) {
            pmlin_value v = pmlin_num(pmlin_tag(t)), r; /* a value never enqueued before */
            pmlin_inv_op(t, queue_id, "enq", 1, &v);
            r = pmlin_sym(enq(v.num) ? PMLIN_OK : PMLIN_FAIL);
            pmlin_ret_op(t, 1, &r);
        } else {
            recorded_deq(t);
        }
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
    fprintf(stderr, "usage: persistent_queue [--threads N] [--cap N] [--ops N] [--seed N] [--bug]\n"
                    "run it under pmlin fuzz --exec (recorders/README.md), or set PMLIN_LOG_DIR and PMLIN_STATE_DIR\n");
    return 2;
}

int main(int argc, char **argv)
{
    pthread_t tid[64];
    const char *role = getenv("PMLIN_ROLE"), *dir = getenv("PMLIN_STATE_DIR"), *s = getenv("PMLIN_SEED");
    char params[32];
    int i;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bug"))
            bug = 1;
        else if (i + 1 < argc && !strcmp(argv[i], "--threads"))
            threads = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--cap"))
            cap = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--ops"))
            ops = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--seed"))
            seed = strtoull(argv[++i], NULL, 0);
        else
            return usage();
    }
    if (threads < 1 || threads > 64 || cap < 1 || cap > MAX_CAP || ops < 0 || !dir)
        return usage();
    if (s)
        seed = strtoull(s, NULL, 10);

    /* 1. The logs, first: before the state is touched; then the queue,
     *    declared alike in every start. */
    rec = pmlin_new(threads + 1); /* process THREADS reads back after recovery */
    snprintf(params, sizeof params, "cap=%d", cap);
    if (!rec || pmlin_open_logs(rec, NULL, 0) != 0 || (queue_id = pmlin_object(rec, "q", "queue", params)) < 0) {
        fprintf(stderr, "persistent_queue: %s\n", rec ? pmlin_error(rec) : "out of memory");
        return 1;
    }
    /* 2. Recover, and read back what recovery left: dequeue until empty. */
    st = map_state(dir);
    recover();
    while (recorded_deq(pmlin_thread_get(rec, threads)))
        ;
    /* 3. Role run: the workload; pmlin may kill it once it is ready. */
    if (!role || strcmp(role, "recover") != 0) {
        for (i = 0; i < threads; i++)
            pthread_create(&tid[i], NULL, worker, (void *)(intptr_t)i);
        if (pmlin_ready() != 0)
            perror("persistent_queue: pmlin_ready");
        for (i = 0; i < threads; i++)
            pthread_join(tid[i], NULL);
    }
    /* Marks the logs closed: this start ended by itself, no crash line. */
    pmlin_free(rec);
    return 0;
}
