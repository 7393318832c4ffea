// Threads that each know where their time goes, for the wall-time split test:
//   spin    a busy loop (on CPU, or runnable when the CPUs are taken)
//   sleep   clock_nanosleep of 2 ms in a loop (asleep in a sleep call)
//   fsync   4 KiB writes to a file in DIR, each followed by fsync (block I/O)
//   server  epoll_wait on a TCP connection on 127.0.0.1, reading what arrives
//   client  the other end: nanosleep 5 ms, send one byte
//   reader  read() on a pipe that a writer feeds every 5 ms (the writer sleeps)
//   mutex   four threads taking one pthread mutex around a short section (futex waits)
// usage: timesplit SECS DIR   — prints "pid=P" then "ROLE=TID" for every thread, then
// "ready", and runs SECS seconds.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "roles.h"

static double secs;
static const char *dir;
static int conn[2], pipefd[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void nap_ms(long ms) {
    struct timespec ts = {0, ms * 1000000L};
    clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
}

static void *spin(void *a) {
    (void)a;
    announce("spin");
    volatile unsigned long x = 0;
    for (double end = now() + secs; now() < end;) x++;
    return NULL;
}

static void *sleeper(void *a) {
    (void)a;
    announce("sleep");
    for (double end = now() + secs; now() < end;) nap_ms(2);
    return NULL;
}

static void *fsyncer(void *a) {
    (void)a;
    char path[4096], buf[4096];
    snprintf(path, sizeof path, "%s/timesplit-%d.tmp", dir, getpid());
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    if (fd < 0) { perror(path); exit(1); }
    memset(buf, 'x', sizeof buf);
    announce("fsync");
    for (double end = now() + secs; now() < end;) {
        if (write(fd, buf, sizeof buf) != sizeof buf) { perror("write"); exit(1); }
        fsync(fd);
    }
    close(fd);
    unlink(path);
    return NULL;
}

static void *server(void *a) {
    (void)a;
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = conn[0]}, got;
    epoll_ctl(ep, EPOLL_CTL_ADD, conn[0], &ev);
    announce("server");
    char b[64];
    for (double end = now() + secs; now() < end;) {
        if (epoll_wait(ep, &got, 1, 100) == 1 && read(conn[0], b, sizeof b) <= 0) break;
    }
    return NULL;
}

static void *client(void *a) {
    (void)a;
    announce("client");
    for (double end = now() + secs; now() < end;) {
        nap_ms(5);
        if (send(conn[1], "x", 1, 0) != 1) break;
    }
    return NULL;
}

static void *reader(void *a) {
    (void)a;
    announce("reader");
    char b[64];
    while (read(pipefd[0], b, sizeof b) > 0) {}
    return NULL;
}

static void *writer(void *a) {
    (void)a;
    announce("writer");
    for (double end = now() + secs; now() < end;) {
        nap_ms(5);
        if (write(pipefd[1], "x", 1) != 1) break;
    }
    close(pipefd[1]);
    return NULL;
}

static void *mutexer(void *a) {
    (void)a;
    announce("mutex");
    volatile unsigned long x = 0;
    for (double end = now() + secs; now() < end;) {
        pthread_mutex_lock(&mu);
        for (int i = 0; i < 20000; i++) x++;
        pthread_mutex_unlock(&mu);
    }
    return NULL;
}

static void tcp_pair(void) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    if (bind(l, (struct sockaddr *)&sa, sizeof sa) || listen(l, 1) ||
        getsockname(l, (struct sockaddr *)&sa, &len)) { perror("listen"); exit(1); }
    conn[1] = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(conn[1], (struct sockaddr *)&sa, sizeof sa)) { perror("connect"); exit(1); }
    conn[0] = accept(l, NULL, NULL);
    close(l);
}

int main(int argc, char **argv) {
    secs = argc > 1 ? atof(argv[1]) : 5;
    dir = argc > 2 ? argv[2] : ".";
    tcp_pair();
    if (pipe(pipefd)) { perror("pipe"); exit(1); }
    printf("pid=%d\n", getpid());
    fflush(stdout);
    void *(*fns[])(void *) = {spin, sleeper, fsyncer, server, client, reader, writer,
                              mutexer, mutexer, mutexer, mutexer};
    int n = sizeof fns / sizeof fns[0];
    pthread_t t[16];
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, fns[i], NULL);
    while (started < n) nap_ms(1);
    printf("ready\n");
    fflush(stdout);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    return 0;
}
