// K threads spinning for SECS seconds: K runnable threads, all the time.
// usage: spin K SECS
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double secs;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *spin(void *arg) {
    (void)arg;
    double end = now() + secs;
    volatile unsigned long x = 0;
    while (now() < end) x++;
    return NULL;
}

int main(int argc, char **argv) {
    int k = argc > 1 ? atoi(argv[1]) : 2;
    secs = argc > 2 ? atof(argv[2]) : 3;
    printf("pid=%d\n", getpid());
    fflush(stdout);
    pthread_t t[256];
    if (k > 256) k = 256;
    for (int i = 0; i < k; i++) pthread_create(&t[i], NULL, spin, NULL);
    for (int i = 0; i < k; i++) pthread_join(t[i], NULL);
    printf("threads=%d\n", k);
    return 0;
}
