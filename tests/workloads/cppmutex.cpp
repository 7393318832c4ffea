// A contended std::mutex taken from a C++ method, built like a distribution's programs
// (-O2, no frame pointers). Each thread runs Worker::run(), whose loop calls the inline
// Worker::step(), which calls Worker::take_lock() (noinline) that locks one shared
// std::mutex. ttop's futex stack must read, demangled and in order:
// Worker::take_lock() <- Worker::step() (inlined) <- Worker::run(), with
// Worker::take_lock() as the caller.
// usage: cppmutex THREADS SECS      prints pid= first, then ops=
#pragma GCC optimize("omit-frame-pointer")
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <unistd.h>
#include <vector>

static std::mutex mu;
static volatile unsigned long shared_counter;
static std::atomic<bool> stop{false};

class Worker {
  public:
    unsigned long ops = 0;
    void run();

  private:
    __attribute__((noinline)) void take_lock();
    inline __attribute__((always_inline)) void step();
};

void Worker::take_lock() {
    std::lock_guard<std::mutex> g(mu);
    for (int i = 0; i < 300; i++) shared_counter = shared_counter + 1;
}

void Worker::step() {
    take_lock();
    ops++;  // work after the call keeps it a call, not a jump
}

void Worker::run() {
    while (!stop.load(std::memory_order_relaxed)) {
        step();
        for (volatile int i = 0; i < 50; i++) {
        }
    }
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 4;
    double secs = argc > 2 ? atof(argv[2]) : 3;
    printf("pid=%d\n", getpid());
    fflush(stdout);
    std::vector<Worker> workers(n);
    std::vector<std::thread> threads;
    for (auto &w : workers) threads.emplace_back([&w] { w.run(); });
    std::this_thread::sleep_for(std::chrono::duration<double>(secs));
    stop = true;
    unsigned long ops = 0;
    for (int i = 0; i < n; i++) {
        threads[i].join();
        ops += workers[i].ops;
    }
    printf("ops=%lu\n", ops);
    return 0;
}
