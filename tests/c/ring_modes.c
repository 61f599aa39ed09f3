/*
 * ring_modes: O_DIRECT reads of a patterned temp file at queue depth 4 on liburing rings of
 * every kind this kernel offers (plain, DEFER_TASKRUN, COOP_TASKRUN, SQPOLL, a registered ring
 * fd; IOPOLL on the device RING_MODES_IOPOLL_DEV names, if any), the data of every read checked,
 * with a foreign NOP on each ring.
 *
 *   ring_modes capi MODE [READS]   waits through pollwise's C ABI (pollwise.h) in MODE
 *                                  (made from its POLLWISE_MODE_* value, checked against
 *                                  the waiters made by name and by options)
 *   ring_modes liburing [READS]    waits with liburing's own functions, unmodified: under
 *                                  LD_PRELOAD=libpollwise_preload.so they are pollwise's
 *
 * Both also check that a wait on an idle ring ends with -ETIME, and the liburing path waits
 * once with a signal mask (a call the preload library hands back to liburing). Prints one line
 * per ring kind; exits 0 when every read was right, 1 naming the first thing that was not,
 * 2 for bad arguments.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef USE_POLLWISE
#include <pollwise.h>
#else
#include <liburing.h>
#endif

#define BS 4096
#define BLOCKS 64
#define QD 4
#define NOP_UD 0xfeedULL

/* The layout the preload library mirrors (crates/pollwise-preload: struct io_uring). */
_Static_assert(sizeof(struct io_uring) == 216, "struct io_uring is 216 bytes");
_Static_assert(offsetof(struct io_uring, cq) == 104, "cq at 104");
_Static_assert(offsetof(struct io_uring, flags) == 192, "flags at 192");
_Static_assert(offsetof(struct io_uring, enter_ring_fd) == 204, "enter_ring_fd at 204");
_Static_assert(offsetof(struct io_uring, int_flags) == 208, "int_flags at 208");
_Static_assert(offsetof(struct io_uring_sq, sqe_head) == 64, "sqe_head at 64");
_Static_assert(offsetof(struct io_uring_cq, cqes) == 48, "cqes at 48");

static int fail(const char *kind, const char *what, int err)
{
	fprintf(stderr, "ring_modes: %s: %s%s%s\n", kind, what, err ? ": " : "",
		err ? strerror(err < 0 ? -err : err) : "");
	exit(1);
}

static unsigned char pattern(unsigned blk)
{
	return (unsigned char)(blk * 7 + 1);
}

/* A temp file of BLOCKS patterned blocks, opened with O_DIRECT and already unlinked. */
static int patterned_file(void)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char path[4096];
	static unsigned char block[BS];
	int fd, dfd;

	snprintf(path, sizeof(path), "%s/ring_modes.XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0)
		fail("setup", "mkstemp", errno);
	for (unsigned b = 0; b < BLOCKS; b++) {
		memset(block, pattern(b), BS);
		if (write(fd, block, BS) != BS)
			fail("setup", "write", errno);
	}
	fsync(fd);
	dfd = open(path, O_RDONLY | O_DIRECT);
	unlink(path);
	close(fd);
	if (dfd < 0)
		fail("setup", "open O_DIRECT", errno);
	return dfd;
}

struct kind {
	const char *name;
	unsigned flags;
	int registered;
};

static const struct kind KINDS[] = {
	{ "plain", 0, 0 },
	{ "defer_taskrun", IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, 0 },
	{ "coop_taskrun", IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG, 0 },
	{ "sqpoll", IORING_SETUP_SQPOLL, 0 },
	{ "registered_fd", 0, 1 },
};

/* IOPOLL needs a device with poll queues (an NVMe with poll_queues, null_blk): when
 * RING_MODES_IOPOLL_DEV names one, its first BLOCKS blocks are overwritten with the pattern and
 * read on an IOPOLL ring too. */
static const struct kind IOPOLL_KIND = { "iopoll", IORING_SETUP_IOPOLL, 0 };

static int patterned_device(const char *dev)
{
	void *block;
	int fd = open(dev, O_RDWR | O_DIRECT);

	if (fd < 0)
		fail("iopoll", "open RING_MODES_IOPOLL_DEV", errno);
	if (posix_memalign(&block, BS, BS))
		fail("iopoll", "posix_memalign", ENOMEM);
	for (unsigned b = 0; b < BLOCKS; b++) {
		memset(block, pattern(b), BS);
		if (pwrite(fd, block, BS, (off_t)b * BS) != BS)
			fail("iopoll", "pwrite to the device", errno);
	}
	free(block);
	return fd;
}

struct run {
	struct io_uring ring;
	const struct kind *kind;
	int fd;
	void *bufs[QD];
	unsigned next, done, reads, nops;
#ifdef USE_POLLWISE
	pollwise_waiter *w;
#endif
};

#ifdef USE_POLLWISE
/* Every mode by name and by its POLLWISE_MODE_* value. */
static const struct {
	const char *name;
	uint32_t value;
} MODES[] = {
	{ "interrupt", POLLWISE_MODE_INTERRUPT },
	{ "poll", POLLWISE_MODE_POLL },
	{ "hybrid", POLLWISE_MODE_HYBRID },
	{ "adaptive", POLLWISE_MODE_ADAPTIVE },
	{ "auto", POLLWISE_MODE_AUTO },
	{ "khybrid", POLLWISE_MODE_KHYBRID },
	{ "dpas", POLLWISE_MODE_DPAS },
};

/* The waiter for the mode named `mode`, made from its POLLWISE_MODE_* value, after checking
 * that the name and the value make the same mode; NULL for an unknown name. */
static pollwise_waiter *by_value(const char *mode)
{
	for (size_t i = 0; i < sizeof(MODES) / sizeof(MODES[0]); i++) {
		if (strcmp(MODES[i].name, mode) != 0)
			continue;
		pollwise_waiter *named = pollwise_waiter_new_named(mode);
		pollwise_options o = pollwise_options_default(MODES[i].value);
		pollwise_waiter *with = pollwise_waiter_new_with(&o);
		pollwise_waiter *w = pollwise_waiter_new(MODES[i].value);

		if (!named || !with || !w)
			fail(mode, "a waiter for a known mode is NULL", 0);
		if (strcmp(pollwise_mode_name(named), mode) != 0 ||
		    strcmp(pollwise_mode_name(with), mode) != 0 ||
		    strcmp(pollwise_mode_name(w), mode) != 0)
			fail(mode, "the mode's name and its POLLWISE_MODE_* value differ", 0);
		pollwise_waiter_free(named);
		pollwise_waiter_free(with);
		return w;
	}
	return pollwise_waiter_new_named(mode);
}
#endif

static void push_read(struct run *r, unsigned slot)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
	unsigned blk = (r->next++ * 13) % BLOCKS;

	if (!sqe)
		fail(r->kind->name, "no SQE", 0);
	io_uring_prep_read(sqe, r->fd, r->bufs[slot], BS, (unsigned long long)blk * BS);
	sqe->user_data = ((unsigned long long)blk << 8) | slot;
#ifdef USE_POLLWISE
	pollwise_note_submit(r->w, sqe->user_data, 0, BS);
#endif
}

/* Checks and counts every CQE on the ring, refilling the queue. */
static void reap(struct run *r)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;

	io_uring_for_each_cqe(&r->ring, head, cqe) {
		n++;
		if (cqe->user_data == NOP_UD) {
			if (cqe->res != 0)
				fail(r->kind->name, "the NOP failed", cqe->res);
			r->nops++;
			continue;
		}
		unsigned blk = cqe->user_data >> 8, slot = cqe->user_data & 0xff;
		unsigned char *b = r->bufs[slot];
		if (slot >= QD)
			fail(r->kind->name, "a CQE with a user_data nobody gave", 0);
		if (cqe->res != BS)
			fail(r->kind->name, "a short or failed read", cqe->res < 0 ? cqe->res : 0);
		for (int i = 0; i < BS; i++)
			if (b[i] != pattern(blk))
				fail(r->kind->name, "a read returned the wrong data", 0);
		r->done++;
		if (r->done + QD <= r->reads)
			push_read(r, slot);
	}
	io_uring_cq_advance(&r->ring, n);
}

static void wait_one(struct run *r, unsigned i)
{
	struct io_uring_cqe *cqe = NULL;
	int ret, exact_count = 0;

#ifdef USE_POLLWISE
	switch (i % 3) {
	case 0:
		ret = pollwise_submit_and_wait(r->w, &r->ring, 1);
		exact_count = 1;
		break;
	case 1:
		ret = io_uring_submit(&r->ring);
		if (ret >= 0)
			ret = pollwise_wait_cqe(r->w, &r->ring, &cqe);
		break;
	default:
		ret = io_uring_submit(&r->ring);
		if (ret >= 0)
			ret = pollwise_wait_cqes(r->w, &r->ring, &cqe, 1, 5000000000LL);
		break;
	}
#else
	struct __kernel_timespec ts = { .tv_sec = 5 };

	/* Every exported wait of liburing, in turn. */
	switch (i % 6) {
	case 0:
		ret = io_uring_submit_and_wait(&r->ring, 1);
		exact_count = 1;
		break;
	case 1:
		ret = io_uring_submit(&r->ring);
		if (ret >= 0)
			ret = io_uring_wait_cqe(&r->ring, &cqe);
		break;
	case 2:
		ret = io_uring_submit(&r->ring);
		if (ret >= 0)
			ret = io_uring_wait_cqe_timeout(&r->ring, &cqe, &ts);
		break;
	case 3:
		ret = io_uring_submit(&r->ring);
		if (ret >= 0)
			ret = io_uring_wait_cqes(&r->ring, &cqe, 1, &ts, NULL);
		break;
	case 4:
		ret = io_uring_submit_and_wait_timeout(&r->ring, &cqe, 1, &ts, NULL);
		exact_count = 1;
		break;
	default:
		ret = io_uring_submit(&r->ring);
		if (ret >= 0)
			ret = io_uring_get_events(&r->ring);
		if (ret >= 0)
			ret = io_uring_wait_cqe_nr(&r->ring, &cqe, 1);
		break;
	}
#endif
	if (ret < 0)
		fail(r->kind->name, "a wait failed", ret);
	/* The waits that do not submit return exactly 0 on success (programs test `if (ret)`). */
	if (ret != 0 && !exact_count)
		fail(r->kind->name, "a wait that submits nothing returned nonzero", 0);
	if (io_uring_cq_ready(&r->ring) == 0)
		fail(r->kind->name, "a wait returned with no CQE ready", 0);
}

/* A wait for one CQE on a ring with nothing in flight ends with -ETIME, soon. */
static void idle_wait_times_out(struct run *r)
{
	struct io_uring_cqe *cqe = (void *)1;
	int ret;
#ifdef USE_POLLWISE
	ret = pollwise_wait_cqes(r->w, &r->ring, &cqe, 1, 20000000LL);
#else
	struct __kernel_timespec ts = { .tv_nsec = 20000000 };
	ret = io_uring_wait_cqe_timeout(&r->ring, &cqe, &ts);
#endif
	if (ret != -ETIME)
		fail(r->kind->name, "an idle wait did not end with -ETIME", ret < 0 ? ret : 0);
	if (cqe != NULL)
		fail(r->kind->name, "a timed-out wait returned a CQE", 0);
}

#ifndef USE_POLLWISE
/* A wait with a signal mask (the preload library hands it to liburing). */
static void wait_with_sigmask(struct run *r)
{
	struct __kernel_timespec ts = { .tv_sec = 5 };
	struct io_uring_cqe *cqe = NULL;
	sigset_t mask;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);

	io_uring_prep_nop(sqe);
	sqe->user_data = NOP_UD + 1;
	io_uring_submit(&r->ring);
	sigemptyset(&mask);
	int ret = io_uring_wait_cqes(&r->ring, &cqe, 1, &ts, &mask);
	if (ret < 0 || !cqe || cqe->user_data != NOP_UD + 1)
		fail(r->kind->name, "a wait with a signal mask failed", ret < 0 ? ret : 0);
	io_uring_cqe_seen(&r->ring, cqe);
}
#endif

static void run_kind(const struct kind *k, const char *mode, unsigned reads)
{
	struct run r = { .kind = k, .reads = reads };
	struct io_uring_params p = { .flags = k->flags, .sq_thread_idle = 1 };
	struct io_uring_sqe *sqe;
	int ret;

	ret = io_uring_queue_init_params(8, &r.ring, &p);
	if (ret < 0)
		fail(k->name, "io_uring_queue_init_params", ret);
	if (k->registered && (ret = io_uring_register_ring_fd(&r.ring)) != 1)
		fail(k->name, "io_uring_register_ring_fd", ret < 0 ? ret : 0);
	r.fd = k == &IOPOLL_KIND ? patterned_device(getenv("RING_MODES_IOPOLL_DEV")) : patterned_file();
	for (int i = 0; i < QD; i++)
		if (posix_memalign(&r.bufs[i], BS, BS))
			fail(k->name, "posix_memalign", ENOMEM);
#ifdef USE_POLLWISE
	r.w = by_value(mode);
	if (!r.w)
		fail(k->name, "pollwise_waiter_new_named: unknown mode", 0);
#else
	(void)mode;
#endif
	sqe = io_uring_get_sqe(&r.ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = NOP_UD;
	for (unsigned s = 0; s < QD; s++)
		push_read(&r, s);
	for (unsigned i = 0; r.done < reads; i++) {
		wait_one(&r, i);
		reap(&r);
	}
	if (r.nops != 1)
		fail(k->name, "the foreign NOP did not complete exactly once", 0);
	idle_wait_times_out(&r);
#ifdef USE_POLLWISE
	pollwise_stats st;
	pollwise_get_stats(r.w, &st);
	printf("%s %s: %u reads checked, 1 foreign NOP; waits %llu polls %llu blocks %llu sleeps %llu timeouts %llu\n",
	       k->name, pollwise_mode_name(r.w), r.done, (unsigned long long)st.waits,
	       (unsigned long long)st.polls, (unsigned long long)st.blocks,
	       (unsigned long long)st.sleeps, (unsigned long long)st.timeouts);
	if (st.waits == 0 || st.timeouts != 1)
		fail(k->name, "the waiter did not count its waits", 0);
	pollwise_waiter_free(r.w);
#else
	wait_with_sigmask(&r);
	printf("%s liburing: %u reads checked, 1 foreign NOP\n", k->name, r.done);
#endif
	io_uring_queue_exit(&r.ring);
	close(r.fd);
	for (int i = 0; i < QD; i++)
		free(r.bufs[i]);
}

int main(int argc, char **argv)
{
	unsigned reads = 400;
	const char *mode = NULL;
	int a = 2;

#ifdef USE_POLLWISE
	if (argc < 3 || strcmp(argv[1], "capi") != 0) {
		fprintf(stderr, "usage: ring_modes capi MODE [READS]\n");
		return 2;
	}
	mode = argv[2];
	a = 3;
#else
	if (argc < 2 || strcmp(argv[1], "liburing") != 0) {
		fprintf(stderr, "usage: ring_modes liburing [READS]\n");
		return 2;
	}
#endif
	if (argc > a)
		reads = (unsigned)atoi(argv[a]);
	if (reads < QD) {
		fprintf(stderr, "ring_modes: READS must be at least %d\n", QD);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t k = 0; k < sizeof(KINDS) / sizeof(KINDS[0]); k++)
		run_kind(&KINDS[k], mode, reads);
	if (getenv("RING_MODES_IOPOLL_DEV"))
		run_kind(&IOPOLL_KIND, mode, reads);
	return 0;
}
