#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"

int rh_err_set(rh_error *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		err->code = code;
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
	}
	return code;
}

int rh_err_errno(rh_error *err, int code, const char *fmt, ...)
{
	int e = errno;
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		err->code = code;
		int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < sizeof err->msg)
			snprintf(err->msg + n, sizeof err->msg - (size_t)n, ": %s", strerror(e));
	}
	return code;
}

const char *rh_status_name(int code)
{
	static const char *const names[] = {"ok",
	                                    "invalid argument",
	                                    "bad configuration",
	                                    "out of memory",
	                                    "bad state",
	                                    "I/O error",
	                                    "timed out",
	                                    "peer failed",
	                                    "authentication failed",
	                                    "out of range",
	                                    "busy"};
	if (code < 0 || (size_t)code >= sizeof names / sizeof names[0])
		return "unknown error";
	return names[code];
}

_Noreturn void rh_panic(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("rheap: fatal: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	fflush(stderr);
	abort();
}
