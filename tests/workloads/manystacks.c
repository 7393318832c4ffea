// Many distinct user stacks, then a few new ones (issue 31, item 6): first 4 threads
// make 2^DEPTH futex waits, each on a word of its own and each from a call path of its
// own (a path of DEPTH left-or-right calls), waits of 100 us that time out; so the
// stack map of futex waits is handed 2^DEPTH distinct stacks. Then it idles DRAIN_SECS
// seconds, and then for SITE_SECS seconds 8 pairs of threads ping-pong on 8 words, each
// pair from a function of its own (site0 ... site7), stacks never seen before.
// usage: manystacks DEPTH DRAIN_SECS SITE_SECS
// prints pid= at start, filled= (paths made) after the first part, and site0=ADDR ...
// site7=ADDR (the words, hex) before the last.
#pragma GCC optimize("no-omit-frame-pointer", "no-optimize-sibling-calls")
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define THREADS 4
#define SITES 8

static int depth = 13;
static int *words;
static atomic_int stop;
static int site_words[SITES];

static long futex(int *w, int op, int val, const struct timespec *t) {
    return syscall(SYS_futex, w, op | FUTEX_PRIVATE_FLAG, val, t, NULL, 0);
}

static NOINLINE int leaf(unsigned p) {
    struct timespec t = {0, 100000};
    futex(&words[p], FUTEX_WAIT, 0, &t);
    return 1;
}

static NOINLINE int left(int d, unsigned p);
static NOINLINE int right(int d, unsigned p);

// A different return address at each level for each bit of p: a distinct stack per p.
static NOINLINE int step(int d, unsigned p) {
    if (d == 0) return leaf(p);
    return ((p >> (d - 1)) & 1 ? left(d - 1, p) : right(d - 1, p)) + 1;
}
static NOINLINE int left(int d, unsigned p) { return step(d, p) + 1; }
static NOINLINE int right(int d, unsigned p) { return step(d, p) + 1; }

static void *filler(void *arg) {
    long t = (long)arg;
    volatile int sink = 0;
    for (unsigned p = t; p < (1u << depth); p += THREADS) sink += step(depth, p);
    return NULL;
}

// One side of a ping-pong on *w: set it to `me`, wake the other, wait while it is `me`.
static NOINLINE void pingpong(int *w, int me) {
    struct timespec t = {0, 1000000};
    while (!atomic_load(&stop)) {
        __atomic_store_n(w, me, __ATOMIC_SEQ_CST);
        futex(w, FUTEX_WAKE, 1, NULL);
        futex(w, FUTEX_WAIT, me, &t);
    }
}

#define SITE(n) \
    static NOINLINE void *site##n(void *arg) { pingpong(&site_words[n], (int)(long)arg); return NULL; }
SITE(0) SITE(1) SITE(2) SITE(3) SITE(4) SITE(5) SITE(6) SITE(7)
static void *(*sites[SITES])(void *) = {site0, site1, site2, site3, site4, site5, site6, site7};

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: manystacks DEPTH DRAIN_SECS SITE_SECS\n");
        return 2;
    }
    depth = atoi(argv[1]);
    double drain = atof(argv[2]), secs = atof(argv[3]);
    printf("pid=%d\n", getpid());
    fflush(stdout);
    words = calloc(1u << depth, sizeof *words);
    pthread_t t[2 * SITES];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, filler, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    printf("filled=%u\n", 1u << depth);
    fflush(stdout);
    struct timespec nap = {(time_t)drain, (long)((drain - (time_t)drain) * 1e9)};
    nanosleep(&nap, NULL);
    for (int i = 0; i < SITES; i++) printf("site%d=%p ", i, (void *)&site_words[i]);
    printf("\n");
    fflush(stdout);
    for (long i = 0; i < 2 * SITES; i++) pthread_create(&t[i], NULL, sites[i / 2], (void *)(i % 2));
    nap.tv_sec = (time_t)secs;
    nap.tv_nsec = (long)((secs - (time_t)secs) * 1e9);
    nanosleep(&nap, NULL);
    atomic_store(&stop, 1);
    for (int i = 0; i < 2 * SITES; i++) pthread_join(t[i], NULL);
    return 0;
}
