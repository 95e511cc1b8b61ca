/* Mapping a provider's target pages before it copies into or out of them
 * (docs/transport.md, "Populating targets"). */
#ifndef RH_TRANSPORT_POPULATE_H
#define RH_TRANSPORT_POPULATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A run of adjacent target bytes, mapped in one call when it ends. */
typedef struct rh_tp_run {
	uintptr_t lo, hi;
	bool write;
} rh_tp_run;

static inline rh_tp_run rh_tp_run_begin(bool write)
{
	return (rh_tp_run){0, 0, write};
}

/* Adds [addr, addr + len): it extends the run when adjacent to it,
 * otherwise the run so far is mapped and a new one starts. */
void rh_tp_run_add(rh_tp_run *r, uintptr_t addr, size_t len);

/* Maps what is left of the run. */
void rh_tp_run_end(rh_tp_run *r);

#endif
