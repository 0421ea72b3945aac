#include "awp_fp.h"

#if defined(__x86_64__)
#include <xmmintrin.h>
#define FLUSH_BITS 0x8040u /* MXCSR: FTZ (bit 15), DAZ (bit 6) */

int awp_fp_flush_available(void)
{
    return 1;
}

unsigned long awp_fp_flush_begin(void)
{
    unsigned int saved = _mm_getcsr();
    _mm_setcsr(saved | FLUSH_BITS);
    return saved;
}

/* Only the mode bits: the exception flags the step raised stay for the caller. */
void awp_fp_flush_end(unsigned long saved)
{
    _mm_setcsr((_mm_getcsr() & ~FLUSH_BITS) | ((unsigned int)saved & FLUSH_BITS));
}

#elif defined(__aarch64__)
#define FLUSH_BITS (1ul << 24) /* FPCR.FZ: subnormal inputs and results */

int awp_fp_flush_available(void)
{
    return 1;
}

unsigned long awp_fp_flush_begin(void)
{
    unsigned long saved;
    __asm__ volatile("mrs %0, fpcr" : "=r"(saved));
    __asm__ volatile("msr fpcr, %0" : : "r"(saved | FLUSH_BITS));
    return saved;
}

void awp_fp_flush_end(unsigned long saved)
{
    __asm__ volatile("msr fpcr, %0" : : "r"(saved));
}

#else
int awp_fp_flush_available(void)
{
    return 0;
}

unsigned long awp_fp_flush_begin(void)
{
    return 0;
}

void awp_fp_flush_end(unsigned long saved)
{
    (void)saved;
}
#endif
