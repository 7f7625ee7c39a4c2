// The Gloo shim (see gloo_shim.h): a Gloo context over the nnrepl store, and the
// collectives with reduction functions for every nnrepl dtype.
#include "gloo_shim.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

extern "C" {
#include "dtype.h"
}

namespace {

constexpr uint8_t kP2PSlotPrefix = 0x20; // beyond Gloo's own collective prefixes

// Gloo's messages start with "[file:line] "; keep what follows.
void set_err(char *err, size_t errlen, const char *what, const char *msg)
{
    if (msg[0] == '[') {
        const char *close = std::strstr(msg, "] ");
        if (close) msg = close + 2;
    }
    std::snprintf(err, errlen, "gloo %s: %s", what, msg);
}

class Store : public gloo::rendezvous::Store {
  public:
    Store(const nn_gloo_store &s, double timeout) : s_(s), timeout_(timeout) {}
    void set(const std::string &key, const std::vector<char> &data) override
    {
        char err[512];
        if (s_.set(s_.ctx, key.c_str(), data.data(), data.size(), err, sizeof err)) throw gloo::IoException(err);
    }
    std::vector<char> get(const std::string &key) override
    {
        char err[512];
        void *v = nullptr;
        size_t n = 0;
        if (s_.get(s_.ctx, key.c_str(), timeout_, &v, &n, err, sizeof err)) throw gloo::IoException(err);
        std::vector<char> out(static_cast<char *>(v), static_cast<char *>(v) + n);
        std::free(v);
        return out;
    }
    void wait(const std::vector<std::string> &keys) override { wait(keys, std::chrono::milliseconds((long long)(timeout_ * 1000))); }
    void wait(const std::vector<std::string> &keys, const std::chrono::milliseconds &timeout) override
    {
        for (const auto &k : keys) {
            char err[512];
            void *v = nullptr;
            size_t n = 0;
            if (s_.get(s_.ctx, k.c_str(), timeout.count() / 1000.0, &v, &n, err, sizeof err)) throw gloo::IoException(err);
            std::free(v);
        }
    }

  private:
    nn_gloo_store s_;
    double timeout_;
};

// ---- element codecs: float16/bfloat16 compute in float and round to nearest even on store ----
template <typename T> struct Plain {
    typedef T S;
    typedef T C;
    static C load(S v) { return v; }
    static S store(C v) { return v; }
};
struct Half {
    typedef uint16_t S;
    typedef float C;
    static float load(uint16_t h)
    {
        uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
        if (e == 0) {
            if (m == 0) bits = sign;
            else { // subnormal: normalise
                int k = -1;
                do { m <<= 1; k++; } while (!(m & 0x400));
                bits = sign | (uint32_t)(127 - 15 - k) << 23 | (m & 0x3ff) << 13;
            }
        } else if (e == 31) bits = sign | 0x7f800000u | m << 13;
        else bits = sign | (e + 112) << 23 | m << 13;
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
    }
    static uint16_t store(float f)
    {
        uint32_t x;
        std::memcpy(&x, &f, 4);
        uint32_t sign = (x >> 16) & 0x8000;
        uint32_t ax = x & 0x7fffffffu;
        if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00); // NaN
        if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); // overflow to inf
        if (ax < 0x38800000u) { // subnormal or zero: round by adding in float
            float a;
            std::memcpy(&a, &ax, 4);
            a += 0.5f;
            uint32_t r;
            std::memcpy(&r, &a, 4);
            return (uint16_t)(sign | (r - 0x3f000000u));
        }
        uint32_t mant_odd = (ax >> 13) & 1;
        ax += 0xc8000fffu + mant_odd; // rebias exponent and round to nearest even
        return (uint16_t)(sign | (ax >> 13));
    }
};
struct BF16 {
    typedef uint16_t S;
    typedef float C;
    static float load(uint16_t b)
    {
        uint32_t bits = (uint32_t)b << 16;
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
    }
    static uint16_t store(float f)
    {
        uint32_t x;
        std::memcpy(&x, &f, 4);
        if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
        x += 0x7fff + ((x >> 16) & 1);
        return (uint16_t)(x >> 16);
    }
};

struct Sum { template <typename C> static C f(C a, C b) { return a + b; } };
struct Prod { template <typename C> static C f(C a, C b) { return a * b; } };
struct Min { template <typename C> static C f(C a, C b) { return (a != a || a < b) ? a : b; } }; // NaN propagates
struct Max { template <typename C> static C f(C a, C b) { return (a != a || a > b) ? a : b; } };
struct Or { template <typename C> static C f(C a, C b) { return (C)(a || b); } };
struct And { template <typename C> static C f(C a, C b) { return (C)(a && b); } };

template <typename K, typename Op> void reduce_fn(void *c, const void *a, const void *b, size_t n)
{
    typedef typename K::S S;
    S *C = static_cast<S *>(c);
    const S *A = static_cast<const S *>(a), *B = static_cast<const S *>(b);
    for (size_t i = 0; i < n; i++) C[i] = K::store(Op::f(K::load(A[i]), K::load(B[i])));
}

typedef void (*ReduceFn)(void *, const void *, const void *, size_t);

template <typename K> ReduceFn pick_op(int op)
{
    switch (op) {
    case 0: return reduce_fn<K, Sum>;
    case 2: return reduce_fn<K, Prod>;
    case 3: return reduce_fn<K, Min>;
    case 4: return reduce_fn<K, Max>;
    default: return nullptr;
    }
}

ReduceFn pick(int dtype, int op, size_t *elsize)
{
    switch (dtype) {
    case NN_F32: *elsize = 4; return pick_op<Plain<float>>(op);
    case NN_F64: *elsize = 8; return pick_op<Plain<double>>(op);
    case NN_F16: *elsize = 2; return pick_op<Half>(op);
    case NN_BF16: *elsize = 2; return pick_op<BF16>(op);
    case NN_I64: *elsize = 8; return pick_op<Plain<int64_t>>(op);
    case NN_I32: *elsize = 4; return pick_op<Plain<int32_t>>(op);
    case NN_I16: *elsize = 2; return pick_op<Plain<int16_t>>(op);
    case NN_I8: *elsize = 1; return pick_op<Plain<int8_t>>(op);
    case NN_U8: *elsize = 1; return pick_op<Plain<uint8_t>>(op);
    case NN_BOOL: // as PyTorch's Gloo: SUM and MAX are or, PRODUCT and MIN are and
        *elsize = 1;
        if (op == 0 || op == 4) return reduce_fn<Plain<uint8_t>, Or>;
        if (op == 2 || op == 3) return reduce_fn<Plain<uint8_t>, And>;
        return nullptr;
    default: return nullptr;
    }
}

} // namespace

struct nn_gloo {
    std::shared_ptr<gloo::rendezvous::Context> ctx;
    uint32_t tag = 0; // the same sequence on every rank: collectives run in the same order everywhere
};

#define GUARD(name, ...)                                            \
    try {                                                           \
        __VA_ARGS__;                                                \
        return 0;                                                   \
    } catch (const std::exception &e) {                             \
        set_err(err, errlen, name, e.what());                       \
        return -1;                                                  \
    } catch (...) {                                                 \
        set_err(err, errlen, name, "unknown C++ exception");        \
        return -1;                                                  \
    }

static nn_gloo *shim_create(const nn_gloo_store *store, const char *prefix, int rank, int size, const char *hostname,
                            const char *iface, double timeout, char *err, size_t errlen)
{
    try {
        gloo::transport::tcp::attr attr;
        if (iface && *iface) attr.iface = iface;
        else attr.hostname = hostname && *hostname ? hostname : "127.0.0.1";
        auto dev = gloo::transport::tcp::CreateDevice(attr);
        Store base(*store, timeout);
        gloo::rendezvous::PrefixStore ps(prefix, base);
        auto g = std::make_unique<nn_gloo>();
        g->ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
        g->ctx->setTimeout(std::chrono::milliseconds((long long)(timeout * 1000)));
        g->ctx->connectFullMesh(ps, dev);
        return g.release();
    } catch (const std::exception &e) {
        set_err(err, errlen, "connect", e.what());
    } catch (...) {
        set_err(err, errlen, "connect", "unknown C++ exception");
    }
    return nullptr;
}

// Gloo sizes elements by the pointer type: pass the buffer as an unsigned integer of the element's size.
template <typename Opts> void set_output(Opts &o, void *buf, size_t count, size_t es)
{
    switch (es) {
    case 1: o.template setOutput<uint8_t>(static_cast<uint8_t *>(buf), count); break;
    case 2: o.template setOutput<uint16_t>(static_cast<uint16_t *>(buf), count); break;
    case 4: o.template setOutput<uint32_t>(static_cast<uint32_t *>(buf), count); break;
    default: o.template setOutput<uint64_t>(static_cast<uint64_t *>(buf), count); break;
    }
}

static int shim_all_reduce(nn_gloo *g, void *buf, size_t count, int dtype, int op, char *err, size_t errlen)
{
    size_t es = 0;
    ReduceFn fn = pick(dtype, op, &es);
    if (!fn) { std::snprintf(err, errlen, "gloo all_reduce: reduce op %d is not supported for dtype %d", op, dtype); return -1; }
    uint32_t tag = g->tag++;
    if (count == 0) return 0;
    GUARD("all_reduce", {
        gloo::AllreduceOptions o(g->ctx);
        set_output(o, buf, count, es);
        o.setReduceFunction(fn);
        o.setTag(tag);
        gloo::allreduce(o);
    })
}

static int shim_reduce(nn_gloo *g, void *buf, size_t count, int dtype, int op, int root, char *err, size_t errlen)
{
    size_t es = 0;
    ReduceFn fn = pick(dtype, op, &es);
    if (!fn) { std::snprintf(err, errlen, "gloo reduce: reduce op %d is not supported for dtype %d", op, dtype); return -1; }
    uint32_t tag = g->tag++;
    if (count == 0) return 0;
    GUARD("reduce", {
        gloo::ReduceOptions o(g->ctx);
        set_output(o, buf, count, es);
        o.setRoot(root);
        o.setReduceFunction(fn);
        o.setTag(tag);
        gloo::reduce(o);
    })
}

static int shim_broadcast(nn_gloo *g, void *buf, size_t nbytes, int root, char *err, size_t errlen)
{
    uint32_t tag = g->tag++;
    if (nbytes == 0) return 0;
    GUARD("broadcast", {
        gloo::BroadcastOptions o(g->ctx);
        o.setOutput(static_cast<uint8_t *>(buf), nbytes);
        o.setRoot(root);
        o.setTag(tag);
        gloo::broadcast(o);
    })
}

static int shim_all_gather(nn_gloo *g, void *out, const void *in, size_t nbytes, char *err, size_t errlen)
{
    uint32_t tag = g->tag++;
    if (nbytes == 0) return 0;
    GUARD("all_gather", {
        gloo::AllgatherOptions o(g->ctx);
        o.setInput(const_cast<uint8_t *>(static_cast<const uint8_t *>(in)), nbytes);
        o.setOutput(static_cast<uint8_t *>(out), nbytes * g->ctx->size);
        o.setTag(tag);
        gloo::allgather(o);
    })
}

static int shim_barrier(nn_gloo *g, char *err, size_t errlen)
{
    uint32_t tag = g->tag++;
    GUARD("barrier", {
        gloo::BarrierOptions o(g->ctx);
        o.setTag(tag);
        gloo::barrier(o);
    })
}

struct p2p {
    std::unique_ptr<gloo::transport::UnboundBuffer> ub; // keeps its transport context alive
    bool send;
};

static void *post(nn_gloo *g, void *buf, size_t nbytes, int peer, int tag, bool send, char *err, size_t errlen)
{
    try {
        auto h = std::make_unique<p2p>();
        h->send = send;
        h->ub = g->ctx->createUnboundBuffer(buf, nbytes);
        uint64_t slot = gloo::Slot::build(kP2PSlotPrefix, (uint32_t)tag);
        if (send) h->ub->send(peer, slot);
        else h->ub->recv(peer, slot);
        return h.release();
    } catch (const std::exception &e) {
        set_err(err, errlen, send ? "send" : "recv", e.what());
    } catch (...) {
        set_err(err, errlen, send ? "send" : "recv", "unknown C++ exception");
    }
    return nullptr;
}

static void *shim_post_send(nn_gloo *g, const void *buf, size_t nbytes, int dst, int tag, char *err, size_t errlen)
{
    return post(g, const_cast<void *>(buf), nbytes, dst, tag, true, err, errlen);
}

static void *shim_post_recv(nn_gloo *g, void *buf, size_t nbytes, int src, int tag, char *err, size_t errlen)
{
    return post(g, buf, nbytes, src, tag, false, err, errlen);
}

static int shim_wait_p2p(void *handle, double timeout, char *err, size_t errlen)
{
    std::unique_ptr<p2p> h(static_cast<p2p *>(handle));
    GUARD(h->send ? "send" : "recv", {
        auto ms = std::chrono::milliseconds((long long)(timeout * 1000));
        if (h->send) h->ub->waitSend(ms);
        else h->ub->waitRecv(ms);
    })
}

static void shim_destroy(nn_gloo *g)
{
    try {
        delete g;
    } catch (...) {
    }
}

static const nn_gloo_api api = {
    NN_GLOO_SHIM_VERSION, shim_create, shim_all_reduce, shim_broadcast, shim_reduce,
    shim_all_gather, shim_barrier, shim_post_send, shim_post_recv, shim_wait_p2p, shim_destroy,
};

extern "C" __attribute__((visibility("default"))) const nn_gloo_api *nn_gloo_shim_api(void) { return &api; }
