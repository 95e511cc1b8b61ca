/* Ctrl-C in the REPL: it stops the evaluation under way (or drops the
 * line being typed) and returns to the prompt with the session's
 * definitions intact, as Scheme REPLs do, instead of killing the process.
 *
 * The VM thread takes SIGINT. The main thread blocks it before starting
 * the VM thread, and librheap's threads started at heap open (page faults,
 * remembered-set transfer, marking) inherit the block, so none of their
 * system calls is interrupted. Copying helpers start later, at the first
 * parallel collection, without it: the handler, if it lands on one, passes
 * the signal on to the VM thread, whose read at the prompt must return.
 * Scripts keep the default action: Ctrl-C ends them. */
#include <pthread.h>
#include <signal.h>

#include "rhs.h"

volatile sig_atomic_t rhs_interrupted;
static pthread_t vm_thread;

static void on_sigint(int sig)
{
	rhs_interrupted = 1;
	if (!pthread_equal(pthread_self(), vm_thread))
		pthread_kill(vm_thread, sig); /* async-signal-safe */
}

static void set_sigint(int how)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGINT);
	pthread_sigmask(how, &s, NULL);
}

void rhs_sigint_block(void)
{
	set_sigint(SIG_BLOCK);
}

/* On the VM thread, once the heap's threads are running. */
void rhs_sigint_take(bool repl)
{
	vm_thread = pthread_self();
	if (repl) {
		struct sigaction sa = {.sa_handler = on_sigint};
		sigemptyset(&sa.sa_mask);
		/* No SA_RESTART: a read at the prompt returns, so the line
		 * typed so far can be dropped. */
		sigaction(SIGINT, &sa, NULL);
	}
	set_sigint(SIG_UNBLOCK);
}

void rhs_interrupt_raise(void)
{
	rhs_interrupted = 0;
	rhs_error("interrupted", UNSPEC);
}
