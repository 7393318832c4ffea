// Idle workers (a control for hot_lock): N threads sleep on one condition variable with
// a timed wait of TIMEOUT_MS, in a loop, and nobody ever signals it. Every wait ends in
// ETIMEDOUT; the machine does no work. Nothing here is contention.
// usage: condvar_idle N SECS TIMEOUT_MS     prints pid= first, then timeouts=
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static atomic_long timeouts;
static volatile int stop;
static long timeout_ms = 100;

static void *worker(void *arg) {
    (void)arg;
    pthread_mutex_lock(&mu);
    while (!stop) {
        struct timespec at;
        clock_gettime(CLOCK_REALTIME, &at);
        at.tv_nsec += (timeout_ms % 1000) * 1000000L;
        at.tv_sec += timeout_ms / 1000 + at.tv_nsec / 1000000000L;
        at.tv_nsec %= 1000000000L;
        if (pthread_cond_timedwait(&cv, &mu, &at) == ETIMEDOUT) atomic_fetch_add(&timeouts, 1);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    double secs = argc > 2 ? atof(argv[2]) : 3;
    timeout_ms = argc > 3 ? atol(argv[3]) : 100;
    printf("pid=%d\n", getpid());
    fflush(stdout);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 * 1024);
    pthread_t *t = calloc(n, sizeof(*t));
    int made = 0;
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], &a, worker, NULL) == 0) made++;
    struct timespec d = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
    nanosleep(&d, NULL);
    stop = 1;
    for (int i = 0; i < made; i++) pthread_join(t[i], NULL);
    printf("threads=%d timeouts=%ld\n", made, atomic_load(&timeouts));
    return 0;
}
