/* The CPU server's control path to its memory servers (remote.c). */
#ifndef RH_RUNTIME_REMOTE_H
#define RH_RUNTIME_REMOTE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "common/common.h"
#include "swap/swap.h"

typedef struct rh_remote rh_remote;

/* Connect to every server of cfg (which must outlive the remote), run the
 * HELLO exchange and start the heartbeat monitor. fatal(data, err) is called
 * once, from the monitor thread, when a server is lost. */
int rh_remote_open(const rh_config *cfg, void (*fatal)(void *, const rh_error *), void *data,
                   rh_remote **out, rh_error *err);
/* Say BYE to every server still reachable and disconnect. */
void rh_remote_close(rh_remote *r);
/* Hosts with their connections and partitions (meta_base filled in). */
const rh_swap_host *rh_remote_hosts(rh_remote *r, size_t *n);
int rh_remote_send_types(rh_remote *r, const char *json, rh_error *err);
/* Tell each host which of its regions were freed. */
int rh_remote_free(rh_remote *r, const uint32_t *regions, size_t n, uint32_t region_shift,
                   uint64_t heap_base, rh_error *err);
bool rh_remote_lost(rh_remote *r);

#endif
