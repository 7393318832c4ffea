// A contended pthread mutex taken from JIT-like code: machine code written into an
// anonymous executable mapping (no file, no symbols, no unwind tables), as a JIT
// compiler's output is. Each thread calls that code, which calls pthread_mutex_lock,
// burns a little, and unlocks. ttop must keep the stack it can (glibc's frames, named)
// and count the frame it cannot name, never crash.
// usage: jitmutex THREADS SECS      prints pid= first, then ops=
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long counter;
static volatile int stop;
static void (*jit_fn)(void);

__attribute__((noinline)) static void critical(void) {
    for (int i = 0; i < 300; i++) counter++;
}

// sub rsp,8; movabs rdi,&mu; movabs rax,lock; call rax; movabs rax,critical; call rax;
// movabs rdi,&mu; movabs rax,unlock; call rax; add rsp,8; ret
static void *emit(void) {
    uint8_t *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    uint8_t *c = p;
    uint64_t a;
#define BYTES(...) do { uint8_t b[] = {__VA_ARGS__}; memcpy(c, b, sizeof b); c += sizeof b; } while (0)
#define IMM64(v) do { a = (uint64_t)(uintptr_t)(v); memcpy(c, &a, 8); c += 8; } while (0)
    BYTES(0x48, 0x83, 0xec, 0x08);
    BYTES(0x48, 0xbf); IMM64(&mu);
    BYTES(0x48, 0xb8); IMM64(pthread_mutex_lock);
    BYTES(0xff, 0xd0);
    BYTES(0x48, 0xb8); IMM64(critical);
    BYTES(0xff, 0xd0);
    BYTES(0x48, 0xbf); IMM64(&mu);
    BYTES(0x48, 0xb8); IMM64(pthread_mutex_unlock);
    BYTES(0xff, 0xd0);
    BYTES(0x48, 0x83, 0xc4, 0x08);
    BYTES(0xc3);
    if (mprotect(p, 4096, PROT_READ | PROT_EXEC)) return NULL;
    return p;
}

static void *worker(void *arg) {
    (void)arg;
    while (!stop) {
        jit_fn();
        for (volatile int i = 0; i < 50; i++) {}
    }
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 4;
    double secs = argc > 2 ? atof(argv[2]) : 3;
    pthread_t t[64];
    if (n > 64) n = 64;
    jit_fn = (void (*)(void))emit();
    if (!jit_fn) {
        perror("emit");
        return 1;
    }
    printf("pid=%d\n", getpid());
    fflush(stdout);
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, worker, NULL);
    struct timespec ts = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
    nanosleep(&ts, NULL);
    stop = 1;
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    printf("ops=%lu\n", counter / 300);
    return 0;
}
