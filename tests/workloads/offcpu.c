// Threads whose time off the CPU is known, for the off-CPU profile (-O2, no frame
// pointers, as a distribution builds):
//   sleeper  nap() sleeps 50 ms (nanosleep), then spin() runs 50 ms: half its time
//            off-CPU, all of it under nanosleep
//   waiter   park() waits on a condition variable nobody signals, 100 ms at a time:
//            all of its time off-CPU, in futex
//   reader   drain() reads a pipe the main thread writes every 200 ms: all of its
//            time off-CPU, in read
//   spinner  never leaves the CPU on its own (the control)
// usage: offcpu SECS      prints pid= first
#pragma GCC optimize("omit-frame-pointer")
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static volatile unsigned long sink;
static int pipefd[2];

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void spin(double secs) {
    double end = now() + secs;
    unsigned long x = sink;
    while (now() < end)
        for (int i = 0; i < 1000; i++) x = x * 6364136223846793005UL + 1;
    sink = x;
}

__attribute__((noinline)) void nap(long ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

__attribute__((noinline)) static void *sleeper(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "sleeper");
    while (!stop) {
        nap(50);
        spin(0.050);
    }
    return NULL;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

__attribute__((noinline)) void park(void) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 100000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&mu);
    while (pthread_cond_timedwait(&cv, &mu, &until) != ETIMEDOUT)
        ;
    pthread_mutex_unlock(&mu);
}

__attribute__((noinline)) static void *waiter(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "waiter");
    while (!stop) park();
    return NULL;
}

__attribute__((noinline)) void drain(void) {
    char b[64];
    if (read(pipefd[0], b, sizeof b) <= 0) stop = 1;
}

__attribute__((noinline)) static void *reader(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "reader");
    while (!stop) drain();
    return NULL;
}

__attribute__((noinline)) static void *spinner(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "spinner");
    while (!stop) spin(0.1);
    return NULL;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 5;
    pthread_t t[4];
    if (pipe(pipefd)) return 1;
    printf("pid=%d\n", getpid());
    fflush(stdout);
    pthread_create(&t[0], NULL, sleeper, NULL);
    pthread_create(&t[1], NULL, waiter, NULL);
    pthread_create(&t[2], NULL, reader, NULL);
    pthread_create(&t[3], NULL, spinner, NULL);
    double end = now() + secs;
    while (now() < end) {
        struct timespec ts = {0, 200000000L};
        nanosleep(&ts, NULL);
        if (write(pipefd[1], "x", 1) != 1) break;
    }
    stop = 1;
    close(pipefd[1]);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    return 0;
}
