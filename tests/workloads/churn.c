// Thread churn (seed 000): create N short-lived threads, BATCH at a time, each doing a
// small fixed unit of work (~WORK_US of spinning) and exiting. Prints what it did.
// usage: churn N [BATCH] [WORK_US] [DELAY_MS]
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
    double end = now_us() + work_us;
    volatile unsigned long x = 0;
    while (now_us() < end) x++;
    return NULL;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    long batch = argc > 2 ? atol(argv[2]) : 4;
    work_us = argc > 3 ? atol(argv[3]) : 100;
    long delay_ms = argc > 4 ? atol(argv[4]) : 0;
    printf("pid=%d\n", getpid());
    fflush(stdout);
    if (delay_ms) usleep(delay_ms * 1000);
    pthread_t *t = calloc(batch, sizeof(*t));
    long created = 0;
    double t0 = now_us();
    while (created < n) {
        long k = 0;
        for (; k < batch && created < n; k++, created++)
            if (pthread_create(&t[k], NULL, worker, NULL)) { perror("pthread_create"); return 1; }
        for (long j = 0; j < k; j++) pthread_join(t[j], NULL);
    }
    double secs = (now_us() - t0) / 1e6;
    printf("created=%ld secs=%.3f rate=%.0f\n", created, secs, created / secs);
    return 0;
}
