// Two functions that burn CPU in a known 3:1 ratio, built like a distribution's
// programs (-O2, no frame pointers): each thread runs worker -> { burn_a 3 units,
// burn_b 1 unit } in a loop. A profile must give burn_a 75% and burn_b 25% of the
// samples, both under worker. A unit's length is drawn at random around 200,000 steps
// (the same law for both) so the loop cannot run in step with a 99 Hz sampler (one CI
// run gave burn_a 66% with a fixed period; that this was the cause is not proven).
// usage: burn31 THREADS SECS      prints pid= first, then cpu_s= (the CPU it used)
#pragma GCC optimize("omit-frame-pointer")
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static volatile unsigned long sink;

// One unit: `steps` turns of one loop. The same body in both, so a unit costs the same in each.
__attribute__((noinline)) void burn_a(int units, int steps) {
    unsigned long x = sink;
    for (int u = 0; u < units; u++)
        for (int i = 0; i < steps; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}

__attribute__((noinline)) void burn_b(int units, int steps) {
    unsigned long x = sink;
    for (int u = 0; u < units; u++)
        for (int i = 0; i < steps; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}

__attribute__((noinline)) static void *worker(void *arg) {
    unsigned long r = (unsigned long)&r | 1;
    // 100,000..300,000 steps, mean 200,000 (xorshift: cheap, per thread).
#define STEPS() (r ^= r << 13, r ^= r >> 7, r ^= r << 17, 100000 + (int)(r % 200001))
    while (!stop) {
        burn_a(3, STEPS());
        burn_b(1, STEPS());
    }
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1;
    double secs = argc > 2 ? atof(argv[2]) : 3;
    pthread_t t[64];
    if (n > 64) n = 64;
    printf("pid=%d\n", getpid());
    fflush(stdout);
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, worker, NULL);
    struct timespec ts = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
    nanosleep(&ts, NULL);
    stop = 1;
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("cpu_s=%.3f\n", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
                               ru.ru_stime.tv_usec / 1e6);
    return 0;
}
