/*
 * The endpoint cache: every address found again with its endpoint, however
 * alike the addresses (a UCX worker address differs from its neighbours' in
 * a few bytes), and short chains as it grows team by team, which is what
 * keeps creating a team of n members O(n).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "oc_ep_cache.h"

enum { ADDR_LEN = 300, TEAMS = 20, PER_TEAM = 1000 };

static oc_nic_ep_t *ep_of(size_t i)
{
    return (oc_nic_ep_t *)(uintptr_t)(i + 1);
}

/* Alike addresses: a common header, a process id and a counter. */
static void make_addr(unsigned char *a, size_t i)
{
    memset(a, 0x5a, ADDR_LEN);
    memcpy(a + 17, &i, sizeof(i));
    a[ADDR_LEN - 1] = (unsigned char)(i * 7);
}

static void add(oc_ep_cache_t *c, const void *addr, size_t len, size_t i)
{
    oc_ep_entry_t *e = oc_ep_entry_new(addr, len);
    assert_non_null(e);
    e->ep = ep_of(i);
    oc_ep_cache_insert(c, e);
}

static void test_lengths_and_prefixes(void **state)
{
    static const char *addrs[] = {"abc", "abcd", "ab", "abc\0", "bac", "x"};
    static const size_t lens[] = {3, 4, 2, 4, 3, 1};
    oc_ep_cache_t c = {0};
    size_t i;
    (void)state;

    assert_null(oc_ep_cache_find(&c, "abc", 3));
    assert_int_equal(oc_ep_cache_reserve(&c, 6), OC_OK);
    for (i = 0; i < 6; i++) {
        assert_null(oc_ep_cache_find(&c, addrs[i], lens[i]));
        add(&c, addrs[i], lens[i], i);
    }
    for (i = 0; i < 6; i++) {
        oc_ep_entry_t *e = oc_ep_cache_find(&c, addrs[i], lens[i]);
        assert_non_null(e);
        assert_ptr_equal(e->ep, ep_of(i));
    }
    assert_null(oc_ep_cache_find(&c, "abcde", 5));
    assert_null(oc_ep_cache_find(&c, "y", 1));
    assert_int_equal(c.count, 6);
    oc_ep_cache_clear(&c);
    assert_null(c.buckets);
    assert_int_equal(c.count, 0);
    assert_null(oc_ep_cache_find(&c, "abc", 3));
}

/* Teams of PER_TEAM members, each new team bringing PER_TEAM / 2 new peers
 * and meeting the others again, as teams split from one world do. */
static void test_growth_by_teams(void **state)
{
    oc_ep_cache_t c = {0};
    unsigned char a[ADDR_LEN];
    size_t t, k, i, b, found_again = 0, longest = 0, next = 0;
    (void)state;

    for (t = 0; t < TEAMS; t++) {
        assert_int_equal(oc_ep_cache_reserve(&c, PER_TEAM), OC_OK);
        size_t room = c.nbuckets;
        for (k = 0; k < PER_TEAM; k++) {
            size_t id = k % 2 == 0 && next > 0 ? (t * 7919 + k) % next : next++;
            oc_ep_entry_t *e;
            make_addr(a, id);
            e = oc_ep_cache_find(&c, a, ADDR_LEN);
            if (e != NULL) {
                assert_ptr_equal(e->ep, ep_of(id));
                found_again++;
            } else {
                add(&c, a, ADDR_LEN, id);
            }
        }
        assert_int_equal(c.nbuckets, room); /* the inserts did not grow the table */
    }
    assert_int_equal(c.count, next);
    assert_true(found_again > 0);
    assert_true(c.nbuckets >= c.count && (c.nbuckets & (c.nbuckets - 1)) == 0);
    for (i = 0; i < next; i++) {
        oc_ep_entry_t *e;
        make_addr(a, i);
        e = oc_ep_cache_find(&c, a, ADDR_LEN);
        assert_non_null(e);
        assert_ptr_equal(e->ep, ep_of(i));
    }
    for (b = 0; b < c.nbuckets; b++) {
        size_t len = 0;
        oc_ep_entry_t *e;
        for (e = c.buckets[b]; e != NULL; e = e->next)
            len++;
        if (len > longest)
            longest = len;
    }
    /* At one entry per bucket or fewer a good hash leaves chains of a few;
     * a linear list would be one chain of all. */
    assert_true(longest <= 12);
    oc_ep_cache_clear(&c);
}

static void test_reserve_refused(void **state)
{
    oc_ep_cache_t c = {0};
    (void)state;

    assert_int_equal(oc_ep_cache_reserve(&c, 1), OC_OK);
    add(&c, "a", 1, 0);
    assert_int_equal(oc_ep_cache_reserve(&c, SIZE_MAX), OC_ERR_NO_MEMORY);
    assert_int_equal(oc_ep_cache_reserve(&c, SIZE_MAX / 8), OC_ERR_NO_MEMORY);
    assert_non_null(oc_ep_cache_find(&c, "a", 1));
    assert_int_equal(c.count, 1);
    oc_ep_cache_clear(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lengths_and_prefixes),
        cmocka_unit_test(test_growth_by_teams),
        cmocka_unit_test(test_reserve_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
