// Who woke it: a waiter sleeps on a futex word in a MAP_SHARED page, and a waker in
// another process (mode "procs": a forked child named fwaker) or in a thread of the
// waiter's own process (mode "threads") sets the word and wakes it, every USEC
// microseconds for SECS seconds. The waiter counts the waits that slept and returned
// 0 (each ended by one of the waker's FUTEX_WAKEs: nothing else wakes the word).
// usage: futex_waker procs|threads SECS USEC
// prints: waiter=PID waker=PID word=0xADDR   then at the end: slept=N wakes=N
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct shared {
    int word;  // 1: the waker let the waiter go
    int stop;
    long wakes;
};

static struct shared *sh;
static double secs;
static long usec;

static long futex(int *w, int op, int val) {
    return syscall(SYS_futex, w, op, val, NULL, NULL, 0);
}

static void *waker(void *unused) {
    (void)unused;
    struct timespec nap = {usec / 1000000, (usec % 1000000) * 1000};
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 >= secs) break;
        nanosleep(&nap, NULL);
        __atomic_store_n(&sh->word, 1, __ATOMIC_SEQ_CST);
        // Shared (no FUTEX_PRIVATE_FLAG): the word is in a page two processes map.
        futex(&sh->word, FUTEX_WAKE, 1);
        sh->wakes++;
    }
    __atomic_store_n(&sh->stop, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&sh->word, 1, __ATOMIC_SEQ_CST);
    futex(&sh->word, FUTEX_WAKE, 1);
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 && strcmp(argv[1], "threads") == 0;
    secs = argc > 2 ? atof(argv[2]) : 2;
    usec = argc > 3 ? atol(argv[3]) : 500;
    sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) return 1;
    prctl(PR_SET_NAME, "fwaiter");
    pid_t child = 0;
    pthread_t thr;
    if (threads) {
        pthread_create(&thr, NULL, waker, NULL);
    } else {
        child = fork();
        if (child == 0) {
            prctl(PR_SET_NAME, "fwaker");
            waker(NULL);
            _exit(0);
        }
    }
    printf("waiter=%d waker=%d word=%p\n", getpid(), threads ? getpid() : child, (void *)&sh->word);
    fflush(stdout);
    long slept = 0;
    while (!__atomic_load_n(&sh->stop, __ATOMIC_SEQ_CST)) {
        if (__atomic_exchange_n(&sh->word, 0, __ATOMIC_SEQ_CST)) continue;
        if (futex(&sh->word, FUTEX_WAIT, 0) == 0) slept++;
    }
    if (threads)
        pthread_join(thr, NULL);
    else
        waitpid(child, NULL, 0);
    printf("slept=%ld wakes=%ld\n", slept, sh->wakes);
    return 0;
}
