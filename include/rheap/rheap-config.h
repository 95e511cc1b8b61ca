/* rheap configuration: the values one JSON file carries to every node.
 *
 * A config is filled either by rh_config_default() and field assignment, or
 * by rh_config_load()/rh_config_parse() from JSON. rh_config_check() applies
 * the same validation to a hand-built struct that the parser applies to JSON,
 * so both routes reject the same bad values with the same messages.
 */
#ifndef RHEAP_CONFIG_H
#define RHEAP_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#ifndef RH_API
#define RH_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__SANITIZE_THREAD__)
/* ThreadSanitizer keeps its metadata at 0x3000_0000_0000..0x4000_0000_0000
 * and forbids application mappings up to 0x5500_0000_0000: use its low
 * application range instead. */
#define RH_DEFAULT_BASE 0x002000000000ull
#else
#define RH_DEFAULT_BASE 0x400000000000ull
#endif
#define RH_MAX_SERVERS 64
#define RH_MAX_SPARES 8
#define RH_HOST_MAX 256
#define RH_PATH_MAX 4096
#define RH_SECRET_MAX 128

/* Who serves a page fault on a disaggregated heap (docs/swap.md, "Waiting"). */
typedef enum rh_faults {
	RH_FAULTS_THREAD = 0, /* default: a fault thread; system calls may touch heap memory */
	RH_FAULTS_SIGNAL = 1, /* the faulting thread, from SIGBUS: faster, but a system call
	                       * given heap memory that is not resident fails with EFAULT */
} rh_faults;

typedef enum rh_order {
	RH_ORDER_DFS = 0, /* default: objects reached together are placed together */
	RH_ORDER_BFS = 1,
	/* DFS from each root in turn on a disaggregated heap too, where "dfs"
	 * places the roots' targets first (docs/collector.md, evac.P8). */
	RH_ORDER_DFS_STRICT = 2,
} rh_order;

/* What keeps an evicted page when a memory server is lost
 * (docs/resilience.md). */
typedef enum rh_redundancy {
	RH_REDUNDANCY_NONE = 0,      /* default: a lost memory server ends the program */
	RH_REDUNDANCY_REPLICATE = 1, /* each partition has a copy on the next server */
} rh_redundancy;

typedef struct rh_server_config {
	char host[RH_HOST_MAX];  /* "host" */
	uint16_t port;           /* "port" */
	uint64_t partition_size; /* "partition_size", bytes, multiple of the region size */
} rh_server_config;

typedef struct rh_config {
	/* "heap": { "base", "size", "region_size" } */
	uint64_t heap_base;   /* default RH_DEFAULT_BASE; aligned to region_size */
	uint64_t heap_size;   /* default 1 GiB; multiple of region_size */
	uint64_t region_size; /* 0 = chosen from heap_size; power of two 256 KiB..1 GiB */

	/* "cache": { "fraction", "faults", "fault_spin_us", "readahead", "readahead_adaptive",
	 *            "checksum" } */
	double cache_fraction;  /* share of the heap kept resident, (0, 1], default 1.0 */
	rh_faults faults;       /* "faults": "thread" | "signal" */
	uint32_t fault_spin_us; /* fault thread's polling after a fault, 0..10000, default 50 */
	uint32_t readahead;     /* evicted pages fetched after a faulting one, 0..64, default 8 */
	int readahead_adaptive; /* per region, grow the window on sequential faults and shrink
	                           it on others (1, default), or always use readahead (0) */
	int checksum; /* CRC32C of every page written back to a memory server, checked when
	                 it is fetched; a mismatch is fatal (1, default), or none (0) */

	/* "transport": { "provider", "timeout_ms" } */
	char provider[16];   /* "shm" (default), "tcp", "verbs" */
	uint32_t timeout_ms; /* dead-peer detection bound, default 2000 */

	/* "servers": [ {host, port, partition_size}, ... ]; empty = local heap */
	rh_server_config servers[RH_MAX_SERVERS];
	size_t n_servers;

	/* "gc": { ... } */
	uint32_t pause_budget_us; /* "pause_budget_ms" in JSON; default 10 ms */
	rh_order order;           /* "order": "dfs" | "bfs" | "dfs-strict" */
	double young_fraction; /* "young_fraction": eden share of free regions, (0,1), default 0.25 */
	double full_threshold; /* "full_threshold": free-region fraction below which a partial
                                  collection is followed by a full one, [0,1), default 0.15 */
	int offload;        /* "offload": tracers trace (1, default) or CPU server does all (0) */
	int tracer_threads; /* "tracer_threads": default 1 */
	int copy_threads;   /* "copy_threads": threads copying objects in a pause, 1..8;
	                       0 (default) = one per online CPU, at most 4 */
	int reorder; /* "reorder": evacuate in traversal order (1, default) or address order (0) */
	int verify;  /* "verify": run the heap verifier after every collection (0 default) */
	int concurrent_mark; /* "concurrent_mark": a local heap marks its old generation
	                        concurrently instead of in full collections (1, default) */
	int remark;          /* "remark": tracers remark before evacuating (1, default). Debug only:
	                0 exists so a test can show the objects the remark saves */
	int preclean;        /* "preclean": with offload on, dirty old pages are written back
	                        between pauses ahead of the tracers' full marking, so that its
	                        pause writes back less (1, default) */
	int pretouch;        /* "pretouch": on a local heap, a thread touches free regions'
	                        pages between pauses, up to the next eden and its survivors,
	                        so that pauses copy into pages already there (1, default) */
	int refresh;         /* "refresh": with offload on, pauses rebuild old regions'
	                        remembered sets from their cards, so that old garbage is seen
	                        without a full marking (1, default) */

	/* "redundancy": { "mode", "write_copies" } (docs/resilience.md) */
	rh_redundancy redundancy; /* "mode": "none" (default) | "replicate" */
	int write_copies; /* Debug only: 0 skips the writes to the copies (red.R1), so that a
	                     test can show the losses the copies survive (1, default) */
	/* "spares": [ {host, port}, ... ]: tracers started with --spare K that take a
	 * lost server's place (red.S1); partition_size unused */
	rh_server_config spares[RH_MAX_SPARES];
	size_t n_spares;

	/* "secret_file": path of a file (mode 0600 or stricter) holding the shared secret */
	char secret_file[RH_PATH_MAX];
	/* the secret itself, read from secret_file by rh_config_load; never logged */
	uint8_t secret[RH_SECRET_MAX];
	size_t secret_len;
} rh_config;

typedef struct rh_error rh_error;

RH_API void rh_config_default(rh_config *cfg);

/* Parse JSON text (NUL-terminated). On error returns RH_ECONFIG and fills err
 * with a message naming the key and the reason; cfg is then unspecified.
 * base_dir resolves a relative "secret_file" (NULL = current directory). */
RH_API int rh_config_parse(const char *json, const char *base_dir, rh_config *cfg, rh_error *err);

/* Load and parse a JSON file. */
RH_API int rh_config_load(const char *path, rh_config *cfg, rh_error *err);

/* Validate a config built by hand; fills in derived values (region_size 0). */
RH_API int rh_config_check(rh_config *cfg, rh_error *err);

/* The config as JSON (malloc'd string; the secret is never included). */
RH_API char *rh_config_to_json(const rh_config *cfg);

#ifdef __cplusplus
}
#endif
#endif
