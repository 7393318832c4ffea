// N threads that each wake every PERIOD_MS, spin briefly and sleep again, for SECS
// seconds: a big, mostly idle thread pool whose counters all move every interval.
// usage: many N SECS [PERIOD_MS]
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double secs;
static long period_ms = 50;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *worker(void *arg) {
    (void)arg;
    double end = now() + secs;
    struct timespec nap = {period_ms / 1000, (period_ms % 1000) * 1000000L};
    volatile unsigned long x = 0;
    while (now() < end) {
        nanosleep(&nap, NULL);
        for (int i = 0; i < 20000; i++) x++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 100;
    secs = argc > 2 ? atof(argv[2]) : 5;
    if (argc > 3) period_ms = atol(argv[3]);
    printf("pid=%d\n", getpid());
    fflush(stdout);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 * 1024);
    pthread_t *t = calloc(n, sizeof *t);
    int started = 0;
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], &a, worker, NULL) == 0) started++;
    for (int i = 0; i < n; i++)
        if (t[i]) pthread_join(t[i], NULL);
    printf("started=%d\n", started);
    return 0;
}
