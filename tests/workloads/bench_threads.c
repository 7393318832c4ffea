// Benchmark thread pool: hold N threads for SECS seconds. PERIOD_MS = 0: they sleep
// the whole time (a big idle pool); otherwise each wakes every PERIOD_MS, spins a
// little and sleeps again, so every thread's counters move. STACK_KB: thread stack
// size (small, so 10,000 threads fit). Prints pid=, then started= once all exist,
// then done= at the end.
// usage: bench_threads N SECS [PERIOD_MS] [STACK_KB]
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double secs, end_at;
static long period_ms;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *worker(void *arg) {
    (void)arg;
    volatile unsigned long x = 0;
    while (now() < end_at) {
        double left = end_at - now();
        double nap_s = period_ms > 0 ? period_ms / 1e3 : left;
        if (nap_s > left) nap_s = left;
        if (nap_s <= 0) break;
        struct timespec nap = {(time_t)nap_s, (long)((nap_s - (time_t)nap_s) * 1e9)};
        nanosleep(&nap, NULL);
        if (period_ms > 0)
            for (int i = 0; i < 2000; i++) x++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 100;
    secs = argc > 2 ? atof(argv[2]) : 5;
    period_ms = argc > 3 ? atol(argv[3]) : 0;
    long stack_kb = argc > 4 ? atol(argv[4]) : 32;
    printf("pid=%d\n", getpid());
    fflush(stdout);
    end_at = now() + secs;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, stack_kb * 1024);
    pthread_t *t = calloc(n, sizeof *t);
    char *ok = calloc(n, 1);
    int started = 0;
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], &a, worker, NULL) == 0) ok[i] = 1, started++;
    printf("started=%d\n", started);
    fflush(stdout);
    for (int i = 0; i < n; i++)
        if (ok[i]) pthread_join(t[i], NULL);
    printf("done=%d\n", started);
    return 0;
}
