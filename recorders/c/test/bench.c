/*
 * bench: the cost of recording with pmlin.h, per operation (an invocation
 * and a response of a 2-word read), on one thread and on several at once,
 * against the same loop unrecorded. Usage: bench [threads] [ops per thread]
 */
#define _POSIX_C_SOURCE 200809L
#include "../pmlin.h"

#include <pthread.h>

static pmlin_recorder *rec;
static long ops = 2000000;
static volatile uint64_t words[64];

static void *loop(void *arg)
{
    pmlin_thread *t = arg ? pmlin_thread_get(rec, (int)(intptr_t)arg - 1) : NULL;
    uint64_t a[2] = {1, 2}, v[2];
    long i;
    if (t)
        pmlin_reserve(t, (size_t)ops, 2);
    for (i = 0; i < ops; i++) {
        if (t)
            pmlin_inv_read(t, 2, a);
        v[0] = words[a[0]];
        v[1] = words[a[1]];
        if (t)
            pmlin_ret_read(t, v);
    }
    return NULL;
}

static double run(int threads, int recorded)
{
    pthread_t tid[64];
    uint64_t t0 = pmlin__monotonic_ns();
    int i;
    for (i = 0; i < threads; i++)
        pthread_create(&tid[i], NULL, loop, recorded ? (void *)(intptr_t)(i + 1) : NULL);
    for (i = 0; i < threads; i++)
        pthread_join(tid[i], NULL);
    return (double)(pmlin__monotonic_ns() - t0) / (double)ops;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    double plain, recorded, merge;
    uint64_t t0;
    FILE *null = fopen("/dev/null", "w");
    if (argc > 2)
        ops = atol(argv[2]);
    if (threads < 1 || threads > 64 || !null)
        return 2;
    rec = pmlin_new(threads);
    plain = run(threads, 0);
    recorded = run(threads, 1);
    t0 = pmlin__monotonic_ns();
    if (pmlin_write(rec, null) != 0)
        return 1;
    merge = (double)(pmlin__monotonic_ns() - t0) / (double)(ops * threads);
    printf("%d threads, %ld ops each: %.1f ns/op unrecorded, %.1f ns/op recorded (+%.1f ns: invocation, "
           "response, two clock reads and fences); merge and write: %.1f ns/op\n",
           threads, ops, plain, recorded, recorded - plain, merge);
    pmlin_free(rec);
    return 0;
}
