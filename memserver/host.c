#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "memserver/host.h"

static int make_memfd(const char *name, uint64_t size, rh_error *err)
{
	int fd = memfd_create(name, MFD_CLOEXEC);
	if (fd < 0)
		return -rh_err_errno(err, RH_EIO, "tracer: memfd_create(%s)", name);
	if (ftruncate(fd, (off_t)size) < 0) {
		rh_err_errno(err, RH_ENOMEM, "tracer: sizing %s to %llu bytes", name,
		             (unsigned long long)size);
		close(fd);
		return -RH_ENOMEM;
	}
	return fd;
}

/* A memfd of size bytes mapped at base. */
static void *map_at(const char *name, uint64_t base, uint64_t size, int *fd_out, uint32_t i,
                    rh_error *err)
{
	int fd = make_memfd(name, size, err);
	if (fd < 0)
		return NULL;
	void *p = mmap((void *)base, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE,
	               fd, 0);
	if (p == MAP_FAILED || p != (void *)base) {
		int e = errno;
		if (p != MAP_FAILED)
			munmap(p, size);
		close(fd);
		/* The range comes from the config: say which key moves it. */
		rh_err_set(err, e == EEXIST ? RH_EBUSY : RH_EIO,
		           "tracer: cannot map %s %u at [%#llx, %#llx): %s; %s",
		           strcmp(name, "rheap-partition") ? "the copy of partition" : "partition",
		           i, (unsigned long long)base, (unsigned long long)(base + size),
		           strerror(e),
		           e == EEXIST ? "the range is taken in the tracer's process: choose "
		                         "another heap.base in the config"
		                       : "check heap.base and heap.size in the config");
		return NULL;
	}
	*fd_out = fd;
	return p;
}

int rh_host_open(rh_host *h, const rh_config *cfg, uint32_t i, rh_error *err)
{
	memset(h, 0, sizeof *h);
	h->data_fd = h->meta_fd = h->rdata_fd = -1;
	if (rh_partition_of(cfg, i, &h->part) < 0)
		return rh_err_set(err, RH_ECONFIG, "tracer: --index %u: the config has %zu servers",
		                  i, cfg->n_servers);
	h->region_size = cfg->region_size;
	h->pinned = strcmp(cfg->provider, "verbs") == 0;
	void *p = map_at("rheap-partition", h->part.base, h->part.size, &h->data_fd, i, err);
	if (!p) {
		rh_host_close(h);
		return err ? err->code : RH_EIO;
	}
	h->data = p;
	int kept = rh_replica_kept_by(cfg, i);
	if (kept >= 0) {
		rh_partition_of(cfg, (uint32_t)kept, &h->rpart);
		p = map_at("rheap-replica", h->rpart.base, h->rpart.size, &h->rdata_fd,
		           (uint32_t)kept, err);
		if (!p) {
			rh_host_close(h);
			return err ? err->code : RH_EIO;
		}
		h->rdata = p;
	}
	int fd = make_memfd("rheap-meta", h->part.meta_size, err);
	if (fd < 0) {
		rh_host_close(h);
		return -fd;
	}
	h->meta_fd = fd;
	p = mmap(NULL, h->part.meta_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		rh_err_errno(err, RH_EIO, "tracer: cannot map the metadata area");
		rh_host_close(h);
		return RH_EIO;
	}
	h->meta = p;
	h->part.meta_base = (uint64_t)(uintptr_t)p;
	return RH_OK;
}

void rh_host_close(rh_host *h)
{
	if (h->data)
		munmap(h->data, h->part.size);
	if (h->rdata)
		munmap(h->rdata, h->rpart.size);
	if (h->rdata_fd >= 0)
		close(h->rdata_fd);
	h->rdata = NULL;
	h->rdata_fd = -1;
	if (h->meta)
		munmap(h->meta, h->part.meta_size);
	if (h->data_fd >= 0)
		close(h->data_fd);
	if (h->meta_fd >= 0)
		close(h->meta_fd);
	h->data = NULL;
	h->meta = NULL;
	h->data_fd = h->meta_fd = -1;
}

static bool in_part(const rh_partition *p, uint32_t region)
{
	return p->n_regions && region >= p->first_region && region - p->first_region < p->n_regions;
}

int rh_host_free_region(rh_host *h, uint32_t region, rh_error *err)
{
	/* red.P2: a freed region's copy goes too. */
	bool copy = h->rdata && in_part(&h->rpart, region);
	if (!copy && !in_part(&h->part, region))
		return rh_err_set(
		        err, RH_ERANGE,
		        "tracer: FREE of region %u, outside partition %u (regions %u..%u)%s",
		        region, h->part.index, h->part.first_region,
		        h->part.first_region + h->part.n_regions - 1,
		        h->rdata ? " and the copy it keeps" : "");
	const rh_partition *p = copy ? &h->rpart : &h->part;
	uint32_t local = region - p->first_region;
	off_t off = (off_t)local * (off_t)h->region_size;
	if (h->pinned) {
		/* A verbs memory region pins the pages it was registered with:
		 * punching would leave RDMA writing to pages this mapping no
		 * longer shows (the marking would read zeros). Zero in place;
		 * the memory stays allocated (docs/swap.md). */
		memset((char *)(copy ? h->rdata : h->data) + off, 0, h->region_size);
		return RH_OK;
	}
	if (fallocate(copy ? h->rdata_fd : h->data_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	              off, (off_t)h->region_size) < 0)
		return rh_err_errno(err, RH_EIO, "tracer: punching region %u", region);
	h->punched_bytes += h->region_size;
	/* Tag and log head keep counting: versions and log positions never
	 * repeat, so a reader holding an old position is never fooled. */
	return RH_OK;
}

uint64_t rh_host_copy_resident(const rh_host *h)
{
	struct stat st;
	if (h->rdata_fd < 0 || fstat(h->rdata_fd, &st) < 0)
		return 0;
	return (uint64_t)st.st_blocks * 512;
}

uint64_t rh_host_resident(const rh_host *h)
{
	struct stat st;
	if (h->data_fd < 0 || fstat(h->data_fd, &st) < 0)
		return 0;
	return (uint64_t)st.st_blocks * 512;
}

uint64_t rh_host_regions_used(const rh_host *h)
{
	if (h->data_fd < 0)
		return 0;
	uint64_t n = 0, size = h->part.size;
	off_t off = 0;
	/* Hop from data to data: holes (never written or punched regions)
	 * cost one call each, however large. */
	while ((uint64_t)off < size) {
		off_t d = lseek(h->data_fd, off, SEEK_DATA);
		if (d < 0)
			break;
		n++;
		off = (off_t)(((uint64_t)d / h->region_size + 1) * h->region_size);
	}
	return n;
}
