/*
 * liburing's behaviour, one check per rule, written as an application would write it: run plain
 * (liburing's own functions) and under the preload library in each mode, every check must give
 * liburing's answer. Built with -DUSE_POLLWISE it also checks the C API's own rules ("capi_*").
 *
 *   liburing_rules CHECK      runs one check; exit 0 when it held, else 1 with one line saying
 *                             what was seen.
 *
 * Checks (liburing 2.3 on Linux 6.x):
 *   signal, signal_restart, signal_fn   SIGALRM 200 ms into a wait for a 5 s timeout ends it with
 *                             -EINTR at the signal (sigaction without and with SA_RESTART, and
 *                             signal()); so does a wait with a 3 s timeout.
 *   two_one_ready             a signal while waiting for 2 CQEs with 1 posted: 0 and that CQE.
 *   fork                      fork while another thread waits: the child frees the parent's ring
 *                             and uses a ring of its own.
 *   short_submit              the first SQE fails at submission: the kernel stops there;
 *                             io_uring_submit_and_wait returns 1 and one SQE stays in the SQ;
 *                             io_uring_submit_and_wait_timeout the same.
 *   single_issuer             a SINGLE_ISSUER ring submitted to from another thread: -EEXIST.
 *   timespec                  tv_nsec = 2e9 is 2 s.
 *   timer_slack               the thread's timer slack is as it was after each wait.
 *   double_close              a program that closes a descriptor twice around its first wait
 *                             (liburing's recv-multishot.c does) loses nothing of its own and
 *                             none of the waiter's: the waits and the exit go on as plain.
 *   cqe_arrives               a wait that returns 0 returns a CQE, whenever the CQE is posted:
 *                             for 2 s, io_uring_wait_cqe for timeouts of 0 to 20 us.
 *   idle_cpu                  five 200 ms timers waited one by one cost little CPU (not checked
 *                             under POLLWISE_MODE=poll, auto, khybrid or dpas, which may spin).
 *   capi_busy                 one waiter used by a second thread at once: -EBUSY.
 *   capi_options              out-of-range options are refused, each with a line naming it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef USE_POLLWISE
#include <math.h>
#include <pollwise.h>
#endif

static int failed;

#define CHECK(cond, ...)                                   \
	do {                                               \
		if (!(cond)) {                             \
			fprintf(stderr, "FAIL %s:%d: ", __func__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);      \
			fprintf(stderr, "\n");             \
			failed = 1;                        \
		}                                          \
	} while (0)

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static volatile sig_atomic_t handled;

static void on_signal(int sig)
{
	(void)sig;
	handled++;
}

/* SIGALRM to this process in `ms` milliseconds. */
static void alarm_in(int ms)
{
	struct itimerval it = { .it_value = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 } };
	setitimer(ITIMER_REAL, &it, NULL);
}

static void handle(int flags, int use_signal_fn)
{
	if (use_signal_fn) {
		signal(SIGALRM, on_signal);
		return;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
}

static void init(struct io_uring *ring, unsigned flags)
{
	int ret = io_uring_queue_init(8, ring, flags);
	if (ret < 0) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-ret));
		exit(2);
	}
}

static void prep_timeout(struct io_uring *ring, struct __kernel_timespec *ts, uint64_t ud)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	io_uring_prep_timeout(sqe, ts, 0, 0);
	sqe->user_data = ud;
}

static void prep_nop(struct io_uring *ring, uint64_t ud)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = ud;
}

static void check_signal(int flags, int use_signal_fn)
{
	handle(flags, use_signal_fn);
	for (int timed = 0; timed < 2; timed++) {
		struct io_uring ring;
		struct io_uring_cqe *cqe = NULL;
		struct __kernel_timespec five = { .tv_sec = 5 }, three = { .tv_sec = 3 };
		init(&ring, 0);
		/* A first wait, so that a preloaded waiter follows the ring before the timeout is
		 * submitted: it then believes the timeout in flight, and spins where its mode does. */
		prep_nop(&ring, 2);
		io_uring_submit_and_wait(&ring, 1);
		io_uring_wait_cqe(&ring, &cqe);
		io_uring_cqe_seen(&ring, cqe);
		prep_timeout(&ring, &five, 1);
		io_uring_submit(&ring);
		handled = 0;
		alarm_in(200);
		double t0 = now_s();
		int ret = timed ? io_uring_wait_cqe_timeout(&ring, &cqe, &three)
				: io_uring_wait_cqe(&ring, &cqe);
		double took = now_s() - t0;
		CHECK(ret == -EINTR, "timed=%d: returned %d, not -EINTR", timed, ret);
		CHECK(took < 2.0, "timed=%d: the signal ended the wait after %.2f s", timed, took);
		CHECK(handled == 1, "timed=%d: the handler ran %d times", timed, (int)handled);
		io_uring_queue_exit(&ring);
	}
}

static void check_two_one_ready(void)
{
	struct io_uring ring;
	struct io_uring_cqe *cqe = NULL;
	struct __kernel_timespec five = { .tv_sec = 5 };
	handle(0, 0);
	init(&ring, 0);
	prep_nop(&ring, 3);
	io_uring_submit_and_wait(&ring, 1);
	io_uring_wait_cqe(&ring, &cqe);
	io_uring_cqe_seen(&ring, cqe);
	prep_timeout(&ring, &five, 1);
	prep_nop(&ring, 2);
	io_uring_submit(&ring);
	alarm_in(200);
	double t0 = now_s();
	int ret = io_uring_wait_cqe_nr(&ring, &cqe, 2);
	double took = now_s() - t0;
	CHECK(ret == 0, "returned %d, not 0", ret);
	CHECK(cqe && cqe->user_data == 2, "the CQE is not the NOP's");
	CHECK(took < 2.0, "the signal ended the wait after %.2f s", took);
	io_uring_queue_exit(&ring);
}

static void check_cqe_arrives(void)
{
	struct io_uring ring;
	init(&ring, 0);
	double t0 = now_s();
	long waits = 0;
	unsigned ns = 0;
	while (now_s() - t0 < 2.0 && !failed) {
		/* Timeouts of 0 to 20 us: their CQEs are posted at every point of the wait's path
		 * into and through the library. */
		struct __kernel_timespec ts = { .tv_nsec = ns };
		ns = (ns + 1013) % 20000;
		prep_timeout(&ring, &ts, 1);
		int ret = io_uring_submit(&ring);
		CHECK(ret == 1, "submit returned %d, not 1", ret);
		struct io_uring_cqe *cqe = NULL;
		ret = io_uring_wait_cqe(&ring, &cqe);
		waits++;
		CHECK(ret == 0 && cqe, "wait %ld returned %d with %s CQE", waits, ret, cqe ? "a" : "no");
		if (cqe)
			io_uring_cqe_seen(&ring, cqe);
	}
	io_uring_queue_exit(&ring);
}

static void check_double_close(void)
{
	struct io_uring ring;
	int fds[2];
	init(&ring, 0);
	if (pipe(fds) < 0) {
		perror("pipe");
		exit(2);
	}
	close(fds[1]);
	/* The first wait, between the two closes: a waiter made here may open descriptors, which
	 * take the number just freed. */
	for (int i = 0; i < 3; i++) {
		struct io_uring_cqe *cqe = NULL;
		struct __kernel_timespec ts = { .tv_nsec = 1000000 };
		prep_timeout(&ring, &ts, 1);
		io_uring_submit(&ring);
		int ret = io_uring_wait_cqe(&ring, &cqe);
		CHECK(ret == 0 && cqe, "wait %d returned %d", i, ret);
		if (cqe)
			io_uring_cqe_seen(&ring, cqe);
		if (i == 0)
			close(fds[1]); /* the program's mistake: a second close of the same number */
	}
	io_uring_queue_exit(&ring);
	close(fds[0]);
}

static void *wait_a_while(void *arg)
{
	struct io_uring *ring = arg;
	struct io_uring_cqe *cqe;
	io_uring_wait_cqe(ring, &cqe);
	return NULL;
}

static void check_fork(void)
{
	struct io_uring ring;
	struct __kernel_timespec one = { .tv_sec = 1 };
	pthread_t t;
	init(&ring, 0);
	prep_timeout(&ring, &one, 1);
	io_uring_submit(&ring);
	pthread_create(&t, NULL, wait_a_while, &ring);
	usleep(200 * 1000);
	pid_t pid = fork();
	if (pid == 0) {
		struct io_uring own;
		struct io_uring_cqe *cqe;
		io_uring_queue_exit(&ring);
		init(&own, 0);
		prep_nop(&own, 9);
		int ret = io_uring_submit_and_wait(&own, 1);
		if (ret != 1 || io_uring_wait_cqe(&own, &cqe) != 0 || cqe->user_data != 9)
			_exit(3);
		io_uring_cqe_seen(&own, cqe);
		io_uring_queue_exit(&own);
		_exit(0);
	}
	int status = -1;
	for (int i = 0; i < 200; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		usleep(50 * 1000);
	}
	if (status == -1) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		CHECK(0, "the child hung for 10 s");
	} else {
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (status %d)",
		      status);
	}
	pthread_join(t, NULL);
	io_uring_queue_exit(&ring);
}

static void prep_invalid(struct io_uring *ring)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	io_uring_prep_nop(sqe);
	sqe->opcode = 0xfe; /* no such operation: it fails at submission */
	sqe->user_data = 1;
}

static void check_short_submit(void)
{
	for (int timed = 0; timed < 2; timed++) {
		struct io_uring ring;
		struct io_uring_cqe *cqe = NULL;
		struct __kernel_timespec one = { .tv_sec = 1 };
		init(&ring, 0);
		prep_invalid(&ring);
		prep_nop(&ring, 2);
		int ret = timed ? io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &one, NULL)
				: io_uring_submit_and_wait(&ring, 1);
		CHECK(ret == 1, "timed=%d: returned %d, not 1", timed, ret);
		CHECK(io_uring_sq_ready(&ring) == 1, "timed=%d: %u SQEs left in the SQ, not 1", timed,
		      io_uring_sq_ready(&ring));
		ret = io_uring_peek_cqe(&ring, &cqe);
		CHECK(ret == 0 && cqe && cqe->user_data == 1 && cqe->res == -EINVAL,
		      "timed=%d: no -EINVAL CQE for the bad SQE", timed);
		io_uring_queue_exit(&ring);
	}
}

struct submit_from {
	struct io_uring *ring;
	int ret;
};

static void *submit_and_wait_there(void *arg)
{
	struct submit_from *s = arg;
	prep_nop(s->ring, 1);
	s->ret = io_uring_submit_and_wait(s->ring, 1);
	return NULL;
}

static void check_single_issuer(void)
{
	struct io_uring ring;
	pthread_t t;
	int ret = io_uring_queue_init(8, &ring, IORING_SETUP_SINGLE_ISSUER);
	if (ret == -EINVAL) {
		printf("skip: no SINGLE_ISSUER\n");
		return;
	}
	CHECK(ret == 0, "io_uring_queue_init: %d", ret);
	struct submit_from s = { .ring = &ring };
	pthread_create(&t, NULL, submit_and_wait_there, &s);
	pthread_join(t, NULL);
	CHECK(s.ret == -EEXIST, "returned %d, not -EEXIST", s.ret);
	CHECK(io_uring_sq_ready(&ring) == 1, "%u SQEs in the SQ, not 1", io_uring_sq_ready(&ring));
	io_uring_queue_exit(&ring);
}

static void check_timespec(void)
{
	struct io_uring ring;
	struct io_uring_cqe *cqe = NULL;
	struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 2000000000LL };
	init(&ring, 0);
	double t0 = now_s();
	int ret = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
	double took = now_s() - t0;
	CHECK(ret == -ETIME, "returned %d, not -ETIME", ret);
	CHECK(took >= 1.9 && took < 6.0, "the 2 s timeout took %.2f s", took);
	io_uring_queue_exit(&ring);
}

static void check_timer_slack(void)
{
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { .tv_nsec = 2000000 };
	int before = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	init(&ring, 0);
	for (int i = 0; i < 40; i++) {
		prep_timeout(&ring, &ts, 1);
		int ret = io_uring_submit_and_wait(&ring, 1);
		CHECK(ret == 1, "submit_and_wait returned %d", ret);
		ret = io_uring_wait_cqe(&ring, &cqe);
		CHECK(ret == 0, "wait_cqe returned %d", ret);
		io_uring_cqe_seen(&ring, cqe);
		int now = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
		if (now != before) {
			CHECK(0, "after wait %d the timer slack is %d ns, not %d", i, now, before);
			break;
		}
	}
	io_uring_queue_exit(&ring);
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

static void check_idle_cpu(void)
{
	const char *mode = getenv("POLLWISE_MODE");
	int spins = mode && getenv("LD_PRELOAD") &&
		    (!strcmp(mode, "poll") || !strcmp(mode, "auto") || !strcmp(mode, "khybrid") ||
		     !strcmp(mode, "dpas"));
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { .tv_nsec = 200000000 };
	init(&ring, 0);
	double t0 = now_s(), c0 = cpu_s();
	for (int i = 0; i < 5; i++) {
		prep_timeout(&ring, &ts, 1);
		io_uring_submit_and_wait(&ring, 0);
		int ret = io_uring_wait_cqe(&ring, &cqe);
		CHECK(ret == 0, "wait_cqe returned %d", ret);
		io_uring_cqe_seen(&ring, cqe);
	}
	double wall = now_s() - t0, cpu = cpu_s() - c0;
	printf("idle_cpu: %.3f s of CPU in %.3f s\n", cpu, wall);
	if (!spins)
		CHECK(cpu < 0.25 * wall, "%.3f s of CPU in %.3f s of waiting", cpu, wall);
	io_uring_queue_exit(&ring);
}

#ifdef USE_POLLWISE
struct capi_wait {
	pollwise_waiter *w;
	int ret;
};

static void *capi_wait_there(void *arg)
{
	struct capi_wait *c = arg;
	struct io_uring ring;
	struct __kernel_timespec one = { .tv_sec = 1 };
	init(&ring, 0);
	prep_timeout(&ring, &one, 1);
	pollwise_flush_sq(&ring);
	pollwise_ring r = pollwise_ring_of(&ring);
	c->ret = pollwise_wait_ring(c->w, &r, 1, -1, 1);
	io_uring_queue_exit(&ring);
	return NULL;
}

static void check_capi_busy(void)
{
	struct capi_wait c = { .w = pollwise_waiter_new(POLLWISE_MODE_INTERRUPT) };
	struct io_uring ring;
	pthread_t t;
	pthread_create(&t, NULL, capi_wait_there, &c);
	usleep(300 * 1000);
	init(&ring, 0);
	pollwise_ring r = pollwise_ring_of(&ring);
	int ret = pollwise_wait_ring(c.w, &r, 1, 1000000, 0);
	CHECK(ret == -EBUSY, "the second thread got %d, not -EBUSY", ret);
	pthread_join(t, NULL);
	CHECK(c.ret == 1, "the first thread's wait returned %d, not 1", c.ret);
	ret = pollwise_wait_ring(c.w, &r, 1, 1000000, 0);
	CHECK(ret == -ETIME, "after the first thread's wait: %d, not -ETIME", ret);
	io_uring_queue_exit(&ring);
	pollwise_waiter_free(c.w);
}

static void refused(pollwise_options o, const char *option)
{
	const char *why = pollwise_options_error(&o);
	pollwise_waiter *w = pollwise_waiter_new_with(&o);
	CHECK(w == NULL, "%s: accepted", option);
	CHECK(why && strstr(why, option) && !strchr(why, '\n'), "%s: the error is '%s'", option,
	      why ? why : "(none)");
	pollwise_waiter_free(w);
}

static void check_capi_options(void)
{
	pollwise_options d = pollwise_options_default(POLLWISE_MODE_AUTO), o;
	CHECK(pollwise_options_error(&d) == NULL, "the defaults are refused");
	pollwise_waiter *w = pollwise_waiter_new_with(&d);
	CHECK(w != NULL, "the defaults make no waiter");
	pollwise_waiter_free(w);
	o = d, o.auto_latency_slack = INFINITY, refused(o, "auto_latency_slack");
	o = d, o.auto_latency_slack = NAN, refused(o, "auto_latency_slack");
	o = d, o.adaptive_max_ns = 0, refused(o, "adaptive_max_ns");
	o = d, o.adaptive_max_ns = UINT64_MAX, refused(o, "adaptive_max_ns");
	o = d, o.hybrid_fraction = 1e-300, refused(o, "hybrid_fraction");
	o = d, o.hybrid_fraction = 1.5, refused(o, "hybrid_fraction");
	o = d, o.mode = 99, refused(o, "mode");
}
#endif

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CHECK\n", argv[0]);
		return 2;
	}
	const char *c = argv[1];
	if (!strcmp(c, "signal"))
		check_signal(0, 0);
	else if (!strcmp(c, "signal_restart"))
		check_signal(SA_RESTART, 0);
	else if (!strcmp(c, "signal_fn"))
		check_signal(0, 1);
	else if (!strcmp(c, "two_one_ready"))
		check_two_one_ready();
	else if (!strcmp(c, "fork"))
		check_fork();
	else if (!strcmp(c, "short_submit"))
		check_short_submit();
	else if (!strcmp(c, "single_issuer"))
		check_single_issuer();
	else if (!strcmp(c, "timespec"))
		check_timespec();
	else if (!strcmp(c, "timer_slack"))
		check_timer_slack();
	else if (!strcmp(c, "idle_cpu"))
		check_idle_cpu();
	else if (!strcmp(c, "double_close"))
		check_double_close();
	else if (!strcmp(c, "cqe_arrives"))
		check_cqe_arrives();
#ifdef USE_POLLWISE
	else if (!strcmp(c, "capi_busy"))
		check_capi_busy();
	else if (!strcmp(c, "capi_options"))
		check_capi_options();
#endif
	else {
		fprintf(stderr, "unknown check '%s'\n", c);
		return 2;
	}
	if (!failed)
		printf("%s: ok\n", c);
	return failed;
}
