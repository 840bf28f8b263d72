/*
 * test_slabs.c: slab class sizing (-f, -n, -I), slabs_clsid, the page
 * budget (-m, first page per class past the limit, -L), free list reuse,
 * cache_memlimit, page reassignment and `stats slabs` output.
 */
#include "config.h"
#include "slabs.h"
#include "tap.h"
#include "unit_support.h"
#include "item.h"
#include "settings.h"
#include "slab_class.h"

#include <stdlib.h>
#include <string.h>

static unsigned int align8(double size)
{
    unsigned int s = (unsigned int)size;
    return (s + 7) & ~7u;
}

/* memcached's largest class: half of its 1 MB page, or -I if smaller */
static unsigned int chunk_max_for(int item_max)
{
    return item_max < 512 * 1024 ? (unsigned int)item_max : 512 * 1024;
}

/* The sizes memcached 1.6.18's rule gives, computed independently: from
 * its 48-byte item header + -n, each class -f times the last (truncated,
 * then aligned), while below slab_chunk_max / -f; then slab_chunk_max;
 * then ours alone, -I (items memcached would chunk). */
static bool sizes_follow_rule(double factor, int chunk_size, int item_max)
{
    unsigned int largest = slabs_largest_clsid();
    unsigned int chunk_max = chunk_max_for(item_max);
    unsigned int size = 48 + (unsigned int)chunk_size;
    unsigned int id = 1;
    for (; size < chunk_max / factor; id++) {
        unsigned int want = align8(size);
        if (slabs_chunk_size(id) != want) {
            diag("class %u: %u, want %u", id, slabs_chunk_size(id), want);
            return false;
        }
        size = (unsigned int)(want * factor);
    }
    if (slabs_chunk_size(id) != chunk_max) {
        diag("class %u: %u, want slab_chunk_max %u", id,
             slabs_chunk_size(id), chunk_max);
        return false;
    }
    unsigned int want_largest = (unsigned int)item_max > chunk_max ? id + 1
                                                                  : id;
    return largest == want_largest
        && slabs_chunk_size(largest) == (unsigned int)item_max;
}

static void test_default_sizes(void)
{
    unit_settings_defaults();
    slabs_init(settings.maxbytes, settings.factor, false);
    unsigned int first = align8(48 + 48);
    ok(slabs_chunk_size(1) == first,
       "class 1 chunk is memcached's item header + 48 (%u)",
       slabs_chunk_size(1));
    ok(slabs_chunk_size(2) == align8((unsigned int)(first * 1.25)),
       "class 2 is 1.25 times larger, aligned (%u)", slabs_chunk_size(2));
    ok(sizes_follow_rule(1.25, 48, 1024 * 1024),
       "every class follows memcached's -f rule up to slab_chunk_max, "
       "then -I");
    unsigned int largest = slabs_largest_clsid();
    ok(largest == 40 && slabs_chunk_size(39) == 512 * 1024,
       "memcached's 39 classes, the last 512 KB, then ours (%u)", largest);
    ok(slabs_chunk_size(largest) == 1024 * 1024
       && slabs_chunks_per_page(largest) == 1,
       "largest class (%u) holds exactly item_size_max, one per page",
       largest);
    ok(slabs_chunks_per_page(1) == (1024 * 1024) / first,
       "chunks per page = page size / chunk size");
    ok(slabs_clsid(0) == 0, "size 0 has no class");
    ok(slabs_clsid(1) == 1 && slabs_clsid(first) == 1
       && slabs_clsid(first + 1) == 2, "sizes map to the smallest fit");
    ok(slabs_clsid(1024 * 1024) == largest
       && slabs_clsid(1024 * 1024 + 1) == 0,
       "item_size_max fits, one byte more does not");
    slabs_destroy();
}

static void test_custom_sizes(void)
{
    unit_settings_defaults();
    settings.factor = 2.0;
    settings.chunk_size = 100;
    settings.item_size_max = 4 * 1024 * 1024;
    settings.slab_page_size = 4 * 1024 * 1024;
    slabs_init(settings.maxbytes, settings.factor, false);
    ok(slabs_chunk_size(1) == align8(48 + 100),
       "-n 100 sets the first chunk (%u)", slabs_chunk_size(1));
    ok(sizes_follow_rule(2.0, 100, 4 * 1024 * 1024),
       "-f 2 doubles each class up to -I 4m");
    ok(slabs_chunk_size(slabs_largest_clsid()) == 4 * 1024 * 1024,
       "largest class is -I 4m");
    slabs_destroy();

    unit_settings_defaults();
    settings.factor = 1.01;
    slabs_init(settings.maxbytes, settings.factor, false);
    unsigned int largest = slabs_largest_clsid();
    bool increasing = true;
    for (unsigned int id = 2; id <= largest; id++) {
        increasing = increasing && slabs_chunk_size(id) > slabs_chunk_size(id - 1);
    }
    ok(largest <= POWER_LARGEST - 1 && increasing
       && slabs_chunk_size(largest) == 1024 * 1024,
       "-f 1.01 stays within %d classes, increasing, last = -I",
       POWER_LARGEST - 1);
    slabs_destroy();
}

static unsigned int fill_class(unsigned int id, void **out, unsigned int max)
{
    unsigned int n = 0;
    size_t size = slabs_chunk_size(id);
    while (n < max && (out[n] = slabs_alloc(size, id)) != NULL) {
        n++;
    }
    return n;
}

static void test_page_limit(void)
{
    enum { MAXCHUNKS = 200000 };
    void **chunks = calloc(MAXCHUNKS, sizeof(void *));
    unit_settings_defaults();
    size_t page = 1024 * 1024;
    slabs_init(4 * page, settings.factor, false);

    unsigned int per = slabs_chunks_per_page(1);
    unsigned int n = fill_class(1, chunks, MAXCHUNKS);
    ok(n == 4 * per && slabs_class_pages(1, SLAB_ZONE_DRAM) == 4,
       "-m 4 pages: class 1 gets exactly 4 pages (%u chunks)", n);
    void *extra = slabs_alloc(slabs_chunk_size(5), 5);
    ok(extra != NULL && slabs_class_pages(5, SLAB_ZONE_DRAM) == 1,
       "a class's first page is granted past the limit");
    void **more = calloc(MAXCHUNKS, sizeof(void *));
    unsigned int m = fill_class(5, more, MAXCHUNKS);
    free(more);
    ok(m == slabs_chunks_per_page(5) - 1,
       "but no second page (%u more chunks)", m);
    struct slabs_totals tot;
    slabs_get_totals(&tot);
    ok(tot.total_malloced == 5 * page, "total_malloced counts 5 pages");

    slabs_free(chunks[7], slabs_chunk_size(1), 1);
    ok(slabs_alloc(slabs_chunk_size(1), 1) == chunks[7],
       "a freed chunk is reused");
    ok(slabs_adjust_mem_limit(6 * page)
       && slabs_alloc(slabs_chunk_size(1), 1) != NULL
       && slabs_class_pages(1, SLAB_ZONE_DRAM) == 5,
       "cache_memlimit raises the budget");
    ok(settings.maxbytes == 6 * page, "cache_memlimit updates maxbytes");
    ok(slabs_alloc(slabs_chunk_size(1) + 1, 1) == NULL
       && slabs_alloc(10, 0) == NULL && slabs_alloc(10, 200) == NULL,
       "oversized requests and bad class ids get NULL");
    slabs_destroy();

    unit_settings_defaults();
    slabs_init(3 * page, settings.factor, true);
    n = fill_class(1, chunks, MAXCHUNKS);
    ok(n == 3 * per, "-L: the preallocated region holds 3 pages (%u)", n);
    ok(slabs_alloc(slabs_chunk_size(9), 9) == NULL,
       "-L: no page past the region, even a class's first");
    ok(!slabs_adjust_mem_limit(8 * page), "-L: the limit cannot be changed");
    slabs_destroy();
    free(chunks);
}

/* ---- reassignment with a stand-in evictor ---- */

static void **live;
static unsigned int nlive;

static unsigned int fake_evictor(unsigned int clsid, const void *start,
                                 const void *end, bool rescue)
{
    unsigned int freed = 0;
    for (unsigned int i = 0; i < nlive; i++) {
        const char *p = live[i];
        if (p != NULL && p >= (const char *)start && p < (const char *)end) {
            slabs_free(live[i], slabs_chunk_size(clsid), clsid);
            live[i] = NULL;
            freed++;
        }
    }
    return freed;
}

static void test_reassign(void)
{
    unit_settings_defaults();
    size_t page = 1024 * 1024;
    slabs_init(64 * page, settings.factor, false);
    live = calloc(100000, sizeof(void *));
    unsigned int per = slabs_chunks_per_page(1);
    /* Two full pages and a bit of a third. */
    nlive = 2 * per + 10;
    for (unsigned int i = 0; i < nlive; i++) {
        live[i] = slabs_alloc(slabs_chunk_size(1), 1);
    }
    ok(slabs_reassign(1, 1) == REASSIGN_SRC_DST_SAME, "src == dst refused");
    ok(slabs_reassign(-2, 2) == REASSIGN_BADCLASS
       && slabs_reassign(1, 99) == REASSIGN_BADCLASS, "bad class ids refused");
    ok(slabs_reassign(0, 2) == REASSIGN_NOSPARE,
       "class 0, the global page pool, has no page to spare");
    ok(slabs_reassign(3, 2) == REASSIGN_NOSPARE,
       "a class without a spare page refused");
    slabs_set_page_evictor(fake_evictor);
    ok(slabs_start_rebalance_thread() == 0, "rebalance thread starts");
    ok(slabs_reassign(1, 2) == REASSIGN_OK, "reassign 1 -> 2 accepted");
    slabs_rebalance_wait_idle();
    ok(slabs_class_pages(1, SLAB_ZONE_DRAM) == 2
       && slabs_class_pages(2, SLAB_ZONE_DRAM) == 1,
       "a page moved from class 1 to class 2");
    ok(slabs_class_free_chunks(2, SLAB_ZONE_DRAM) == slabs_chunks_per_page(2),
       "the moved page is carved into class 2 chunks");
    struct slabs_totals tot;
    slabs_get_totals(&tot);
    ok(tot.slabs_moved == 1 && !tot.reassign_running
       && tot.reassign_evictions == per,
       "slabs_moved 1, the page's %u items were evicted", per);
    ok(slabs_reassign(1, 0) == REASSIGN_OK, "reassign 1 -> global pool");
    slabs_rebalance_wait_idle();
    slabs_get_totals(&tot);
    ok(tot.global_pool_pages == 1 && slabs_class_pages(1, SLAB_ZONE_DRAM) == 1,
       "the global pool holds the page");
    void *p = slabs_alloc(slabs_chunk_size(7), 7);
    slabs_get_totals(&tot);
    ok(p != NULL && tot.global_pool_pages == 0,
       "a new page comes from the global pool first");

    struct stat_capture *cap = calloc(1, sizeof(*cap));
    slabs_stats(capture_stat, cap);
    char v[64];
    ok(captured_value(cap, "1:chunk_size", v, sizeof(v)) != NULL
       && (unsigned int)atoi(v) == slabs_chunk_size(1)
       && captured_value(cap, "1:free_chunks_end", v, sizeof(v)) != NULL
       && captured_value(cap, "2:touch_hits", v, sizeof(v)) != NULL
       && captured_value(cap, "active_slabs", v, sizeof(v)) != NULL
       && atoi(v) == 3
       && captured_value(cap, "total_malloced", v, sizeof(v)) != NULL,
       "stats slabs prints per-class lines, active_slabs, total_malloced");
    ok(captured_value(cap, "3:chunk_size", v, sizeof(v)) == NULL,
       "classes without pages are not listed");
    free(cap);
    slabs_stop_rebalance_thread();
    slabs_destroy();
    free(live);
}

int main(void)
{
    test_default_sizes();
    test_custom_sizes();
    test_page_limit();
    test_reassign();
    return done_testing();
}
