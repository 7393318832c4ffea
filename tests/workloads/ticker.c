// An idle program that behaves like seed 003's Go ticker: a timer thread wakes every
// millisecond and hands a tick to a parked worker through a futex, which parks again.
// It counts every futex call it makes, and the waits that slept (returned 0). With
// LOG, it writes there the wall clock (CLOCK_REALTIME ns) at which each futex call
// began, one per line, a wait that slept marked " s": a test counts its calls and waits
// over the seconds of one ttop frame. (Calls per wait vary from frame to frame: a worker
// running late takes several ticks per wait, and the timer still wakes it at every tick.)
// usage: ticker SECS [LOG]
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
// When logging, the wall ns at which each futex call began: the worker's (with whether
// it slept) and the timer's, each written by its own thread only.
static long long *began, *woke;
static char *did_sleep;
static long nbegan, cap_began, nwoke, cap_woke;

static long long wall_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

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
        long long at = began ? wall_ns() : 0;
        int ok = futex(&ticks_pending, FUTEX_WAIT_PRIVATE, 0) == 0; // park until the next tick
        if (ok)
            atomic_fetch_add(&slept, 1);
        if (began && nbegan < cap_began) {
            did_sleep[nbegan] = ok;
            began[nbegan++] = at;
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 3;
    const char *log = argc > 2 ? argv[2] : NULL;
    if (log) {
        cap_began = (long)(secs * 4000) + 1000;
        cap_woke = (long)(secs * 1000) + 1000;
        began = calloc(cap_began, sizeof *began);
        did_sleep = calloc(cap_began, 1);
        woke = calloc(cap_woke, sizeof *woke);
        if (!began || !did_sleep || !woke) { perror("calloc"); return 1; }
    }
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
        if (woke && nwoke < cap_woke)
            woke[nwoke++] = wall_ns();
        futex(&ticks_pending, FUTEX_WAKE_PRIVATE, 1); // like a Go ticker waking its M
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - s.tv_sec) + (now.tv_nsec - s.tv_nsec) / 1e9 >= secs) break;
    }
    stop = 1;
    atomic_fetch_add(&ticks_pending, 1);
    if (woke && nwoke < cap_woke)
        woke[nwoke++] = wall_ns();
    futex(&ticks_pending, FUTEX_WAKE_PRIVATE, 1);
    pthread_join(w, NULL);
    clock_gettime(CLOCK_MONOTONIC, &now);
    double el = (now.tv_sec - s.tv_sec) + (now.tv_nsec - s.tv_nsec) / 1e9;
    if (log) {
        FILE *f = fopen(log, "w");
        if (!f) { perror(log); return 1; }
        for (long i = 0; i < nbegan; i++)
            fprintf(f, "%lld%s\n", began[i], did_sleep[i] ? " s" : "");
        for (long i = 0; i < nwoke; i++)
            fprintf(f, "%lld\n", woke[i]);
        fclose(f);
    }
    printf("futex_calls=%ld slept=%ld ticks=%ld secs=%.3f\n", atomic_load(&calls),
           atomic_load(&slept), atomic_load(&ticks), el);
    return 0;
}
