// Benchmark kernel spinlock storm: THREADS threads call FUTEX_WAIT on one word with a
// value it never has, for SECS seconds. Each call takes and drops the futex hash
// bucket's spinlock and returns EAGAIN at once, so that spinlock contends, always on
// the same kernel path: what lock:contention_begin's program costs per event, without
// the mutex storm's swings between more and less contended phases.
// Prints pid= at start, then ops= secs= rate=.   usage: bench_spinlock [THREADS] [SECS]
#include <linux/futex.h>
#include <sys/syscall.h>

#include "storm.h"

static int word = 1;

static void *worker(void *arg) {
    (void)arg;
    unsigned long n = 0;
    while (!stop) {
        syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
        n++;
    }
    return (void *)n;
}

int main(int argc, char **argv) {
    double took;
    unsigned long ops = run_storm(argc, argv, 2, worker, &took);
    printf("ops=%lu secs=%.3f rate=%.0f\n", ops, took, ops / took);
    return 0;
}
