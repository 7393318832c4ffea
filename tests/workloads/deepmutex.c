// A contended pthread mutex taken three calls deep, built like a distribution's
// programs: -O2 on x86-64 leaves out frame pointers, in this program and in glibc.
// Each worker runs level1 -> level2 -> level3_takes_lock, which locks one shared
// pthread mutex around a short critical section. ttop's futex stack for the mutex
// must name that chain in order, with level3_takes_lock as the caller.
// usage: deepmutex THREADS SECS      prints pid= first, then ops=
#pragma GCC optimize("omit-frame-pointer")
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long shared_counter, after_calls;
static volatile int stop;

// Work after each call keeps the calls from becoming jumps (no frame to unwind).
__attribute__((noinline)) void level3_takes_lock(void) {
    pthread_mutex_lock(&mu);
    for (int i = 0; i < 300; i++) shared_counter++;
    pthread_mutex_unlock(&mu);
    after_calls++;
}

__attribute__((noinline)) void level2(void) {
    level3_takes_lock();
    after_calls++;
}

__attribute__((noinline)) void level1(void) {
    level2();
    after_calls++;
}

static void *worker(void *arg) {
    (void)arg;
    while (!stop) {
        level1();
        for (volatile int i = 0; i < 50; i++) {}
    }
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 4;
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
    printf("ops=%lu\n", after_calls / 3);
    return 0;
}
