// Benchmark mutex storm (seed 001): THREADS threads increment one counter under one
// pthread mutex for SECS seconds, with a little work outside the lock, so the lock is
// contended and waiters sleep in futex(). Prints pid= at start, then ops= secs= rate=.
// usage: bench_mutex [THREADS] [SECS]
#include "storm.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long counter;

static void *worker(void *arg) {
    (void)arg;
    unsigned long mine = 0;
    while (!stop) {
        pthread_mutex_lock(&lock);
        counter++;
        for (volatile int i = 0; i < 50; i++) {}
        pthread_mutex_unlock(&lock);
        for (volatile int i = 0; i < 50; i++) {}
        mine++;
    }
    return (void *)mine;
}

int main(int argc, char **argv) {
    double took;
    unsigned long ops = run_storm(argc, argv, 4, worker, &took);
    printf("ops=%lu secs=%.3f rate=%.0f counter=%lu\n", ops, took, ops / took, counter);
    return 0;
}
