// mmap_lock contention between two processes, after seed 002.
//   mmaplock victim THREADS SECS : THREADS threads map (MAP_POPULATE) and unmap 256 KiB
//       in a loop, resting 100 us in between (mmap and munmap take the process's
//       mmap_lock for writing, the populate step for reading). They never touch memory
//       outside those calls, so every mmap_lock wait of theirs happens inside a call they
//       time: the total time inside them bounds the time they can have waited, and the
//       slowest call bounds the longest wait. Calls slower than 1 ms are stalls.
//   mmaplock reader PID SECS : reads /proc/PID/environ in a loop (each read takes PID's
//       mmap_lock for reading), at nice 19 on CPU 0 next to a spinning thread, so it is
//       often preempted while it holds the lock, like seed 002's throttled scanner.
//   Extra victim arguments, in any order:
//     collide: before timing, create and drop threads until each worker has a partner
//       whose tid is the same modulo 8192 (ttop keeps a thread's mmap_lock operation in
//       the slot tid % 8192 and moves a second thread with one in flight to a hash); the
//       partners run the same loop. Prints pairs= at the end.
//     exit-on-stall: after SECS, the process exits (status 0, no summary line) right
//       after the first call of a worker that took over 10 ms (a wait behind the
//       preempted reader), so the interval it exits in holds an mmap_lock wait of its;
//       status 3 if none came within 10 s more.
//     hop: a mover thread switches every worker between CPUs every 200 us, so threads
//       are moved while they wait for or hold the lock (a sleeping waiter wakes up on
//       the other CPU).
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static double secs;
static atomic_long calls, stalls, sys_ns, stall_ns, max_ns;

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static int exit_on_stall;
static volatile int finishing;

static void account(long d) {
    if (exit_on_stall && finishing && d > 10000000) _exit(0);
    atomic_fetch_add(&calls, 1);
    atomic_fetch_add(&sys_ns, d);
    if (d > 1000000) {
        atomic_fetch_add(&stalls, 1);
        atomic_fetch_add(&stall_ns, d);
    }
    long m = atomic_load(&max_ns);
    while (d > m && !atomic_compare_exchange_weak(&max_ns, &m, d)) {}
}

#define SLOTS 8192
#define MAX_WORKERS 32

static atomic_int worker_tids[MAX_WORKERS], nworkers;
static atomic_int paired[MAX_WORKERS];
static int nfirst; // workers before the partners

static void *victim_loop(void);

static void *victim_thread(void *arg) {
    (void)arg;
    atomic_store(&worker_tids[atomic_fetch_add(&nworkers, 1)], (int)syscall(SYS_gettid));
    return victim_loop();
}

// A candidate partner: stays (as a worker) if its tid shares a slot with an unpaired
// worker of the first batch, else exits at once. *arg is set to 1 or 2 when decided.
static void *probe_thread(void *arg) {
    atomic_int *decided = arg;
    int tid = (int)syscall(SYS_gettid);
    for (int i = 0; i < nfirst; i++) {
        int w = atomic_load(&worker_tids[i]);
        int no = 0;
        if (w != tid && w % SLOTS == tid % SLOTS &&
            atomic_compare_exchange_strong(&paired[i], &no, 1)) {
            atomic_store(&worker_tids[atomic_fetch_add(&nworkers, 1)], tid);
            atomic_store(decided, 2);
            return victim_loop();
        }
    }
    atomic_store(decided, 1);
    return NULL;
}

static void *mover(void *arg) {
    (void)arg;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    for (long k = 0; !stop && ncpu > 1; k++) {
        for (int i = 0; i < atomic_load(&nworkers); i++) {
            cpu_set_t s;
            CPU_ZERO(&s);
            CPU_SET((int)((k + i) % ncpu), &s);
            sched_setaffinity(atomic_load(&worker_tids[i]), sizeof(s), &s);
        }
        usleep(200);
    }
    return NULL;
}

static atomic_int go;

static void *victim_loop(void) {
    const size_t len = 256 << 10;
    while (!atomic_load(&go)) usleep(100);
    while (!stop) {
        long t0 = now_ns();
        char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                       -1, 0);
        account(now_ns() - t0);
        if (p == MAP_FAILED) continue;
        t0 = now_ns();
        munmap(p, len);
        account(now_ns() - t0);
        usleep(100);
    }
    return NULL;
}

static void *spinner(void *arg) {
    (void)arg;
    while (!stop) {}
    return NULL;
}

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    sched_setaffinity(0, sizeof(s), &s);
}

static void sleep_secs(double s) {
    struct timespec d = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
    nanosleep(&d, NULL);
}

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    secs = atof(argv[3]);
    if (!strcmp(argv[1], "victim")) {
        int n = atoi(argv[2]), collide = 0, hop = 0, pairs = 0;
        for (int i = 4; i < argc; i++) {
            collide |= !strcmp(argv[i], "collide");
            hop |= !strcmp(argv[i], "hop");
            exit_on_stall |= !strcmp(argv[i], "exit-on-stall");
        }
        printf("pid=%d\n", getpid());
        fflush(stdout);
        pthread_t t[MAX_WORKERS], m;
        if (n > MAX_WORKERS / 2) n = MAX_WORKERS / 2;
        for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, victim_thread, NULL);
        while (atomic_load(&nworkers) < n) usleep(100);
        nfirst = n;
        // Give up after 200000 threads (six cycles of a pid_max of 32768).
        for (long tries = 0; collide && pairs < n && tries < 200000; tries++) {
            atomic_int decided = 0;
            pthread_t p;
            if (pthread_create(&p, NULL, probe_thread, &decided)) break;
            while (!atomic_load(&decided)) {}
            if (atomic_load(&decided) == 2) t[n + pairs++] = p;
            else pthread_join(p, NULL);
        }
        atomic_store(&go, 1);
        if (hop) pthread_create(&m, NULL, mover, NULL);
        sleep_secs(secs);
        if (exit_on_stall) {
            finishing = 1;
            sleep_secs(10);
            return 3;
        }
        stop = 1;
        if (hop) pthread_join(m, NULL);
        for (int i = 0; i < n + pairs; i++) pthread_join(t[i], NULL);
        printf("calls=%ld sys_ms=%.3f stalls=%ld stall_ms=%.3f max_ms=%.3f pairs=%d\n",
               atomic_load(&calls), atomic_load(&sys_ns) / 1e6, atomic_load(&stalls),
               atomic_load(&stall_ns) / 1e6, atomic_load(&max_ns) / 1e6, pairs);
        return 0;
    }
    // reader
    prctl(PR_SET_NAME, "envreader");
    printf("pid=%d\n", getpid());
    fflush(stdout);
    char path[64];
    snprintf(path, sizeof(path), "/proc/%s/environ", argv[2]);
    int fd = open(path, O_RDONLY);
    if (fd < 0) { perror(path); return 1; }
    pin(0);
    pthread_t s;
    pthread_create(&s, NULL, spinner, NULL); // inherits CPU 0, nice 0
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
    static char buf[1 << 16];
    long reads = 0, t0 = now_ns();
    while ((now_ns() - t0) / 1e9 < secs) {
        if (pread(fd, buf, sizeof(buf), 0) < 0) break;
        reads++;
    }
    stop = 1;
    pthread_join(s, NULL);
    printf("reads=%ld\n", reads);
    return 0;
}
