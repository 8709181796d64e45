/*
 * script: drives pmlin.h from a script on standard input, with a clock the
 * script sets, so tests can pin down the merge rules (ties, a thread's own
 * order, crashes) and the misuse errors. The Go tests in package recorders
 * run the same scripts through the Python module (script.py).
 *
 *   threads N                 first line: a recorder for N threads
 *   clock T                   the clock reads T from now on
 *   init V | init A=V         initial values
 *   inv-read P A...           thread P invokes a read
 *   inv-cas P A:E:N...        a cas
 *   inv-swap P A:N...         a swap
 *   ret-read P V...           responses
 *   ret-swap P V...
 *   ret-ok P
 *   ret-fail P A [V...]       with values: ret fail with values
 *   ret-fail P                the address unknown (pmlin_ret_fail_unknown)
 *   tag P                     print thread P's next tag
 *   comment TEXT              a comment (at the top, or where it is made)
 *   crash
 *   write | log               write the history | the unmerged log to stdout
 *
 * Exit 1 with pmlin_error on standard error if a pmlin call fails.
 */
#define _POSIX_C_SOURCE 200809L
#include "../pmlin.h"

static uint64_t fake_now;

static uint64_t fake_clock(void *arg)
{
    (void)arg;
    return fake_now;
}

static size_t numbers(char *s, uint64_t *out, size_t max)
{
    size_t n = 0;
    char *tok;
    for (tok = strtok(s, " \t:="); tok && n < max; tok = strtok(NULL, " \t:="))
        out[n++] = strtoull(tok, NULL, 0);
    return n;
}

int main(void)
{
    char line[4096], cmd[32];
    pmlin_recorder *r = NULL;
    uint64_t v[256], a[64], e[64], n[64];
    while (fgets(line, sizeof line, stdin)) {
        int off = 0, p = 0;
        size_t cnt, k, i;
        pmlin_thread *t = NULL;
        line[strcspn(line, "\n")] = 0;
        if (sscanf(line, "%31s%n", cmd, &off) != 1)
            continue;
        if (!strcmp(cmd, "threads")) {
            r = pmlin_new(atoi(line + off));
            pmlin_set_clock(r, fake_clock, NULL);
            continue;
        }
        if (!strncmp(cmd, "inv-", 4) || !strncmp(cmd, "ret-", 4) || !strcmp(cmd, "tag")) {
            int off2 = 0;
            sscanf(line + off, "%d%n", &p, &off2);
            off += off2;
            t = pmlin_thread_get(r, p);
        }
        if (!strcmp(cmd, "comment")) {
            if (pmlin_comment(r, line + off + 1) != 0)
                goto fail;
            continue;
        }
        cnt = numbers(line + off, v, 256);
        if (!strcmp(cmd, "clock")) {
            fake_now = v[0];
        } else if (!strcmp(cmd, "init")) {
            if (cnt == 1)
                pmlin_set_init(r, v[0]);
            for (i = 0; i + 1 < cnt; i += 2)
                if (pmlin_set_init_word(r, v[i], v[i + 1]) != 0)
                    goto fail;
        } else if (!strcmp(cmd, "inv-read")) {
            pmlin_inv_read(t, cnt, v);
        } else if (!strcmp(cmd, "inv-cas")) {
            for (k = 0; 3 * k + 2 < cnt; k++) {
                a[k] = v[3 * k];
                e[k] = v[3 * k + 1];
                n[k] = v[3 * k + 2];
            }
            pmlin_inv_cas(t, k, a, e, n);
        } else if (!strcmp(cmd, "inv-swap")) {
            for (k = 0; 2 * k + 1 < cnt; k++) {
                a[k] = v[2 * k];
                n[k] = v[2 * k + 1];
            }
            pmlin_inv_swap(t, k, a, n);
        } else if (!strcmp(cmd, "ret-read")) {
            pmlin_ret_read(t, v);
        } else if (!strcmp(cmd, "ret-swap")) {
            pmlin_ret_swap(t, v);
        } else if (!strcmp(cmd, "ret-ok")) {
            pmlin_ret_ok(t);
        } else if (!strcmp(cmd, "ret-fail")) {
            if (cnt > 1)
                pmlin_ret_fail_values(t, v[0], v + 1);
            else if (cnt == 1)
                pmlin_ret_fail(t, v[0]);
            else
                pmlin_ret_fail_unknown(t);
        } else if (!strcmp(cmd, "tag")) {
            printf("0x%" PRIx64 "\n", pmlin_tag(t));
        } else if (!strcmp(cmd, "crash")) {
            if (pmlin_crash(r) != 0)
                goto fail;
        } else if (!strcmp(cmd, "write")) {
            if (pmlin_write(r, stdout) != 0)
                goto fail;
        } else if (!strcmp(cmd, "log")) {
            if (pmlin_write_log(r, stdout) != 0)
                goto fail;
        } else {
            fprintf(stderr, "script: unknown command %s\n", cmd);
            return 2;
        }
    }
    pmlin_free(r);
    return 0;
fail:
    fprintf(stderr, "%s\n", pmlin_error(r));
    pmlin_free(r);
    return 1;
}
