/* Ctrl-C in the REPL: it stops the evaluation under way (or drops the
 * line being typed) and returns to the prompt with the session's
 * definitions intact, as Scheme REPLs do, instead of killing the process.
 *
 * Only the VM thread takes SIGINT. librheap's own threads (page faults,
 * remembered-set transfer, marking) are started by the VM thread while it
 * blocks the signal, so they inherit the block and none of their system
 * calls is ever interrupted; the main thread blocks it before starting the
 * VM thread. Scripts keep the default action: Ctrl-C ends them. */
#include <signal.h>

#include "rhs.h"

volatile sig_atomic_t rhs_interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	rhs_interrupted = 1;
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
