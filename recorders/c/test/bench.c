/*
 * bench: the cost of recording with pmlin.h, per operation (an invocation
 * and a response of a 2-word read, of a 2-word cas with --cas, or of a
 * version 2 operation with --op: a queue's enq of one value, ok), on one
 * thread and on several at once, against the same loop unrecorded: with
 * the logs on the heap, and in a log file (pmlin_open_logs: a file mapping
 * that survives a kill). The three sides run in turns, rounds times, and
 * the medians are printed; pmlin_reserve pre-faults each side's pages
 * first, untimed, so page faults are not counted (without --reserve-off).
 *
 * Usage: bench [threads] [ops per thread] [rounds] [--cas|--op] [--reserve-off]
 *          [--dir DIR]
 * The log files go to a temporary directory in DIR (default /tmp),
 * removed at the end. On a disk's file system the kernel writes the dirty
 * pages back while the loop runs, and each page written back faults again
 * at its next write: a log directory on tmpfs (/dev/shm) has no writeback.
 */
#define _POSIX_C_SOURCE 200809L
#include "../pmlin.h"

#include <dirent.h>
#include <pthread.h>

static long ops = 1000000;
static int cas, op, reserve = 1;
static volatile uint64_t words[64];

typedef struct {
    pmlin_recorder *rec; /* NULL: unrecorded */
    int id;
} job;

static void *loop(void *arg)
{
    job *j = (job *)arg;
    pmlin_thread *t = j->rec ? pmlin_thread_get(j->rec, j->id) : NULL;
    uint64_t a[2] = {1, 2}, v[2], n[2];
    long i;
    for (i = 0; i < ops; i++) {
        if (op) {
            pmlin_value x = pmlin_num((uint64_t)i + 5), ok = pmlin_sym(PMLIN_OK);
            if (t)
                pmlin_inv_op(t, 0, "enq", 1, &x);
            words[a[0]] = x.num;
            if (t)
                pmlin_ret_op(t, 1, &ok);
            continue;
        }
        if (cas) {
            n[0] = (uint64_t)i + 5;
            n[1] = (uint64_t)i + 6;
            if (t)
                pmlin_inv_cas(t, 2, a, v, n);
            words[a[0]] = n[0];
            words[a[1]] = n[1];
            if (t)
                pmlin_ret_ok(t);
            continue;
        }
        if (t)
            pmlin_inv_read(t, 2, a);
        v[0] = words[a[0]];
        v[1] = words[a[1]];
        if (t)
            pmlin_ret_read(t, v);
    }
    return NULL;
}

/* run times one side: ns per operation (of one thread). The logs' room is
 * reserved before, untimed (pthread_create hands each handle over). */
static double run(int threads, pmlin_recorder *rec)
{
    pthread_t tid[64];
    job jobs[64];
    uint64_t t0;
    int i;
    for (i = 0; rec && reserve && i < threads; i++)
        if (pmlin_reserve(pmlin_thread_get(rec, i), (size_t)ops, 2) != 0) {
            fprintf(stderr, "bench: pmlin_reserve failed\n");
            exit(1);
        }
    t0 = pmlin__monotonic_ns();
    for (i = 0; i < threads; i++) {
        jobs[i].rec = rec;
        jobs[i].id = i;
        pthread_create(&tid[i], NULL, loop, &jobs[i]);
    }
    for (i = 0; i < threads; i++)
        pthread_join(tid[i], NULL);
    return (double)(pmlin__monotonic_ns() - t0) / (double)ops;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* rm_logs removes the log files of dir, and dir. */
static void rm_logs(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];
    while (d && (e = readdir(d)) != NULL) {
        if (strstr(e->d_name, ".pmlog")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            remove(path);
        }
    }
    if (d)
        closedir(d);
    remove(dir);
}

int main(int argc, char **argv)
{
    int threads = 1, rounds = 5, r, i, pos = 0;
    double plain[64], heap[64], file[64];
    char dir[256];
    const char *parent = "/tmp";
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            parent = argv[++i];
        else if (!strcmp(argv[i], "--cas"))
            cas = 1;
        else if (!strcmp(argv[i], "--op"))
            op = 1;
        else if (!strcmp(argv[i], "--reserve-off"))
            reserve = 0;
        else if (pos == 0)
            threads = atoi(argv[i]), pos++;
        else if (pos == 1)
            ops = atol(argv[i]), pos++;
        else
            rounds = atoi(argv[i]);
    }
    snprintf(dir, sizeof dir, "%s/pmlin-bench-XXXXXX", parent);
    if (threads < 1 || threads > 64 || rounds < 1 || rounds > 64 || ops < 1 || !mkdtemp(dir))
        return 2;
    for (r = 0; r < rounds; r++) {
        pmlin_recorder *h = pmlin_new(threads), *f = pmlin_new(threads);
        /* Room for what pmlin_reserve asks: 5 + 4k words per operation. */
        if (!h || !f || pmlin_open_logs(f, dir, (size_t)ops * 8 * 13 + (1 << 20)) != 0 ||
            (op && (pmlin_object(h, "q", "queue", NULL) != 0 || pmlin_object(f, "q", "queue", NULL) != 0))) {
            fprintf(stderr, "bench: %s\n", f ? pmlin_error(f) : "out of memory");
            return 1;
        }
        plain[r] = run(threads, NULL);
        heap[r] = run(threads, h);
        file[r] = run(threads, f);
        if (pmlin_write_file(h, "/dev/null", 1) != 0 || pmlin_write_file(f, "/dev/null", 1) != 0) {
            fprintf(stderr, "bench: %s %s\n", pmlin_error(h), pmlin_error(f));
            return 1;
        }
        pmlin_free(h);
        pmlin_free(f);
    }
    rm_logs(dir);
    qsort(plain, (size_t)rounds, sizeof *plain, cmp_double);
    qsort(heap, (size_t)rounds, sizeof *heap, cmp_double);
    qsort(file, (size_t)rounds, sizeof *file, cmp_double);
    printf("%d threads, %ld %s%s each, median of %d rounds: %.1f ns/op unrecorded, %.1f ns/op recorded on "
           "the heap (+%.1f), %.1f ns/op recorded in a log file (+%.1f)%s\n",
           threads, ops, op ? "" : "2-word ", op ? "queue enq (version 2)" : cas ? "cas" : "reads", rounds,
           plain[rounds / 2], heap[rounds / 2],
           heap[rounds / 2] - plain[rounds / 2], file[rounds / 2], file[rounds / 2] - plain[rounds / 2],
           reserve ? "" : " (no pmlin_reserve: page faults counted)");
    return 0;
}
