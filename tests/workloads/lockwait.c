// Threads that sleep on kernel locks, for the wall-time split's lock parts:
//   append  four threads appending 64 KiB at a time to one file in DIR (O_APPEND): each
//           write takes the file's inode rwsem for writing, so they queue on it (lock)
//   mapper  two threads mapping 4 MiB with MAP_POPULATE and unmapping it: both take the
//           process's own mmap_lock for writing, so they queue on it (mmap_lock)
//   sleep   a control: clock_nanosleep of 2 ms in a loop, never on a kernel lock
// usage: lockwait SECS DIR   — prints "pid=P" then "ROLE=TID" for every thread, then
// "ready", and runs SECS seconds.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "roles.h"

static double secs;
static int fd;

static void *append(void *arg) {
    static char buf[64 << 10];
    double end;
    (void)arg;
    memset(buf, 'x', sizeof buf);
    announce("append");
    end = now() + secs;
    while (now() < end) {
        if (write(fd, buf, sizeof buf) < 0)
            exit(2);
        // Keep the file small: the one who crosses 64 MiB cuts it (inode lock too).
        if (lseek(fd, 0, SEEK_END) > (64 << 20) && ftruncate(fd, 0) < 0)
            exit(2);
    }
    return NULL;
}

static void *mapper(void *arg) {
    double end;
    (void)arg;
    announce("mapper");
    end = now() + secs;
    while (now() < end) {
        void *p = mmap(NULL, 4 << 20, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (p == MAP_FAILED)
            exit(2);
        munmap(p, 4 << 20);
    }
    return NULL;
}

static void *sleeper(void *arg) {
    struct timespec ts = {0, 2000000};
    double end;
    (void)arg;
    announce("sleep");
    end = now() + secs;
    while (now() < end)
        clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
    return NULL;
}

int main(int argc, char **argv) {
    char path[4096];
    pthread_t t[7];
    int i, n = 0;

    if (argc < 3) {
        fprintf(stderr, "usage: lockwait SECS DIR\n");
        return 1;
    }
    secs = atof(argv[1]);
    snprintf(path, sizeof path, "%s/lockwait-%d.tmp", argv[2], getpid());
    fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_APPEND, 0600);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    unlink(path);
    printf("pid=%d\n", getpid());
    fflush(stdout);
    for (i = 0; i < 4; i++)
        pthread_create(&t[n++], NULL, append, NULL);
    for (i = 0; i < 2; i++)
        pthread_create(&t[n++], NULL, mapper, NULL);
    pthread_create(&t[n++], NULL, sleeper, NULL);
    while (started < n)
        usleep(1000);
    printf("ready\n");
    fflush(stdout);
    for (i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    return 0;
}
