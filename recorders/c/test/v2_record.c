/*
 * v2_record: records version 2 operations with pmlin.h, for the Go tests
 * (recorders/v2_test.go).
 *
 *   v2_record write          a fixed history of a queue, a map and a
 *                            register, written with pmlin_write to stdout
 *   v2_record mapped DIR     the same into mapped logs in DIR (pmlin_free
 *                            closes them), for pmlin gather
 *   v2_record misuse N       misuse N (0, 1, ...): pmlin_write's error on
 *                            standard error, exit 1; exit 3 past the last
 *
 * A fake clock (one tick per call) makes the output exact.
 */
#define _POSIX_C_SOURCE 200809L
#include "../pmlin.h"

static uint64_t fake_now;

static uint64_t fake_clock(void *arg)
{
    (void)arg;
    return ++fake_now;
}

/* record records the fixed history; 0, or -1 with pmlin_error set. */
static int record(pmlin_recorder *r)
{
    pmlin_thread *a = pmlin_thread_get(r, 0), *b = pmlin_thread_get(r, 1);
    pmlin_value v[2], res[2];
    int q = pmlin_object(r, "q", "queue", "cap=2"), m = pmlin_object(r, "m", "map", NULL),
        g = pmlin_object(r, "reg", "register", "init=nil");
    uint64_t addr = 10, val;
    if (q < 0 || m < 0 || g < 0)
        return -1;
    v[0] = pmlin_num(0x100001);
    pmlin_inv_op(a, q, "enq", 1, v);
    pmlin_inv_op(b, q, "deq", 0, NULL);
    res[0] = pmlin_sym(PMLIN_OK);
    pmlin_ret_op(a, 1, res);
    res[0] = pmlin_num(0x100001);
    pmlin_ret_op(b, 1, res);
    v[0] = pmlin_num(7);
    v[1] = pmlin_num(5);
    pmlin_inv_op(a, m, "put", 2, v);
    res[0] = pmlin_sym(PMLIN_NIL);
    pmlin_ret_op(a, 1, res);
    v[0] = pmlin_sym(PMLIN_NIL);
    v[1] = pmlin_num(3);
    pmlin_inv_op(b, g, "cas", 2, v);
    pmlin_ret_unknown(b);
    pmlin_inv_read(a, 1, &addr); /* a version 1 step: the implicit object words */
    val = 0;
    pmlin_ret_read(a, &val);
    pmlin_inv_op(b, q, "deq", 0, NULL);
    res[0] = pmlin_sym(PMLIN_EMPTY);
    pmlin_ret_op(b, 1, res);
    return 0;
}

/* misuse makes misuse n; -1 past the last. */
static int misuse(pmlin_recorder *r, int n)
{
    pmlin_thread *a = pmlin_thread_get(r, 0);
    pmlin_value v = pmlin_num(1), bad = pmlin_sym(99);
    int q = pmlin_object(r, "q", "queue", NULL);
    uint64_t addr = 1;
    switch (n) {
    case 0: /* an object no pmlin_object returned */
        pmlin_inv_op(a, q + 1, "enq", 1, &v);
        break;
    case 1: /* an operation name that is not one */
        pmlin_inv_op(a, q, "Enq", 1, &v);
        break;
    case 2: /* a symbol that is none */
        pmlin_inv_op(a, q, "enq", 1, &bad);
        break;
    case 3: /* a words response to an operation on an object */
        pmlin_inv_op(a, q, "enq", 1, &v);
        pmlin_ret_read(a, &addr);
        break;
    case 4: /* a response with no result */
        pmlin_inv_op(a, q, "deq", 0, NULL);
        pmlin_ret_op(a, 0, NULL);
        break;
    case 5: /* pmlin_object refuses a bad name */
        if (pmlin_object(r, "cas", "queue", NULL) >= 0)
            return 0;
        return 1;
    case 6: /* and a name given twice */
        if (pmlin_object(r, "q", "stack", NULL) >= 0)
            return 0;
        return 1;
    default:
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    pmlin_recorder *r = pmlin_new(2);
    if (!r)
        return 1;
    pmlin_set_clock(r, fake_clock, NULL);
    if (argc == 2 && !strcmp(argv[1], "write")) {
        if (record(r) != 0 || pmlin_write(r, stdout) != 0) {
            fprintf(stderr, "%s\n", pmlin_error(r));
            return 1;
        }
    } else if (argc == 3 && !strcmp(argv[1], "mapped")) {
        if (pmlin_open_logs(r, argv[2], 65536) != 0 || record(r) != 0) {
            fprintf(stderr, "%s\n", pmlin_error(r));
            return 1;
        }
    } else if (argc == 3 && !strcmp(argv[1], "misuse")) {
        int rc = misuse(r, atoi(argv[2]));
        if (rc < 0)
            return 3;
        if (rc == 1 || pmlin_write(r, stdout) != 0) {
            fprintf(stderr, "%s\n", pmlin_error(r));
            return 1;
        }
    } else {
        fprintf(stderr, "usage: v2_record write | mapped DIR | misuse N\n");
        return 2;
    }
    pmlin_free(r);
    return 0;
}
