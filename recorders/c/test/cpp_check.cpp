// cpp_check: pmlin.h compiled as C++ (g++ -std=c++11 and later), recording
// from std::thread. Each thread increments word 0 by a single-word CAS
// (std::atomic compare_exchange_strong) after reading it; the history it
// writes to standard output is linearizable.
#include "../pmlin.h"

#include <atomic>
#include <thread>
#include <vector>

int main()
{
    const int threads = 3, ops = 50;
    std::atomic<uint64_t> word(0);
    pmlin_recorder *rec = pmlin_new(threads);
    if (!rec)
        return 1;
    pmlin_comment(rec, "cpp_check: std::thread, std::atomic CAS on word 0");
    std::vector<std::thread> ts;
    for (int i = 0; i < threads; i++) {
        ts.emplace_back([&, i] {
            pmlin_thread *t = pmlin_thread_get(rec, i);
            const uint64_t addr = 0;
            for (int j = 0; j < ops; j++) {
                uint64_t seen, fresh = pmlin_tag(t);
                pmlin_inv_read(t, 1, &addr);
                seen = word.load();
                pmlin_ret_read(t, &seen);
                pmlin_inv_cas(t, 1, &addr, &seen, &fresh);
                uint64_t expected = seen;
                if (word.compare_exchange_strong(expected, fresh))
                    pmlin_ret_ok(t);
                else
                    pmlin_ret_fail(t, addr);
            }
        });
    }
    for (auto &t : ts)
        t.join();
    int rc = pmlin_write(rec, stdout);
    if (rc != 0)
        fprintf(stderr, "%s\n", pmlin_error(rec));
    pmlin_free(rec);
    return rc == 0 ? 0 : 1;
}
