/* A shifted wall clock for a test redis-server (controller/testing/clock.py builds it).
 *
 * LD_PRELOAD'ed into redis-server, it adds the signed number of milliseconds written in the
 * file named by JACKPOT_TEST_CLOCK_FILE to CLOCK_REALTIME (clock_gettime, gettimeofday,
 * time): Redis's TIME, its stream ids, and so the journal's times follow. The file is read at
 * every call (raw syscalls: no allocation, so no recursion into an allocator that reads the
 * clock). Monotonic clocks are untouched. For tests only.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int fd = -2;

static long long offset_ms(void) {
    char buf[32];
    long n;
    long long v = 0;
    int neg = 0, i = 0;
    if (fd == -2) {
        const char *path = getenv("JACKPOT_TEST_CLOCK_FILE");
        fd = path ? (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY) : -1;
    }
    if (fd < 0) return 0;
    n = syscall(SYS_pread64, fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return 0;
    buf[n] = 0;
    if (buf[0] == '-') { neg = 1; i = 1; }
    for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++) v = v * 10 + (buf[i] - '0');
    return neg ? -v : v;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    int r = (int)syscall(SYS_clock_gettime, id, ts);
    if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
        long long ns = (long long)ts->tv_nsec + (offset_ms() % 1000) * 1000000LL;
        ts->tv_sec += offset_ms() / 1000 + ns / 1000000000LL - (ns < 0 ? 1 : 0);
        ns %= 1000000000LL;
        if (ns < 0) ns += 1000000000LL;
        ts->tv_nsec = ns;
    }
    return r;
}

int gettimeofday(struct timeval *tv, void *tz) {
    struct timespec ts;
    (void)tz;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *t) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (t) *t = ts.tv_sec;
    return ts.tv_sec;
}
