// A long-lived process that moves its lock contention to new futex words, as a server
// locking per-object mutexes does: for BUSY_SECS it contends on a fresh heap mutex every
// PHASE_MS (each allocated anew and never freed, so every phase is a new word), then
// leaves them for IDLE_SECS, then contends on LATE_WORDS fresh mutexes again. All along,
// two other threads contend on one global mutex (the process always has a live word).
// Built -O2 without frame pointers, like deepmutex.
// usage: wordwalk BUSY_SECS PHASE_MS IDLE_SECS LATE_WORDS   prints pid= first, then words=
#pragma GCC optimize("omit-frame-pointer")
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
static pthread_mutex_t *volatile cur;
static pthread_mutex_t steady = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;
static volatile unsigned long shared_counter;

__attribute__((noinline)) void take_phase_lock(pthread_mutex_t *m) {
    pthread_mutex_lock(m);
    for (int i = 0; i < 300; i++) shared_counter++;
    pthread_mutex_unlock(m);
}

__attribute__((noinline)) void *phase_worker(void *arg) {
    (void)arg;
    while (!stop) {
        pthread_mutex_t *m = cur;
        if (m)
            take_phase_lock(m);
        else
            usleep(1000);
    }
    return NULL;
}

__attribute__((noinline)) void *steady_worker(void *arg) {
    (void)arg;
    while (!stop) {
        pthread_mutex_lock(&steady);
        usleep(300);
        pthread_mutex_unlock(&steady);
    }
    return NULL;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int words;

static void contend(double secs, double phase_s) {
    double end = now() + secs;
    while (now() < end) {
        pthread_mutex_t *m = malloc(sizeof *m);
        pthread_mutex_init(m, NULL);
        cur = m;
        words++;
        usleep((useconds_t)(phase_s * 1e6));
    }
    cur = NULL;
}

int main(int argc, char **argv) {
    double busy = argc > 1 ? atof(argv[1]) : 8;
    double phase = (argc > 2 ? atof(argv[2]) : 250) / 1000.0;
    double idle = argc > 3 ? atof(argv[3]) : 11;
    int late = argc > 4 ? atoi(argv[4]) : 2;
    pthread_t t[THREADS], s[2];
    printf("pid=%d\n", getpid());
    fflush(stdout);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, phase_worker, NULL);
    for (int i = 0; i < 2; i++)
        pthread_create(&s[i], NULL, steady_worker, NULL);
    contend(busy, phase);
    sleep((unsigned)idle);
    contend(late * 1.0, 1.0);
    stop = 1;
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(s[i], NULL);
    printf("words=%d\n", words);
    return 0;
}
