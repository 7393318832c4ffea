// The frame both benchmark storms share (bench_mutex.c, bench_spinlock.c): print
// pid=, run THREADS workers for SECS seconds (argv[1], argv[2]), then add up the
// operation counts the workers return.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

// Returns the operations done; *took is the wall time from the first thread's start.
static unsigned long run_storm(int argc, char **argv, int threads, void *(*worker)(void *),
                               double *took) {
    int n = argc > 1 ? atoi(argv[1]) : threads;
    double secs = argc > 2 ? atof(argv[2]) : 5;
    if (n < 1) n = 1;
    printf("pid=%d\n", getpid());
    fflush(stdout);
    pthread_t *t = calloc(n, sizeof *t);
    double t0 = now();
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, worker, NULL);
    struct timespec nap = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
    nanosleep(&nap, NULL);
    stop = 1;
    unsigned long ops = 0;
    for (int i = 0; i < n; i++) {
        void *r;
        pthread_join(t[i], &r);
        ops += (unsigned long)r;
    }
    free(t);
    *took = now() - t0;
    return ops;
}
