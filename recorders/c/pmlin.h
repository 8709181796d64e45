/*
 * pmlin.h: record histories of multi-word reads, CAS and swaps for pmlin,
 * from C (C11) or C++ (C++11 and later). Header only: include it and go.
 *
 * pmlin decides whether a history of multi-word operations is linearizable
 * (the method of Cepeda et al., OPODIS 2019). This header records such a
 * history while your threads run your primitive, and writes it in pmlin's
 * text format v1 (docs/history-format.md in the pmlin repository):
 *
 *     pmlin_recorder *rec = pmlin_new(4);            // 4 threads: processes 0..3
 *     // in thread i:
 *     pmlin_thread *t = pmlin_thread_get(rec, i);
 *     uint64_t a[2] = {10, 11}, e[2], n[2];
 *     pmlin_inv_read(t, 2, a);                       // just before the first shared access
 *     my_mwread(2, a, e);
 *     pmlin_ret_read(t, e);                          // just after the last one
 *     n[0] = pmlin_tag(t); n[1] = pmlin_tag(t);      // values never written before
 *     pmlin_inv_cas(t, 2, a, e, n);
 *     if (my_mwcas(2, a, e, n, &blamed)) pmlin_ret_ok(t); else pmlin_ret_fail(t, blamed);
 *     // after joining the threads:
 *     if (pmlin_write_file(rec, "run.hist", 0) != 0) fprintf(stderr, "%s\n", pmlin_error(rec));
 *     pmlin_free(rec);
 *
 * Then `pmlin check run.hist`. recorders/README.md explains every duty of a
 * recorder; the short version, which this header implements:
 *
 * ONE GLOBAL CLOCK. Each step (invocation, response) gets a timestamp from
 * CLOCK_MONOTONIC, one clock for the whole system that never goes back, on
 * any CPU. Per-thread clocks (CLOCK_THREAD_CPUTIME_ID, a per-thread counter,
 * a TSC read without invariant-TSC guarantees) are wrong: timestamps of
 * different threads would not be comparable, and the merge would invent a
 * real-time order that never happened (false cycles, or hidden bugs).
 *
 * TIMESTAMPS BRACKET THE OPERATION. An invocation's timestamp is taken
 * before the operation's first access to shared memory, a response's after
 * its last, and neither the compiler nor the CPU may move a shared access
 * across them: pmlin_inv_* read the clock and then execute a full fence
 * (plus LFENCE on x86, ISB on AArch64, so that no later load or store
 * executes before the clock read); pmlin_ret_* execute the full fence (and
 * LFENCE/ISB) before reading the clock, so every earlier store is globally
 * visible first. Call pmlin_inv_* as the last thing before the operation
 * and pmlin_ret_* as the first thing after it: a recorded interval that is
 * too short invents a real-time order (false alarms); one that is too long
 * hides real violations.
 *
 * NO SHARED STATE WHILE RECORDING. Each thread appends to its own buffer
 * (cache-line aligned, grown by the thread itself); recording takes no lock
 * and touches no shared counter, which would order the threads and hide
 * the very races the check looks for.
 *
 * THE MERGE. pmlin_write merges the buffers by timestamp. Each thread's
 * steps keep their order (a k-way merge that only ever takes the head of a
 * thread's buffer). Between threads, on equal timestamps an invocation goes
 * before a response (a recorded interval may grow, never shrink), then a
 * response whose thread invokes again at that timestamp, then the lower
 * process id; two threads that each respond and invoke again at one
 * timestamp make pmlin_write fail, since no order of their lines would be
 * honest (a clock too coarse: recorders/README.md, rule 4, has the rule).
 * A crash's timestamp is strictly between the steps before it and those
 * after it (pmlin_crash waits for the clock to tick).
 *
 * WHAT MAY RUN CONCURRENTLY.
 *   - pmlin_inv_*, pmlin_ret_*, pmlin_tag, pmlin_reserve on a thread handle:
 *     by one thread at a time (the handle's owner). Different handles may
 *     be used concurrently, without any synchronization.
 *   - Everything else (pmlin_new, pmlin_free, pmlin_thread_get,
 *     pmlin_set_init*, pmlin_comment, pmlin_set_clock, pmlin_crash,
 *     pmlin_write*, pmlin_error): only while no thread records, e.g. before
 *     pthread_create and after pthread_join, which order the memory. A
 *     handle may move to another OS thread (after a crash, say) if the
 *     hand-off is synchronized the same way.
 *
 * ERRORS. A misuse (a response with nothing pending, an invocation while
 * one is pending, a failure that blames an address the cas does not name,
 * out of memory, ...) is remembered by the thread's handle, which then
 * stops recording; pmlin_write reports it (returns -1, pmlin_error says
 * which thread and step) and writes nothing, so a broken recording never
 * yields a history that looks fine. pmlin_write also refuses a recording
 * with no operation at all.
 *
 * Compile as C11 or later (-std=c11, -std=gnu11, ...) or C++11 or later,
 * and with -pthread if your threads are pthreads. The header needs
 * POSIX's clock_gettime(CLOCK_MONOTONIC); under strict ISO C (-std=c11)
 * it sees to that itself, whatever the order of your includes (below).
 */
#ifndef PMLIN_H
#define PMLIN_H

/* POSIX under strict ISO C. With -std=c11 (__STRICT_ANSI__) and no
 * feature-test macro of the program's own, the system headers declare
 * nothing of POSIX. Included before any of them, this header asks for it
 * (_POSIX_C_SOURCE 200809L, which then holds for the rest of the file);
 * included after one, it cannot any more (the C library fixed its
 * features at its first header), and it declares clock_gettime itself on
 * Linux and does without flockfile, putc_unlocked and posix_memalign
 * (PMLIN__POSIX below). Under -std=gnu11, C++ or a feature-test macro of
 * the program's own it changes nothing. */
#if defined(__STRICT_ANSI__) && !defined(__cplusplus) && !defined(_POSIX_C_SOURCE) && !defined(_XOPEN_SOURCE) && \
    !defined(_GNU_SOURCE) && !defined(_DEFAULT_SOURCE) && !defined(_BSD_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* PMLIN__POSIX: POSIX (2001 or later) is declared: CLOCK_MONOTONIC is the
 * sign, and a _POSIX_C_SOURCE, if any, that is recent enough. */
#if defined(CLOCK_MONOTONIC) && (!defined(_POSIX_C_SOURCE) || _POSIX_C_SOURCE >= 200112L)
#define PMLIN__POSIX 1
#endif

#if defined(CLOCK_MONOTONIC)
#define PMLIN__CLOCK_MONOTONIC CLOCK_MONOTONIC
#elif defined(__linux__) && !defined(__cplusplus)
/* Strict ISO C with a system header included before this one: Linux's
 * clock_gettime, declared as the C library declares it (clockid_t is an
 * int there), and its CLOCK_MONOTONIC. */
extern int clock_gettime(int, struct timespec *);
#define PMLIN__CLOCK_MONOTONIC 1
#else
#error "pmlin.h needs clock_gettime(CLOCK_MONOTONIC): define _POSIX_C_SOURCE=200809L before including any header (or include pmlin.h first)"
#endif

/* A stream locked once for a whole history, written a character at a time
 * without a lock (pmlin__put_str), where POSIX has it; else plain putc. */
#ifdef PMLIN__POSIX
#define PMLIN__LOCK(f) flockfile(f)
#define PMLIN__UNLOCK(f) funlockfile(f)
#define PMLIN__PUTC(c, f) putc_unlocked(c, f)
#else
#define PMLIN__LOCK(f) ((void)(f))
#define PMLIN__UNLOCK(f) ((void)(f))
#define PMLIN__PUTC(c, f) putc(c, f)
#endif

#ifdef __cplusplus
#include <atomic>
#define PMLIN__FULL_FENCE() std::atomic_thread_fence(std::memory_order_seq_cst)
#else
#include <stdatomic.h>
#define PMLIN__FULL_FENCE() atomic_thread_fence(memory_order_seq_cst)
#endif

/* PMLIN__CLOCK_BARRIER keeps the CPU from executing later instructions
 * (loads and stores of the operation) before the clock read completes, and
 * the clock read before earlier ones complete: a full memory fence orders
 * memory accesses only, and reading a time stamp counter is not one. */
#if defined(__x86_64__) || defined(__i386__)
#define PMLIN__CLOCK_BARRIER() __asm__ __volatile__("lfence" ::: "memory")
#elif defined(__aarch64__)
#define PMLIN__CLOCK_BARRIER() __asm__ __volatile__("isb" ::: "memory")
#else
#define PMLIN__CLOCK_BARRIER() PMLIN__FULL_FENCE()
#endif

/* Tags (pmlin_tag) are (pid + 1) << PMLIN_TAG_SHIFT | counter. Define it
 * before including this header if your primitive reserves high bits of a
 * word (the counter then has PMLIN_TAG_SHIFT bits). */
#ifndef PMLIN_TAG_SHIFT
#define PMLIN_TAG_SHIFT 32
#endif
#if PMLIN_TAG_SHIFT < 8 || PMLIN_TAG_SHIFT > 56
#error "PMLIN_TAG_SHIFT must be between 8 and 56"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Record kinds in a thread's buffer. A record is: word 0 = kind | k << 8,
 * word 1 = timestamp, then the payload (addresses and values). */
enum {
    PMLIN__INV_READ = 1,    /* k addresses */
    PMLIN__INV_CAS = 2,     /* k triples address, expected, new */
    PMLIN__INV_SWAP = 3,    /* k pairs address, new */
    PMLIN__RET_VALUES = 4,  /* k values (read or swap) */
    PMLIN__RET_OK = 5,      /* nothing */
    PMLIN__RET_FAIL = 6,    /* the blamed address */
    PMLIN__RET_FAIL_VALS = 7 /* the blamed address, then k values */
};

/* Misuses a thread handle remembers (the first one). */
enum {
    PMLIN__E_NONE = 0,
    PMLIN__E_NOMEM,
    PMLIN__E_OVERLAP,
    PMLIN__E_NOPENDING,
    PMLIN__E_KIND,
    PMLIN__E_K0,
    PMLIN__E_DUPADDR,
    PMLIN__E_FAILADDR,
    PMLIN__E_CLOCK,
    PMLIN__E_TAGS
};

typedef struct pmlin_recorder pmlin_recorder;

/* pmlin_thread is one thread's log. Its fields are private. */
typedef struct pmlin_thread {
    uint64_t *buf;
    size_t len, cap;        /* in 64-bit words */
    size_t pending;         /* 1 + offset of the pending invocation, 0: none */
    uint64_t last_ts;
    uint64_t tags;          /* tags handed out */
    uint64_t steps;         /* steps recorded, for messages */
    int32_t pid;
    int err;                /* PMLIN__E_*: the first misuse */
    uint64_t err_step;      /* the step it happened at (1-based) */
    uint64_t err_a, err_b;  /* details */
    pmlin_recorder *rec;
} pmlin_thread;

struct pmlin_recorder {
    int threads;
    pmlin_thread **t;       /* each aligned to a cache line of its own */
    uint64_t *crash_ts;
    size_t crashes, crash_cap;
    int init_default_set;
    uint64_t init_default;
    uint64_t *init_words;   /* pairs address, value */
    size_t init_n, init_cap;
    char **comments;
    size_t comments_n, comments_cap;
    uint64_t (*clock)(void *);
    void *clock_arg;
    char errmsg[512];
};

/* ---- clock ---------------------------------------------------------- */

static inline uint64_t pmlin__monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(PMLIN__CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t pmlin__now(const pmlin_recorder *r)
{
    return r->clock ? r->clock(r->clock_arg) : pmlin__monotonic_ns();
}

/* pmlin__stamp_inv: read the clock, then let nothing after it start. */
static inline uint64_t pmlin__stamp_inv(const pmlin_recorder *r)
{
    uint64_t ts = pmlin__now(r);
    PMLIN__FULL_FENCE();
    PMLIN__CLOCK_BARRIER();
    return ts;
}

/* pmlin__stamp_ret: let everything before finish, then read the clock. */
static inline uint64_t pmlin__stamp_ret(const pmlin_recorder *r)
{
    PMLIN__FULL_FENCE();
    PMLIN__CLOCK_BARRIER();
    return pmlin__now(r);
}

/* ---- recorder ------------------------------------------------------- */

static inline void pmlin__errorf(pmlin_recorder *r, const char *msg, const char *arg)
{
    snprintf(r->errmsg, sizeof r->errmsg, "pmlin: %s%s", msg, arg ? arg : "");
}

/* pmlin_free releases the recorder and every thread's log. */
static inline void pmlin_free(pmlin_recorder *r)
{
    int i;
    size_t j;
    if (!r)
        return;
    for (i = 0; i < r->threads; i++) {
        if (r->t[i]) {
            free(r->t[i]->buf);
            free(r->t[i]);
        }
    }
    for (j = 0; j < r->comments_n; j++)
        free(r->comments[j]);
    free(r->comments);
    free(r->t);
    free(r->crash_ts);
    free(r->init_words);
    free(r);
}

#define PMLIN__LINE 64u /* a cache line, in bytes */

/* pmlin__alloc_lines allocates size bytes (a multiple of PMLIN__LINE) on
 * cache lines of their own; NULL if out of memory. */
static inline void *pmlin__alloc_lines(size_t size)
{
#ifdef PMLIN__POSIX
    void *p = NULL;
    return posix_memalign(&p, PMLIN__LINE, size) == 0 ? p : NULL;
#else
    return aligned_alloc(PMLIN__LINE, size); /* C11 */
#endif
}

/* pmlin_new makes a recorder for threads 0..threads-1 (process ids in the
 * history). NULL if out of memory or threads < 1. */
static inline pmlin_recorder *pmlin_new(int threads)
{
    pmlin_recorder *r;
    int i;
    if (threads < 1)
        return NULL;
    r = (pmlin_recorder *)calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->t = (pmlin_thread **)calloc((size_t)threads, sizeof *r->t);
    if (!r->t) {
        free(r);
        return NULL;
    }
    r->threads = threads;
    for (i = 0; i < threads; i++) {
        size_t size = (sizeof(pmlin_thread) + PMLIN__LINE - 1) / PMLIN__LINE * PMLIN__LINE;
        void *p = pmlin__alloc_lines(size);
        if (!p) {
            pmlin_free(r);
            return NULL;
        }
        memset(p, 0, size);
        r->t[i] = (pmlin_thread *)p;
        r->t[i]->pid = i;
        r->t[i]->rec = r;
    }
    return r;
}

/* pmlin_thread_get returns the handle of thread i (process id i), or NULL
 * if i is out of range. */
static inline pmlin_thread *pmlin_thread_get(pmlin_recorder *r, int i)
{
    return (i >= 0 && i < r->threads) ? r->t[i] : NULL;
}

/* pmlin_set_clock replaces CLOCK_MONOTONIC by clock(arg), which must be
 * one global, non-decreasing clock (for tests, or a clock of your own). */
static inline void pmlin_set_clock(pmlin_recorder *r, uint64_t (*clock)(void *), void *arg)
{
    r->clock = clock;
    r->clock_arg = arg;
}

/* pmlin_set_init sets the initial value of every word (default 0). */
static inline void pmlin_set_init(pmlin_recorder *r, uint64_t v)
{
    r->init_default_set = 1;
    r->init_default = v;
}

/* pmlin_set_init_word sets the initial value of one word; 0, or -1 if the
 * word was given before or memory ran out (pmlin_error says which). */
static inline int pmlin_set_init_word(pmlin_recorder *r, uint64_t addr, uint64_t v)
{
    size_t i;
    for (i = 0; i < r->init_n; i++) {
        if (r->init_words[2 * i] == addr) {
            char num[32];
            snprintf(num, sizeof num, "%" PRIu64, addr);
            pmlin__errorf(r, "initial value given twice for address ", num);
            return -1;
        }
    }
    if (r->init_n == r->init_cap) {
        size_t cap = r->init_cap ? 2 * r->init_cap : 16;
        uint64_t *w = (uint64_t *)realloc(r->init_words, cap * 2 * sizeof *w);
        if (!w) {
            pmlin__errorf(r, "out of memory", NULL);
            return -1;
        }
        r->init_words = w;
        r->init_cap = cap;
    }
    r->init_words[2 * r->init_n] = addr;
    r->init_words[2 * r->init_n + 1] = v;
    r->init_n++;
    return 0;
}

/* pmlin_comment adds a comment line to the top of the history (the
 * command and seed that produced it, say); newlines become spaces. */
static inline int pmlin_comment(pmlin_recorder *r, const char *text)
{
    size_t n = strlen(text), i;
    char *c;
    if (r->comments_n == r->comments_cap) {
        size_t cap = r->comments_cap ? 2 * r->comments_cap : 4;
        char **cs = (char **)realloc(r->comments, cap * sizeof *cs);
        if (!cs) {
            pmlin__errorf(r, "out of memory", NULL);
            return -1;
        }
        r->comments = cs;
        r->comments_cap = cap;
    }
    c = (char *)malloc(n + 1);
    if (!c) {
        pmlin__errorf(r, "out of memory", NULL);
        return -1;
    }
    for (i = 0; i < n; i++)
        c[i] = (text[i] == '\n' || text[i] == '\r') ? ' ' : text[i];
    c[n] = 0;
    r->comments[r->comments_n++] = c;
    return 0;
}

/* ---- recording (hot path: one thread per handle) -------------------- */

static inline void pmlin__misuse(pmlin_thread *t, int err, uint64_t a, uint64_t b)
{
    if (!t->err) {
        t->err = err;
        t->err_step = t->steps + 1;
        t->err_a = a;
        t->err_b = b;
    }
}

/* pmlin__grow makes room for n more words; the buffer stays cache-line
 * aligned so no two threads' logs share a line. */
static inline int pmlin__grow(pmlin_thread *t, size_t n)
{
    void *p;
    size_t cap = t->cap ? t->cap : 4096;
    while (cap < t->len + n)
        cap *= 2;
    if ((p = pmlin__alloc_lines(cap * sizeof(uint64_t))) == NULL) {
        pmlin__misuse(t, PMLIN__E_NOMEM, 0, 0);
        return -1;
    }
    if (t->len)
        memcpy(p, t->buf, t->len * sizeof(uint64_t));
    free(t->buf);
    t->buf = (uint64_t *)p;
    t->cap = cap;
    return 0;
}

/* pmlin__append reserves n words at the end of t's log (NULL: out of memory). */
static inline uint64_t *pmlin__append(pmlin_thread *t, size_t n)
{
    uint64_t *p;
    if (t->len + n > t->cap && pmlin__grow(t, n) != 0)
        return NULL;
    p = t->buf + t->len;
    t->len += n;
    return p;
}

/* pmlin_reserve makes room for ops more operations of up to k words each
 * ahead of time, so recording allocates nothing (0, or -1 if out of memory). */
static inline int pmlin_reserve(pmlin_thread *t, size_t ops, size_t k)
{
    size_t need = ops * (2 + 3 * k + 2 + 1 + k);
    if (t->len + need <= t->cap)
        return 0;
    return pmlin__grow(t, need);
}

/* pmlin_tag returns a value never returned before by this recorder, for a
 * new value to write (Assumption 1 of the method: no value is written twice
 * to a word, nor equal to its initial value): (pid + 1) << PMLIN_TAG_SHIFT |
 * counter, counter from 1. Use it as is, or embed it in your values. */
static inline uint64_t pmlin_tag(pmlin_thread *t)
{
    if (t->tags + 1 >= ((uint64_t)1 << PMLIN_TAG_SHIFT))
        pmlin__misuse(t, PMLIN__E_TAGS, t->tags, 0);
    t->tags++;
    return ((uint64_t)(t->pid + 1) << PMLIN_TAG_SHIFT) | t->tags;
}

/* pmlin__begin_inv checks an invocation of k words and reserves its record. */
static inline uint64_t *pmlin__begin_inv(pmlin_thread *t, int kind, size_t k, const uint64_t *addrs)
{
    size_t i, j;
    uint64_t *p;
    if (t->err)
        return NULL;
    if (t->pending) {
        pmlin__misuse(t, PMLIN__E_OVERLAP, 0, 0);
        return NULL;
    }
    if (k == 0) {
        pmlin__misuse(t, PMLIN__E_K0, 0, 0);
        return NULL;
    }
    for (i = 1; i < k; i++)
        for (j = 0; j < i; j++)
            if (addrs[i] == addrs[j]) {
                pmlin__misuse(t, PMLIN__E_DUPADDR, addrs[i], 0);
                return NULL;
            }
    p = pmlin__append(t, 2 + k * (size_t)(kind == PMLIN__INV_READ ? 1 : kind == PMLIN__INV_CAS ? 3 : 2));
    if (!p)
        return NULL;
    p[0] = (uint64_t)kind | (uint64_t)k << 8;
    t->pending = (size_t)(p - t->buf) + 1;
    return p;
}

/* pmlin__end_inv stamps an invocation record: the last thing before the
 * operation runs. */
static inline void pmlin__end_inv(pmlin_thread *t, uint64_t *p)
{
    uint64_t ts = pmlin__stamp_inv(t->rec);
    if (ts < t->last_ts)
        pmlin__misuse(t, PMLIN__E_CLOCK, t->last_ts, ts);
    p[1] = t->last_ts = ts;
    t->steps++;
}

/* pmlin_inv_read records the invocation of a read of k distinct words. */
static inline void pmlin_inv_read(pmlin_thread *t, size_t k, const uint64_t *addrs)
{
    uint64_t *p = pmlin__begin_inv(t, PMLIN__INV_READ, k, addrs);
    if (!p)
        return;
    memcpy(p + 2, addrs, k * sizeof *addrs);
    pmlin__end_inv(t, p);
}

/* pmlin_inv_cas records the invocation of a cas: at each addrs[i], expect
 * expected[i] and write new_values[i]. */
static inline void pmlin_inv_cas(pmlin_thread *t, size_t k, const uint64_t *addrs, const uint64_t *expected,
                                 const uint64_t *new_values)
{
    size_t i;
    uint64_t *p = pmlin__begin_inv(t, PMLIN__INV_CAS, k, addrs);
    if (!p)
        return;
    for (i = 0; i < k; i++) {
        p[2 + 3 * i] = addrs[i];
        p[3 + 3 * i] = expected[i];
        p[4 + 3 * i] = new_values[i];
    }
    pmlin__end_inv(t, p);
}

/* pmlin_inv_swap records the invocation of a swap: write new_values[i] at
 * addrs[i], returning the values replaced. */
static inline void pmlin_inv_swap(pmlin_thread *t, size_t k, const uint64_t *addrs, const uint64_t *new_values)
{
    size_t i;
    uint64_t *p = pmlin__begin_inv(t, PMLIN__INV_SWAP, k, addrs);
    if (!p)
        return;
    for (i = 0; i < k; i++) {
        p[2 + 2 * i] = addrs[i];
        p[3 + 2 * i] = new_values[i];
    }
    pmlin__end_inv(t, p);
}

/* pmlin__begin_ret stamps a response (the first thing after the operation)
 * and checks it answers the pending invocation; it returns the pending
 * invocation's kind and k, or 0. */
static inline int pmlin__begin_ret(pmlin_thread *t, uint64_t *ts, size_t *k, int want_kind)
{
    const uint64_t *inv;
    int kind;
    *ts = pmlin__stamp_ret(t->rec);
    if (t->err)
        return 0;
    if (!t->pending) {
        pmlin__misuse(t, PMLIN__E_NOPENDING, 0, 0);
        return 0;
    }
    inv = t->buf + t->pending - 1;
    kind = (int)(inv[0] & 0xff);
    *k = (size_t)(inv[0] >> 8);
    if (kind != want_kind) {
        pmlin__misuse(t, PMLIN__E_KIND, (uint64_t)kind, (uint64_t)want_kind);
        return 0;
    }
    if (*ts < t->last_ts) {
        pmlin__misuse(t, PMLIN__E_CLOCK, t->last_ts, *ts);
        return 0;
    }
    return kind;
}

static inline void pmlin__ret(pmlin_thread *t, int kind, uint64_t ts, size_t k, const uint64_t *head,
                              size_t nhead, const uint64_t *values)
{
    uint64_t *p = pmlin__append(t, 2 + nhead + (values ? k : 0));
    if (!p)
        return;
    p[0] = (uint64_t)kind | (uint64_t)k << 8;
    p[1] = t->last_ts = ts;
    if (nhead)
        memcpy(p + 2, head, nhead * sizeof *head);
    if (values)
        memcpy(p + 2 + nhead, values, k * sizeof *values);
    t->pending = 0;
    t->steps++;
}

/* pmlin_ret_read records a read's response: its k values, in the
 * invocation's order. */
static inline void pmlin_ret_read(pmlin_thread *t, const uint64_t *values)
{
    uint64_t ts;
    size_t k;
    if (!pmlin__begin_ret(t, &ts, &k, PMLIN__INV_READ))
        return;
    pmlin__ret(t, PMLIN__RET_VALUES, ts, k, NULL, 0, values);
}

/* pmlin_ret_swap records a swap's response: the k values it replaced. */
static inline void pmlin_ret_swap(pmlin_thread *t, const uint64_t *old_values)
{
    uint64_t ts;
    size_t k;
    if (!pmlin__begin_ret(t, &ts, &k, PMLIN__INV_SWAP))
        return;
    pmlin__ret(t, PMLIN__RET_VALUES, ts, k, NULL, 0, old_values);
}

/* pmlin_ret_ok records that the pending cas succeeded. */
static inline void pmlin_ret_ok(pmlin_thread *t)
{
    uint64_t ts;
    size_t k;
    if (!pmlin__begin_ret(t, &ts, &k, PMLIN__INV_CAS))
        return;
    pmlin__ret(t, PMLIN__RET_OK, ts, 0, NULL, 0, NULL);
}

/* pmlin__blamable checks that addr is one of the pending cas's addresses. */
static inline int pmlin__blamable(pmlin_thread *t, size_t k, uint64_t addr)
{
    const uint64_t *inv = t->buf + t->pending - 1;
    size_t i;
    for (i = 0; i < k; i++)
        if (inv[2 + 3 * i] == addr)
            return 1;
    pmlin__misuse(t, PMLIN__E_FAILADDR, addr, 0);
    return 0;
}

/* pmlin_ret_fail records that the pending cas failed, blaming addr: one of
 * its addresses that it saw hold a value other than the expected one
 * during the operation (not before its invocation). */
static inline void pmlin_ret_fail(pmlin_thread *t, uint64_t addr)
{
    uint64_t ts;
    size_t k;
    if (!pmlin__begin_ret(t, &ts, &k, PMLIN__INV_CAS) || !pmlin__blamable(t, k, addr))
        return;
    pmlin__ret(t, PMLIN__RET_FAIL, ts, 0, &addr, 1, NULL);
}

/* pmlin_ret_fail_values records a failure that also reports the k values
 * the cas read at its addresses, in the invocation's order ("ret fail <a>
 * <v1> ... <vk>"); values must come from one atomic snapshot. */
static inline void pmlin_ret_fail_values(pmlin_thread *t, uint64_t addr, const uint64_t *values)
{
    uint64_t ts;
    size_t k;
    if (!pmlin__begin_ret(t, &ts, &k, PMLIN__INV_CAS) || !pmlin__blamable(t, k, addr))
        return;
    pmlin__ret(t, PMLIN__RET_FAIL_VALS, ts, k, &addr, 1, values);
}

/* ---- crash ---------------------------------------------------------- */

/* pmlin__tick reads the clock until it is past after (10^7 reads at most:
 * CLOCK_MONOTONIC ticks every nanosecond). */
static inline int pmlin__tick(pmlin_recorder *r, uint64_t after, uint64_t *ts)
{
    long i;
    for (i = 0; i < 10000000L; i++) {
        *ts = pmlin__now(r);
        if (*ts > after)
            return 0;
    }
    return -1;
}

/* pmlin_crash records a full-system crash, between every step recorded so
 * far and every step recorded after it returns; every pending operation is
 * interrupted (it will have no response), and each thread may invoke new
 * operations afterwards. Call it while no thread records (after the
 * threads that "crashed" have stopped). 0, or -1 if the clock did not
 * advance (a custom clock that stands still). */
static inline int pmlin_crash(pmlin_recorder *r)
{
    uint64_t last = 0, ts;
    int i;
    for (i = 0; i < r->threads; i++) {
        if (r->t[i]->last_ts > last)
            last = r->t[i]->last_ts;
        r->t[i]->pending = 0;
    }
    if (r->crashes && r->crash_ts[r->crashes - 1] > last)
        last = r->crash_ts[r->crashes - 1];
    if (r->crashes == r->crash_cap) {
        size_t cap = r->crash_cap ? 2 * r->crash_cap : 8;
        uint64_t *c = (uint64_t *)realloc(r->crash_ts, cap * sizeof *c);
        if (!c) {
            pmlin__errorf(r, "out of memory", NULL);
            return -1;
        }
        r->crash_ts = c;
        r->crash_cap = cap;
    }
    if (pmlin__tick(r, last, &ts) != 0) {
        pmlin__errorf(r, "crash: the clock does not advance past the last step", NULL);
        return -1;
    }
    r->crash_ts[r->crashes++] = ts;
    /* Every step after this crash must have a later timestamp. */
    if (!r->clock && pmlin__tick(r, ts, &last) != 0) {
        pmlin__errorf(r, "crash: the clock does not advance", NULL);
        return -1;
    }
    return 0;
}

/* ---- writing -------------------------------------------------------- */

/* Writing a history is the recorder's hot path after the run (millions of
 * lines): numbers are formatted by hand and written with putc_unlocked
 * under one flockfile, not with fprintf, which parses its format and
 * locks the stream at every call (recorders/c/test/bench.c: about 10
 * times slower). */
static inline void pmlin__put_str(FILE *f, const char *s)
{
    while (*s)
        PMLIN__PUTC(*s++, f);
}

static inline void pmlin__put_dec(FILE *f, uint64_t v)
{
    char b[20];
    int n = 0;
    do {
        b[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        PMLIN__PUTC(b[--n], f);
}

/* pmlin__value: small numbers in decimal, tags (high bits set) in hex, as
 * pmlin itself writes them. */
static inline void pmlin__value(FILE *f, uint64_t v)
{
    char b[16];
    int n = 0;
    if (v < 4096) {
        pmlin__put_dec(f, v);
        return;
    }
    do {
        b[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    PMLIN__PUTC('0', f);
    PMLIN__PUTC('x', f);
    while (n)
        PMLIN__PUTC(b[--n], f);
}

static inline const char *pmlin__kind_name(uint64_t kind)
{
    switch ((int)kind) {
    case PMLIN__INV_READ:
        return "read";
    case PMLIN__INV_CAS:
        return "cas";
    case PMLIN__INV_SWAP:
        return "swap";
    }
    return "?";
}

/* pmlin__check_threads turns the first thread misuse into the recorder's
 * error message; -1 if there was one. */
static inline int pmlin__check_threads(pmlin_recorder *r)
{
    int i;
    for (i = 0; i < r->threads; i++) {
        const pmlin_thread *t = r->t[i];
        char head[96];
        if (!t->err)
            continue;
        snprintf(head, sizeof head, "thread %d (process %d), step %" PRIu64 ": ", i, (int)t->pid, t->err_step);
        switch (t->err) {
        case PMLIN__E_NOMEM:
            snprintf(r->errmsg, sizeof r->errmsg, "pmlin: %sout of memory for its log", head);
            break;
        case PMLIN__E_OVERLAP:
            snprintf(r->errmsg, sizeof r->errmsg,
                     "pmlin: %san invocation while the thread's previous operation is pending (no response recorded)",
                     head);
            break;
        case PMLIN__E_NOPENDING:
            snprintf(r->errmsg, sizeof r->errmsg, "pmlin: %sa response with no pending invocation", head);
            break;
        case PMLIN__E_KIND:
            snprintf(r->errmsg, sizeof r->errmsg, "pmlin: %sthe response of a %s answers a pending %s", head,
                     pmlin__kind_name(t->err_b), pmlin__kind_name(t->err_a));
            break;
        case PMLIN__E_K0:
            snprintf(r->errmsg, sizeof r->errmsg, "pmlin: %san operation on no word (k = 0)", head);
            break;
        case PMLIN__E_DUPADDR:
            snprintf(r->errmsg, sizeof r->errmsg, "pmlin: %saddress %" PRIu64 " appears twice in one operation",
                     head, t->err_a);
            break;
        case PMLIN__E_FAILADDR:
            snprintf(r->errmsg, sizeof r->errmsg,
                     "pmlin: %sthe failure blames address %" PRIu64 ", which the cas does not name", head,
                     t->err_a);
            break;
        case PMLIN__E_CLOCK:
            snprintf(r->errmsg, sizeof r->errmsg,
                     "pmlin: %sthe clock went backwards (%" PRIu64 " after %" PRIu64
                     "): it must be one global monotonic clock",
                     head, t->err_b, t->err_a);
            break;
        case PMLIN__E_TAGS:
            snprintf(r->errmsg, sizeof r->errmsg,
                     "pmlin: %sout of tags: %" PRIu64 " handed out, the counter has %d bits (PMLIN_TAG_SHIFT)", head,
                     t->err_a, PMLIN_TAG_SHIFT);
            break;
        }
        return -1;
    }
    return 0;
}

static inline int pmlin__cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* pmlin__write_head writes the header line, the comments and the initial
 * values (the default only if not 0; words by address, 8 to a line). */
static inline int pmlin__write_head(pmlin_recorder *r, FILE *f, const char *magic)
{
    size_t i;
    fprintf(f, "%s\n", magic);
    for (i = 0; i < r->comments_n; i++)
        fprintf(f, "# %s\n", r->comments[i]);
    if (r->init_default_set && r->init_default != 0) {
        fputs("init ", f);
        pmlin__value(f, r->init_default);
        fputc('\n', f);
    }
    if (r->init_n) {
        qsort(r->init_words, r->init_n, 2 * sizeof(uint64_t), pmlin__cmp_u64);
        for (i = 0; i < r->init_n; i++) {
            fputs(i % 8 == 0 ? "init " : " ", f);
            fprintf(f, "%" PRIu64 "=", r->init_words[2 * i]);
            pmlin__value(f, r->init_words[2 * i + 1]);
            if (i % 8 == 7 || i + 1 == r->init_n)
                fputc('\n', f);
        }
    }
    return ferror(f) ? -1 : 0;
}

/* pmlin__record_len is the number of words of the record at p. */
static inline size_t pmlin__record_len(const uint64_t *p)
{
    size_t k = (size_t)(p[0] >> 8);
    switch ((int)(p[0] & 0xff)) {
    case PMLIN__INV_READ:
    case PMLIN__RET_VALUES:
        return 2 + k;
    case PMLIN__INV_CAS:
        return 2 + 3 * k;
    case PMLIN__INV_SWAP:
        return 2 + 2 * k;
    case PMLIN__RET_OK:
        return 2;
    case PMLIN__RET_FAIL:
        return 3;
    }
    return 3 + k; /* PMLIN__RET_FAIL_VALS */
}

/* pmlin__write_step writes the record at p as an event line of process
 * pid (the caller holds the stream's lock). */
static inline void pmlin__write_step(FILE *f, int32_t pid, const uint64_t *p)
{
    size_t k = (size_t)(p[0] >> 8), i;
    const uint64_t *w = p + 2;
    pmlin__put_dec(f, (uint64_t)pid);
    switch ((int)(p[0] & 0xff)) {
    case PMLIN__INV_READ:
        pmlin__put_str(f, " inv read");
        for (i = 0; i < k; i++) {
            PMLIN__PUTC(' ', f);
            pmlin__put_dec(f, w[i]);
        }
        break;
    case PMLIN__INV_CAS:
        pmlin__put_str(f, " inv cas");
        for (i = 0; i < k; i++) {
            PMLIN__PUTC(' ', f);
            pmlin__put_dec(f, w[3 * i]);
            PMLIN__PUTC(':', f);
            pmlin__value(f, w[3 * i + 1]);
            PMLIN__PUTC(':', f);
            pmlin__value(f, w[3 * i + 2]);
        }
        break;
    case PMLIN__INV_SWAP:
        pmlin__put_str(f, " inv swap");
        for (i = 0; i < k; i++) {
            PMLIN__PUTC(' ', f);
            pmlin__put_dec(f, w[2 * i]);
            PMLIN__PUTC(':', f);
            pmlin__value(f, w[2 * i + 1]);
        }
        break;
    case PMLIN__RET_VALUES:
        pmlin__put_str(f, " ret");
        for (i = 0; i < k; i++) {
            PMLIN__PUTC(' ', f);
            pmlin__value(f, w[i]);
        }
        break;
    case PMLIN__RET_OK:
        pmlin__put_str(f, " ret ok");
        break;
    case PMLIN__RET_FAIL:
    case PMLIN__RET_FAIL_VALS:
        pmlin__put_str(f, " ret fail ");
        pmlin__put_dec(f, w[0]);
        if ((p[0] & 0xff) == PMLIN__RET_FAIL_VALS)
            for (i = 0; i < k; i++) {
                PMLIN__PUTC(' ', f);
                pmlin__value(f, w[1 + i]);
            }
        break;
    }
    PMLIN__PUTC('\n', f);
}

/* pmlin__precheck: no misuse, and at least one operation. */
static inline int pmlin__precheck(pmlin_recorder *r)
{
    int i;
    if (pmlin__check_threads(r) != 0)
        return -1;
    for (i = 0; i < r->threads; i++)
        if (r->t[i]->len)
            return 0;
    pmlin__errorf(r, "no operation was recorded: nothing to write (an empty history would prove nothing)", NULL);
    return -1;
}

static inline int pmlin__cmp_pair(const void *a, const void *b)
{
    const uint64_t *x = (const uint64_t *)a, *y = (const uint64_t *)b;
    return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : (x[1] < y[1] ? -1 : x[1] > y[1]);
}

/* pmlin__again: the record at t->buf + pos is a response, and the
 * thread's next record an invocation with the same timestamp. */
static inline int pmlin__again(const pmlin_thread *t, size_t pos)
{
    const uint64_t *p = t->buf + pos, *n;
    size_t next = pos + pmlin__record_len(p);
    if ((int)(p[0] & 0xff) < PMLIN__RET_VALUES || next >= t->len)
        return 0;
    n = t->buf + next;
    return (int)(n[0] & 0xff) < PMLIN__RET_VALUES && n[1] == p[1];
}

/* pmlin__check_ties refuses two threads that each respond and invoke
 * again at one timestamp: which of their operations came first is lost,
 * and every order of their lines would invent it (recorders/README.md,
 * "What a recorder must do", rule 4). 0, or -1 with the error set. */
static inline int pmlin__check_ties(pmlin_recorder *r)
{
    size_t n = 0, j, pos;
    uint64_t *pairs; /* (timestamp, process id) of each response that invokes again */
    int i, rc = 0;
    for (i = 0; i < r->threads; i++)
        for (pos = 0; pos < r->t[i]->len; pos += pmlin__record_len(r->t[i]->buf + pos))
            n += (size_t)pmlin__again(r->t[i], pos);
    if (n < 2)
        return 0;
    pairs = (uint64_t *)malloc(2 * n * sizeof *pairs);
    if (!pairs) {
        pmlin__errorf(r, "out of memory", NULL);
        return -1;
    }
    n = 0;
    for (i = 0; i < r->threads; i++)
        for (pos = 0; pos < r->t[i]->len; pos += pmlin__record_len(r->t[i]->buf + pos))
            if (pmlin__again(r->t[i], pos)) {
                pairs[2 * n] = r->t[i]->buf[pos + 1];
                pairs[2 * n + 1] = (uint64_t)r->t[i]->pid;
                n++;
            }
    qsort(pairs, n, 2 * sizeof *pairs, pmlin__cmp_pair);
    for (j = 1; j < n; j++)
        if (pairs[2 * j] == pairs[2 * j - 2] && pairs[2 * j + 1] != pairs[2 * j - 1]) {
            snprintf(r->errmsg, sizeof r->errmsg,
                     "pmlin: process %d responds and invokes its next operation at timestamp %" PRIu64
                     ", as process %d does: which of their operations came first is unknown, and any order of "
                     "these steps would invent it: the clock is too coarse for this history; use CLOCK_MONOTONIC "
                     "or the TSC",
                     (int)pairs[2 * j + 1], pairs[2 * j], (int)pairs[2 * j - 1]);
            rc = -1;
            break;
        }
    free(pairs);
    return rc;
}

/* pmlin_write merges the threads' logs and writes the history (format v1)
 * to f. 0, or -1 with pmlin_error set (a misuse, no operation, a crash and
 * a step at the same time, a tie no order states honestly, a write
 * error). */
static inline int pmlin_write(pmlin_recorder *r, FILE *f)
{
    size_t *pos, c = 0;
    int i;
    if (pmlin__precheck(r) != 0 || pmlin__check_ties(r) != 0)
        return -1;
    pos = (size_t *)calloc((size_t)r->threads, sizeof *pos);
    if (!pos) {
        pmlin__errorf(r, "out of memory", NULL);
        return -1;
    }
    PMLIN__LOCK(f);
    pmlin__write_head(r, f, "pmlin-history v1");
    for (;;) {
        /* The next step: the least (timestamp, invocation before response,
         * a response whose thread invokes again at its timestamp before
         * one that does not, process id) among the heads of the threads'
         * logs: the tie rule of recorders/README.md (rule 4), the one
         * pmlin merge follows. Only heads are compared, so a thread's own
         * order is kept. */
        int best = -1, best_ret = 0, best_again = 0;
        uint64_t best_ts = 0;
        for (i = 0; i < r->threads; i++) {
            const pmlin_thread *t = r->t[i];
            const uint64_t *p;
            int ret, again;
            if (pos[i] >= t->len)
                continue;
            p = t->buf + pos[i];
            ret = (int)(p[0] & 0xff) >= PMLIN__RET_VALUES;
            again = pmlin__again(t, pos[i]);
            if (best < 0 || p[1] < best_ts ||
                (p[1] == best_ts && (best_ret > ret || (best_ret == ret && again > best_again)))) {
                best = i;
                best_ts = p[1];
                best_ret = ret;
                best_again = again;
            }
        }
        if (c < r->crashes && (best < 0 || r->crash_ts[c] <= best_ts)) {
            if (best >= 0 && r->crash_ts[c] == best_ts) {
                snprintf(r->errmsg, sizeof r->errmsg,
                         "pmlin: crash %zu has the timestamp of a step of process %d (%" PRIu64
                         "): was pmlin_crash called while threads recorded?",
                         c + 1, (int)r->t[best]->pid, best_ts);
                PMLIN__UNLOCK(f);
                free(pos);
                return -1;
            }
            pmlin__put_str(f, "crash\n");
            c++;
            continue;
        }
        if (best < 0)
            break;
        pmlin__write_step(f, r->t[best]->pid, r->t[best]->buf + pos[best]);
        pos[best] += pmlin__record_len(r->t[best]->buf + pos[best]);
    }
    PMLIN__UNLOCK(f);
    free(pos);
    if (fflush(f) != 0 || ferror(f)) {
        pmlin__errorf(r, "write error: ", strerror(errno));
        return -1;
    }
    return 0;
}

/* pmlin_write_log writes the threads' logs unmerged, each step prefixed by
 * its timestamp ("<ts> <event>"), thread after thread, then the crashes:
 * the input of `pmlin merge`, which merges by the same rules. 0 or -1. */
static inline int pmlin_write_log(pmlin_recorder *r, FILE *f)
{
    size_t j;
    int i;
    if (pmlin__precheck(r) != 0)
        return -1;
    PMLIN__LOCK(f);
    pmlin__write_head(r, f, "pmlin-log v1");
    for (i = 0; i < r->threads; i++) {
        const pmlin_thread *t = r->t[i];
        for (j = 0; j < t->len; j += pmlin__record_len(t->buf + j)) {
            pmlin__put_dec(f, t->buf[j + 1]);
            PMLIN__PUTC(' ', f);
            pmlin__write_step(f, t->pid, t->buf + j);
        }
    }
    for (j = 0; j < r->crashes; j++) {
        pmlin__put_dec(f, r->crash_ts[j]);
        pmlin__put_str(f, " crash\n");
    }
    PMLIN__UNLOCK(f);
    if (fflush(f) != 0 || ferror(f)) {
        pmlin__errorf(r, "write error: ", strerror(errno));
        return -1;
    }
    return 0;
}

/* pmlin__write_path opens path (refusing to replace an existing file
 * unless overwrite), writes with emit and removes a partial file. */
static inline int pmlin__write_path(pmlin_recorder *r, const char *path, int overwrite,
                                    int (*emit)(pmlin_recorder *, FILE *))
{
    FILE *f;
    int rc;
    if (pmlin__precheck(r) != 0)
        return -1;
    f = fopen(path, overwrite ? "w" : "wx");
    if (!f) {
        if (errno == EEXIST)
            snprintf(r->errmsg, sizeof r->errmsg, "pmlin: %s: the file exists (not overwritten)", path);
        else
            snprintf(r->errmsg, sizeof r->errmsg, "pmlin: %s: %s", path, strerror(errno));
        return -1;
    }
    rc = emit(r, f);
    if (fclose(f) != 0 && rc == 0) {
        snprintf(r->errmsg, sizeof r->errmsg, "pmlin: %s: %s", path, strerror(errno));
        rc = -1;
    }
    if (rc != 0)
        remove(path);
    return rc;
}

/* pmlin_write_file writes the history to path; an existing file is only
 * replaced if overwrite is not 0. 0, or -1 with pmlin_error set. */
static inline int pmlin_write_file(pmlin_recorder *r, const char *path, int overwrite)
{
    return pmlin__write_path(r, path, overwrite, pmlin_write);
}

/* pmlin_write_log_file is pmlin_write_log to a file, like pmlin_write_file. */
static inline int pmlin_write_log_file(pmlin_recorder *r, const char *path, int overwrite)
{
    return pmlin__write_path(r, path, overwrite, pmlin_write_log);
}

/* pmlin_error is the message of the last failure ("" if none). */
static inline const char *pmlin_error(const pmlin_recorder *r)
{
    return r->errmsg;
}

#ifdef __cplusplus
}
#endif

#endif /* PMLIN_H */
