/* A one-file program built against an installed offcoll through pkg-config. */
#include <stdio.h>

#include <offcoll.h>

int main(void)
{
    oc_context_t *ctx;
    if (oc_init(NULL, &ctx) != OC_OK) {
        fprintf(stderr, "oc_init: %s\n", oc_last_error());
        return 1;
    }
    printf("linked offcoll %d.%d.%d: %s\n", OC_VERSION_MAJOR, OC_VERSION_MINOR,
           OC_VERSION_PATCH, oc_context_backend_info(ctx));
    return oc_finalize(ctx) == OC_OK ? 0 : 1;
}
