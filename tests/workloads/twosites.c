// One pthread mutex contended from two call sites, one after the other: first, for
// RARE_SECS, two threads take it through rare_site_takes_lock, holding it across a 2 ms
// sleep (about 500 contended waits a second); then, for HOT_SECS, four threads take it
// through hot_site_takes_lock in a tight loop (about a thousand contended waits a second
// on 2 CPUs, and a million calls). The
// word's stack must follow the site with most of its waits: rare while only rare has
// waited, hot once hot dominates. Built -O2 without frame pointers, like deepmutex.
// usage: twosites RARE_SECS HOT_SECS   prints pid= and word= first, then rare= hot=
#pragma GCC optimize("omit-frame-pointer")
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long shared_counter, rare_ops, hot_ops;
static volatile int phase, stop;

__attribute__((noinline)) void rare_site_takes_lock(void) {
    pthread_mutex_lock(&mu);
    usleep(2000);
    shared_counter++;
    pthread_mutex_unlock(&mu);
    rare_ops++;
}

__attribute__((noinline)) void hot_site_takes_lock(void) {
    pthread_mutex_lock(&mu);
    for (int i = 0; i < 300; i++) shared_counter++;
    pthread_mutex_unlock(&mu);
    hot_ops++;
}

static void *rare_worker(void *arg) {
    (void)arg;
    while (phase == 0) rare_site_takes_lock();
    return NULL;
}

static void *hot_worker(void *arg) {
    (void)arg;
    while (!stop) {
        hot_site_takes_lock();
        for (volatile int i = 0; i < 50; i++) {}
    }
    return NULL;
}

static void sleep_secs(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
    double rare = argc > 1 ? atof(argv[1]) : 1.5;
    double hot = argc > 2 ? atof(argv[2]) : 3;
    pthread_t r[2], h[4];
    printf("pid=%d word=%lu\n", getpid(), (unsigned long)&mu);
    fflush(stdout);
    for (int i = 0; i < 2; i++) pthread_create(&r[i], NULL, rare_worker, NULL);
    sleep_secs(rare);
    phase = 1;
    for (int i = 0; i < 2; i++) pthread_join(r[i], NULL);
    for (int i = 0; i < 4; i++) pthread_create(&h[i], NULL, hot_worker, NULL);
    sleep_secs(hot);
    stop = 1;
    for (int i = 0; i < 4; i++) pthread_join(h[i], NULL);
    printf("rare=%lu hot=%lu\n", rare_ops, hot_ops);
    return 0;
}
