// Futex waits of a known length: FUTEX_WAIT on a word nobody changes, with a relative
// timeout of USEC microseconds, N times. Each sleeps until its timeout (ETIMEDOUT) and
// is counted; the first and last are timed for the spread.
// usage: futexsleep N USEC
#include <errno.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    long usec = argc > 2 ? atol(argv[2]) : 1500;
    int word = 0;
    long slept = 0;
    double min = 1e9, max = 0, t0 = now_s();
    printf("pid=%d\n", getpid());
    fflush(stdout);
    for (long i = 0; i < n; i++) {
        struct timespec to = {usec / 1000000, (usec % 1000000) * 1000};
        double a = now_s();
        long r = syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &to, NULL, 0);
        double d = now_s() - a;
        if (r == -1 && errno == ETIMEDOUT) {
            slept++;
            if (d < min) min = d;
            if (d > max) max = d;
        }
    }
    printf("slept=%ld min_us=%.0f max_us=%.0f secs=%.3f\n", slept, min * 1e6, max * 1e6,
           now_s() - t0);
    return 0;
}
