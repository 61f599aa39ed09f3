/* An unmodified liburing program that waits on timers: N io_uring timeouts of MS milliseconds,
 * one at a time, each waited for with io_uring_wait_cqe. Under `pollwise exec --mode=M` every
 * wait is taken over by the preload; the process's CPU over the wall time is what mode M burns
 * on waits far longer than a wake-up (a mode that spins burns the whole wait).
 *
 *   cc -O2 -o timer_waits bench/c/timer_waits.c -luring
 *   ./timer_waits N MS      prints: waits=N wall_s=... cpu_s=... core=...
 */
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s WAITS MILLISECONDS\n", argv[0]);
		return 2;
	}
	int n = atoi(argv[1]);
	long ms = atol(argv[2]);
	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0) {
		fprintf(stderr, "io_uring_queue_init: %d\n", ret);
		return 1;
	}
	struct __kernel_timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	double t0 = now_s(), c0 = cpu_s();
	for (int i = 0; i < n; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		io_uring_prep_timeout(sqe, &ts, 0, 0);
		io_uring_sqe_set_data64(sqe, i);
		io_uring_submit(&ring);
		struct io_uring_cqe *cqe;
		ret = io_uring_wait_cqe(&ring, &cqe);
		if (ret < 0) {
			fprintf(stderr, "io_uring_wait_cqe: %d\n", ret);
			return 1;
		}
		if (cqe->res != -ETIME || cqe->user_data != (unsigned long long)i) {
			fprintf(stderr, "timeout %d: res %d, user_data %llu\n", i, cqe->res,
				(unsigned long long)cqe->user_data);
			return 1;
		}
		io_uring_cqe_seen(&ring, cqe);
	}
	double wall = now_s() - t0, cpu = cpu_s() - c0;
	printf("waits=%d wall_s=%.3f cpu_s=%.4f core=%.4f\n", n, wall, cpu, cpu / wall);
	io_uring_queue_exit(&ring);
	return 0;
}
