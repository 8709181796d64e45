/*
 * pmlin.h: record histories of multi-word reads, CAS and swaps for pmlin,
 * from C (C11) or C++ (C++11 and later). Header only: include it and go.
 *
 * pmlin decides whether a history of multi-word operations is linearizable
 * (the method of Cepeda et al., OPODIS 2019). This header records such a
 * history while your threads run your primitive, and writes it in pmlin's
 * text format v1 (docs/history-format.md in the pmlin repository), or v2
 * when objects are declared (below):
 *
 *     pmlin_recorder *rec = pmlin_new(4);            // 4 threads: processes 0..3
 *     // in thread i (pmlin_thread_get may be called from any thread):
 *     pmlin_thread *t = pmlin_thread_get(rec, i);
 *     uint64_t a[2] = {10, 11}, e[2], n[2];
 *     pmlin_inv_read(t, 2, a);                       // just before the first shared access
 *     my_mwread(2, a, e);
 *     pmlin_ret_read(t, e);                          // just after the last one
 *     n[0] = pmlin_tag(t); n[1] = pmlin_tag(t);      // values never written before
 *     pmlin_inv_cas(t, 2, a, e, n);
 *     if (my_mwcas(2, a, e, n, &blamed)) pmlin_ret_ok(t); else pmlin_ret_fail(t, blamed);
 *     // (a MwCAS that returns only a bool: pmlin_ret_fail_unknown(t), rule 6)
 *     // after joining the threads:
 *     if (pmlin_write_file(rec, "run.hist", 0) != 0) fprintf(stderr, "%s\n", pmlin_error(rec));
 *     pmlin_free(rec);
 *
 * Then `pmlin check run.hist`.
 *
 * Operations on objects of any model (a queue, a map: format version 2)
 * are recorded the same way, on an object declared first (README,
 * "Recording version 2 operations"; c/example/persistent_queue.c):
 *
 *     int q = pmlin_object(rec, "q", "queue", "cap=4");   // before the threads record
 *     pmlin_value v = pmlin_num(pmlin_tag(t)), r;
 *     pmlin_inv_op(t, q, "enq", 1, &v);
 *     r = pmlin_sym(my_enq(v.num) ? PMLIN_OK : PMLIN_FAIL);
 *     pmlin_ret_op(t, 1, &r);                         // or pmlin_ret_unknown(t): "ret ?"
 *
 * A program that may be killed (crash testing: SIGKILL, then a restart that
 * recovers) keeps its logs in a file mapping instead: pmlin_open_logs(rec,
 * dir, 0) right after pmlin_new, before anything else touches the state;
 * each run of the program is a new generation of logs in dir, and after
 * the kills `pmlin gather dir` writes one history: each generation's steps,
 * a crash line after every generation that was killed, the next one's.
 * `pmlin fuzz --exec "PROGRAM"` does the kills and restarts itself
 * (pmlin_ready; README, "Crash-testing your C/C++ program").
 *
 * recorders/README.md is the one home of the rules this header follows
 * (cited below by number): what a recorder must do (one global clock,
 * timestamps that bracket each operation, no shared state while recording,
 * the merge and its tie rule, unique values, crashes), what may run
 * concurrently, the crash-surviving logs (file format, the order in which
 * a record is written and committed, what survives a kill and what does
 * not), and `pmlin gather`. The comments beside each function below say
 * what it does and why; the README says it for all of them at once.
 *
 * Compile as C11 or later (-std=c11, -std=gnu11, ...) or C++11 or later,
 * and with -pthread if your threads are pthreads. The header needs
 * POSIX's clock_gettime(CLOCK_MONOTONIC), and for file mappings open,
 * ftruncate and mmap; under strict ISO C (-std=c11) it sees to that itself
 * when it is included first (below).
 */
#ifndef PMLIN_H
#define PMLIN_H

/* POSIX under strict ISO C. With -std=c11 (__STRICT_ANSI__) and no
 * feature-test macro of the program's own, the system headers declare
 * nothing of POSIX. Included before any of them, this header asks for it
 * (_POSIX_C_SOURCE 200809L, which then holds for the rest of the file);
 * included after one, it cannot any more (the C library fixed its
 * features at its first header), and it declares clock_gettime itself on
 * Linux and does without flockfile, putc_unlocked, posix_memalign and the
 * file mappings (PMLIN__POSIX below: pmlin_open_logs then fails, saying
 * why). Under -std=gnu11, C++ or a feature-test macro of the program's own
 * it changes nothing. */
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
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
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

/* Tags (pmlin_tag) are (generation << 16 | pid + 1) << PMLIN_TAG_SHIFT |
 * counter: generation 0 for logs in memory, the log file's generation
 * otherwise, so that a restarted program never hands out a tag of an
 * earlier run (README, rule 5). Define it before including this header if
 * your primitive reserves high bits of a word (the counter then has
 * PMLIN_TAG_SHIFT bits). */
#ifndef PMLIN_TAG_SHIFT
#define PMLIN_TAG_SHIFT 32
#endif
#if PMLIN_TAG_SHIFT < 8 || PMLIN_TAG_SHIFT > 56
#error "PMLIN_TAG_SHIFT must be between 8 and 56"
#endif

/* The commit of a record (README, "Logs that survive a kill"): the
 * record's first word is written first (its kind and size, not committed),
 * then the rest, then the first word again with its check and the commit
 * bit, by a release store. A process killed by a signal stops between two
 * instructions, and every store it executed before is in the page cache,
 * so for a kill only the compiler's order of the stores matters:
 * PMLIN__COMPILER_BARRIER keeps the payload's stores after the first word,
 * the release store keeps the commit after the payload (and keeps a live
 * reader of the mapping in another process right, too). */
#if defined(__GNUC__) || defined(__clang__)
#define PMLIN__STORE_RELEASE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define PMLIN__COMPILER_BARRIER() __asm__ __volatile__("" ::: "memory")
#else
#define PMLIN__STORE_RELEASE(p, v) (PMLIN__FULL_FENCE(), *(volatile uint64_t *)(p) = (v))
#define PMLIN__COMPILER_BARRIER() PMLIN__FULL_FENCE()
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Record kinds (README, "The file format"). A record is: word 0 = kind |
 * n << 8 (n: its k, or a text's length in bytes), and once committed also
 * check << 32 | 1 << 63; word 1 = timestamp; then the payload. */
enum {
    PMLIN__INV_READ = 1,      /* k addresses */
    PMLIN__INV_CAS = 2,       /* k triples address, expected, new */
    PMLIN__INV_SWAP = 3,      /* k pairs address, new */
    PMLIN__RET_VALUES = 4,    /* k values (read or swap) */
    PMLIN__RET_OK = 5,        /* nothing */
    PMLIN__RET_FAIL = 6,      /* the blamed address */
    PMLIN__RET_FAIL_VALS = 7, /* the blamed address, then k values */
    PMLIN__INV_OP = 8,        /* version 2: object id, symbol mask, k args, the op's name (n = k | len << 8) */
    PMLIN__RET_OP = 9,        /* version 2: symbol mask, k results */
    PMLIN__RET_UNKNOWN = 10,  /* version 2: "ret ?", nothing */
    PMLIN__REC_ERROR = 16,    /* a misuse: its message, n bytes; the log ends there */
    PMLIN__REC_COMMENT = 17,  /* a comment, n bytes; timestamp 0: at the top */
    PMLIN__REC_INIT = 18,     /* the initial value of every word */
    PMLIN__REC_INIT_WORD = 19, /* an address and its initial value */
    PMLIN__REC_CRASH = 20,    /* pmlin_crash */
    PMLIN__REC_CLOSE = 21,    /* pmlin_free: the program ended its recording */
    PMLIN__REC_OBJECT = 22    /* pmlin_object: "name model params", n bytes; its id is its rank */
};

/* PMLIN__IS_RET: a thread's record of this kind is a response. */
#define PMLIN__IS_RET(kind) (((kind) >= PMLIN__RET_VALUES && (kind) <= PMLIN__RET_FAIL_VALS) || \
                             (kind) == PMLIN__RET_OP || (kind) == PMLIN__RET_UNKNOWN)

/* Version 2 values (docs/history-format.md, "Version 2"): a number, or one
 * of the format's symbols. */
enum {
    PMLIN_NUM = 0, /* the value is num */
    PMLIN_NIL,
    PMLIN_OK,
    PMLIN_FAIL,
    PMLIN_EMPTY,
    PMLIN_TRUE,
    PMLIN_FALSE
};

/* pmlin_value is an argument or a result of a version 2 operation: sym
 * PMLIN_NUM and the number num, or a symbol (num unused). */
typedef struct pmlin_value {
    int sym;
    uint64_t num;
} pmlin_value;

/* The most arguments or results of one version 2 operation (one bit each
 * in the record's symbol mask), and the longest operation name. */
#define PMLIN_MAX_OP_VALUES 64
#define PMLIN_MAX_OP_NAME 255

/* Misuses a log remembers (the first one). */
enum {
    PMLIN__E_NONE = 0,
    PMLIN__E_NOMEM,
    PMLIN__E_FULL,
    PMLIN__E_OVERLAP,
    PMLIN__E_NOPENDING,
    PMLIN__E_KIND,
    PMLIN__E_K0,
    PMLIN__E_KBIG,
    PMLIN__E_DUPADDR,
    PMLIN__E_FAILADDR,
    PMLIN__E_CLOCK,
    PMLIN__E_TAGS,
    PMLIN__E_OBJECT,
    PMLIN__E_OPNAME,
    PMLIN__E_VALUE
};

/* The layout of a log file (README, "The file format"), in 64-bit words. */
#define PMLIN__LINE 64u                /* a cache line, in bytes */
#define PMLIN__PAGE_WORDS 512u         /* 4096 bytes */
#define PMLIN__HEAD_WORDS 512u         /* the file header: one page */
#define PMLIN__RECLOG_WORDS 131072u    /* the recorder's own log: 1 MiB */
#define PMLIN__ERR_WORDS 64u           /* kept free at the end of each log for its error record */
#define PMLIN__ERR_TEXT 400u           /* the longest error message it holds, in bytes */
#define PMLIN__MAX_N 0xffffffu         /* k, or a text's length, fits in 24 bits */
#define PMLIN__MAGIC 0x31474C4E494C4D50u /* "PMLINLG1", little-endian */
#define PMLIN__BYTE_ORDER 0x0102030405060708u
#define PMLIN__COMMITTED ((uint64_t)1 << 63)

/* The words of the file header. */
enum {
    PMLIN__H_MAGIC = 0,     /* written last: a file without it recorded nothing */
    PMLIN__H_VERSION,       /* 1 */
    PMLIN__H_BYTE_ORDER,    /* PMLIN__BYTE_ORDER as this machine stores it */
    PMLIN__H_GENERATION,
    PMLIN__H_THREADS,
    PMLIN__H_NONCE,         /* seeds the records' checks */
    PMLIN__H_HEAD_WORDS,
    PMLIN__H_RECLOG_WORDS,
    PMLIN__H_THREAD_WORDS,
    PMLIN__H_OS_PID,
    PMLIN__H_OPENED,        /* the clock when the logs were opened */
    PMLIN__H_TAG_SHIFT
};

/* The default room of each thread's log in a file: 64 MiB (a sparse file:
 * pages cost nothing until written). */
#define PMLIN_LOG_BYTES_DEFAULT ((size_t)64 << 20)

/* The constants of a record's check (README, "The file format"), and
 * PMLIN__K_WORD of the nonce. */
#define PMLIN__K_OFF 0xA0761D6478BD642Fu
#define PMLIN__K_LOG 0xD6E8FEB86659FD93u
#define PMLIN__K_WORD 0x9E3779B97F4A7C15u

typedef struct pmlin_recorder pmlin_recorder;

/* pmlin_thread is one thread's log. Its fields are private. */
typedef struct pmlin_thread {
    uint64_t *buf;          /* its records: on the heap, or a region of a mapping */
    size_t len, cap;        /* in 64-bit words: committed, and room for records */
    size_t pending;         /* 1 + offset of the pending invocation, 0: none */
    uint64_t last_ts;
    uint64_t tags;          /* tags handed out */
    uint64_t tag_base;      /* (generation << 16 | pid + 1) << PMLIN_TAG_SHIFT */
    uint64_t steps;         /* steps recorded, for messages */
    uint64_t seed;          /* its records' checks start from it */
    int32_t pid;            /* -1: the recorder's own log */
    int mapped;             /* buf is a region of a file or buffer: it cannot grow */
    int err;                /* PMLIN__E_*: the first misuse */
    uint64_t err_step;      /* the step it happened at (1-based) */
    uint64_t err_a, err_b;  /* details */
    pmlin_recorder *rec;
} pmlin_thread;

struct pmlin_recorder {
    int threads;
    pmlin_thread **t;       /* each aligned to a cache line of its own */
    pmlin_thread *log;      /* with mapped logs: the recorder's own (init values, comments, crashes) */
    uint64_t *crash_ts;
    size_t crashes, crash_cap;
    int init_default_set;
    uint64_t init_default;
    uint64_t *init_words;   /* pairs address, value */
    size_t init_n, init_cap;
    char **comments;
    uint64_t *comment_ts;   /* 0: at the top */
    size_t comments_n, comments_cap;
    char **objects;         /* version 2: each object's "name model params", by id */
    size_t objects_n, objects_cap;
    uint64_t (*clock)(void *);
    void *clock_arg;
    uint64_t generation;    /* of the mapped logs; 0: in memory */
    void *map;              /* the mapping, if pmlin_open_logs made it */
    size_t map_bytes;
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

/* ---- records -------------------------------------------------------- */

/* pmlin__record_len is the size in words of a record whose first word is
 * head; 0 if head names no kind of record. */
static inline size_t pmlin__record_len(uint64_t head)
{
    size_t n = (size_t)(head >> 8 & PMLIN__MAX_N);
    switch ((int)(head & 0xff)) {
    case PMLIN__INV_READ:
    case PMLIN__RET_VALUES:
        return 2 + n;
    case PMLIN__INV_CAS:
        return 2 + 3 * n;
    case PMLIN__INV_SWAP:
        return 2 + 2 * n;
    case PMLIN__RET_OK:
    case PMLIN__REC_CRASH:
    case PMLIN__REC_CLOSE:
        return 2;
    case PMLIN__RET_FAIL:
    case PMLIN__REC_INIT:
        return 3;
    case PMLIN__RET_FAIL_VALS:
        return 3 + n;
    case PMLIN__REC_INIT_WORD:
        return 4;
    case PMLIN__INV_OP:
        return 4 + (n & 0xff) + ((n >> 8) + 7) / 8;
    case PMLIN__RET_OP:
        return 3 + n;
    case PMLIN__RET_UNKNOWN:
        return 2;
    case PMLIN__REC_ERROR:
    case PMLIN__REC_COMMENT:
    case PMLIN__REC_OBJECT:
        return 2 + (n + 7) / 8;
    }
    return 0;
}

/* pmlin__rotl rotates x left by r (0 to 63) bits. */
static inline uint64_t pmlin__rotl(uint64_t x, unsigned r)
{
    return (x << r) | (x >> ((64 - r) & 63));
}

/* pmlin__sum adds the words w[0..n), at positions first, first+1, ... of
 * a record, to the sum h of its check: each word rotated by 7 times its
 * position, exclusive-or'ed in, so that a change of any one word changes
 * the sum (a few instructions a word: the check is computed on the hot
 * path). The sum starts at pmlin__sum_start: the log's seed and the
 * record's offset, so that a record copied elsewhere, or left from an
 * earlier use of a buffer, does not pass. */
static inline uint64_t pmlin__sum(uint64_t h, size_t first, const uint64_t *w, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        h ^= pmlin__rotl(w[i], (unsigned)(7 * (first + i)) & 63);
    return h;
}

static inline uint64_t pmlin__sum_start(const pmlin_thread *t, size_t off)
{
    return t->seed + (uint64_t)off * PMLIN__K_OFF;
}

/* pmlin__seal mixes a sum into the 31-bit check of a record: the top bits
 * of a product depend on all the bits of the sum. */
static inline uint64_t pmlin__seal(uint64_t h)
{
    return ((h ^ h >> 32) * PMLIN__K_LOG) >> 33;
}

/* pmlin__commit commits the record at p (t's next one, of n words, whose
 * check sums to h): its first word, rewritten with the check and the
 * commit bit, last. */
static inline void pmlin__commit(pmlin_thread *t, uint64_t *p, size_t n, uint64_t h)
{
    PMLIN__STORE_RELEASE(p, p[0] | pmlin__seal(h) << 32 | PMLIN__COMMITTED);
    t->len += n;
}

/* pmlin__record_ok: the record at offset off of t's log is committed, of
 * a kind that t's log may hold, within the log, and its check matches. */
static inline int pmlin__record_ok(const pmlin_thread *t, size_t off)
{
    const uint64_t *p = t->buf + off;
    uint64_t head = p[0], lo = head & 0xffffffffu, h;
    size_t n = pmlin__record_len(head);
    int kind = (int)(head & 0xff);
    if (!(head & PMLIN__COMMITTED) || n == 0 || off + n > t->len ||
        (t->pid >= 0 ? kind > PMLIN__RET_UNKNOWN : kind < PMLIN__REC_ERROR))
        return 0;
    h = pmlin__sum(pmlin__sum_start(t, off), 0, &lo, 1);
    h = pmlin__sum(h, 1, p + 1, n - 1);
    return (head >> 32 & 0x7fffffffu) == pmlin__seal(h);
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
    case PMLIN__INV_OP:
        return "version 2 operation";
    }
    return "?";
}

/* pmlin__misuse_text writes the message of t's misuse into b: the one
 * pmlin_write reports, and the one a mapped log keeps for pmlin gather. */
static inline void pmlin__misuse_text(const pmlin_thread *t, char *b, size_t size)
{
    char head[96];
    if (t->pid < 0)
        snprintf(head, sizeof head, "the recorder's own log: ");
    else
        snprintf(head, sizeof head, "thread %d (process %d), step %" PRIu64 ": ", (int)t->pid, (int)t->pid,
                 t->err_step);
    switch (t->err) {
    case PMLIN__E_NOMEM:
        snprintf(b, size, "%sout of memory for its log", head);
        break;
    case PMLIN__E_FULL:
        if (t->pid < 0)
            snprintf(b, size, "%sit is full (%" PRIu64 " bytes): too many initial values, comments or crashes",
                     head, t->err_a);
        else
            snprintf(b, size,
                     "%sits log is full (%" PRIu64 " bytes): give pmlin_open_logs or pmlin_open_buffer more room "
                     "per thread",
                     head, t->err_a);
        break;
    case PMLIN__E_OVERLAP:
        snprintf(b, size, "%san invocation while the thread's previous operation is pending (no response recorded)",
                 head);
        break;
    case PMLIN__E_NOPENDING:
        snprintf(b, size, "%sa response with no pending invocation", head);
        break;
    case PMLIN__E_KIND:
        snprintf(b, size, "%sthe response of a %s answers a pending %s", head, pmlin__kind_name(t->err_b),
                 pmlin__kind_name(t->err_a));
        break;
    case PMLIN__E_K0:
        snprintf(b, size, "%san operation on no word (k = 0)", head);
        break;
    case PMLIN__E_KBIG:
        snprintf(b, size, "%san operation on %" PRIu64 " words: at most %u", head, t->err_a, PMLIN__MAX_N);
        break;
    case PMLIN__E_DUPADDR:
        snprintf(b, size, "%saddress %" PRIu64 " appears twice in one operation", head, t->err_a);
        break;
    case PMLIN__E_FAILADDR:
        snprintf(b, size, "%sthe failure blames address %" PRIu64 ", which the cas does not name", head, t->err_a);
        break;
    case PMLIN__E_CLOCK:
        snprintf(b, size,
                 "%sthe clock went backwards (%" PRIu64 " after %" PRIu64 "): it must be one global monotonic clock",
                 head, t->err_b, t->err_a);
        break;
    case PMLIN__E_TAGS:
        snprintf(b, size, "%sout of tags: %" PRIu64 " handed out, the counter has %d bits (PMLIN_TAG_SHIFT)", head,
                 t->err_a, PMLIN_TAG_SHIFT);
        break;
    case PMLIN__E_OBJECT:
        snprintf(b, size, "%san operation on object %" PRIu64 ", which pmlin_object did not return", head, t->err_a);
        break;
    case PMLIN__E_OPNAME:
        snprintf(b, size, "%san operation name that is not [a-z][a-z0-9_-]* of at most %d characters", head,
                 PMLIN_MAX_OP_NAME);
        break;
    case PMLIN__E_VALUE:
        if (t->err_b)
            snprintf(b, size, "%svalue %" PRIu64 " is neither a number (PMLIN_NUM) nor a symbol (PMLIN_NIL ... PMLIN_FALSE)",
                     head, t->err_a + 1);
        else
            snprintf(b, size, "%s%" PRIu64 " %s: an operation has at most %d arguments, a response 1 to %d results", head,
                     t->err_a, t->err_a == 1 ? "value" : "values", PMLIN_MAX_OP_VALUES, PMLIN_MAX_OP_VALUES);
        break;
    default:
        snprintf(b, size, "%sno misuse", head);
    }
}

/* pmlin__misuse remembers t's first misuse; the log stops recording. A
 * mapped log also gets an error record with the message, in the room kept
 * for it at its end, so that pmlin gather refuses the log as pmlin_write
 * would (the process may be killed before it writes anything). */
static inline void pmlin__misuse(pmlin_thread *t, int err, uint64_t a, uint64_t b)
{
    char text[PMLIN__ERR_TEXT];
    size_t n, words;
    uint64_t *p, h;
    if (t->err)
        return;
    t->err = err;
    t->err_step = t->steps + 1;
    t->err_a = a;
    t->err_b = b;
    if (!t->mapped)
        return;
    pmlin__misuse_text(t, text, sizeof text);
    n = strlen(text);
    words = 2 + (n + 7) / 8;
    p = t->buf + t->len;
    p[0] = (uint64_t)PMLIN__REC_ERROR | (uint64_t)n << 8;
    PMLIN__COMPILER_BARRIER();
    p[1] = t->last_ts;
    p[words - 1] = 0;
    memcpy(p + 2, text, n);
    h = pmlin__sum(pmlin__sum_start(t, t->len), 0, p, words);
    pmlin__commit(t, p, words, h);
}

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

/* pmlin__grow makes room for n more words in a log on the heap: exactly
 * that much if exact (pmlin_reserve), else at least double. The buffer
 * stays cache-line aligned so no two threads' logs share a line. A mapped
 * log cannot grow: it is full. */
static inline int pmlin__grow(pmlin_thread *t, size_t n, int exact)
{
    void *p;
    size_t cap = exact ? t->len + n : (t->cap ? 2 * t->cap : 4096);
    if (t->mapped) {
        pmlin__misuse(t, PMLIN__E_FULL, (uint64_t)(t->cap + PMLIN__ERR_WORDS) * 8, 0);
        return -1;
    }
    if (cap < t->len + n)
        cap = t->len + n;
    cap = (cap + 7) & ~(size_t)7; /* whole cache lines */
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

/* pmlin__open_rec starts t's next record, of n words: its first word (the
 * kind and size, lo, not committed) is stored before anything else of it.
 * NULL if there is no room. */
static inline uint64_t *pmlin__open_rec(pmlin_thread *t, size_t n, uint64_t lo)
{
    uint64_t *p;
    if (t->len + n > t->cap && pmlin__grow(t, n, 0) != 0)
        return NULL;
    p = t->buf + t->len;
    p[0] = lo;
    PMLIN__COMPILER_BARRIER();
    return p;
}

/* pmlin__put appends a whole record to a log written while no thread
 * records (the recorder's own): lo, ts, then bytes of payload. */
static inline int pmlin__put(pmlin_thread *t, uint64_t lo, uint64_t ts, const void *payload, size_t bytes)
{
    size_t words = 2 + (bytes + 7) / 8;
    uint64_t *p;
    if (t->err || (p = pmlin__open_rec(t, words, lo)) == NULL)
        return -1;
    p[1] = ts;
    p[words - 1] = 0;
    if (bytes)
        memcpy(p + 2, payload, bytes);
    pmlin__commit(t, p, words, pmlin__sum(pmlin__sum_start(t, t->len), 0, p, words));
    return 0;
}

/* pmlin__new_log allocates a log's handle on a cache line of its own. */
static inline pmlin_thread *pmlin__new_log(pmlin_recorder *r, int32_t pid)
{
    size_t size = (sizeof(pmlin_thread) + PMLIN__LINE - 1) / PMLIN__LINE * PMLIN__LINE;
    pmlin_thread *t = (pmlin_thread *)pmlin__alloc_lines(size);
    if (!t)
        return NULL;
    memset(t, 0, size);
    t->pid = pid;
    t->rec = r;
    t->tag_base = (uint64_t)(pid + 1) << PMLIN_TAG_SHIFT;
    t->seed = (uint64_t)(pid + 1) * PMLIN__K_LOG;
    return t;
}

/* pmlin__log_put adds a record to the recorder's own log, if mapped. */
static inline int pmlin__log_put(pmlin_recorder *r, int kind, uint64_t n, uint64_t ts, const void *payload,
                                 size_t bytes)
{
    if (!r->log)
        return 0;
    if (pmlin__put(r->log, (uint64_t)kind | n << 8, ts, payload, bytes) != 0) {
        pmlin__misuse_text(r->log, r->errmsg + 7, sizeof r->errmsg - 7);
        memcpy(r->errmsg, "pmlin: ", 7);
        return -1;
    }
    return 0;
}

/* ---- recorder ------------------------------------------------------- */

static inline void pmlin__errorf(pmlin_recorder *r, const char *msg, const char *arg)
{
    snprintf(r->errmsg, sizeof r->errmsg, "pmlin: %s%s", msg, arg ? arg : "");
}

/* pmlin_free ends the recording and releases the recorder and every
 * thread's log. With mapped logs it first records that the program ended
 * its recording (pmlin gather then writes no crash line after this
 * generation unless an operation was left pending), and unmaps a log file
 * pmlin_open_logs mapped; a buffer of pmlin_open_buffer stays the
 * caller's. */
static inline void pmlin_free(pmlin_recorder *r)
{
    int i;
    size_t j;
    if (!r)
        return;
    if (r->log)
        pmlin__log_put(r, PMLIN__REC_CLOSE, 0, pmlin__now(r), NULL, 0);
    for (i = 0; i < r->threads; i++) {
        if (r->t[i]) {
            if (!r->t[i]->mapped)
                free(r->t[i]->buf);
            free(r->t[i]);
        }
    }
    free(r->log);
#ifdef PMLIN__POSIX
    if (r->map)
        munmap(r->map, r->map_bytes);
#endif
    for (j = 0; j < r->comments_n; j++)
        free(r->comments[j]);
    free(r->comments);
    free(r->comment_ts);
    for (j = 0; j < r->objects_n; j++)
        free(r->objects[j]);
    free(r->objects);
    free(r->t);
    free(r->crash_ts);
    free(r->init_words);
    free(r);
}

/* pmlin_new makes a recorder for threads 0..threads-1 (process ids in the
 * history), its logs on the heap until pmlin_open_logs or
 * pmlin_open_buffer moves them. NULL if out of memory or threads < 1. */
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
        if ((r->t[i] = pmlin__new_log(r, i)) == NULL) {
            pmlin_free(r);
            return NULL;
        }
    }
    return r;
}

/* pmlin_thread_get returns the handle of thread i (process id i), or NULL
 * if i is out of range. It only reads what pmlin_new set, so any thread
 * may call it at any time (in the thread that records, as in the example
 * at the top). */
static inline pmlin_thread *pmlin_thread_get(pmlin_recorder *r, int i)
{
    return (i >= 0 && i < r->threads) ? r->t[i] : NULL;
}

/* pmlin_generation is the generation of the mapped logs (1, 2, ...: the
 * runs of the program in one log directory), 0 if the logs are in memory. */
static inline uint64_t pmlin_generation(const pmlin_recorder *r)
{
    return r->generation;
}

/* pmlin_set_clock replaces CLOCK_MONOTONIC by clock(arg), which must be
 * one global, non-decreasing clock (for tests, or a clock of your own).
 * With mapped logs that pmlin gather merges across runs of the program,
 * it must be one clock for every run, too (README, rule 1). */
static inline void pmlin_set_clock(pmlin_recorder *r, uint64_t (*clock)(void *), void *arg)
{
    r->clock = clock;
    r->clock_arg = arg;
}

/* pmlin_set_init sets the initial value of every word (default 0): the
 * state before the first operation of the history (a restarted program
 * that recovers a state does not set it, or sets the same). 0, or -1 if
 * the recorder's own log is full (pmlin_error says so). */
static inline int pmlin_set_init(pmlin_recorder *r, uint64_t v)
{
    r->init_default_set = 1;
    r->init_default = v;
    return pmlin__log_put(r, PMLIN__REC_INIT, 0, 0, &v, sizeof v);
}

/* pmlin_set_init_word sets the initial value of one word; 0, or -1 if the
 * word was given before or memory ran out (pmlin_error says which). */
static inline int pmlin_set_init_word(pmlin_recorder *r, uint64_t addr, uint64_t v)
{
    size_t i;
    uint64_t pair[2];
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
    pair[0] = addr;
    pair[1] = v;
    return pmlin__log_put(r, PMLIN__REC_INIT_WORD, 0, 0, pair, sizeof pair);
}

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

/* pmlin__between gives a timestamp strictly after every step, crash and
 * comment recorded so far, and (with CLOCK_MONOTONIC) waits until the
 * clock is past it, so that every later step gets a later timestamp: the
 * place of a crash or a comment among the steps (README, rule 7). 0, or
 * -1 if the clock does not advance (a custom clock that stands still). */
static inline int pmlin__between(pmlin_recorder *r, uint64_t *ts)
{
    uint64_t last = 0, after;
    int i;
    for (i = 0; i < r->threads; i++)
        if (r->t[i]->last_ts > last)
            last = r->t[i]->last_ts;
    if (r->crashes && r->crash_ts[r->crashes - 1] > last)
        last = r->crash_ts[r->crashes - 1];
    if (r->comments_n && r->comment_ts[r->comments_n - 1] > last)
        last = r->comment_ts[r->comments_n - 1];
    if (pmlin__tick(r, last, ts) != 0 || (!r->clock && pmlin__tick(r, *ts, &after) != 0)) {
        pmlin__errorf(r, "the clock does not advance past the last step", NULL);
        return -1;
    }
    return 0;
}

/* pmlin__recorded: a step or a crash was recorded. */
static inline int pmlin__recorded(const pmlin_recorder *r)
{
    int i;
    for (i = 0; i < r->threads; i++)
        if (r->t[i]->steps)
            return 1;
    return r->crashes > 0;
}

/* pmlin_comment adds a comment line to the history (the command and seed
 * that produced it, say; newlines become spaces): at the top if nothing
 * was recorded yet, else where it is made, after every step recorded
 * before it and before every step recorded after it (like a crash, it
 * waits for the clock to tick). Call it while no thread records. 0, or -1
 * (out of memory, a clock that does not advance, a full log). */
static inline int pmlin_comment(pmlin_recorder *r, const char *text)
{
    size_t n = strlen(text), i;
    uint64_t ts = 0;
    char *c;
    if (n > PMLIN__MAX_N)
        n = PMLIN__MAX_N;
    if (pmlin__recorded(r) && pmlin__between(r, &ts) != 0)
        return -1;
    if (r->comments_n == r->comments_cap) {
        size_t cap = r->comments_cap ? 2 * r->comments_cap : 4;
        char **cs = (char **)realloc(r->comments, cap * sizeof *cs);
        uint64_t *cts;
        if (!cs) {
            pmlin__errorf(r, "out of memory", NULL);
            return -1;
        }
        r->comments = cs;
        if ((cts = (uint64_t *)realloc(r->comment_ts, cap * sizeof *cts)) == NULL) {
            pmlin__errorf(r, "out of memory", NULL);
            return -1;
        }
        r->comment_ts = cts;
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
    r->comments[r->comments_n] = c;
    r->comment_ts[r->comments_n++] = ts;
    return pmlin__log_put(r, PMLIN__REC_COMMENT, n, ts, c, n);
}

/* ---- logs that survive a kill (README, "Logs that survive a kill") -- */

/* pmlin__thread_words is the size of each thread's log for thread_bytes
 * (0: the default), in words: whole pages. */
static inline size_t pmlin__thread_words(size_t thread_bytes)
{
    if (thread_bytes == 0)
        thread_bytes = PMLIN_LOG_BYTES_DEFAULT;
    return (thread_bytes / 8 + PMLIN__PAGE_WORDS - 1) / PMLIN__PAGE_WORDS * PMLIN__PAGE_WORDS;
}

/* pmlin_logs_size is the bytes a log file (or a buffer for
 * pmlin_open_buffer) takes for threads threads with thread_bytes each (0:
 * PMLIN_LOG_BYTES_DEFAULT); a thread's log holds that many bytes of
 * records less 512 kept for an error message. */
static inline size_t pmlin_logs_size(int threads, size_t thread_bytes)
{
    return 8 * (PMLIN__HEAD_WORDS + PMLIN__RECLOG_WORDS + (size_t)threads * pmlin__thread_words(thread_bytes));
}

/* pmlin__nonce: a number that differs between two openings of logs. */
static inline uint64_t pmlin__nonce(const void *mem)
{
    uint64_t h = pmlin__monotonic_ns() ^ (uint64_t)(uintptr_t)mem * PMLIN__K_OFF;
#ifdef PMLIN__POSIX
    h ^= (uint64_t)getpid() << 40;
#endif
    h *= PMLIN__K_WORD;
    return h ^ h >> 29;
}

/* pmlin__lay_out puts the logs in mem (zeroed, bytes long: a header, the
 * recorder's own log, then each thread's, whole pages each) and writes
 * what was set before: initial values and comments. 0, or -1. */
static inline int pmlin__lay_out(pmlin_recorder *r, uint64_t *mem, size_t bytes, uint64_t gen,
                                 size_t thread_words)
{
    uint64_t nonce = pmlin__nonce(mem);
    size_t i;
    int j;
    if (r->threads >= 65536 || (((gen << 16) | (uint64_t)r->threads) >> (64 - PMLIN_TAG_SHIFT)) != 0) {
        snprintf(r->errmsg, sizeof r->errmsg,
                 "pmlin: generation %" PRIu64 " of %d threads does not fit in the tags: PMLIN_TAG_SHIFT %d leaves %d "
                 "bits for generation << 16 | process id + 1",
                 gen, r->threads, PMLIN_TAG_SHIFT, 64 - PMLIN_TAG_SHIFT);
        return -1;
    }
    if (bytes < 8 * (PMLIN__HEAD_WORDS + PMLIN__RECLOG_WORDS + (size_t)r->threads * thread_words)) {
        pmlin__errorf(r, "the logs do not fit in their buffer", NULL);
        return -1;
    }
    if ((r->log = pmlin__new_log(r, -1)) == NULL) {
        pmlin__errorf(r, "out of memory", NULL);
        return -1;
    }
    mem[PMLIN__H_VERSION] = 1;
    mem[PMLIN__H_BYTE_ORDER] = PMLIN__BYTE_ORDER;
    mem[PMLIN__H_GENERATION] = gen;
    mem[PMLIN__H_THREADS] = (uint64_t)r->threads;
    mem[PMLIN__H_NONCE] = nonce;
    mem[PMLIN__H_HEAD_WORDS] = PMLIN__HEAD_WORDS;
    mem[PMLIN__H_RECLOG_WORDS] = PMLIN__RECLOG_WORDS;
    mem[PMLIN__H_THREAD_WORDS] = thread_words;
#ifdef PMLIN__POSIX
    mem[PMLIN__H_OS_PID] = (uint64_t)getpid();
#endif
    mem[PMLIN__H_OPENED] = pmlin__now(r);
    mem[PMLIN__H_TAG_SHIFT] = PMLIN_TAG_SHIFT;
    for (j = -1; j < r->threads; j++) {
        pmlin_thread *t = j < 0 ? r->log : r->t[j];
        size_t words = j < 0 ? PMLIN__RECLOG_WORDS : thread_words;
        if (!t->mapped)
            free(t->buf);
        t->buf = mem + PMLIN__HEAD_WORDS + (j < 0 ? 0 : PMLIN__RECLOG_WORDS + (size_t)j * thread_words);
        t->len = 0;
        t->cap = words - PMLIN__ERR_WORDS;
        t->mapped = 1;
        t->seed = nonce + (uint64_t)(j + 1) * PMLIN__K_LOG;
        t->tag_base = ((gen << 16) + (uint64_t)(j + 1)) << PMLIN_TAG_SHIFT;
    }
    r->generation = gen;
    PMLIN__STORE_RELEASE(&mem[PMLIN__H_MAGIC], PMLIN__MAGIC);
    if (r->init_default_set && pmlin__log_put(r, PMLIN__REC_INIT, 0, 0, &r->init_default, 8) != 0)
        return -1;
    for (i = 0; i < r->init_n; i++)
        if (pmlin__log_put(r, PMLIN__REC_INIT_WORD, 0, 0, r->init_words + 2 * i, 16) != 0)
            return -1;
    for (i = 0; i < r->comments_n; i++)
        if (pmlin__log_put(r, PMLIN__REC_COMMENT, strlen(r->comments[i]), r->comment_ts[i], r->comments[i],
                           strlen(r->comments[i])) != 0)
            return -1;
    for (i = 0; i < r->objects_n; i++)
        if (pmlin__log_put(r, PMLIN__REC_OBJECT, strlen(r->objects[i]), 0, r->objects[i], strlen(r->objects[i])) != 0)
            return -1;
    return 0;
}

/* pmlin__may_open: the logs are in memory and nothing was recorded. */
static inline int pmlin__may_open(pmlin_recorder *r)
{
    if (r->log) {
        pmlin__errorf(r, "the logs are open already", NULL);
        return 0;
    }
    if (pmlin__recorded(r)) {
        pmlin__errorf(r, "open the logs before recording anything", NULL);
        return 0;
    }
    return 1;
}

/* pmlin_open_buffer keeps the logs in mem, bytes long, 64-byte aligned
 * (memory of the caller's: a MAP_SHARED mapping of a file of its own,
 * say), as generation gen (1 or more): the layout of a log file (README,
 * "The file format"), so a file that holds the buffer is a log that pmlin
 * gather reads. pmlin zeroes it; each thread gets an equal part, whole
 * pages (pmlin_logs_size(threads, b) bytes give each thread b). A thread
 * whose part is full stops recording (pmlin_write and pmlin gather then
 * say so). Call it after pmlin_new, before anything is recorded, while no
 * thread records. 0, or -1 with pmlin_error set. */
static inline int pmlin_open_buffer(pmlin_recorder *r, void *mem, size_t bytes, uint64_t gen)
{
    size_t words = bytes / 8, fixed = PMLIN__HEAD_WORDS + PMLIN__RECLOG_WORDS, thread_words;
    if (!pmlin__may_open(r))
        return -1;
    if (gen == 0 || ((uintptr_t)mem % PMLIN__LINE) != 0) {
        pmlin__errorf(r, "pmlin_open_buffer: the generation must be 1 or more and the buffer 64-byte aligned", NULL);
        return -1;
    }
    thread_words = words > fixed ? (words - fixed) / (size_t)r->threads / PMLIN__PAGE_WORDS * PMLIN__PAGE_WORDS : 0;
    if (thread_words < 2 * PMLIN__ERR_WORDS) {
        snprintf(r->errmsg, sizeof r->errmsg,
                 "pmlin: a buffer of %zu bytes is too small for %d threads: pmlin_logs_size(%d, 4096) is %zu", bytes,
                 r->threads, r->threads, pmlin_logs_size(r->threads, 4096));
        return -1;
    }
    memset(mem, 0, 8 * (fixed + (size_t)r->threads * thread_words));
    return pmlin__lay_out(r, (uint64_t *)mem, bytes, gen, thread_words);
}

/* pmlin_open_logs keeps the logs in a new file of directory dir (NULL:
 * the environment variable PMLIN_LOG_DIR), mapped MAP_SHARED, so that
 * every record committed before the process is killed is in the file
 * (README, "Logs that survive a kill": what is guaranteed, and what is
 * not). The file is dir/gen-NNNNNN.pmlog, NNNNNN the generation: one more
 * than the last one in dir (created exclusively, so two processes never
 * share one); dir is created if missing (one level). thread_bytes is each
 * thread's room (0: PMLIN_LOG_BYTES_DEFAULT, 64 MiB; the file is sparse,
 * pages cost nothing until written). Call it right after pmlin_new (and
 * pmlin_set_clock, if any), before the program touches the state it
 * recovers, and before anything is recorded; `pmlin gather dir` turns the
 * generations into one history. 0, or -1 with pmlin_error set. */
static inline int pmlin_open_logs(pmlin_recorder *r, const char *dir, size_t thread_bytes)
{
#ifdef PMLIN__POSIX
    size_t size = pmlin_logs_size(r->threads, thread_bytes), plen;
    char *path;
    uint64_t gen;
    int fd = -1, flags = O_RDWR | O_CREAT | O_EXCL;
    void *mem;
#ifdef O_CLOEXEC
    flags |= O_CLOEXEC;
#endif
    if (!pmlin__may_open(r))
        return -1;
    if (!dir)
        dir = getenv("PMLIN_LOG_DIR");
    if (!dir || !*dir) {
        pmlin__errorf(r, "no log directory: give pmlin_open_logs one, or set PMLIN_LOG_DIR", NULL);
        return -1;
    }
    plen = strlen(dir) + 32;
    if ((path = (char *)malloc(plen)) == NULL) {
        pmlin__errorf(r, "out of memory", NULL);
        return -1;
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(r->errmsg, sizeof r->errmsg, "pmlin: %s: %s", dir, strerror(errno));
        free(path);
        return -1;
    }
    for (gen = 1; fd < 0; gen++) {
        snprintf(path, plen, "%s/gen-%06" PRIu64 ".pmlog", dir, gen);
        fd = open(path, flags, 0644);
        if (fd < 0 && errno != EEXIST) {
            snprintf(r->errmsg, sizeof r->errmsg, "pmlin: %s: %s", path, strerror(errno));
            free(path);
            return -1;
        }
    }
    gen--;
    mem = MAP_FAILED;
    if (ftruncate(fd, (off_t)size) != 0 ||
        (mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        snprintf(r->errmsg, sizeof r->errmsg, "pmlin: %s: %s", path, strerror(errno));
        close(fd);
        free(path);
        return -1;
    }
    close(fd);
    free(path);
    r->map = mem;
    r->map_bytes = size;
    return pmlin__lay_out(r, (uint64_t *)mem, size, gen, pmlin__thread_words(thread_bytes));
#else
    (void)dir;
    (void)thread_bytes;
    pmlin__errorf(r,
                  "pmlin_open_logs needs POSIX (open, ftruncate, mmap): include pmlin.h before any system header, or "
                  "define _POSIX_C_SOURCE=200809L",
                  NULL);
    return -1;
#endif
}

/* pmlin_ready tells `pmlin fuzz --exec` that this start of the program is
 * ready to be killed: it has opened its logs, recovered its state,
 * recorded its read of it, and started its threads (README, "The
 * protocol of pmlin fuzz --exec"). It writes the line "ready" to the file
 * descriptor that the environment variable PMLIN_READY_FD names, and
 * closes it; pmlin times its kill from then on. Without PMLIN_READY_FD
 * (the program run by hand) it does nothing. Any thread may call it, once.
 * 0, or -1 (errno set) if the descriptor cannot be written. */
static inline int pmlin_ready(void)
{
    const char *s = getenv("PMLIN_READY_FD");
    if (!s || !*s)
        return 0;
#ifdef PMLIN__POSIX
    {
        char *end;
        long fd = strtol(s, &end, 10);
        long n;
        if (*end || fd < 0 || fd != (long)(int)fd) {
            errno = EBADF;
            return -1;
        }
        do
            n = (long)write((int)fd, "ready\n", 6);
        while (n < 0 && errno == EINTR);
        close((int)fd);
        return n == 6 ? 0 : -1;
    }
#else
    errno = ENOSYS; /* no POSIX write: include pmlin.h first (above) */
    return -1;
#endif
}

/* ---- recording (hot path: one thread per handle) -------------------- */

/* pmlin_reserve makes room for ops more operations of up to k words each
 * (a version 2 operation of a arguments and r results, its name up to 8
 * bytes, takes 8 + a + r words: k = (a + r + 6) / 4 covers it)
 * ahead of time, exactly that much, and touches every page of it, so that
 * recording those operations neither allocates nor takes a page fault. A
 * mapped log does not grow: -1 if it has not that much room left (nothing
 * else changes). 0, or -1 (out of memory, a full log, a log that stopped
 * recording). */
static inline int pmlin_reserve(pmlin_thread *t, size_t ops, size_t k)
{
    size_t need = ops * (5 + 4 * k), i; /* a cas (2 + 3k) and a failure with values (3 + k) */
    volatile uint64_t *p;
    if (t->err)
        return -1;
    if (t->len + need > t->cap && (t->mapped || pmlin__grow(t, need, 1) != 0))
        return -1;
    /* Beyond len nothing is committed: writing 0 there changes nothing. */
    p = t->buf + t->len;
    for (i = 0; i < need; i += PMLIN__PAGE_WORDS)
        p[i] = 0;
    if (need)
        p[need - 1] = 0;
    return 0;
}

/* pmlin_tag returns a value never returned before by this recorder, for a
 * new value to write (Assumption 1 of the method: no value is written twice
 * to a word, nor equal to its initial value): (generation << 16 | pid + 1)
 * << PMLIN_TAG_SHIFT | counter, counter from 1. Use it as is, or embed it
 * in your values. */
static inline uint64_t pmlin_tag(pmlin_thread *t)
{
    if (t->tags + 1 >= ((uint64_t)1 << PMLIN_TAG_SHIFT))
        pmlin__misuse(t, PMLIN__E_TAGS, t->tags, 0);
    t->tags++;
    return t->tag_base | t->tags;
}

/* pmlin__begin_inv checks an invocation of k words and opens its record
 * of *n words. */
static inline uint64_t *pmlin__begin_inv(pmlin_thread *t, int kind, size_t k, const uint64_t *addrs, size_t *n)
{
    size_t i, j;
    if (t->err)
        return NULL;
    if (t->pending) {
        pmlin__misuse(t, PMLIN__E_OVERLAP, 0, 0);
        return NULL;
    }
    if (k == 0 || k > PMLIN__MAX_N) {
        pmlin__misuse(t, k ? PMLIN__E_KBIG : PMLIN__E_K0, (uint64_t)k, 0);
        return NULL;
    }
    for (i = 1; i < k; i++)
        for (j = 0; j < i; j++)
            if (addrs[i] == addrs[j]) {
                pmlin__misuse(t, PMLIN__E_DUPADDR, addrs[i], 0);
                return NULL;
            }
    *n = 2 + k * (size_t)(kind == PMLIN__INV_READ ? 1 : kind == PMLIN__INV_CAS ? 3 : 2);
    return pmlin__open_rec(t, *n, (uint64_t)kind | (uint64_t)k << 8);
}

/* pmlin__end_inv stamps and commits an invocation record whose payload is
 * written: the last thing before the operation runs. The check's sum is
 * taken before the clock is read, all but the timestamp's term, so that
 * the recorded interval grows by a few instructions only. */
static inline void pmlin__end_inv(pmlin_thread *t, uint64_t *p, size_t n)
{
    uint64_t h = pmlin__sum(pmlin__sum_start(t, t->len), 0, p, 1), ts;
    h = pmlin__sum(h, 2, p + 2, n - 2);
    ts = pmlin__stamp_inv(t->rec);
    if (ts < t->last_ts) {
        pmlin__misuse(t, PMLIN__E_CLOCK, t->last_ts, ts);
        return;
    }
    p[1] = t->last_ts = ts;
    t->pending = t->len + 1;
    pmlin__commit(t, p, n, h ^ pmlin__rotl(ts, 7));
    t->steps++;
}

/* pmlin_inv_read records the invocation of a read of k distinct words. */
static inline void pmlin_inv_read(pmlin_thread *t, size_t k, const uint64_t *addrs)
{
    size_t n;
    uint64_t *p = pmlin__begin_inv(t, PMLIN__INV_READ, k, addrs, &n);
    if (!p)
        return;
    memcpy(p + 2, addrs, k * sizeof *addrs);
    pmlin__end_inv(t, p, n);
}

/* pmlin_inv_cas records the invocation of a cas: at each addrs[i], expect
 * expected[i] and write new_values[i]. */
static inline void pmlin_inv_cas(pmlin_thread *t, size_t k, const uint64_t *addrs, const uint64_t *expected,
                                 const uint64_t *new_values)
{
    size_t i, n;
    uint64_t *p = pmlin__begin_inv(t, PMLIN__INV_CAS, k, addrs, &n);
    if (!p)
        return;
    for (i = 0; i < k; i++) {
        p[2 + 3 * i] = addrs[i];
        p[3 + 3 * i] = expected[i];
        p[4 + 3 * i] = new_values[i];
    }
    pmlin__end_inv(t, p, n);
}

/* pmlin_inv_swap records the invocation of a swap: write new_values[i] at
 * addrs[i], returning the values replaced. */
static inline void pmlin_inv_swap(pmlin_thread *t, size_t k, const uint64_t *addrs, const uint64_t *new_values)
{
    size_t i, n;
    uint64_t *p = pmlin__begin_inv(t, PMLIN__INV_SWAP, k, addrs, &n);
    if (!p)
        return;
    for (i = 0; i < k; i++) {
        p[2 + 2 * i] = addrs[i];
        p[3 + 2 * i] = new_values[i];
    }
    pmlin__end_inv(t, p, n);
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
    *k = (size_t)(inv[0] >> 8 & PMLIN__MAX_N);
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

/* pmlin__ret writes and commits a response record: the blamed address
 * (nhead words of head) and the k values, if any. */
static inline void pmlin__ret(pmlin_thread *t, int kind, uint64_t ts, size_t k, const uint64_t *head,
                              size_t nhead, const uint64_t *values)
{
    size_t n = 2 + nhead + (values ? k : 0);
    uint64_t *p = pmlin__open_rec(t, n, (uint64_t)kind | (uint64_t)k << 8);
    if (!p)
        return;
    p[1] = t->last_ts = ts;
    if (nhead)
        memcpy(p + 2, head, nhead * sizeof *head);
    if (values)
        memcpy(p + 2 + nhead, values, k * sizeof *values);
    pmlin__commit(t, p, n, pmlin__sum(pmlin__sum_start(t, t->len), 0, p, n));
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

/* pmlin_ret_fail_unknown records that the pending cas failed without
 * saying at which of its addresses: for a MwCAS that returns a bool. The
 * history cannot say "one of its words differed" (README, rule 6), so:
 * with k = 1 the failure blames the cas's only address, which is exact;
 * with k > 1 the operation is withdrawn (its invocation taken out of the
 * log) and the history leaves it out. That is sound, never a false alarm:
 * it wrote nothing, and the real-time order of the other operations is
 * that of their intervals, with or without it; but a failure of such a cas
 * that should have succeeded is then not seen.
 * The invocation is the log's last record (nothing else of this thread
 * came after it). It is withdrawn in an order a kill may cut anywhere: its
 * first word loses its commit bit (from then on a torn record, which a
 * reader cuts), then its other words are zeroed, then its first word. */
static inline void pmlin_ret_fail_unknown(pmlin_thread *t)
{
    uint64_t ts, *inv;
    size_t k, off;
    if (!pmlin__begin_ret(t, &ts, &k, PMLIN__INV_CAS))
        return;
    off = t->pending - 1;
    inv = t->buf + off;
    if (k == 1) {
        pmlin__ret(t, PMLIN__RET_FAIL, ts, 0, inv + 2, 1, NULL);
        return;
    }
    PMLIN__STORE_RELEASE(inv, inv[0] & 0xffffffffu);
    PMLIN__COMPILER_BARRIER();
    memset(inv + 1, 0, (t->len - off - 1) * sizeof *inv);
    PMLIN__STORE_RELEASE(inv, (uint64_t)0);
    t->len = off;
    t->pending = 0;
    t->steps--;
}

/* ---- version 2: operations on objects of any model ------------------ */

/* pmlin_num and pmlin_sym make a pmlin_value. */
static inline pmlin_value pmlin_num(uint64_t v)
{
    pmlin_value x;
    x.sym = PMLIN_NUM;
    x.num = v;
    return x;
}

static inline pmlin_value pmlin_sym(int sym)
{
    pmlin_value x;
    x.sym = sym;
    x.num = 0;
    return x;
}

/* pmlin__name_ok: s is [a-z][a-z0-9_-]* and at most max bytes. */
static inline int pmlin__name_ok(const char *s, size_t max)
{
    size_t i;
    if (!s || !(*s >= 'a' && *s <= 'z'))
        return 0;
    for (i = 0; s[i]; i++)
        if (i >= max || !((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
            return 0;
    return 1;
}

/* pmlin_object declares an object of a version 2 history: its name
 * ([a-z][a-z0-9_-]*, not read, cas, swap or crash), its model (queue,
 * map, register, ...: docs/history-format.md, "The built-in models of
 * version 2") and its parameters ("cap=8", several separated by spaces;
 * NULL or "" for none). It returns the object's id for pmlin_inv_op (0,
 * 1, ... in the order of declaration), or -1 with pmlin_error set. A
 * recorder with objects writes version 2 (pmlin_write; pmlin gather of
 * mapped logs), in which pmlin_inv_read, _cas and _swap act on the
 * implicit object "words". Declare the objects before any thread records,
 * and in every run of a program whose mapped logs pmlin gather merges:
 * the same ones, in the same order (gather refuses a name declared
 * otherwise in another run). */
static inline int pmlin_object(pmlin_recorder *r, const char *name, const char *model, const char *params)
{
    size_t n, i;
    char *decl;
    if (!params)
        params = "";
    if (!pmlin__name_ok(name, 64) || !strcmp(name, "read") || !strcmp(name, "cas") || !strcmp(name, "swap") ||
        !strcmp(name, "crash") || !pmlin__name_ok(model, 64)) {
        pmlin__errorf(r, "pmlin_object: a name and a model are [a-z][a-z0-9_-]* (at most 64 characters), the name "
                         "not read, cas, swap or crash: ", name ? name : "(null)");
        return -1;
    }
    for (i = 0; params[i]; i++)
        if ((unsigned char)params[i] < 0x20 || (unsigned char)params[i] > 0x7e || params[i] == '#') {
            pmlin__errorf(r, "pmlin_object: parameters are printable ASCII without '#': ", params);
            return -1;
        }
    for (i = 0; i < r->objects_n; i++) {
        size_t k = strlen(name);
        if (!strncmp(r->objects[i], name, k) && r->objects[i][k] == ' ') {
            pmlin__errorf(r, "pmlin_object: object declared twice: ", name);
            return -1;
        }
    }
    if (r->objects_n == r->objects_cap) {
        size_t cap = r->objects_cap ? 2 * r->objects_cap : 4;
        char **os = (char **)realloc(r->objects, cap * sizeof *os);
        if (!os) {
            pmlin__errorf(r, "out of memory", NULL);
            return -1;
        }
        r->objects = os;
        r->objects_cap = cap;
    }
    n = strlen(name) + strlen(model) + strlen(params) + 3;
    if ((decl = (char *)malloc(n)) == NULL) {
        pmlin__errorf(r, "out of memory", NULL);
        return -1;
    }
    snprintf(decl, n, "%s %s%s%s", name, model, *params ? " " : "", params);
    r->objects[r->objects_n++] = decl;
    if (pmlin__log_put(r, PMLIN__REC_OBJECT, strlen(decl), 0, decl, strlen(decl)) != 0)
        return -1;
    return (int)(r->objects_n - 1);
}

/* pmlin__values writes n values at p: the symbol mask (bit i: value i is
 * a symbol), then each number or symbol code. -1 - i on a bad sym at i. */
static inline long pmlin__values(uint64_t *p, size_t n, const pmlin_value *v)
{
    uint64_t mask = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        if (v[i].sym < PMLIN_NUM || v[i].sym > PMLIN_FALSE)
            return -1 - (long)i;
        if (v[i].sym != PMLIN_NUM)
            mask |= (uint64_t)1 << i;
        p[1 + i] = v[i].sym != PMLIN_NUM ? (uint64_t)v[i].sym : v[i].num;
    }
    p[0] = mask;
    return 0;
}

/* pmlin_inv_op records the invocation of operation op (its model's name
 * for it: "enq", "deq", "put", ...) with its n arguments on object obj
 * (pmlin_object's id), just before the operation's first shared access.
 * It is committed like every record (README, "Logs that survive a
 * kill"): a kill before the commit leaves no invocation. */
static inline void pmlin_inv_op(pmlin_thread *t, int obj, const char *op, size_t n, const pmlin_value *args)
{
    size_t len, words, i;
    uint64_t *p;
    long bad;
    if (t->err)
        return;
    if (t->pending) {
        pmlin__misuse(t, PMLIN__E_OVERLAP, 0, 0);
        return;
    }
    if (obj < 0 || (size_t)obj >= t->rec->objects_n) {
        pmlin__misuse(t, PMLIN__E_OBJECT, (uint64_t)(int64_t)obj, 0);
        return;
    }
    if (!pmlin__name_ok(op, PMLIN_MAX_OP_NAME)) {
        pmlin__misuse(t, PMLIN__E_OPNAME, 0, 0);
        return;
    }
    if (n > PMLIN_MAX_OP_VALUES) {
        pmlin__misuse(t, PMLIN__E_VALUE, (uint64_t)n, 0);
        return;
    }
    len = strlen(op);
    words = 4 + n + (len + 7) / 8;
    p = pmlin__open_rec(t, words, (uint64_t)PMLIN__INV_OP | (uint64_t)(n | len << 8) << 8);
    if (!p)
        return;
    p[2] = (uint64_t)obj;
    if ((bad = pmlin__values(p + 3, n, args)) != 0) {
        p[0] = 0; /* nothing of it was committed */
        pmlin__misuse(t, PMLIN__E_VALUE, (uint64_t)(-1 - bad), 1);
        return;
    }
    p[words - 1] = 0;
    for (i = 0; i < len; i++)
        ((unsigned char *)(p + 4 + n))[i] = (unsigned char)op[i]; /* the bytes in memory order, as memcpy */
    pmlin__end_inv(t, p, words);
}

/* pmlin_ret_op records the response of the pending pmlin_inv_op: its n
 * results (one at least: a queue's enq returns pmlin_sym(PMLIN_OK), its
 * deq pmlin_num(v) or pmlin_sym(PMLIN_EMPTY)), just after the
 * operation's last shared access. */
static inline void pmlin_ret_op(pmlin_thread *t, size_t n, const pmlin_value *results)
{
    uint64_t ts, *p;
    size_t k;
    long bad;
    if (!pmlin__begin_ret(t, &ts, &k, PMLIN__INV_OP))
        return;
    if (n == 0 || n > PMLIN_MAX_OP_VALUES) {
        pmlin__misuse(t, PMLIN__E_VALUE, (uint64_t)n, 0);
        return;
    }
    if ((p = pmlin__open_rec(t, 3 + n, (uint64_t)PMLIN__RET_OP | (uint64_t)n << 8)) == NULL)
        return;
    if ((bad = pmlin__values(p + 2, n, results)) != 0) {
        p[0] = 0;
        pmlin__misuse(t, PMLIN__E_VALUE, (uint64_t)(-1 - bad), 1);
        return;
    }
    p[1] = t->last_ts = ts;
    pmlin__commit(t, p, 3 + n, pmlin__sum(pmlin__sum_start(t, t->len), 0, p, 3 + n));
    t->pending = 0;
    t->steps++;
}

/* pmlin_ret_unknown records that the outcome of the pending pmlin_inv_op
 * is unknown ("ret ?": it may or may not have taken effect, any time
 * after its invocation): a timeout, or an operation whose result the
 * program lost. */
static inline void pmlin_ret_unknown(pmlin_thread *t)
{
    uint64_t ts;
    size_t k;
    if (!pmlin__begin_ret(t, &ts, &k, PMLIN__INV_OP))
        return;
    pmlin__ret(t, PMLIN__RET_UNKNOWN, ts, 0, NULL, 0, NULL);
}

/* ---- crash ---------------------------------------------------------- */

/* pmlin_crash records a full-system crash inside this process, between
 * every step recorded so far and every step recorded after it returns
 * (README, rule 7); every pending operation is interrupted (it will have
 * no response), and each thread may invoke new operations afterwards.
 * Call it while no thread records (after the threads that "crashed" have
 * stopped). A crash that kills the process needs no call: pmlin gather
 * writes it. 0, or -1 if the clock did not advance (a custom clock that
 * stands still) or the recorder's log is full. */
static inline int pmlin_crash(pmlin_recorder *r)
{
    uint64_t ts;
    int i;
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
    if (pmlin__between(r, &ts) != 0) {
        pmlin__errorf(r, "crash: the clock does not advance past the last step", NULL);
        return -1;
    }
    for (i = 0; i < r->threads; i++)
        r->t[i]->pending = 0;
    r->crash_ts[r->crashes++] = ts;
    return pmlin__log_put(r, PMLIN__REC_CRASH, 0, ts, NULL, 0);
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

/* pmlin__put_values writes n version 2 values, each after a space: w[0]
 * is their symbol mask, w[1..n] the values. */
static inline void pmlin__put_values(FILE *f, size_t n, const uint64_t *w)
{
    static const char *const syms[] = {"", "nil", "ok", "fail", "empty", "true", "false"};
    size_t i;
    for (i = 0; i < n; i++) {
        PMLIN__PUTC(' ', f);
        if (w[0] >> i & 1)
            pmlin__put_str(f, syms[w[1 + i] <= PMLIN_FALSE ? w[1 + i] : 0]);
        else
            pmlin__value(f, w[1 + i]);
    }
}

/* pmlin__check_logs turns the first misuse into the recorder's error
 * message, and refuses a log whose records do not all check out (the
 * program wrote over its own log: a stray write); -1 if either. */
static inline int pmlin__check_logs(pmlin_recorder *r)
{
    int i;
    size_t pos, n;
    for (i = -1; i < r->threads; i++) {
        const pmlin_thread *t = i < 0 ? r->log : r->t[i];
        if (!t)
            continue;
        if (t->err) {
            memcpy(r->errmsg, "pmlin: ", 7);
            pmlin__misuse_text(t, r->errmsg + 7, sizeof r->errmsg - 7);
            return -1;
        }
        for (pos = 0; pos < t->len; pos += n) {
            n = pmlin__record_len(t->buf[pos]);
            if (!pmlin__record_ok(t, pos)) {
                char who[48];
                if (i < 0)
                    snprintf(who, sizeof who, "the recorder's own log");
                else
                    snprintf(who, sizeof who, "thread %d's log", i);
                snprintf(r->errmsg, sizeof r->errmsg,
                         "pmlin: %s is damaged at its word %zu: the record there does not check out (did the "
                         "program write over its logs?)",
                         who, pos);
                return -1;
            }
        }
    }
    return 0;
}

static inline int pmlin__cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* pmlin__write_head writes the header line, the comments made before
 * anything was recorded and the initial values (the default only if not
 * 0; words by address, 8 to a line). all: every comment (the unmerged
 * log, where pmlin merge drops them anyway). */
static inline int pmlin__write_head(pmlin_recorder *r, FILE *f, const char *magic, int all)
{
    size_t i;
    fprintf(f, "%s\n", magic);
    for (i = 0; i < r->comments_n; i++)
        if (all || r->comment_ts[i] == 0)
            fprintf(f, "# %s\n", r->comments[i]);
    for (i = 0; i < r->objects_n; i++)
        fprintf(f, "object %s\n", r->objects[i]);
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

/* pmlin__write_step writes the record at p as an event line of process
 * pid (the caller holds the stream's lock). */
static inline void pmlin__write_step(FILE *f, const pmlin_recorder *r, int32_t pid, const uint64_t *p)
{
    size_t k = (size_t)(p[0] >> 8 & PMLIN__MAX_N), i;
    const uint64_t *w = p + 2;
    const char *decl;
    pmlin__put_dec(f, (uint64_t)pid);
    switch ((int)(p[0] & 0xff)) {
    case PMLIN__INV_OP:
        pmlin__put_str(f, " inv ");
        for (decl = r->objects[w[0]]; *decl != ' '; decl++)
            PMLIN__PUTC(*decl, f);
        PMLIN__PUTC(' ', f);
        for (i = 0; i < k >> 8; i++)
            PMLIN__PUTC(((const char *)(w + 2 + (k & 0xff)))[i], f);
        pmlin__put_values(f, k & 0xff, w + 1);
        break;
    case PMLIN__RET_OP:
        pmlin__put_str(f, " ret");
        pmlin__put_values(f, k, w);
        break;
    case PMLIN__RET_UNKNOWN:
        pmlin__put_str(f, " ret ?");
        break;
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

/* pmlin__precheck: no misuse, every record checks out, at least one
 * operation, and none pending at the end: a thread that stopped in the
 * middle of an operation must say so with pmlin_crash (README, rule 7),
 * not leave a pending operation for the history to read as cut off by a
 * crash nobody recorded. */
static inline int pmlin__precheck(pmlin_recorder *r)
{
    int i, any = 0;
    if (pmlin__check_logs(r) != 0)
        return -1;
    for (i = 0; i < r->threads; i++) {
        const pmlin_thread *t = r->t[i];
        any |= t->len != 0;
        if (t->pending) {
            snprintf(r->errmsg, sizeof r->errmsg,
                     "pmlin: thread %d (process %d): its last operation (step %" PRIu64
                     ") is pending at the end: record its response, or call pmlin_crash to cut it off",
                     i, (int)t->pid, t->steps);
            return -1;
        }
    }
    if (!any) {
        pmlin__errorf(r, "no operation was recorded: nothing to write (an empty history would prove nothing)",
                      NULL);
        return -1;
    }
    return 0;
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
    size_t next = pos + pmlin__record_len(p[0]);
    if (!PMLIN__IS_RET((int)(p[0] & 0xff)) || next >= t->len)
        return 0;
    n = t->buf + next;
    return !PMLIN__IS_RET((int)(n[0] & 0xff)) && n[1] == p[1];
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
        for (pos = 0; pos < r->t[i]->len; pos += pmlin__record_len(r->t[i]->buf[pos]))
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
        for (pos = 0; pos < r->t[i]->len; pos += pmlin__record_len(r->t[i]->buf[pos]))
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
 * to f. 0, or -1 with pmlin_error set (a misuse, a damaged log, no
 * operation, an operation pending at the end, a crash and a step at the
 * same time, a tie no order states honestly, a write error). */
static inline int pmlin_write(pmlin_recorder *r, FILE *f)
{
    size_t *pos, c = 0, m = 0;
    int i;
    if (pmlin__precheck(r) != 0 || pmlin__check_ties(r) != 0)
        return -1;
    pos = (size_t *)calloc((size_t)r->threads, sizeof *pos);
    if (!pos) {
        pmlin__errorf(r, "out of memory", NULL);
        return -1;
    }
    PMLIN__LOCK(f);
    pmlin__write_head(r, f, r->objects_n ? "pmlin-history v2" : "pmlin-history v1", 0);
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
            ret = PMLIN__IS_RET((int)(p[0] & 0xff));
            again = pmlin__again(t, pos[i]);
            if (best < 0 || p[1] < best_ts ||
                (p[1] == best_ts && (best_ret > ret || (best_ret == ret && again > best_again)))) {
                best = i;
                best_ts = p[1];
                best_ret = ret;
                best_again = again;
            }
        }
        /* Comments made while recording come where their timestamps put
         * them, like crashes (both are strictly between steps). */
        while (m < r->comments_n && r->comment_ts[m] == 0)
            m++;
        if (m < r->comments_n && (best < 0 || r->comment_ts[m] < best_ts) &&
            (c >= r->crashes || r->comment_ts[m] < r->crash_ts[c])) {
            pmlin__put_str(f, "# ");
            pmlin__put_str(f, r->comments[m++]);
            PMLIN__PUTC('\n', f);
            continue;
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
        pmlin__write_step(f, r, r->t[best]->pid, r->t[best]->buf + pos[best]);
        pos[best] += pmlin__record_len(r->t[best]->buf[pos[best]]);
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
    if (r->objects_n) {
        pmlin__errorf(r, "pmlin_write_log: pmlin merge reads version 1 logs, and this recorder has version 2 objects: "
                         "write the history with pmlin_write, or gather mapped logs with pmlin gather",
                      NULL);
        return -1;
    }
    PMLIN__LOCK(f);
    pmlin__write_head(r, f, "pmlin-log v1", 1);
    for (i = 0; i < r->threads; i++) {
        const pmlin_thread *t = r->t[i];
        for (j = 0; j < t->len; j += pmlin__record_len(t->buf[j])) {
            pmlin__put_dec(f, t->buf[j + 1]);
            PMLIN__PUTC(' ', f);
            pmlin__write_step(f, r, t->pid, t->buf + j);
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
