// For workloads whose threads say who they are: each thread prints "ROLE=TID" once
// (under a lock, so lines never mix) and counts itself in `started`; main waits for
// them all, then prints "ready". The tests read those lines to know each thread's role.
#ifndef TTOP_ROLES_H
#define TTOP_ROLES_H
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static volatile int started;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void announce(const char *role) {
    pthread_mutex_lock(&out_mu);
    printf("%s=%ld\n", role, (long)syscall(SYS_gettid));
    fflush(stdout);
    __sync_fetch_and_add(&started, 1);
    pthread_mutex_unlock(&out_mu);
}

#endif
