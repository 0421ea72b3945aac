/* Intrusive doubly linked lists through members named next and prev, where
 * prev points at whatever points at the element (the head or the previous
 * element's next): O(1) removal without the head. Not thread-safe. */
#ifndef OC_LIST_H
#define OC_LIST_H

#define OC_LIST_PUSH(head, e)                  \
    do {                                       \
        (e)->next = *(head);                   \
        if ((e)->next != NULL)                 \
            (e)->next->prev = &(e)->next;      \
        (e)->prev = (head);                    \
        *(head) = (e);                         \
    } while (0)

#define OC_LIST_REMOVE(e)                      \
    do {                                       \
        *(e)->prev = (e)->next;                \
        if ((e)->next != NULL)                 \
            (e)->next->prev = (e)->prev;       \
    } while (0)

#endif
