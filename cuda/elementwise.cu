/* CUDA ternary elementwise: where(cond, a, b) with broadcasting.
 * i[0] is the result dtype; cond is bool or uint8 (any nonzero byte is true).
 * When a and b already have out's dtype the kernel moves raw bits by element
 * size; otherwise it converts through double/int64 as engine/cpu/elementwise.c
 * does. 0-dim CPU operands are converted to out's dtype on the host. */
#include <string.h>

#include "complex_hooks.cuh"
#include "ew.cuh"

using namespace nnk;

namespace {

template <int W> struct bits;
template <> struct bits<1> { typedef uint8_t type; };
template <> struct bits<2> { typedef uint16_t type; };
template <> struct bits<4> { typedef uint32_t type; };
template <> struct bits<8> { typedef uint64_t type; };

/* Operand<uint64_t>: val holds a host value's bits in out's dtype (cond: 0/1) */
template <int W>
__global__ void where_same(char *out, Operand<uint64_t> c, Operand<uint64_t> a, Operand<uint64_t> b, int64_t n, Geo<4> g)
{
    typedef typename bits<W>::type B;
    const bool cv = c.mode == IN_VALUE, av = a.mode == IN_VALUE, bv = b.mode == IN_VALUE, cval = c.val != 0;
    const B aval = (B)a.val, bval = (B)b.val;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[4];
        geo_offsets<4>(g, i, off);
        bool t = cv ? cval : *(const uint8_t *)(c.p + off[1]) != 0;
        B v;
        if (t) v = av ? aval : *(const B *)(a.p + off[2]);
        else v = bv ? bval : *(const B *)(b.p + off[3]);
        *(B *)(out + off[0]) = v;
    }
}

__device__ __forceinline__ void put_bits(char *p, int es, uint64_t v)
{
    switch (es) {
    case 1: *(uint8_t *)p = (uint8_t)v; break;
    case 2: *(uint16_t *)p = (uint16_t)v; break;
    case 4: *(uint32_t *)p = (uint32_t)v; break;
    default: *(uint64_t *)p = v; break;
    }
}

__device__ __forceinline__ uint64_t get_bits(const char *p, int es)
{
    switch (es) {
    case 1: return *(const uint8_t *)p;
    case 2: return *(const uint16_t *)p;
    case 4: return *(const uint32_t *)p;
    default: return *(const uint64_t *)p;
    }
}

__global__ void where_generic(char *out, int dto, int es, Operand<uint64_t> c, Operand<uint64_t> a, Operand<uint64_t> b,
                              int64_t n, Geo<4> g)
{
    const bool ints = !is_float_dt(dto);
    const bool cv = c.mode == IN_VALUE, av = a.mode == IN_VALUE, bv = b.mode == IN_VALUE, cval = c.val != 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[4];
        geo_offsets<4>(g, i, off);
        bool t = cv ? cval : *(const uint8_t *)(c.p + off[1]) != 0;
        char *d = out + off[0];
        if (t ? av : bv) {
            put_bits(d, es, t ? a.val : b.val);
            continue;
        }
        const char *src = t ? a.p + off[2] : b.p + off[3];
        int dt = t ? a.dt : b.dt;
        if (dt == dto) put_bits(d, es, get_bits(src, es));
        else if (ints) st_i64(d, dto, ld_i64(src, dt));
        else st_f64(d, dto, ld_f64(src, dt));
    }
}

Operand<uint64_t> where_operand(const nn_tensor *t, char *p, nn_dtype dto, bool cond)
{
    Operand<uint64_t> o{p, 0, IN_TENSOR, t->dtype};
    if (!host_scalar(t)) return o;
    o.mode = IN_VALUE;
    if (cond) {
        o.val = *(const uint8_t *)nn_data(t) != 0;
        return o;
    }
    unsigned char buf[8] = {0};
    if (nn_dtype_is_integral(dto)) nn_store_i64(buf, dto, nn_load_i64(nn_data(t), t->dtype));
    else nn_store_f64(buf, dto, nn_load_f64(nn_data(t), t->dtype));
    memcpy(&o.val, buf, 8);
    return o;
}

} // namespace

extern "C" nn_status nn_cuda_ternary(const nn_kargs *a)
{
    if (a->op != NN_OP_where) return nn_not_implemented(a, a->out[0]->dtype);
    if (nn_cuda_any_complex(a)) return nn_cuda_complex_where(a);
    nn_tensor *ops[4] = {a->out[0], a->in[0], a->in[1], a->in[2]};
    nn_iter it;
    nn_iter_init(&it, 4, ops);
    int64_t n = iter_numel(it);
    if (!n) return NN_OK;
    nn_dtype dto = a->out[0]->dtype;
    int es = (int)nn_dtype_size(dto);
    Operand<uint64_t> c = where_operand(a->in[0], it.data[1], dto, true);
    Operand<uint64_t> x = where_operand(a->in[1], it.data[2], dto, false);
    Operand<uint64_t> y = where_operand(a->in[2], it.data[3], dto, false);
    cudaStream_t s = nn_cuda_stream(nn_cuda_index(a));
    bool same = (x.mode == IN_VALUE || x.dt == (int)dto) && (y.mode == IN_VALUE || y.dt == (int)dto);
    Geo<4> g = geo_of<4>(it);
    unsigned blocks = blocks_for(n);
    if (same) {
        switch (es) {
        case 1: nn_launch<where_same<1>>(blocks, 256, s, it.data[0], c, x, y, n, g); break;
        case 2: nn_launch<where_same<2>>(blocks, 256, s, it.data[0], c, x, y, n, g); break;
        case 4: nn_launch<where_same<4>>(blocks, 256, s, it.data[0], c, x, y, n, g); break;
        default: nn_launch<where_same<8>>(blocks, 256, s, it.data[0], c, x, y, n, g); break;
        }
    } else {
        nn_launch<where_generic>(blocks, 256, s, it.data[0], dto, es, c, x, y, n, g);
    }
    NN_CHECK_LAUNCH();
    return NN_OK;
}
