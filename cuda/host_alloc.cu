/* The caching allocator for pinned (page-locked) host memory, after PyTorch's.
 *
 * cudaHostAlloc costs tens of microseconds and cudaFreeHost synchronises the whole
 * device, so a DataLoader that pins every batch would stall the GPU once per batch.
 * Blocks are kept instead, in power-of-two sizes. A copy between a pinned block and
 * a GPU records an event on the copy's stream; a freed block is reused only once
 * those events have completed, so an asynchronous copy still reading it is never
 * overwritten. Thread-safe: DataLoader workers pin batches on their own threads. */
#include <chrono>
#include <map>
#include <mutex>
#include <vector>

#include "core.cuh"

namespace {

struct HostBlock {
    size_t size;
    bool allocated;
    std::vector<cudaEvent_t> events; /* one per copy since it was last handed out */
};

std::mutex lock;
std::map<char *, HostBlock> blocks;            /* every block, by address */
std::multimap<size_t, char *> free_blocks;     /* free ones, by size */
nn_gpu_host_stats stats{};                     /* torch.cuda.host_memory_stats */

void up(nn_gpu_stat &s, int64_t by)
{
    s.current += by;
    s.allocated += by;
    if (s.current > s.peak) s.peak = s.current;
}

void down(nn_gpu_stat &s, int64_t by)
{
    s.current -= by;
    s.freed += by;
}

double since_us(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

/* one timed CUDA call into total, max and min (min 0: none yet) */
void timed(double us, double &total, double &max, double &min)
{
    total += us;
    if (us > max) max = us;
    if (min == 0 || us < min) min = us;
}

void handed_out(size_t size)
{
    up(stats.active_requests, 1);
    up(stats.active_bytes, (int64_t)size);
}

size_t bucket(size_t n)
{
    size_t s = 512;
    while (s < n) s <<= 1;
    return s;
}

/* Drop the events of b's copies that have finished; true when none is left (idle). */
bool idle(HostBlock &b)
{
    auto &ev = b.events;
    for (size_t i = 0; i < ev.size();) {
        if (cudaEventQuery(ev[i]) == cudaSuccess) {
            cudaEventDestroy(ev[i]);
            ev[i] = ev.back();
            ev.pop_back();
        } else {
            cudaGetLastError();
            i++;
        }
    }
    return ev.empty();
}

} // namespace

void *nn_cuda_host_alloc(size_t n)
{
    size_t size = bucket(n ? n : 1);
    {
        std::lock_guard<std::mutex> g(lock);
        auto range = free_blocks.equal_range(size);
        for (auto it = range.first; it != range.second; ++it) {
            HostBlock &b = blocks[it->second];
            if (!idle(b)) continue;
            char *p = it->second;
            free_blocks.erase(it);
            b.allocated = true;
            handed_out(size);
            return p;
        }
    }
    void *p = nullptr;
    auto t0 = std::chrono::steady_clock::now();
    if (cudaHostAlloc(&p, size, cudaHostAllocDefault) != cudaSuccess) {
        cudaGetLastError();
        return nullptr;
    }
    double us = since_us(t0);
    std::lock_guard<std::mutex> g(lock);
    blocks[(char *)p] = HostBlock{size, true, {}};
    stats.num_host_alloc++;
    timed(us, stats.alloc_us_total, stats.alloc_us_max, stats.alloc_us_min);
    up(stats.allocations, 1);
    up(stats.allocated_bytes, (int64_t)size);
    handed_out(size);
    return p;
}

void nn_cuda_host_free(void *p)
{
    if (!p) return;
    std::lock_guard<std::mutex> g(lock);
    auto it = blocks.find((char *)p);
    if (it == blocks.end() || !it->second.allocated) return;
    it->second.allocated = false;
    free_blocks.insert({it->second.size, (char *)p});
    down(stats.active_requests, 1);
    down(stats.active_bytes, (int64_t)it->second.size);
}

/* A copy on stream s reads or writes host memory at p: if p lies in a pinned block,
 * the block is not reused before the copy is done. */
nn_status nn_cuda_host_record(const void *p, cudaStream_t s)
{
    std::lock_guard<std::mutex> g(lock);
    if (blocks.empty()) return NN_OK;
    auto it = blocks.upper_bound((char *)p);
    if (it == blocks.begin()) return NN_OK;
    --it;
    if ((const char *)p >= it->first + it->second.size) return NN_OK;
    idle(it->second); /* drop the finished ones: a long-lived pinned tensor copied every step */
    cudaEvent_t e;
    NN_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    it->second.events.push_back(e);
    NN_CHECK(cudaEventRecord(e, s));
    return NN_OK;
}

/* Give the free pinned blocks whose copies are done back to the driver. */
void nn_cuda_host_empty_cache(void)
{
    std::lock_guard<std::mutex> g(lock);
    for (auto it = free_blocks.begin(); it != free_blocks.end();) {
        auto b = blocks.find(it->second);
        if (!idle(b->second)) { ++it; continue; }
        auto t0 = std::chrono::steady_clock::now();
        cudaFreeHost(it->second);
        stats.num_host_free++;
        timed(since_us(t0), stats.free_us_total, stats.free_us_max, stats.free_us_min);
        down(stats.allocations, 1);
        down(stats.allocated_bytes, (int64_t)b->second.size);
        blocks.erase(b);
        it = free_blocks.erase(it);
    }
}

void nn_cuda_host_stats(nn_gpu_host_stats *s)
{
    std::lock_guard<std::mutex> g(lock);
    *s = stats;
}

/* peak: each peak down to its current value; else the accumulated counts (allocated, freed,
 * the CUDA calls and their times) to 0 */
void nn_cuda_host_reset(bool peak)
{
    std::lock_guard<std::mutex> g(lock);
    for (nn_gpu_stat *st : {&stats.allocations, &stats.allocated_bytes, &stats.active_requests, &stats.active_bytes}) {
        if (peak) st->peak = st->current;
        else st->allocated = st->freed = 0;
    }
    if (peak) return;
    stats.num_host_alloc = stats.num_host_free = 0;
    stats.alloc_us_total = stats.alloc_us_max = stats.alloc_us_min = 0;
    stats.free_us_total = stats.free_us_max = stats.free_us_min = 0;
}
