// An idle program that behaves like seed 003's Go ticker: a timer thread wakes every
// millisecond and hands a tick to a parked worker through a futex, which parks again.
// It counts every futex call it makes, and the waits that slept (returned 0).
// usage: ticker SECS
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic int ticks_pending;
static atomic_long calls, slept, ticks;
static volatile int stop;

static long futex(_Atomic int *w, int op, int val) {
    atomic_fetch_add(&calls, 1);
    return syscall(SYS_futex, w, op, val, NULL, NULL, 0);
}

static void *worker(void *arg) {
    (void)arg;
    while (!stop) {
        int n = atomic_exchange(&ticks_pending, 0);
        if (n) {
            atomic_fetch_add(&ticks, n);
            continue;
        }
        if (futex(&ticks_pending, FUTEX_WAIT_PRIVATE, 0) == 0) // park until the next tick
            atomic_fetch_add(&slept, 1);
    }
    return NULL;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 3;
    printf("pid=%d\n", getpid());
    fflush(stdout);
    pthread_t w;
    pthread_create(&w, NULL, worker, NULL);
    struct timespec s, now, next;
    clock_gettime(CLOCK_MONOTONIC, &s);
    next = s;
    for (;;) {
        next.tv_nsec += 1000000;
        if (next.tv_nsec >= 1000000000) { next.tv_sec++; next.tv_nsec -= 1000000000; }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        atomic_fetch_add(&ticks_pending, 1);
        futex(&ticks_pending, FUTEX_WAKE_PRIVATE, 1); // like a Go ticker waking its M
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - s.tv_sec) + (now.tv_nsec - s.tv_nsec) / 1e9 >= secs) break;
    }
    stop = 1;
    atomic_fetch_add(&ticks_pending, 1);
    futex(&ticks_pending, FUTEX_WAKE_PRIVATE, 1);
    pthread_join(w, NULL);
    clock_gettime(CLOCK_MONOTONIC, &now);
    double el = (now.tv_sec - s.tv_sec) + (now.tv_nsec - s.tv_nsec) / 1e9;
    printf("futex_calls=%ld slept=%ld ticks=%ld secs=%.3f\n", atomic_load(&calls),
           atomic_load(&slept), atomic_load(&ticks), el);
    return 0;
}
