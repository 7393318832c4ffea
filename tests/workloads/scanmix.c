// What the skipping /proc scan must get right: N threads asleep on a pipe for good, and
// one thread that every PERIOD_MS burns BURST_MS of CPU and sleeps again. Prints pid=,
// burst= (the busy thread's tid) and sleepers= (comma-separated tids), then runs for
// SECS seconds. On SIGUSR1 the main thread renames the middle sleeper to "ttop-renamed"
// (through /proc/self/task/TID/comm, as pthread_setname_np does: the sleeper itself
// never runs); on SIGUSR2 it starts one more sleeper and prints born=TID.
// usage: scanmix N SECS [PERIOD_MS] [BURST_MS]
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int pipefd[2];
static long period_ms = 300, burst_ms = 60;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t *tids;
static int ntids;
static volatile sig_atomic_t rename_asked, birth_asked;

static void on_usr1(int sig) {
    (void)sig;
    rename_asked = 1;
}

static void on_usr2(int sig) {
    (void)sig;
    birth_asked = 1;
}

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *sleeper(void *arg) {
    (void)arg;
    pthread_mutex_lock(&lock);
    tids[ntids++] = gettid();
    pthread_mutex_unlock(&lock);
    char c;
    while (read(pipefd[0], &c, 1) != 0) {
    }
    return NULL;
}

static void *burst(void *arg) {
    (void)arg;
    printf("burst=%d\n", gettid());
    fflush(stdout);
    struct timespec nap = {period_ms / 1000, (period_ms % 1000) * 1000000L};
    for (;;) {
        double until = cpu_now() + burst_ms / 1e3;
        while (cpu_now() < until) {
        }
        nanosleep(&nap, NULL);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 100;
    double secs = argc > 2 ? atof(argv[2]) : 10;
    if (argc > 3) period_ms = atol(argv[3]);
    if (argc > 4) burst_ms = atol(argv[4]);
    if (pipe(pipefd)) return 1;
    tids = calloc(n + 64, sizeof *tids);
    printf("pid=%d\n", getpid());
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 * 1024);
    pthread_t t;
    for (int i = 0; i < n; i++) pthread_create(&t, &a, sleeper, NULL);
    while (1) {
        pthread_mutex_lock(&lock);
        int done = ntids == n;
        pthread_mutex_unlock(&lock);
        if (done) break;
        usleep(1000);
    }
    printf("sleepers=");
    for (int i = 0; i < n; i++) printf(i ? ",%d" : "%d", tids[i]);
    printf("\n");
    fflush(stdout);
    signal(SIGUSR1, on_usr1);
    signal(SIGUSR2, on_usr2);
    pthread_create(&t, &a, burst, NULL);
    for (long waited = 0; waited < secs * 1000; waited += 10) {
        usleep(10000);
        if (rename_asked) {
            rename_asked = 0;
            char path[64];
            snprintf(path, sizeof path, "/proc/self/task/%d/comm", tids[n / 2]);
            FILE *f = fopen(path, "w");
            if (f) {
                fputs("ttop-renamed", f);
                fclose(f);
            }
            printf("renamed=%d\n", tids[n / 2]);
            fflush(stdout);
        }
        if (birth_asked && ntids < n + 64) {
            birth_asked = 0;
            int before = ntids;
            pthread_create(&t, &a, sleeper, NULL);
            while (1) {
                pthread_mutex_lock(&lock);
                int done = ntids > before;
                pthread_mutex_unlock(&lock);
                if (done) break;
                usleep(100);
            }
            printf("born=%d\n", tids[before]);
            fflush(stdout);
        }
    }
    return 0;
}
