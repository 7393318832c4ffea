// Scheduling latency on purpose: SPINNERS threads spin on CPU, and one thread on the
// same CPU sleeps SLEEP_US in a loop for SECS seconds, measuring how late each wakeup
// is: (time after nanosleep returns) - (time before) - SLEEP_US. Timer slack is set to
// 1 ns so the lateness is the timer interrupt plus the wait for the CPU.
// NICE is the sleeper's nice value (a high one makes it wait behind the spinners).
// usage: wakelat CPU SPINNERS SECS SLEEP_US NICE
// prints: pid=P tid=T, then at the end one line per wakeup "w WALL_NS LATE_NS"
// (WALL_NS: CLOCK_REALTIME when it ran again), "gap MAX_NS" (the longest time the thread
// was out of its measured sleeps: from its start to the first sleep, between one wakeup's
// measure and the next sleep, and from the last wakeup to stopping the spinners; a
// preemption there is a wait for the CPU that no LATE_NS holds) and "wakeups=N".
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;

static long long ns(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof(set), &set);
}

static int cpu;

static void *spinner(void *arg) {
    (void)arg;
    pin(cpu);
    volatile unsigned long x = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) x++;
    return NULL;
}

int main(int argc, char **argv) {
    cpu = argc > 1 ? atoi(argv[1]) : 1;
    int k = argc > 2 ? atoi(argv[2]) : 2;
    double secs = argc > 3 ? atof(argv[3]) : 3;
    long sleep_us = argc > 4 ? atol(argv[4]) : 1000;
    int nice_v = argc > 5 ? atoi(argv[5]) : 0;
    pthread_t t[64];
    if (k > 64) k = 64;
    pin(cpu);
    // From here on the thread is never asleep except in the measured nanosleeps (and the
    // final join): a preemption anywhere else falls inside some gap.
    long long prev_after = ns(CLOCK_MONOTONIC), max_gap = 0;
    for (int i = 0; i < k; i++) pthread_create(&t[i], NULL, spinner, NULL);
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    setpriority(PRIO_PROCESS, syscall(SYS_gettid), nice_v);
    printf("pid=%d tid=%ld\n", getpid(), syscall(SYS_gettid));
    fflush(stdout);
    long cap = (long)(secs * 1e6 / sleep_us) + 16;
    long long *wall = malloc(cap * sizeof(*wall)), *late = malloc(cap * sizeof(*late));
    long n = 0;
    long long end = ns(CLOCK_MONOTONIC) + (long long)(secs * 1e9);
    struct timespec req = {.tv_sec = sleep_us / 1000000, .tv_nsec = (sleep_us % 1000000) * 1000};
    while (n < cap) {
        long long before = ns(CLOCK_MONOTONIC);
        if (before - prev_after > max_gap) max_gap = before - prev_after;
        if (before >= end) break;
        nanosleep(&req, NULL);
        long long after = ns(CLOCK_MONOTONIC);
        wall[n] = ns(CLOCK_REALTIME);
        late[n] = after - before - sleep_us * 1000LL;
        n++;
        prev_after = after;
    }
    atomic_store(&stop, 1);
    // Preempted between the last measure and telling the spinners to stop, the nice
    // sleeper waits behind them for as long as they keep spinning.
    long long stopped = ns(CLOCK_MONOTONIC);
    if (stopped - prev_after > max_gap) max_gap = stopped - prev_after;
    for (int i = 0; i < k; i++) pthread_join(t[i], NULL);
    for (long i = 0; i < n; i++) printf("w %lld %lld\n", wall[i], late[i]);
    printf("gap %lld\nwakeups=%ld\n", max_gap, n);
    return 0;
}
