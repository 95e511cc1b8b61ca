/* Test helper: child processes whose output the test reads back, either a
 * program run to completion (proc_run), a program left running with its
 * output in a file (proc_spawn), or a forked function the test watches and
 * ends itself (proc_fork, proc_drain). */
#ifndef RH_TEST_PROC_H
#define RH_TEST_PROC_H

#include <fcntl.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* Which of the child's streams are captured. */
enum { PROC_STDOUT = 1, PROC_STDERR = 2, PROC_BOTH = 3 };

static inline void proc_redirect(int fd, int streams)
{
	if (streams & PROC_STDOUT)
		dup2(fd, 1);
	if (streams & PROC_STDERR)
		dup2(fd, 2);
}

/* fork(), with the child's `streams` on a pipe whose read end the parent
 * gets in *fd. Returns what fork returns. The pipe is close-on-exec so
 * that processes the test starts later (tracers) do not hold it open and
 * keep proc_drain waiting. */
static inline pid_t proc_fork(int streams, int *fd)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	/* Or the child would write the parent's buffered output again. */
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		proc_redirect(p[1], streams);
		close(p[1]);
		return 0;
	}
	close(p[1]);
	*fd = p[0];
	return pid;
}

/* Read fd to its end into out (NUL-terminated; what does not fit is read
 * and dropped, so a talkative child never blocks) and close it. */
static inline size_t proc_drain(int fd, char *out, size_t cap)
{
	size_t n = 0;
	char spill[4096];
	for (;;) {
		char *to = n + 1 < cap ? out + n : spill;
		size_t room = n + 1 < cap ? cap - 1 - n : sizeof spill;
		ssize_t r = read(fd, to, room);
		if (r <= 0)
			break;
		if (to != spill)
			n += (size_t)r;
	}
	out[n] = 0;
	close(fd);
	return n;
}

/* pid's exit status, or -1 when a signal ended it. */
static inline int proc_wait(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Start argv (argv[0] a path) with its `streams` appended to the file
 * log, without waiting: for commands the test watches while they run.
 * Children they leave behind inherit the file, not a pipe whose reader
 * would wait for them. Returns the pid, or -1. */
static inline pid_t proc_spawn(char *const argv[], int streams, const char *log)
{
	/* Or the child would write the parent's buffered output again. */
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (lfd < 0)
		_exit(127);
	proc_redirect(lfd, streams);
	close(lfd);
	execv(argv[0], argv);
	_exit(127);
}

/* Run argv (argv[0] a path) to completion; what it writes to `streams`
 * comes back in out. With log set those streams are appended to that file
 * instead and out is empty (see proc_spawn). Returns the exit status, or
 * -1 if it did not exit. */
static inline int proc_run(char *const argv[], int streams, const char *log, char *out, size_t cap)
{
	if (log) {
		out[0] = 0;
		pid_t pid = proc_spawn(argv, streams, log);
		return pid < 0 ? -1 : proc_wait(pid);
	}
	int fd = -1;
	pid_t pid = proc_fork(streams, &fd);
	if (pid < 0)
		return -1;
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	proc_drain(fd, out, cap);
	return proc_wait(pid);
}

#endif
