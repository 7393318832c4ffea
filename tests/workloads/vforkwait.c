// A thread blocked uninterruptibly for a time it knows, and one asleep by choice:
//   main     vfork()s a child that sleeps SECS seconds before it exits: main waits in
//            the kernel (wait_for_vfork_done, state D) all that time
//   napper   sleeps in nanosleep (state S) meanwhile: the control, never blocked
// usage: vforkwait SECS      prints pid= and napper= first, then blocked_for= after
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double secs = 3;
static volatile int napper_tid;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *napper(void *arg) {
    (void)arg;
    napper_tid = syscall(SYS_gettid);
    struct timespec ts = {(time_t)(secs + 2), 0};
    nanosleep(&ts, NULL);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1)
        secs = atof(argv[1]);
    pthread_t t;
    pthread_create(&t, NULL, napper, NULL);
    while (!napper_tid)
        usleep(1000);
    printf("pid=%d napper=%d\n", getpid(), napper_tid);
    fflush(stdout);
    // Let a watcher take a frame before the block starts.
    usleep(1500 * 1000);
    double t0 = now();
    pid_t c = vfork();
    if (c == 0) {
        // Only system calls in the vfork child: it shares the parent's memory.
        struct timespec ts = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
        syscall(SYS_nanosleep, &ts, NULL);
        syscall(SYS_exit, 0);
    }
    double t1 = now();
    waitpid(c, NULL, 0);
    printf("blocked_for=%.3f\n", t1 - t0);
    fflush(stdout);
    pthread_join(t, NULL);
    return 0;
}
