// Touch MB megabytes of anonymous memory over and over for SECS seconds: more than a
// cgroup's memory.high, it is reclaimed from and throttled (memory pressure).
// usage: memhog MB SECS
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    size_t mb = argc > 1 ? strtoul(argv[1], 0, 10) : 64;
    double secs = argc > 2 ? atof(argv[2]) : 5;
    size_t len = mb << 20, page = (size_t)sysconf(_SC_PAGESIZE);
    printf("pid=%d\n", getpid());
    fflush(stdout);
    char *p = mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 1;
    double end = now() + secs;
    unsigned long rounds = 0;
    while (now() < end) {
        for (size_t i = 0; i < len; i += page) p[i] = (char)rounds;
        rounds++;
    }
    printf("rounds=%lu\n", rounds);
    return 0;
}
