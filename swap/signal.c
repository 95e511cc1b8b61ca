/* Faults served by the faulting thread (docs/swap.md, "Waiting"): with
 * UFFD_FEATURE_SIGBUS the kernel sends the thread SIGBUS instead of putting
 * it to sleep, and this handler serves the fault on the thread's own CPU,
 * so no fault costs a wake-up of another thread.
 *
 * One handler serves every heap of the process: a SIGBUS at an address
 * inside a registered heap is served, any other goes to the handler that
 * was installed before this one (or the default action, which ends the
 * process as it would have).
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

#include "swap/internal.h"

#define MAX_HEAPS 16

static _Atomic(rh_swap *) heaps[MAX_HEAPS];
static struct sigaction previous;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;
static bool installed;

static rh_swap *heap_of(uintptr_t a)
{
	for (int i = 0; i < MAX_HEAPS; i++) {
		rh_swap *s = atomic_load_explicit(&heaps[i], memory_order_acquire);
		if (s && a - s->base < s->size)
			return s;
	}
	return NULL;
}

/* 1 write, 0 read, -1 unknown: x86-64 saves the page fault's error code
 * in the signal context (bit 1: the access was a write). Elsewhere a
 * write to an evicted page takes two signals, a missing fault installing
 * it clean and a write-protect fault. */
static int was_write(const void *ctx)
{
#if defined(__x86_64__) && defined(REG_ERR)
	const ucontext_t *uc = ctx;
	return (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
	(void)ctx;
	return -1;
#endif
}

static void chain(int sig, siginfo_t *si, void *ctx)
{
	if (previous.sa_flags & SA_SIGINFO) {
		previous.sa_sigaction(sig, si, ctx);
		return;
	}
	if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
		previous.sa_handler(sig);
		return;
	}
	/* Default action: restore it and return, so the access faults again
	 * and the process ends with SIGBUS as if rheap were not here. */
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGBUS, &dfl, NULL);
}

static void on_sigbus(int sig, siginfo_t *si, void *ctx)
{
	int saved = errno;
	rh_swap *s = si->si_code == BUS_ADRERR ? heap_of((uintptr_t)si->si_addr) : NULL;
	if (s)
		rh_swap_serve(s, (uintptr_t)si->si_addr, was_write(ctx));
	else
		chain(sig, si, ctx);
	errno = saved;
}

int rh_swap_signal_add(rh_swap *s, rh_error *err)
{
	pthread_mutex_lock(&install_lock);
	int rc = RH_OK;
	if (!installed) {
		struct sigaction sa = {.sa_sigaction = on_sigbus,
		                       .sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER};
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGBUS, &sa, &previous) != 0)
			rc = rh_err_errno(err, RH_EIO, "swap: installing the SIGBUS handler");
		else
			installed = true;
	}
	int slot = -1;
	for (int i = 0; rc == RH_OK && i < MAX_HEAPS && slot < 0; i++)
		if (!atomic_load(&heaps[i]))
			slot = i;
	if (rc == RH_OK && slot < 0)
		rc = rh_err_set(err, RH_EINVAL,
		                "swap: at most %d heaps with signal-served faults in one process",
		                MAX_HEAPS);
	if (rc == RH_OK)
		atomic_store_explicit(&heaps[slot], s, memory_order_release);
	pthread_mutex_unlock(&install_lock);
	return rc;
}

void rh_swap_signal_remove(rh_swap *s)
{
	pthread_mutex_lock(&install_lock);
	for (int i = 0; i < MAX_HEAPS; i++)
		if (atomic_load(&heaps[i]) == s)
			atomic_store(&heaps[i], NULL);
	pthread_mutex_unlock(&install_lock);
}
