// Benchmark thread churn (seed 000): for SECS seconds, create BATCH threads at a time,
// each doing a fixed unit of work (WORK_US of spinning; 0 = none) and exiting, joined
// before the next batch. STACK_KB sets the thread stack (0 = glibc's default).
// Prints pid= at start, then created= secs= rate= failed= when done.
// usage: bench_churn SECS [BATCH] [WORK_US] [STACK_KB]
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long work_us = 100;

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void *worker(void *arg) {
    (void)arg;
    if (work_us > 0) {
        double end = now_us() + work_us;
        volatile unsigned long x = 0;
        while (now_us() < end) x++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 5;
    long batch = argc > 2 ? atol(argv[2]) : 4;
    work_us = argc > 3 ? atol(argv[3]) : 100;
    long stack_kb = argc > 4 ? atol(argv[4]) : 0;
    if (batch < 1) batch = 1;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (stack_kb > 0) pthread_attr_setstacksize(&attr, stack_kb * 1024);
    printf("pid=%d\n", getpid());
    fflush(stdout);
    pthread_t *t = calloc(batch, sizeof(*t));
    long created = 0, failed = 0;
    double t0 = now_us(), end = t0 + secs * 1e6, t1;
    while ((t1 = now_us()) < end) {
        long k = 0;
        for (long i = 0; i < batch; i++) {
            if (pthread_create(&t[k], &attr, worker, NULL) == 0) k++;
            else failed++;
        }
        for (long j = 0; j < k; j++) pthread_join(t[j], NULL);
        created += k;
    }
    double took = (now_us() - t0) / 1e6;
    printf("created=%ld secs=%.3f rate=%.0f failed=%ld\n", created, took, created / took, failed);
    return 0;
}
