/* The CPU backend: 64-byte aligned host memory and the kernel table. */
#include <stdlib.h>
#include <string.h>

#include "../device.h"
#include "kernels.h"

/* Pinned (page-locked) memory comes from the GPU backend, when there is one. */
static void *cpu_alloc(int device_index, size_t nbytes, bool pinned)
{
    (void)device_index;
    if (pinned) return nn_gpu ? nn_gpu->host_alloc_pinned(nbytes) : NULL;
    return aligned_alloc(64, (nbytes + 63) & ~(size_t)63);
}

static void cpu_free(int device_index, void *p, size_t nbytes, bool pinned)
{
    (void)device_index, (void)nbytes;
    if (pinned) nn_gpu->host_free_pinned(p);
    else free(p);
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
