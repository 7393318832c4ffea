// Short-lived threads that wait for a CPU (issue 31): on CPU, SPINNERS threads spin for
// SECS seconds; beside them a creator makes a thread every EVERY_MS that sets itself to
// nice NICE, sleeps 1 ms (so its next wake-up waits behind the spinners at that nice
// value), spins WORK_US and exits. Everything runs on CPU (threads inherit the
// affinity), and the spinners exit together at the end.
// usage: shortlived CPU SPINNERS SECS EVERY_MS WORK_US NICE
// prints pid= at start, and at the end created= (short-lived threads made) and short=
// (their tids, comma-separated).
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;
static long work_us = 500;
static int nice_to = 19;

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void spin_for(double us) {
    double end = now_us() + us;
    volatile unsigned long x = 0;
    while (now_us() < end) x++;
}

static void *spinner(void *arg) {
    (void)arg;
    volatile unsigned long x = 0;
    while (!atomic_load(&stop)) x++;
    return NULL;
}

static void *short_one(void *arg) {
    long tid = syscall(SYS_gettid);
    *(long *)arg = tid;
    setpriority(PRIO_PROCESS, (id_t)tid, nice_to);
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
    spin_for(work_us);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: shortlived CPU SPINNERS SECS EVERY_MS WORK_US NICE\n");
        return 2;
    }
    int cpu = atoi(argv[1]), n = atoi(argv[2]);
    double secs = atof(argv[3]);
    long every_ms = atol(argv[4]);
    work_us = atol(argv[5]);
    nice_to = atoi(argv[6]);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
    printf("pid=%d\n", getpid());
    fflush(stdout);
    pthread_t *sp = calloc(n, sizeof *sp);
    for (int i = 0; i < n; i++) pthread_create(&sp[i], NULL, spinner, NULL);
    long cap = (long)(secs * 1000 / (every_ms > 0 ? every_ms : 1)) + 2, made = 0;
    pthread_t *st = calloc(cap, sizeof *st);
    long *tids = calloc(cap, sizeof *tids);
    double end = now_us() + secs * 1e6;
    struct timespec gap = {every_ms / 1000, (every_ms % 1000) * 1000000};
    while (now_us() < end && made < cap) {
        if (pthread_create(&st[made], NULL, short_one, &tids[made]) == 0) made++;
        nanosleep(&gap, NULL);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < n; i++) pthread_join(sp[i], NULL);
    for (long i = 0; i < made; i++) pthread_join(st[i], NULL);
    printf("created=%ld short=", made);
    for (long i = 0; i < made; i++) printf("%s%ld", i ? "," : "", tids[i]);
    printf("\n");
    return 0;
}
