/*
 * Node pools: the block's nodes first, then nodes from malloc, all distinct,
 * whole (ASan sees a write past one) and reused once put back; fini frees
 * the malloc'd ones (LeakSanitizer sees one it missed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "oc_pool.h"

enum { SIZE = 40, COUNT = 4, TAKEN = 7 };

static int in_block(const oc_pool_t *p, const void *node)
{
    return (uintptr_t)node >= (uintptr_t)p->block && (uintptr_t)node < (uintptr_t)p->block_end;
}

static void take(oc_pool_t *p, void **nodes, int n)
{
    for (int i = 0; i < n; i++) {
        nodes[i] = oc_pool_get(p);
        assert_non_null(nodes[i]);
        assert_true(((uintptr_t)nodes[i] & (_Alignof(max_align_t) - 1)) == 0);
        memset(nodes[i], i, SIZE);
        for (int j = 0; j < i; j++)
            assert_ptr_not_equal(nodes[i], nodes[j]);
    }
}

static void test_block_then_malloc(void **state)
{
    oc_pool_t p;
    void *first[TAKEN], *again[TAKEN];
    int from_block = 0;
    (void)state;
    assert_int_equal(oc_pool_init(&p, SIZE, COUNT), 0);
    take(&p, first, TAKEN);
    for (int i = 0; i < TAKEN; i++)
        from_block += in_block(&p, first[i]);
    assert_int_equal(from_block, COUNT);
    for (int i = 0; i < COUNT; i++) /* the block's go first */
        assert_true(in_block(&p, first[i]));
    for (int i = 0; i < TAKEN; i++)
        oc_pool_put(&p, first[i]);
    take(&p, again, TAKEN); /* the same nodes, none new */
    for (int i = 0; i < TAKEN; i++) {
        int found = 0;
        for (int j = 0; j < TAKEN; j++)
            found += again[i] == first[j];
        assert_int_equal(found, 1);
    }
    for (int i = 0; i < TAKEN; i++)
        oc_pool_put(&p, again[i]);
    oc_pool_fini(&p);
}

static void test_empty_block(void **state)
{
    oc_pool_t p;
    void *node;
    (void)state;
    assert_int_equal(oc_pool_init(&p, 1, 0), 0);
    node = oc_pool_get(&p);
    assert_non_null(node);
    memset(node, 0, sizeof(void *)); /* nodes hold at least a pointer */
    oc_pool_put(&p, node);
    oc_pool_fini(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_then_malloc),
        cmocka_unit_test(test_empty_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
