// Seed 000's fourth experiment: CREATORS threads, each in a loop creating one thread that
// does a fixed unit of work (WORK_US of spinning) and joining it; or, with POOL set, the
// same CREATORS threads doing the same units of work themselves (the thread-pool control).
// Runs SECS seconds, prints pid= at start and what it did at the end.
// usage: creators CREATORS SECS [WORK_US] [POOL]
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long work_us = 100;
static int pool;
static double end_us;
static atomic_long units, created;

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void *unit(void *arg) {
    (void)arg;
    double end = now_us() + work_us;
    volatile unsigned long x = 0;
    while (now_us() < end) x++;
    atomic_fetch_add(&units, 1);
    return NULL;
}

static void *creator(void *arg) {
    (void)arg;
    while (now_us() < end_us) {
        if (pool) {
            unit(NULL);
            continue;
        }
        pthread_t t;
        if (pthread_create(&t, NULL, unit, NULL) == 0) {
            atomic_fetch_add(&created, 1);
            pthread_join(t, NULL);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 120;
    double secs = argc > 2 ? atof(argv[2]) : 5;
    work_us = argc > 3 ? atol(argv[3]) : 100;
    pool = argc > 4 ? atoi(argv[4]) : 0;
    printf("pid=%d\n", getpid());
    fflush(stdout);
    double t0 = now_us();
    end_us = t0 + secs * 1e6;
    pthread_t *t = calloc(n, sizeof(*t));
    for (long i = 0; i < n; i++) pthread_create(&t[i], NULL, creator, NULL);
    for (long i = 0; i < n; i++) pthread_join(t[i], NULL);
    double took = (now_us() - t0) / 1e6;
    printf("created=%ld units=%ld secs=%.3f\n", atomic_load(&created), atomic_load(&units), took);
    return 0;
}
