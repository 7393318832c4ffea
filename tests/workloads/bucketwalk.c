// A kernel spinlock held for microseconds: WAITERS threads park in FUTEX_WAIT_BITSET on
// one word (bitset 1), all queued in that word's futex hash bucket; WAKERS threads call
// FUTEX_WAKE_BITSET on it with bitset 2 for SECS seconds, which matches none of them:
// each call walks the whole queue holding the bucket's spinlock, and the wakers
// contend on it with waits of a few microseconds. At the end every waiter is woken.
// usage: bucketwalk WAKERS WAITERS SECS
// prints pid= at start, then wakes= (calls made) when done.
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int word;
static atomic_int stop, parked;

static long futex(int op, int val, unsigned bits) {
    return syscall(SYS_futex, &word, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, bits);
}

static void *waiter(void *arg) {
    (void)arg;
    atomic_fetch_add(&parked, 1);
    while (!atomic_load(&stop)) futex(FUTEX_WAIT_BITSET, 0, 1);
    return NULL;
}

static void *waker(void *arg) {
    (void)arg;
    unsigned long n = 0;
    while (!atomic_load(&stop)) {
        futex(FUTEX_WAKE_BITSET, INT_MAX, 2);
        n++;
    }
    return (void *)n;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: bucketwalk WAKERS WAITERS SECS\n");
        return 2;
    }
    int nw = atoi(argv[1]), nq = atoi(argv[2]);
    double secs = atof(argv[3]);
    printf("pid=%d\n", getpid());
    fflush(stdout);
    pthread_t *q = calloc(nq, sizeof *q), *w = calloc(nw, sizeof *w);
    for (int i = 0; i < nq; i++) pthread_create(&q[i], NULL, waiter, NULL);
    while (atomic_load(&parked) < nq) usleep(1000);
    usleep(100000); // the last ones into their wait
    for (int i = 0; i < nw; i++) pthread_create(&w[i], NULL, waker, NULL);
    struct timespec nap = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
    nanosleep(&nap, NULL);
    atomic_store(&stop, 1);
    unsigned long wakes = 0;
    for (int i = 0; i < nw; i++) {
        void *r;
        pthread_join(w[i], &r);
        wakes += (unsigned long)r;
    }
    word = 1;
    futex(FUTEX_WAKE_BITSET, INT_MAX, FUTEX_BITSET_MATCH_ANY);
    for (int i = 0; i < nq; i++) pthread_join(q[i], NULL);
    printf("wakes=%lu\n", wakes);
    return 0;
}
