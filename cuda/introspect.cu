/* Debugging and introspection for torch.cuda: the sync debug mode, the cuBLAS handle, the
 * allocators' views and NVML's readings (utilization, temperature, power, clock, processes).
 * NVML ships with the driver, not the toolkit: libnvidia-ml.so.1 is opened on first use and
 * the few functions used are declared here. */
#include <dlfcn.h>
#include <stdio.h>

#include <atomic>
#include <mutex>

#include "core.cuh"

static std::atomic<int> sync_mode{0};

static int sync_debug(int mode)
{
    return mode < 0 ? sync_mode.load() : sync_mode.exchange(mode);
}

nn_status nn_cuda_sync_check(void)
{
    int mode = sync_mode.load();
    if (mode == 2) return nn_error(NN_ERR_RUNTIME, "called a synchronizing CUDA operation");
    if (mode == 1) fprintf(stderr, "UserWarning: called a synchronizing CUDA operation\n");
    return NN_OK;
}

static void *blas_handle(void)
{
    nn_cuda_device *d = nn_cuda_dev(-1);
    return d ? (void *)d->cublas : nullptr;
}

/* ---- NVML ---- */
typedef struct nvml_device *nvml_device_t;
typedef struct { unsigned gpu, memory; } nvml_utilization;
typedef struct { unsigned pid; unsigned long long used; unsigned gpu_instance, compute_instance; } nvml_process;

static struct {
    std::once_flag once;
    void *lib;
    char why[256];
    int (*init)(void);
    int (*by_pci)(const char *, nvml_device_t *);
    int (*utilization)(nvml_device_t, nvml_utilization *);
    int (*temperature)(nvml_device_t, int, unsigned *);
    int (*power)(nvml_device_t, unsigned *);
    int (*clock)(nvml_device_t, int, unsigned *);
    int (*processes)(nvml_device_t, unsigned *, nvml_process *);
    const char *(*error_string)(int);
} nvml;

template <class F> static bool sym(F &f, const char *name, const char *alt = nullptr)
{
    f = (F)dlsym(nvml.lib, name);
    if (!f && alt) f = (F)dlsym(nvml.lib, alt);
    if (!f) snprintf(nvml.why, sizeof nvml.why, "libnvidia-ml.so.1 has no %s", name);
    return f != nullptr;
}

static void nvml_open(void)
{
    nvml.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!nvml.lib) {
        snprintf(nvml.why, sizeof nvml.why, "libnvidia-ml.so.1 could not be loaded (%s); it comes with the NVIDIA driver", dlerror());
        return;
    }
    bool ok = sym(nvml.init, "nvmlInit_v2") && sym(nvml.by_pci, "nvmlDeviceGetHandleByPciBusId_v2") &&
              sym(nvml.utilization, "nvmlDeviceGetUtilizationRates") && sym(nvml.temperature, "nvmlDeviceGetTemperature") &&
              sym(nvml.power, "nvmlDeviceGetPowerUsage") && sym(nvml.clock, "nvmlDeviceGetClockInfo") &&
              sym(nvml.processes, "nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2") &&
              sym(nvml.error_string, "nvmlErrorString");
    int r = ok ? nvml.init() : 0;
    if (ok && r) snprintf(nvml.why, sizeof nvml.why, "nvmlInit failed: %s", nvml.error_string(r));
    if (!ok || r) {
        dlclose(nvml.lib);
        nvml.lib = nullptr;
    }
}

#define NVML_TRY(call)                                                                                   \
    do {                                                                                                 \
        int r_ = (call);                                                                                 \
        if (r_) return nn_error(NN_ERR_RUNTIME, "NVML error on cuda:%d: %s (%s)", device, nvml.error_string(r_), #call); \
    } while (0)

/* NVML's handle for CUDA device `device`, matched by PCI bus id (NVML numbers the devices its own way) */
static nn_status nvml_device(int device, nvml_device_t *h)
{
    std::call_once(nvml.once, nvml_open);
    if (!nvml.lib) return nn_error(NN_ERR_RUNTIME, "NVML is not available: %s", nvml.why);
    char bus[64];
    NN_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, device));
    NVML_TRY(nvml.by_pci(bus, h));
    return NN_OK;
}

enum { NVML_TEMPERATURE_GPU = 0, NVML_CLOCK_SM = 1, MAX_PROCESSES = 64 };

/* NN_NVML_PROCESSES: out[0] = the number of processes n, then pid and bytes used for each (64 at most) */
static nn_status nvml_read(int device, int what, int64_t *out)
{
    if (what == NN_NVML_MEMORY_USED) { /* the driver's count through CUDA: no NVML needed */
        if (nn_cuda_set(device)) return nn_last_status();
        size_t free_b = 0, total = 0;
        NN_CHECK(cudaMemGetInfo(&free_b, &total));
        *out = (int64_t)(total - free_b);
        return NN_OK;
    }
    nvml_device_t h;
    if (nvml_device(device, &h)) return nn_last_status();
    unsigned v = 0;
    switch (what) {
    case NN_NVML_UTILIZATION:
    case NN_NVML_MEMORY_UTILIZATION: {
        nvml_utilization u;
        NVML_TRY(nvml.utilization(h, &u));
        v = what == NN_NVML_UTILIZATION ? u.gpu : u.memory;
        break;
    }
    case NN_NVML_TEMPERATURE: NVML_TRY(nvml.temperature(h, NVML_TEMPERATURE_GPU, &v)); break;
    case NN_NVML_POWER: NVML_TRY(nvml.power(h, &v)); break;
    case NN_NVML_CLOCK: NVML_TRY(nvml.clock(h, NVML_CLOCK_SM, &v)); break;
    case NN_NVML_PROCESSES: {
        nvml_process p[MAX_PROCESSES];
        unsigned n = MAX_PROCESSES;
        NVML_TRY(nvml.processes(h, &n, p));
        out[0] = n;
        for (unsigned i = 0; i < n; i++) out[1 + 2 * i] = p[i].pid, out[2 + 2 * i] = (int64_t)p[i].used;
        return NN_OK;
    }
    default: return nn_error(NN_ERR_ARG, "nvml: unknown reading %d", what);
    }
    *out = v;
    return NN_OK;
}

void nn_cuda_introspect(nn_gpu_api *api)
{
    api->sync_debug = sync_debug;
    api->memory_blocks = nn_cuda_memory_blocks;
    api->reset_accumulated = nn_cuda_reset_accumulated;
    api->host_stats = nn_cuda_host_stats;
    api->host_reset = nn_cuda_host_reset;
    api->blas_handle = blas_handle;
    api->nvml = nvml_read;
}
