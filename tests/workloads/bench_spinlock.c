// Benchmark kernel spinlock storm: THREADS threads call FUTEX_WAIT on one word with a
// value it never has, for SECS seconds. Each call takes and drops the futex hash
// bucket's spinlock and returns EAGAIN at once, so that spinlock contends, always on
// the same kernel path: what lock:contention_begin's program costs per event, without
// the mutex storm's swings between more and less contended phases.
// Prints pid= at start, then ops= secs= rate=.   usage: bench_spinlock [THREADS] [SECS]
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int word = 1;
static volatile int stop;

static void *worker(void *arg) {
    (void)arg;
    unsigned long n = 0;
    while (!stop) {
        syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
        n++;
    }
    return (void *)n;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2;
    double secs = argc > 2 ? atof(argv[2]) : 5;
    if (n < 1) n = 1;
    printf("pid=%d\n", getpid());
    fflush(stdout);
    pthread_t *t = calloc(n, sizeof *t);
    double t0 = now();
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, worker, NULL);
    struct timespec nap = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
    nanosleep(&nap, NULL);
    stop = 1;
    unsigned long ops = 0;
    for (int i = 0; i < n; i++) {
        void *r;
        pthread_join(t[i], &r);
        ops += (unsigned long)r;
    }
    double took = now() - t0;
    printf("ops=%lu secs=%.3f rate=%.0f\n", ops, took, ops / took);
    return 0;
}
