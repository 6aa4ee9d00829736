/* spawn: run one command and report its wall time, CPU time and peak RSS from wait4(2).
 *
 * Used by benches/compare.py (compiled there with `cc -O2`). Why not measure from Python directly:
 * a child's ru_maxrss starts at the RSS of the process it was forked from (the kernel keeps the
 * high-water mark across exec), so a child forked from Python reports at least Python's RSS (30 MB
 * and more). Forked from this small program the floor is about 1 MiB.
 *
 * Usage: spawn RESULT_FILE TIMEOUT_SECONDS AS_LIMIT_BYTES CMD [ARGS...]
 * Writes one line to RESULT_FILE: "wall_s cpu_s maxrss_kib exit_code signal timed_out"
 * (exit_code -1 when killed by a signal, signal 0 when it exited). The child runs in its own
 * process group, with RLIMIT_AS = AS_LIMIT_BYTES when > 0; on timeout the group gets SIGKILL.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t timed_out = 0;
static pid_t child = 0;

static void on_alarm(int sig) {
    (void)sig;
    timed_out = 1;
    if (child > 0) kill(-child, SIGKILL);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: spawn RESULT_FILE TIMEOUT_SECONDS AS_LIMIT_BYTES CMD [ARGS...]\n");
        return 2;
    }
    const char *result = argv[1];
    double timeout = atof(argv[2]);
    long long aslim = atoll(argv[3]);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    child = fork();
    if (child < 0) { perror("spawn: fork"); return 2; }
    if (child == 0) {
        setpgid(0, 0);
        if (aslim > 0) {
            struct rlimit rl = {(rlim_t)aslim, (rlim_t)aslim};
            setrlimit(RLIMIT_AS, &rl);
        }
        execvp(argv[4], argv + 4);
        fprintf(stderr, "spawn: exec %s: %s\n", argv[4], strerror(errno));
        _exit(127);
    }
    setpgid(child, child);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    if (timeout > 0) {
        struct itimerval it;
        memset(&it, 0, sizeof it);
        it.it_value.tv_sec = (time_t)timeout;
        it.it_value.tv_usec = (suseconds_t)((timeout - (double)(time_t)timeout) * 1e6);
        setitimer(ITIMER_REAL, &it, NULL);
    }
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    while (wait4(child, &status, 0, &ru) < 0) {
        if (errno != EINTR) { perror("spawn: wait4"); return 2; }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    FILE *f = fopen(result, "w");
    if (!f) { perror("spawn: result file"); return 2; }
    fprintf(f, "%.6f %.6f %ld %d %d %d\n", wall, cpu, (long)ru.ru_maxrss,
            WIFEXITED(status) ? WEXITSTATUS(status) : -1, WIFSIGNALED(status) ? WTERMSIG(status) : 0, (int)timed_out);
    fclose(f);
    return 0;
}
