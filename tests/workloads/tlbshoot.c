// TLB shootdowns on purpose: the main thread, pinned to CPU MAPCPU, maps PAGES pages,
// touches each, and unmaps them, in a loop for SECS seconds, while one sibling thread
// per other CPU spins in the same address space (pinned there). Every munmap must then
// flush the siblings' TLBs: one remote shootdown per sibling CPU that runs the mm.
// usage: tlbshoot SECS PAGES MAPCPU [SIBLINGS]  (SIBLINGS 0: no spinners, the control:
// nothing else runs the mm, so an unmap needs no remote flush)
// prints: pid=P mapper_tid=T iters=N
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof(set), &set);
}

static void *sibling(void *arg) {
    pin((int)(long)arg);
    volatile unsigned long x = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) x++;
    return NULL;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 3;
    long pages = argc > 2 ? atol(argv[2]) : 4;
    int mapcpu = argc > 3 ? atoi(argv[3]) : 0;
    int siblings = argc > 4 ? atoi(argv[4]) : 1;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    long psz = sysconf(_SC_PAGESIZE);
    pthread_t t[256];
    int n = 0;
    pin(mapcpu);
    for (long c = 0; c < ncpu && n < 256; c++)
        if (c != mapcpu && siblings) pthread_create(&t[n++], NULL, sibling, (void *)c);
    printf("pid=%d mapper_tid=%ld\n", getpid(), syscall(SYS_gettid));
    fflush(stdout);
    usleep(50000); /* siblings running on their CPUs */
    unsigned long iters = 0;
    double end = now() + secs;
    while (now() < end) {
        char *p = mmap(NULL, pages * psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return 1;
        for (long i = 0; i < pages; i++) p[i * psz] = 1;
        munmap(p, pages * psz);
        iters++;
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    printf("iters=%lu siblings=%d\n", iters, n);
    return 0;
}
