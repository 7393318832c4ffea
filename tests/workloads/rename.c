// Renames itself (prctl PR_SET_NAME) to a name full of escape sequences, prints its pid,
// then sleeps. usage: rename SECS
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 5;
    prctl(PR_SET_NAME, "\x1b[31mpwn\x07\x1b]0", 0, 0, 0);
    printf("pid=%d\n", getpid());
    fflush(stdout);
    usleep((useconds_t)(secs * 1e6));
    return 0;
}
