/* The caching device allocator, after PyTorch's and cutorch's.
 *
 * cudaMalloc and cudaFree are slow and synchronise the device, so memory is
 * taken from the driver in segments and kept. A segment is cut into blocks;
 * a request is rounded up (512 B), served by the best-fitting free block of
 * the same device, stream and pool (small requests, <= 1 MiB, share 2 MiB
 * segments; large ones get their own segment of at least 20 MiB, or the
 * request rounded to 2 MiB), and the rest of the block is split off. A freed
 * block merges with free neighbours in its segment. Blocks are tied to the
 * stream they were allocated on, so reuse needs no synchronisation; a block
 * also used on another stream (record_stream) is reused only after an event
 * recorded on each such stream at free time has completed.
 *
 * Out of memory: free every cached whole segment, retry once, then fail with
 * what was asked for and what is in use.
 *
 * CUDA graphs: while a graph captures on a stream, that stream's requests are
 * served from the graph's private pool (nn_cuda_pool), whose blocks carry the
 * pool as their stream key, so nothing else reuses memory a replay writes. A
 * pool's free segments stay reserved while a graph uses it and are given back
 * to the driver when the last one goes. */
#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "core.cuh"

namespace {

constexpr size_t kRound = 512, kSmall = 1 << 20, kSmallSegment = 2 << 20, kLargeSegment = 20 << 20, kMinLargeSplit = 1 << 20;

struct Block {
    nn_cuda_pool *pool = nullptr; /* a graph's private pool, or none */
    int device;
    cudaStream_t stream;
    size_t size;
    char *ptr;
    bool allocated = false, small;
    Block *prev = nullptr, *next = nullptr; /* neighbours in the segment */
    std::vector<cudaStream_t> uses;          /* other streams (record_stream) */
    int pending = 0;                         /* events not yet complete */
};

struct Order {
    bool operator()(const Block *a, const Block *b) const
    {
        if (a->stream != b->stream) return (uintptr_t)a->stream < (uintptr_t)b->stream;
        if (a->size != b->size) return a->size < b->size;
        return (uintptr_t)a->ptr < (uintptr_t)b->ptr;
    }
};

struct DeviceCache {
    std::set<Block *, Order> small, large;
    std::unordered_map<void *, Block *> live;
    /* record_stream's events, per stream in the order recorded (so they complete in that
     * order), and the stream's completed ones to record again */
    struct StreamEvents {
        std::deque<std::pair<cudaEvent_t, Block *>> q;
        std::vector<cudaEvent_t> spare;
    };
    std::map<cudaStream_t, StreamEvents> events;
    nn_gpu_memory_stats stats{};
};

std::mutex lock;
DeviceCache caches[NN_GPU_MAX];
int capturing; /* graphs capturing now: no cudaFree meanwhile */

/* the capture in progress on a device, if any */
struct Capture {
    nn_cuda_pool *pool = nullptr;
    cudaStream_t stream = nullptr;
} captures[NN_GPU_MAX];

size_t round_size(size_t n) { return n < kRound ? kRound : (n + kRound - 1) / kRound * kRound; }
std::set<Block *, Order> &pool_of(DeviceCache &c, bool small) { return small ? c.small : c.large; }

bool pool_dead(const Block *b);

/* a whole free segment back to the driver (a queued op may still use it: flushed first) */
void free_segment(DeviceCache &c, Block *b)
{
    nn_small_flush_all();
    cudaFree(b->ptr);
    c.stats.num_device_free++;
    c.stats.reserved -= b->size;
    delete b;
}

void give_back(DeviceCache &c, Block *b) /* a free block into its pool, merged with free neighbours */
{
    b->allocated = false;
    auto &pool = pool_of(c, b->small);
    for (Block *n : {b->prev, b->next}) {
        if (!n || n->allocated || n->pending) continue;
        pool.erase(n);
        if (n == b->prev) {
            b->ptr = n->ptr;
            b->prev = n->prev;
            if (b->prev) b->prev->next = b;
        } else {
            b->next = n->next;
            if (b->next) b->next->prev = b;
        }
        b->size += n->size;
        delete n;
    }
    if (pool_dead(b) && !b->prev && !b->next && !capturing) { /* a whole segment of a pool no graph uses */
        free_segment(c, b);
        return;
    }
    pool.insert(b);
}

/* Blocks whose streams are done with them go back to the pool. Each stream's events are
 * looked at in order up to the first one not complete: an allocation costs a query a
 * stream, not one per block in flight (DataParallel frees dozens of them a step). */
void process_events(DeviceCache &c)
{
    for (auto &se : c.events) {
        auto &q = se.second.q;
        while (!q.empty()) {
            if (cudaEventQuery(q.front().first) == cudaErrorNotReady) {
                cudaGetLastError();
                break;
            }
            se.second.spare.push_back(q.front().first);
            Block *b = q.front().second;
            q.pop_front();
            if (--b->pending == 0) give_back(c, b);
        }
    }
}

/* cudaFree the free blocks that are a whole segment and that `which` picks */
template <class Which> void release_segments(DeviceCache &c, Which which)
{
    for (auto *pool : {&c.small, &c.large})
        for (auto it = pool->begin(); it != pool->end();) {
            Block *b = *it;
            if (!b->prev && !b->next && which(b)) {
                it = pool->erase(it);
                free_segment(c, b);
            } else ++it;
        }
}

/* every cached segment no live graph pool holds */
void release_cached(DeviceCache &c)
{
    release_segments(c, [](const Block *b) { return !b->pool || pool_dead(b); });
}

} // namespace

struct nn_cuda_pool {
    int device;
    int users; /* graphs holding it */
};

namespace {
bool pool_dead(const Block *b) { return b->pool && b->pool->users == 0; }
} // namespace

nn_cuda_pool *nn_cuda_pool_new(int device) { return new nn_cuda_pool{device, 1}; }

void nn_cuda_pool_retain(nn_cuda_pool *p)
{
    std::lock_guard<std::mutex> g(lock);
    p->users++;
}

/* The last user gone: the pool's whole free segments go back to the driver now, the
 * others as their last tensors are freed. The pool record itself is kept (blocks
 * still point at it); it is small. */
void nn_cuda_pool_release(nn_cuda_pool *p)
{
    std::lock_guard<std::mutex> g(lock);
    if (--p->users > 0 || capturing) return;
    release_segments(caches[p->device], [p](const Block *b) { return b->pool == p; });
}

int nn_cuda_captures(void)
{
    std::lock_guard<std::mutex> g(lock);
    return capturing;
}

void nn_cuda_pool_capture(int device, nn_cuda_pool *p, cudaStream_t s)
{
    std::lock_guard<std::mutex> g(lock);
    capturing += p ? 1 : -1;
    captures[device] = Capture{p, s};
}

/* One try: nullptr with *oom set when the driver has no memory left even after the
 * cache was given back. */
static void *alloc_once(int device, size_t n, bool *oom)
{
    std::lock_guard<std::mutex> g(lock);
    DeviceCache &c = caches[device];
    nn_cuda_device *d = nn_cuda_dev(device);
    if (!d) return nullptr;
    cudaStream_t stream = d->current; /* not nn_cuda_stream: an allocation launches no queued small op */
    nn_cuda_pool *gpool = captures[device].pool && captures[device].stream == stream ? captures[device].pool : nullptr;
    if (gpool) stream = (cudaStream_t)gpool; /* the pool's blocks are keyed by the pool */
    process_events(c);
    size_t size = round_size(n);
    bool small = size <= kSmall;
    auto &pool = pool_of(c, small);
    Block key;
    key.stream = stream;
    key.size = size;
    key.ptr = nullptr;
    Block *b = nullptr;
    auto it = pool.lower_bound(&key);
    if (it != pool.end() && (*it)->stream == stream) {
        b = *it;
        pool.erase(it);
    } else {
        size_t seg = small ? kSmallSegment : size < kLargeSegment ? kLargeSegment : (size + kSmallSegment - 1) / kSmallSegment * kSmallSegment;
        void *p = nullptr;
        cudaError_t e = cudaMalloc(&p, seg);
        if (e == cudaErrorMemoryAllocation && !capturing) {
            cudaGetLastError();
            c.stats.num_alloc_retries++;
            nn_small_flush_all();
            cudaDeviceSynchronize();
            process_events(c);
            release_cached(c);
            e = cudaMalloc(&p, seg);
        }
        if (e != cudaSuccess) {
            cudaGetLastError();
            *oom = true;
            return nullptr;
        }
        c.stats.reserved += seg;
        c.stats.num_device_alloc++;
        if (c.stats.reserved > c.stats.max_reserved) c.stats.max_reserved = c.stats.reserved;
        b = new Block();
        b->pool = gpool;
        b->device = device;
        b->stream = stream;
        b->size = seg;
        b->ptr = (char *)p;
        b->small = small;
    }
    size_t rest = b->size - size;
    if (rest >= (small ? kRound : kMinLargeSplit)) { /* split the remainder off as a free block */
        Block *r = new Block();
        r->pool = b->pool;
        r->device = device;
        r->stream = stream;
        r->size = rest;
        r->ptr = b->ptr + size;
        r->small = small;
        r->prev = b;
        r->next = b->next;
        if (b->next) b->next->prev = r;
        b->next = r;
        b->size = size;
        pool.insert(r);
    }
    b->allocated = true;
    c.live[b->ptr] = b;
    c.stats.allocated += b->size;
    if (c.stats.allocated > c.stats.max_allocated) c.stats.max_allocated = c.stats.allocated;
    return b->ptr;
}

void *nn_cuda_alloc(int device, size_t n)
{
    bool oom = false;
    void *p = alloc_once(device, n, &oom);
    /* tensors that died since the scripting layer's last collection may hold the memory
     * (not while a graph captures: its frees would go to the graph's pool) */
    if (oom && !nn_cuda_captures() && nn_reclaim_memory()) {
        oom = false;
        p = alloc_once(device, n, &oom);
    }
    if (!oom) return p;
    std::lock_guard<std::mutex> g(lock);
    DeviceCache &c = caches[device];
    size_t free_b = 0, total = 0;
    cudaMemGetInfo(&free_b, &total);
    c.stats.num_ooms++;
    nn_error(NN_ERR_NOMEM,
             "CUDA out of memory. Tried to allocate %.2f MiB. GPU %d has a total capacity of %.2f GiB of which %.2f MiB is "
             "free. Of the allocated memory %.2f MiB is allocated by tensors and %.2f MiB is reserved but unallocated.",
             n / 1048576.0, device, total / 1073741824.0, free_b / 1048576.0, c.stats.allocated / 1048576.0,
             (c.stats.reserved - c.stats.allocated) / 1048576.0);
    return nullptr;
}

void nn_cuda_free(int device, void *p)
{
    if (!p) return;
    std::lock_guard<std::mutex> g(lock);
    DeviceCache &c = caches[device];
    auto it = c.live.find(p);
    if (it == c.live.end()) return;
    Block *b = it->second;
    c.live.erase(it);
    c.stats.allocated -= b->size;
    if (b->uses.empty()) {
        give_back(c, b);
        return;
    }
    nn_small_flush_all(); /* the events below follow every op queued on those streams */
    int now = -1; /* an event is recorded on a stream of its own device (else: an error, and the sync below) */
    cudaGetDevice(&now);
    if (now != device) cudaSetDevice(device);
    for (cudaStream_t s : b->uses) { /* reuse only once the other streams are done with it */
        auto &se = c.events[s];
        cudaEvent_t e = nullptr;
        if (!se.spare.empty()) e = se.spare.back(), se.spare.pop_back();
        else if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) e = nullptr;
        if (!e || cudaEventRecord(e, s) != cudaSuccess) {
            cudaGetLastError();
            if (e) cudaEventDestroy(e);
            cudaStreamSynchronize(s);
            continue;
        }
        b->pending++;
        se.q.push_back({e, b});
    }
    if (now != device && now >= 0) cudaSetDevice(now);
    b->uses.clear();
    b->allocated = false;
    if (!b->pending) give_back(c, b);
}

nn_status nn_cuda_record_stream_ptr(void *p, cudaStream_t s)
{
    std::lock_guard<std::mutex> g(lock);
    for (auto &c : caches) {
        auto it = c.live.find(p);
        if (it == c.live.end()) continue;
        Block *b = it->second;
        if (s != b->stream) b->uses.push_back(s);
        return NN_OK;
    }
    return nn_error(NN_ERR_ARG, "record_stream: pointer not allocated by the CUDA caching allocator");
}

extern "C" nn_status nn_cuda_memory_stats(int index, nn_gpu_memory_stats *s)
{
    if (index < 0) index = nn_gpu->current_device();
    if (index >= NN_GPU_MAX) return nn_error(NN_ERR_DEVICE, "invalid device index %d", index);
    std::lock_guard<std::mutex> g(lock);
    *s = caches[index].stats;
    return NN_OK;
}

extern "C" void nn_cuda_reset_peak(int index)
{
    if (index < 0) index = nn_gpu->current_device();
    std::lock_guard<std::mutex> g(lock);
    auto &st = caches[index].stats;
    st.max_allocated = st.allocated;
    st.max_reserved = st.reserved;
}

extern "C" nn_status nn_cuda_empty_cache(void)
{
    nn_cuda_host_empty_cache(); /* and the pinned host blocks no copy uses */
    std::lock_guard<std::mutex> g(lock);
    for (int d = 0; d < NN_GPU_MAX; d++) {
        DeviceCache &c = caches[d];
        bool pending = false;
        for (auto &se : c.events) pending |= !se.second.q.empty();
        if (c.small.empty() && c.large.empty() && !pending) continue;
        nn_small_flush_all();
        cudaSetDevice(d);
        cudaDeviceSynchronize();
        process_events(c);
        release_cached(c);
    }
    cudaSetDevice(nn_gpu->current_device());
    return NN_OK;
}

/* ---- introspection (torch.cuda.memory_snapshot, caching_allocator_alloc / _delete) ---- */

/* every block, segment by segment (segments by address, blocks in address order): a segment's
 * head has no prev; the heads are found from the free pools, the live blocks and the blocks
 * awaiting other streams' events */
nn_gpu_block *nn_cuda_memory_blocks(int *n)
{
    std::lock_guard<std::mutex> g(lock);
    std::vector<nn_gpu_block> out;
    for (int d = 0; d < NN_GPU_MAX; d++) {
        DeviceCache &c = caches[d];
        std::set<Block *, bool (*)(const Block *, const Block *)> heads(
            [](const Block *a, const Block *b) { return (uintptr_t)a->ptr < (uintptr_t)b->ptr; });
        auto add = [&](Block *b) {
            while (b->prev) b = b->prev;
            heads.insert(b);
        };
        for (Block *b : c.small) add(b);
        for (Block *b : c.large) add(b);
        for (auto &kv : c.live) add(kv.second);
        for (auto &se : c.events)
            for (auto &eb : se.second.q) add(eb.second);
        for (Block *h : heads)
            for (Block *b = h; b; b = b->next)
                out.push_back(nn_gpu_block{d, (uintptr_t)h->ptr, (uintptr_t)b->ptr, b->pool ? 0 : (uintptr_t)b->stream, b->size,
                                           b->allocated ? 1 : b->pending ? 2 : 0, b->small, b->pool != nullptr});
    }
    *n = (int)out.size();
    nn_gpu_block *r = (nn_gpu_block *)malloc(sizeof *r * (out.empty() ? 1 : out.size()));
    if (!r) {
        *n = 0;
        nn_error(NN_ERR_NOMEM, "memory_snapshot: out of host memory");
        return nullptr;
    }
    std::copy(out.begin(), out.end(), r);
    return r;
}

/* the device whose cache holds live block p, or -1 */
int nn_cuda_owner(void *p)
{
    std::lock_guard<std::mutex> g(lock);
    for (int d = 0; d < NN_GPU_MAX; d++)
        if (caches[d].live.count(p)) return d;
    return -1;
}

void nn_cuda_reset_accumulated(int device)
{
    std::lock_guard<std::mutex> g(lock);
    for (int d = 0; d < NN_GPU_MAX; d++) {
        if (device >= 0 && d != device) continue;
        auto &st = caches[d].stats;
        st.num_alloc_retries = st.num_ooms = st.num_device_alloc = st.num_device_free = 0;
    }
}
