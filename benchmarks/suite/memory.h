/* What the benchmark process really holds in memory, read from the
 * kernel: anonymous, file-backed and shared resident pages
 * (/proc/self/status), and how many of the anonymous ones are heap pages
 * (mincore over the heap's reservation). On a disaggregated heap the
 * tracers' backing is a shared mapping (RssShmem), so RssAnon is the CPU
 * server's own memory: its page cache plus everything that is not heap.
 * See docs/benchmarks.md, "Memory columns". */
#ifndef RS_MEMORY_H
#define RS_MEMORY_H

#include <stdint.h>

typedef struct rs_mem {
	uint64_t rss_anon_kib, rss_file_kib, rss_shmem_kib;
	uint64_t heap_rss_kib;     /* resident pages of the heap reservation */
	uint64_t nonheap_anon_kib; /* rss_anon - heap_rss, never below 0 */
} rs_mem;

/* One reading. heap_size 0: no heap range, heap_rss stays 0. */
void rs_mem_read(rs_mem *m, uint64_t heap_base, uint64_t heap_size);
/* Raises each field of peak to at least the one in m. */
void rs_mem_max(rs_mem *peak, const rs_mem *m);

#endif
