// The futex_mutex storm, sharded (a control for hot_lock): THREADS threads take one of
// SHARDS futex mutexes (the same three-state mutex), picked at random per operation, so
// no one lock is shared by everybody. usage: futex_sharded THREADS SECS SHARDS
// prints pid= first, then slept= ops=.
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_SHARDS 1024
static struct { _Atomic int w; char pad[60]; } shards[MAX_SHARDS];
static int nshards = 64;
static atomic_long slept, ops;
static volatile int stop;

static long futex(_Atomic int *w, int op, int val) {
    return syscall(SYS_futex, w, op, val, NULL, NULL, 0);
}

static void lock(_Atomic int *w) {
    int c = 0;
    if (atomic_compare_exchange_strong(w, &c, 1)) return;
    if (c != 2) c = atomic_exchange(w, 2);
    while (c != 0) {
        if (futex(w, FUTEX_WAIT_PRIVATE, 2) == 0) atomic_fetch_add(&slept, 1);
        c = atomic_exchange(w, 2);
    }
}

static void unlock(_Atomic int *w) {
    if (atomic_fetch_sub(w, 1) != 1) {
        atomic_store(w, 0);
        futex(w, FUTEX_WAKE_PRIVATE, 1);
    }
}

static void *worker(void *arg) {
    unsigned seed = (unsigned)(long)arg * 2654435761u;
    volatile unsigned long counter = 0;
    long n = 0;
    while (!stop) {
        _Atomic int *w = &shards[rand_r(&seed) % nshards].w;
        lock(w);
        for (int i = 0; i < 200; i++) counter++;
        unlock(w);
        n++;
        for (volatile int i = 0; i < 100; i++) {}
    }
    atomic_fetch_add(&ops, n);
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    double secs = argc > 2 ? atof(argv[2]) : 2;
    nshards = argc > 3 ? atoi(argv[3]) : 64;
    if (nshards < 1 || nshards > MAX_SHARDS) nshards = 64;
    if (threads > 64) threads = 64;
    printf("pid=%d\n", getpid());
    fflush(stdout);
    pthread_t t[64];
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)(i + 1));
    struct timespec d = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
    nanosleep(&d, NULL);
    stop = 1;
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    printf("slept=%ld ops=%ld\n", atomic_load(&slept), atomic_load(&ops));
    return 0;
}
