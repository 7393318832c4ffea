// One thread that does what htop's everyday columns count: for SECS seconds, each round
// sleeps 10 ms (a voluntary context switch), burns about 2 ms of CPU (TIME+), and reads
// a page of FILE through a mapping whose page it has just dropped from its page tables
// and from the page cache (a major fault: the read waits for the disk).
// usage: everyday SECS FILE   (prints rounds=N at the end)
#define _GNU_SOURCE
#include <fcntl.h>
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
    if (argc < 3) return 2;
    double end = now() + atof(argv[1]);
    int fd = open(argv[2], O_RDONLY);
    if (fd < 0) { perror("open"); return 1; }
    long page = sysconf(_SC_PAGESIZE);
    volatile char *map = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) { perror("mmap"); return 1; }
    printf("ready\n");
    fflush(stdout);
    long rounds = 0;
    volatile unsigned long x = 0;
    while (now() < end) {
        struct timespec ten = {0, 10 * 1000 * 1000};
        nanosleep(&ten, NULL);
        double until = now() + 0.002;
        while (now() < until) x++;
        madvise((void *)map, page, MADV_DONTNEED);
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        x += map[0];
        rounds++;
    }
    printf("rounds=%ld\n", rounds);
    return 0;
}
