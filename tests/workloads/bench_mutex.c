// Benchmark mutex storm (seed 001): THREADS threads increment one counter under one
// pthread mutex for SECS seconds, with a little work outside the lock, so the lock is
// contended and waiters sleep in futex(). Prints pid= at start, then ops= secs= rate=.
// usage: bench_mutex [THREADS] [SECS]
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;
static unsigned long counter;

static void *worker(void *arg) {
    (void)arg;
    unsigned long mine = 0;
    while (!stop) {
        pthread_mutex_lock(&lock);
        counter++;
        for (volatile int i = 0; i < 50; i++) {}
        pthread_mutex_unlock(&lock);
        for (volatile int i = 0; i < 50; i++) {}
        mine++;
    }
    return (void *)mine;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 4;
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
    double took = now() - t0;
    printf("ops=%lu secs=%.3f rate=%.0f counter=%lu\n", ops, took, ops / took, counter);
    return 0;
}
