/* Generation sizing and the pause model (sizing.h, docs/collector.md,
 * "Sizing").
 *
 * Eden is about the size of the old generation (young data is allocated in
 * proportion to what survives), at least 8 MiB, at most what the pause
 * budget allows at the measured costs and survival rate, and young_fraction
 * of the free space. The old generation may grow to full_growth (2 to 8)
 * times what the last full collection found live before the next full one.
 */
#include <math.h>

#include "runtime/gc_int.h"

#define MIB (1024ull * 1024)

uint64_t rh_sizing_old_used(const rh_heap *h)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < h->n_regions; i++) {
		const rh_region *r = &h->regions[i];
		if (r->kind == RH_REGION_OLD || r->kind == RH_REGION_HUMONGOUS)
			n += r->top - r->start;
	}
	return n;
}

/* Bytes in eden regions (the survivor regions a pause left among them). */
static uint64_t eden_used(const rh_heap *h)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < h->n_regions; i++)
		if (h->regions[i].kind == RH_REGION_EDEN)
			n += rh_young_bytes(&h->regions[i]);
	return n;
}

/* Whether `regions` fewer free regions would leave fewer than
 * gc.full_threshold of the heap's free (collect.c, short_of_room). */
static bool short_after(const rh_heap *h, double regions)
{
	return (double)h->n_free - regions < (double)h->n_regions * h->cfg.full_threshold;
}

/* How far the old generation may grow before a full collection. */
static uint64_t old_bound(const rh_heap *h)
{
	uint64_t bound = (uint64_t)(h->sz.full_growth * (double)h->sz.live_after_full);
	return bound > 16 * MIB ? bound : 16 * MIB;
}

/* Would the partial collection due now leave the old generation past its
 * bound? Then the pause collects everything at once rather than copying
 * eden's survivors and tracing them again in the full collection that
 * would follow. Survivors are counted as if all promoted: the full
 * collection may come a pause early, never a pause late. (With offloading
 * on, a full collection is the tracers' and leaves eden alone; with
 * concurrent marking, the old generation is marked behind the mutators.) */
bool rh_sizing_full_foreseen(const rh_heap *h)
{
	if (h->offload_on || h->cm.on)
		return false;
	return rh_sizing_old_used(h) + (uint64_t)(h->sz.survival * (double)eden_used(h)) >
	       old_bound(h);
}

/* Twice gc.full_threshold of the regions plus an eden. */
static double room_low_bound(const rh_heap *h)
{
	return (double)h->n_regions * h->cfg.full_threshold * 2 + h->eden_limit;
}

/* Fewer regions free than room_low_bound. */
static bool room_low(const rh_heap *h)
{
	return (double)h->n_free < room_low_bound(h);
}

/* full_growth at its floor after a full marking (sizing.F1's exception). */
static bool growth_at_floor(const rh_heap *h)
{
	return h->sz.live_after_full && h->sz.full_growth <= 2;
}

/* sizing.F1: with offloading on, an old generation past its bound takes
 * the tracers' full marking, which stops the world (write-back, marking,
 * fillers: 150-1500 ms on this machine), where a local heap marks
 * concurrently. The memory servers hold the old generation and CSSCs
 * reclaim its regions from their markings, so growth alone does not call
 * for one: it runs when the free room falls to sizing.C1's threshold, or,
 * once a full marking has run, while full_growth is at its floor (no
 * marking found more than three quarters of its set live, or one since
 * found less than half: a program whose old data dies, as the window
 * workload's batches do, is marked as before). */
static bool marking_pays(const rh_heap *h)
{
	return room_low(h) || growth_at_floor(h);
}

/* sizing.F2: the full marking sizing.F1 lets through, projected ahead:
 * the old generation past its bound and the room low (or the floor case),
 * or the free regions below gc.full_threshold, which forces one (collect.c,
 * short_of_room). Ahead means RH_SZ_NEAR_PAUSES partial pauses at the
 * averaged growth per pause, and at least half the room sizing.C1 keeps
 * (and a quarter more old data): a small eden makes pauses frequent and
 * four of them too short for the cleaner. Only the cleaner ahead of the
 * marking asks (preclean.c): a wrong guess costs a pass of write-backs,
 * never a collection. */
bool rh_sizing_full_near(const rh_heap *h)
{
	const rh_sizing *sz = &h->sz;
	double k = RH_SZ_NEAR_PAUSES;
	double thr = (double)h->n_regions * h->cfg.full_threshold;
	double low = room_low_bound(h);
	double margin = k * (sz->free_step > 0 ? sz->free_step : 0);
	if (margin < low / 2)
		margin = low / 2;
	double n_free = (double)h->n_free - margin;
	double old = (double)rh_sizing_old_used(h);
	double grown = old + k * (sz->old_step > 0 ? sz->old_step : 0);
	if (grown < old * 1.25)
		grown = old * 1.25;
	return n_free < thr ||
	       (grown > (double)old_bound(h) && (n_free < low || growth_at_floor(h)));
}

/* sizing.F3: the tracers' concurrent full marking begins where the room
 * would run out before it ends, judged from the free regions lost per
 * partial pause. */
bool rh_sizing_short_within(const rh_heap *h, double k)
{
	double step = h->sz.free_step > 0 ? h->sz.free_step : 0;
	return short_after(h, k * step);
}

/* The growth sizing.F2 projects: measured from the end of one pause to the
 * end of the next partial one. */
static void track_growth(rh_gc *g)
{
	rh_heap *h = g->h;
	rh_sizing *sz = &h->sz;
	uint64_t old = rh_sizing_old_used(h);
	if (g->kind == RH_GC_PARTIAL && sz->steps_valid) {
		sz->old_step = 0.5 * sz->old_step + 0.5 * ((double)old - (double)sz->old_prev);
		sz->free_step =
		        0.5 * sz->free_step + 0.5 * ((double)sz->free_prev - (double)h->n_free);
	}
	sz->old_prev = old;
	sz->free_prev = h->n_free;
	sz->steps_valid = true;
}

/* sizing.C1: a cycle starts while twice gc.full_threshold of the regions
 * plus an eden are still free, as G1 starts marking at an occupancy
 * threshold, once the partial collections have taken every old region the
 * last marking found worth collecting (G1's mixed phase ends the same way).
 * Started only when the old generation outgrew its bound, a program whose
 * data grows (listscan) filled the heap first, and a full collection
 * stopped the world for 168 ms. Started whatever the candidates, a small
 * heap (8 MiB, rhscheme's tail calls) was always under the threshold: one
 * cycle followed another, old regions stayed put while each ran (partial
 * collections take none then), and the heap filled with garbage. */
bool rh_sizing_mark_due(const rh_heap *h)
{
	return room_low(h) && (h->sz.old_cands == 0 || rh_sizing_pressed(h));
}

static double avg(double old, double now);

/* Free regions a partial pause takes while no old region is reclaimed
 * (cmark.C2: none while a cycle marks): eden's expected survivors. The
 * averaged loss (free_step) is net of what mixed pauses reclaimed, so it
 * serves only where it is larger. */
static double young_step(const rh_heap *h)
{
	double step = (double)h->eden_limit * h->sz.survival;
	return step > h->sz.free_step ? step : h->sz.free_step;
}

/* sizing.C2: a cycle needs the room its own partial pauses take, and one
 * pause more. */
bool rh_sizing_pressed(const rh_heap *h)
{
	return h->cm.on && short_after(h, (h->sz.cycle_pauses + 1) * young_step(h));
}

/* sizing.C3: the pause under way, reclaiming no old region, would leave
 * the free regions below gc.full_threshold, and the scrub of `bytes` fits
 * in what it has left. */
bool rh_sizing_finish_now(const rh_heap *h, uint64_t bytes)
{
	return short_after(h, young_step(h)) &&
	       (double)bytes * h->sz.scrub_ns_per_byte <= rh_sizing_old_room_ns(h, eden_used(h));
}

void rh_sizing_scrubbed(rh_heap *h, uint64_t bytes, uint64_t ns)
{
	if (bytes)
		h->sz.scrub_ns_per_byte = avg(h->sz.scrub_ns_per_byte, (double)ns / (double)bytes);
}

double rh_sizing_old_cost(const rh_heap *h, uint64_t live_bytes, uint64_t cards)
{
	return (double)live_bytes * h->sz.copy_ns_per_byte + (double)cards * h->sz.card_ns;
}

/* Free regions kept mapped (region.c): enough for the next eden and the
 * copies of its expected survivors, so that neither the mutator nor the
 * pause faults pages in, but no more (they count in RSS, and on a
 * disaggregated heap in the page cache). sizing.W1: the pool shrinks by
 * one region a pause, not to the new need at once: eden's limit swings
 * between 1 and 6 regions from one pause to the next when survival is
 * high, and a pool cut to a small eden's need dropped the regions the
 * next, larger eden took back cold, every first write to them a stall
 * inside the allocating thread. A disaggregated heap's warm regions take
 * page-cache room that its cache fraction bounds: its pool follows the
 * need as before. */
static void set_warm_limit(rh_heap *h, double surv)
{
	uint32_t copies = (uint32_t)(h->eden_limit * surv + 0.999) + 2;
	uint32_t need = h->eden_limit + copies;
	h->warm_reserve = h->pt.gate.on ? copies : 0; /* pretouch.P4 */
	if (!h->swap && h->warm_limit > need + 1)
		need = h->warm_limit - 1;
	h->warm_limit = need;
}

static double avg(double old, double now)
{
	return 0.5 * old + 0.5 * now;
}

/* A decaying variance around a trend, d being the newest sample's
 * distance from it (sizing.E2, sizing.E3). */
static void decay_var(double *var, double d)
{
	*var = 0.7 * *var + 0.3 * d * d;
}

/* sizing.M1: each cost is measured on its own part of the pause. Copying
 * used to be timed from the start of the roots, so a program with many
 * remembered cards (pagerank: 20k cards, 9 ms, at every pause) looked
 * three times as expensive per byte; eden shrank, the pauses multiplied
 * and each paid the cards again. */
static void measure(rh_gc *g)
{
	rh_sizing *sz = &g->h->sz;
	if (g->copied_bytes > 65536) {
		double c = (double)g->evac_ns / (double)g->copied_bytes;
		decay_var(&sz->copy_var, c - sz->copy_ns_per_byte);
		sz->copy_ns_per_byte = avg(sz->copy_ns_per_byte, c);
	}
	if (g->cards >= 64)
		sz->card_ns = avg(sz->card_ns, (double)g->cards_ns / (double)g->cards);
	sz->cards = avg(sz->cards, (double)g->cards);
	sz->fixed_ns = avg(sz->fixed_ns, (double)(g->roots_ns - g->cards_ns + g->reclaim_ns));
	if (g->eden_bytes) {
		double s = (double)g->copied_bytes / (double)g->eden_bytes;
		sz->last_survival = s < 1 ? s : 1;
		decay_var(&sz->surv_var, sz->last_survival - sz->survival);
		sz->survival = avg(sz->survival, sz->last_survival);
	}
}

/* sizing.T1: survivors are promoted at once while what survived one pause
 * nearly all survives the next and the pause spends at least a quarter of
 * its copying time on remembered cards: old objects pointing at new ones
 * (pagerank's vertices at their rank boxes, lru's entries) are the data
 * structure's updates, which live on, and every pause that ages them scans
 * their cards again. Promoted at once, pagerank copied 156 MB instead of
 * 300 MB. Young data referenced from young data (gcbench's temporary trees
 * under construction) is aged as before: promoted, its garbage grew the
 * old generation and peak RSS (58-98 MiB against 40-58). Every PROBE
 * pauses one pause ages survivors again, so that the next measures the
 * rate anew. */
#define PROMOTE_RATE 0.8
#define PROBE 8
/* sizing.T2: a structure built over many pauses (listscan's partitions,
 * 20 pauses at 100 % survival) is promoted at once too, cards or not:
 * aged, each of its bytes was copied three times. A temporary structure
 * (gcbench's and binary-trees' trees) is built within a pause or two and
 * dies, so it never keeps all it aged for STREAK pauses in a row. */
#define KEEP_RATE 0.95
#define STREAK 4
/* sizing.T3: while a probe measures the rate again, survivor space is its
 * floor (evac.c, surv_alloc) and the rest is promoted as before: aged
 * whole, a probe in listscan's scans left 30 MiB of survivors that the
 * next pause copied again, with their cards, in a 74 ms pause. */
static void choose_tenure(rh_gc *g)
{
	rh_sizing *sz = &g->h->sz;
	/* A whole region: a survivor region's tail filler keeps its bytes
	 * under it, so one-region edens (1 MiB regions at a 10 ms budget)
	 * never measure the rate. Measured at half a region, binary-trees
	 * promoted its temporary trees under construction and peaked 12-30 %
	 * higher, for 40 % less GC time (docs/collector.md, sizing.T1). */
	if (g->age_in[1] >= g->h->region_size) {
		double rate = (double)g->aged[1] / (double)g->age_in[1];
		bool carded = g->cards_ns * 4 >= g->evac_ns;
		sz->streak = rate >= KEEP_RATE ? sz->streak + 1 : 0;
		bool built = sz->streak >= STREAK;
		uint32_t t = rate >= PROMOTE_RATE && (carded || built) ? 1 : RH_TENURE;
		if (t != sz->tenure)
			rh_log(RH_LOG_DEBUG, "gc",
			       "tenure %u: %.0f %% of survivors aged 1 survived", t, 100 * rate);
		sz->tenure = t;
		sz->probe = PROBE;
		sz->probing = false;
	} else if (sz->tenure == 1 && --sz->probe == 0) {
		/* sizing.T3: a sample is enough to measure the rate. */
		sz->tenure = RH_TENURE;
		sz->probing = true;
	}
}

/* sizing.O2: the share of the budget a pressed pause plans to fill; the
 * rest absorbs the copying cost's spread. */
#define OLD_ROOM 0.85

/* The fixed part of a partial pause and its cards, predicted. */
static double fixed_part_ns(const rh_heap *h)
{
	return h->sz.fixed_ns + h->sz.cards * h->sz.card_ns;
}

/* sizing.E4: while most of eden survives (the trend at HIGH_SURVIVAL or
 * more), the young pause aims at AIM_LOW of the budget, or at AMORTIZE
 * times its fixed part and cards where that is longer; otherwise, and
 * never beyond, at RH_SZ_PAUSE_SHARE (sizing.E1). A larger eden pays where
 * objects die young, by letting them die; where a program builds the data
 * it keeps, it only copies more at once, and ages more: survivor space
 * follows eden's size (evac.c, surv_alloc), so more of the structure was
 * copied twice. Aimed at 30 % of 50 ms in that case, cc, pagerank, lru and
 * mtree copied 10-20 % fewer bytes, spent less time in GC and paused
 * 25-45 % shorter at the 99th percentile, locally and at 50 and 25 %
 * cache (docs/benchmarks.md, "The pause aim"). Where most of eden dies
 * (binary-trees, gcbench after their first pauses), eden's size is what
 * lets it die, and the aim stays where it was. Below AMORTIZE times the
 * fixed part each pause would pay its cards again for little copying,
 * and below AIM_MIN_NS the costs of a pause the model does not count
 * (stopping the mutators, cold caches) took over: at a 10 ms budget the
 * 3 ms aim cost cc and pagerank 20-40 % more GC time than 5 ms. */
#define AIM_LOW 0.3
#define AMORTIZE 3.0
#define HIGH_SURVIVAL 0.5
#define AIM_MIN_NS 5e6
static double aim_ns(const rh_heap *h)
{
	double budget = (double)h->cfg.pause_budget_us * 1000.0;
	double low = h->sz.survival >= HIGH_SURVIVAL ? AIM_LOW : RH_SZ_PAUSE_SHARE;
	double aim = AMORTIZE * fixed_part_ns(h);
	if (aim < budget * low)
		aim = budget * low;
	if (aim < AIM_MIN_NS)
		aim = AIM_MIN_NS;
	if (aim > budget * RH_SZ_PAUSE_SHARE)
		aim = budget * RH_SZ_PAUSE_SHARE;
	return aim;
}

/* sizing.E1: the young pause predicted, fixed part + cards + copying,
 * stays within the aim (sizing.E4, at most RH_SZ_PAUSE_SHARE of the
 * budget), and copying within RH_SZ_YOUNG_SHARE / RH_SZ_PAUSE_SHARE of
 * the aim; the copying share never falls below a tenth of the budget, so
 * a program whose cards alone fill it still gets an eden worth a pause. */
static double copy_room_ns(const rh_heap *h)
{
	double budget = (double)h->cfg.pause_budget_us * 1000.0;
	double aim = aim_ns(h);
	double room = aim - fixed_part_ns(h);
	if (room > aim * (RH_SZ_YOUNG_SHARE / RH_SZ_PAUSE_SHARE))
		room = aim * (RH_SZ_YOUNG_SHARE / RH_SZ_PAUSE_SHARE);
	if (room < budget * 0.1)
		room = budget * 0.1;
	return room;
}

/* sizing.E2: eden is planned at the survival trend (E1), and also kept
 * small enough that survival two standard deviations above the trend (a
 * decaying variance) still fits within TAIL_SHARE of the budget (scaled
 * with the aim, sizing.E4). listscan's
 * survival swings between 0.3 and 0.8 from pause to pause: an eden sized
 * at 0.34 copied 22 MiB in a 75 ms pause against a 50 ms budget. Planning
 * every eden at the trend plus a deviation instead cost binary-trees a
 * fifth more pauses and 8-20 % of its run time, where the tail bound does
 * not bind. */
#define TAIL_SHARE 0.85
static double tail_survival(const rh_sizing *sz)
{
	double s = sz->survival + 2 * sqrt(sz->surv_var);
	return s > 1 ? 1 : s < 0.02 ? 0.02 : s;
}

static double tail_bytes(const rh_heap *h)
{
	const rh_sizing *sz = &h->sz;
	/* As far beyond the aim as TAIL_SHARE is beyond RH_SZ_PAUSE_SHARE. */
	double ns = aim_ns(h) * (TAIL_SHARE / RH_SZ_PAUSE_SHARE) - fixed_part_ns(h);
	/* sizing.E3: copied at a cost two deviations above its trend. A
	 * copy into a region written before costs about a quarter of one
	 * into a fresh region (each page's first write, region.P4), and a
	 * pause whose warm pool fell short copied 40 MiB in 44 ms where the
	 * one before had copied 28 MiB in 9: planned at the trend alone, an
	 * eden sized after cheap pauses made the next one expensive. */
	double rate = sz->copy_ns_per_byte + 2 * sqrt(sz->copy_var);
	double bytes = ns / rate - sz->surv_bytes;
	return bytes > (double)h->region_size ? bytes : (double)h->region_size;
}

static void size_eden(rh_gc *g)
{
	rh_heap *h = g->h;
	uint64_t old = rh_sizing_old_used(h);
	rh_sizing *sz = &h->sz;
	/* The worse of the trend and the last pause: survival jumps when a
	 * program starts building long-lived data. */
	double surv = sz->survival > sz->last_survival ? sz->survival : sz->last_survival;
	if (surv < 0.02)
		surv = 0.02;
	/* The survivor regions this pause leaves are in the next set too
	 * and are copied again (counted whole): their bytes come off the
	 * share first, averaged over pauses, since eden shrinks when they
	 * are many and the next pause leaves fewer. */
	uint64_t sb = h->n_surv ? eden_used(h) : 0;
	sz->surv_bytes = avg(sz->surv_bytes, (double)sb);
	double room = copy_room_ns(h) / sz->copy_ns_per_byte - sz->surv_bytes;
	if (room < (double)h->region_size * surv)
		room = (double)h->region_size * surv;
	double by_pause = room / surv;
	double by_tail = tail_bytes(h) / tail_survival(sz);
	if (by_pause > by_tail)
		by_pause = by_tail;
	double by_free = h->cfg.young_fraction * (double)h->n_free * (double)h->region_size;
	double target = (double)(old > 8 * MIB ? old : 8 * MIB);
	if (target > by_pause)
		target = by_pause;
	if (target > by_free)
		target = by_free;
	uint32_t limit = (uint32_t)(target / (double)h->region_size);
	h->eden_limit = limit ? limit : 1;
	set_warm_limit(h, surv);
	if (g->kind == RH_GC_PARTIAL && old > old_bound(h) && (!h->offload_on || marking_pays(h)))
		sz->full_due = true;
}

/* A stopped marking (a full collection) that finds most of what it
 * covered live (a program building its long-lived data) came too early:
 * let the old generation grow further before the next. One that frees
 * most of it comes back toward the default. sizing.G1: a concurrent
 * cycle's finding never lets it grow: the doubling spares a program a
 * stopped pause per doubling of its structure, which a cycle does not
 * cost, and a cycle that came while a temporary structure was being
 * built (binary-trees' stretch tree) found it live, doubled the bound,
 * and the next trees were promoted and died in the old generation until
 * it reached 4.6 times the live data (docs/collector.md, "Sizing"). */
void rh_sizing_marked(rh_heap *h, uint64_t live, uint64_t set, bool stopped)
{
	rh_sizing *sz = &h->sz;
	sz->live_after_full = live;
	sz->full_due = false;
	if (set) {
		double share = (double)live / (double)set;
		if (share > 0.75 && sz->full_growth < 8 && stopped)
			sz->full_growth *= 2;
		else if (share < 0.5 && sz->full_growth > 2)
			sz->full_growth /= 2;
	}
}

double rh_sizing_old_room_ns(const rh_heap *h, uint64_t eden_bytes)
{
	const rh_sizing *sz = &h->sz;
	double budget = (double)h->cfg.pause_budget_us * 1000.0;
	double spent = (double)(rh_now_ns() - sz->pause_t0);
	double eden = (double)eden_bytes * sz->survival * sz->copy_ns_per_byte;
	return budget * OLD_ROOM - spent - fixed_part_ns(h) - eden;
}

void rh_sizing_cycle_done(rh_heap *h, uint64_t pauses)
{
	h->sz.cycle_pauses = avg(h->sz.cycle_pauses, (double)pauses);
}

void rh_sizing_after(rh_gc *g)
{
	if (g->kind == RH_GC_FULL) {
		rh_sizing_marked(g->h, g->h->marker.bytes_marked, g->set_bytes, true);
	} else {
		measure(g);
		choose_tenure(g);
	}
	size_eden(g);
	track_growth(g);
}

void rh_sizing_init(rh_heap *h)
{
	rh_sizing *sz = &h->sz;
	sz->copy_ns_per_byte = 3.0; /* until measured */
	sz->card_ns = 300.0;
	sz->survival = 0.2;
	sz->full_growth = 2.0;
	sz->tenure = RH_TENURE;
	sz->cycle_pauses = 3;        /* until a cycle is measured */
	sz->scrub_ns_per_byte = 0.1; /* until a scrub in a pause is */
	/* Until the first collection measures anything: 4 MiB of eden, or
	 * young_fraction of the heap if that is smaller, or what the young
	 * share of the pause budget copies at the assumed cost if all of it
	 * survives. A program's first pause often does copy nearly all of
	 * eden (it is building its data), and from a cold heap: gcbench's
	 * first pause, 4 MiB all live, took 7-9 ms where its later ones
	 * copy 1 MiB per millisecond. */
	double eden = (double)h->size * h->cfg.young_fraction;
	if (eden > 4.0 * MIB)
		eden = 4.0 * MIB;
	double by_pause =
	        (double)h->cfg.pause_budget_us * 1000.0 * RH_SZ_YOUNG_SHARE / sz->copy_ns_per_byte;
	if (eden > by_pause)
		eden = by_pause;
	h->eden_limit = (uint32_t)(eden / (double)h->region_size);
	if (h->eden_limit < 1)
		h->eden_limit = 1;
	set_warm_limit(h, sz->survival);
}
