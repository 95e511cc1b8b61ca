/* swap/integrity.c alone: the per-page checksums the CPU server keeps of
 * what its memory servers hold (docs/swap.md, swap.I1-swap.I4).
 *
 * A fresh page is known to be zeros remotely; a page written back is
 * known by what was sent; any one flipped bit, anywhere in a page, is a
 * mismatch that reports both sums; a forgotten page (a tracer wrote it)
 * is learned by its next fetch and checked after that; a page back to
 * INIT is zeros again. CRC32C is checked against its standard vector.
 *
 * usage: test-integrity [--bench]   (--bench: also print the cost of one
 * page's sum, docs/benchmarks.md, "Page checksums")
 */
#include <isa-l/crc.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "swap/integrity.h"
#include "tests/common/check.h"

#define NP 8
#define PAGE 4096

static uint8_t page[PAGE], other[PAGE], zeros[PAGE];

/* Microseconds per 4 KiB page, three rounds of 100,000 pages. */
static void bench(void)
{
	uint32_t acc = 0;
	for (int r = 0; r < 3; r++) {
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int i = 0; i < 100000; i++) {
			page[i & (PAGE - 1)] ^= 1; /* a different page each time */
			acc += rh_integ_crc(page);
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double ns =
		        (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
		printf("# CRC32C of a 4 KiB page: %.3f us\n", ns / 1e3 / 100000);
	}
	CHECK(acc != 1, "the sums were used");
}

int main(int argc, char **argv)
{
	/* "123456789" -> 0xe3069283 is CRC32C's check value (RFC 3720);
	 * ISA-L leaves the final inversion to the caller. */
	unsigned c = ~crc32_iscsi((unsigned char *)"123456789", 9, 0xffffffffu);
	CHECK(c == 0xe3069283u, "crc32_iscsi is CRC32C (check value %#x)", c);

	rh_integ ig;
	CHECK(rh_integ_init(&ig, NP) == 0, "init %d pages", NP);
	uint32_t got = 0, want = 0;
	for (size_t i = 0; i < PAGE; i++)
		page[i] = (uint8_t)(i * 131 + 7);

	/* swap.I4: INIT pages are zeros on their memory server. */
	CHECK(rh_integ_check(&ig, 0, zeros, &got, &want), "a fresh page fetched as zeros passes");
	CHECK(!rh_integ_check(&ig, 1, page, &got, &want) && want == rh_integ_crc(zeros) &&
	              got == rh_integ_crc(page),
	      "a fresh page fetched as anything else fails, with both sums (%#x, %#x)", got, want);

	/* swap.I1: a write-back records what was sent. */
	rh_integ_written(&ig, 2, page);
	CHECK(rh_integ_check(&ig, 2, page, &got, &want), "a written page fetched intact passes");
	CHECK(rh_integ_check(&ig, 2, page, &got, &want), "and again: checking changes nothing");
	size_t missed = 0, tried = 0;
	for (size_t bit = 0; bit < PAGE * 8; bit += 97) {
		memcpy(other, page, PAGE);
		other[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		missed += rh_integ_check(&ig, 2, other, &got, &want);
		tried++;
	}
	CHECK(missed == 0, "every one-bit flip is caught (%zu of %zu missed)", missed, tried);
	memcpy(other, page, PAGE);
	other[PAGE - 1] ^= 0x80;
	CHECK(!rh_integ_check(&ig, 2, other, &got, &want) && want == rh_integ_crc(page),
	      "a flip in the last byte reports the written sum as wanted");
	CHECK(!rh_integ_check(&ig, 3, page, &got, &want), "other pages keep their own sums");

	/* swap.I3: a tracer may write it: nothing known, the next fetch
	 * learns it, and a change after that is caught. */
	rh_integ_forget(&ig, 2, 2);
	CHECK(rh_integ_check(&ig, 2, other, &got, &want), "a forgotten page passes any bytes");
	CHECK(rh_integ_check(&ig, 3, page, &got, &want), "forget covers the range given");
	CHECK(!rh_integ_check(&ig, 2, page, &got, &want) && want == rh_integ_crc(other),
	      "the bytes it first fetched are checked from then on");
	CHECK(!rh_integ_check(&ig, 4, page, &got, &want), "pages past the range keep theirs");

	/* swap.I4: freed, the range is zeros again. */
	rh_integ_zeroed(&ig, 2, 3);
	CHECK(rh_integ_check(&ig, 2, zeros, &got, &want) &&
	              rh_integ_check(&ig, 4, zeros, &got, &want),
	      "freed pages pass as zeros");
	CHECK(!rh_integ_check(&ig, 3, page, &got, &want), "and fail as anything else");
	CHECK(!rh_integ_check(&ig, NP - 1, page, &got, &want), "the last page is tracked too");
	rh_integ_free(&ig);
	rh_integ_free(&ig);
	CHECK(ig.sum == NULL && ig.known == NULL, "free twice is harmless");
	if (argc > 1 && !strcmp(argv[1], "--bench"))
		bench();
	return check_done();
}
