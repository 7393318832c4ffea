// T threads hammering one futex-based mutex (a three-state mutex after Drepper's
// "Futexes Are Tricky": 0 free, 1 locked, 2 locked with waiters) that calls
// futex(2) itself, so it knows exactly how many FUTEX_WAIT calls slept (returned 0)
// and how many returned EAGAIN at once: an independent count to check ttop against.
// usage: futex_mutex THREADS SECS     prints pid= mutex= first, then the counts.
// Frame pointers (the walk works with or without them: stacks are unwound from .eh_frame).
#pragma GCC optimize("no-omit-frame-pointer")
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic int lock_word; // the futex word: its address is what ttop must report
static atomic_long slept, eagain, wakes, ops;
static volatile int stop;
static volatile unsigned long shared_counter;

static long futex(_Atomic int *w, int op, int val) {
    return syscall(SYS_futex, w, op, val, NULL, NULL, 0);
}

__attribute__((noinline)) static void hammer_lock(void) {
    int c = 0;
    if (atomic_compare_exchange_strong(&lock_word, &c, 1)) return;
    if (c != 2) c = atomic_exchange(&lock_word, 2);
    while (c != 0) {
        long r = futex(&lock_word, FUTEX_WAIT_PRIVATE, 2);
        if (r == 0) atomic_fetch_add(&slept, 1);
        else if (errno == EAGAIN) atomic_fetch_add(&eagain, 1);
        c = atomic_exchange(&lock_word, 2);
    }
}

__attribute__((noinline)) static void hammer_unlock(void) {
    if (atomic_fetch_sub(&lock_word, 1) != 1) {
        atomic_store(&lock_word, 0);
        futex(&lock_word, FUTEX_WAKE_PRIVATE, 1);
        atomic_fetch_add(&wakes, 1);
    }
}

__attribute__((noinline)) static void *worker(void *arg) {
    (void)arg;
    long n = 0;
    while (!stop) {
        hammer_lock();
        for (int i = 0; i < 200; i++) shared_counter++; // a short critical section
        hammer_unlock();
        n++;
        for (volatile int i = 0; i < 100; i++) {}
    }
    atomic_fetch_add(&ops, n);
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    double secs = argc > 2 ? atof(argv[2]) : 2;
    printf("pid=%d mutex=%p\n", getpid(), (void *)&lock_word);
    fflush(stdout);
    pthread_t t[64];
    if (threads > 64) threads = 64;
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, NULL);
    struct timespec d = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
    nanosleep(&d, NULL);
    stop = 1;
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    printf("slept=%ld eagain=%ld wakes=%ld ops=%ld\n", atomic_load(&slept), atomic_load(&eagain),
           atomic_load(&wakes), atomic_load(&ops));
    return 0;
}
