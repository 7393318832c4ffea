// Two threads handing a token back and forth through a pipe pair: a known, high rate
// of context switches. usage: pingpong SECS
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int ab[2], ba[2];
static volatile int stop;

static void *pong(void *arg) {
    (void)arg;
    char c;
    while (read(ab[0], &c, 1) == 1) {
        if (c == 'q') break;
        if (write(ba[1], &c, 1) != 1) break;
    }
    return NULL;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 2;
    if (pipe(ab) || pipe(ba)) return 1;
    printf("pid=%d\n", getpid());
    fflush(stdout);
    pthread_t t;
    pthread_create(&t, NULL, pong, NULL);
    struct timespec s, n;
    clock_gettime(CLOCK_MONOTONIC, &s);
    long rounds = 0;
    char c = 'x';
    for (;;) {
        if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1) break;
        rounds++;
        if ((rounds & 255) == 0) {
            clock_gettime(CLOCK_MONOTONIC, &n);
            if ((n.tv_sec - s.tv_sec) + (n.tv_nsec - s.tv_nsec) / 1e9 > secs) break;
        }
    }
    c = 'q';
    if (write(ab[1], &c, 1) != 1) return 1;
    pthread_join(t, NULL);
    clock_gettime(CLOCK_MONOTONIC, &n);
    printf("rounds=%ld rate=%.0f\n", rounds,
           rounds / ((n.tv_sec - s.tv_sec) + (n.tv_nsec - s.tv_nsec) / 1e9));
    return 0;
}
