/* The CPU backend: 64-byte aligned host memory and the kernel table. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../device.h"
#include "kernels.h"

/* 64-byte aligned blocks cut from malloc'd ones, the malloc'd address kept just below the
 * block. Not aligned_alloc: glibc 2.36 (Debian 12) hands freed aligned chunks out again only
 * where they border free space, so a loop of `c = a + b` on 1 MB tensors grew past 4 GB with a
 * few MB alive (tests/lua/test_api.lua). Pinned (page-locked) memory comes from the GPU
 * backend, when there is one. */
/* A block of several MB asks for transparent huge pages where the system gives them on request
 * (/sys/kernel/mm/transparent_hugepage/enabled "madvise"): its first touch then faults 2 MB at
 * a time instead of 4 KB (AlexNet's 151 MB weight gradient, made anew each step: 37,000 faults) */
#define HUGE_PAGE ((uintptr_t)2 << 20)
static void huge_pages(char *p, size_t n)
{
    if (n < 4 * HUGE_PAGE) return;
    uintptr_t b = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1), e = ((uintptr_t)p + n) & ~(HUGE_PAGE - 1);
    if (e > b) madvise((void *)b, e - b, MADV_HUGEPAGE);
}

static void *cpu_alloc(int device_index, size_t nbytes, bool pinned)
{
    (void)device_index;
    if (pinned) return nn_gpu ? nn_gpu->host_alloc_pinned(nbytes) : NULL;
    size_t n = nbytes + 64 + sizeof(void *);
    char *raw = malloc(n);
    if (!raw && nn_reclaim_memory()) raw = malloc(n); /* dead tensors may hold it */
    if (!raw) return NULL;
    char *p = (char *)(((uintptr_t)raw + sizeof(void *) + 63) & ~(uintptr_t)63);
    ((void **)p)[-1] = raw;
    huge_pages(p, nbytes);
    return p;
}

static void cpu_free(int device_index, void *p, size_t nbytes, bool pinned)
{
    (void)device_index, (void)nbytes;
    if (pinned) nn_gpu->host_free_pinned(p);
    else if (p) free(((void **)p)[-1]);
}

static nn_status cpu_copy(void *dst, nn_device dst_dev, const void *src, nn_device src_dev, size_t n)
{
    if (dst_dev.type != NN_CPU || src_dev.type != NN_CPU) return nn_error(NN_ERR_DEVICE, "the CPU backend copies only host memory");
    memmove(dst, src, n);
    return NN_OK;
}

static nn_status cpu_synchronize(int device_index)
{
    (void)device_index;
    return NN_OK;
}

/* kind -> kernel; ops of kind NN have a kernel of their own, nn_cpu_<name> */
#define CPU_KERNEL_UNARY(name) nn_cpu_unary
#define CPU_KERNEL_BINARY(name) nn_cpu_binary
#define CPU_KERNEL_TERNARY(name) nn_cpu_ternary
#define CPU_KERNEL_REDUCE(name) nn_cpu_reduce
#define CPU_KERNEL_BLAS(name) nn_cpu_bmm
#define CPU_KERNEL_FILL(name) nn_cpu_fill
#define CPU_KERNEL_COPY(name) nn_cpu_copy
#define CPU_KERNEL_NN(name) nn_cpu_##name

const nn_backend nn_cpu_backend = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy = cpu_copy,
    .synchronize = cpu_synchronize,
    .kernels = {
#define X(name, kind, autocast, backward) [NN_OP_##name] = CPU_KERNEL_##kind(name),
#include "../ops.def"
#undef X
    },
};
