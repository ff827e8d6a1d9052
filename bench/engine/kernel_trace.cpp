// libaph_kernel_trace.so: a CUDA injection library that records when every
// kernel of a process ran, kernels inside CUDA graphs included, without
// serializing them (ncu replays each kernel alone, so its durations miss the
// overlap that programmatic dependent launch gives and the gaps between
// kernels; nsys is not on the GPU machine). Use:
//
//   CUDA_INJECTION64_PATH=$PWD/build-device/bench/engine/libaph_kernel_trace.so
//     APH_KERNEL_TRACE=/tmp/trace.csv aph_bench_engine ...   (one command)
//   python3 bench/engine/trace_table.py /tmp/trace.csv
//
// The driver calls InitializeInjection at cuInit. CUPTI's concurrent-kernel
// activity records (GPU timestamps) arrive in buffers; each completed buffer
// is appended to the file at once, so a process that exits without flushing
// loses at most the last buffers. Lines: "N,id,name" once per kernel name
// (demangled; it may hold commas, so it is the rest of the line),
// then "K,start_ns,end_ns,correlation,graph_id,graph_node,grid,block,cluster,id".
// Copies and memsets are K lines too, named "[memcpy HtoD 96 B]" and so on
// with grid, block and cluster 0: between two decode graphs the GPU runs the
// sampler's copy of the ids, the staging upload and the fed-ids copy, and a
// trace of kernels alone shows their time as idle.
// APH_KERNEL_TRACE_MAX caps the K lines (default 2,000,000).
#include <cupti.h>
#include <cxxabi.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>

namespace {

constexpr size_t kBufferBytes = 8u << 20;

struct Trace {
  std::FILE* file = nullptr;
  std::mutex mutex;
  std::unordered_map<std::string, int> name_ids;
  uint64_t written = 0;
  uint64_t max_rows = 2000000;
  uint64_t dropped = 0;
};

Trace& trace() {
  static Trace* t = new Trace;  // never destroyed: buffers may complete during exit
  return *t;
}

void report(const char* what, CUptiResult r) {
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  std::fprintf(stderr, "aph_kernel_trace: %s: %s\n", what, text ? text : "unknown CUPTI error");
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

int name_id(Trace& t, const char* name) {
  const std::string key = name ? name : "?";  // mangled
  auto it = t.name_ids.find(key);
  if (it != t.name_ids.end()) return it->second;
  const int id = static_cast<int>(t.name_ids.size());
  t.name_ids.emplace(key, id);
  int status = 0;
  char* readable = abi::__cxa_demangle(key.c_str(), nullptr, nullptr, &status);
  std::fprintf(t.file, "N,%d,%s\n", id, status == 0 && readable ? readable : key.c_str());
  std::free(readable);
  return id;
}

const char* copy_kind_name(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "other";
  }
}

// A memcpy or memset record as a K line (the caller holds t.mutex). The
// newest layouts this toolkit knows; later versions only append fields.
void write_copy(Trace& t, const CUpti_Activity* record) {
  char name[64];
  uint64_t start = 0, end = 0, node = 0;
  uint32_t corr = 0, graph = 0;
  if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
    const auto* c = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
    std::snprintf(name, sizeof name, "[memcpy %s %llu B]", copy_kind_name(c->copyKind),
                  static_cast<unsigned long long>(c->bytes));
    start = c->start, end = c->end, corr = c->correlationId, graph = c->graphId, node = c->graphNodeId;
  } else {
    const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
    std::snprintf(name, sizeof name, "[memset %llu B]", static_cast<unsigned long long>(m->bytes));
    start = m->start, end = m->end, corr = m->correlationId, graph = m->graphId, node = m->graphNodeId;
  }
  const int id = name_id(t, name);
  std::fprintf(t.file, "K,%llu,%llu,%u,%u,%llu,0,0,0,%d\n", static_cast<unsigned long long>(start),
               static_cast<unsigned long long>(end), corr, graph, static_cast<unsigned long long>(node), id);
  ++t.written;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  Trace& t = trace();
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      const bool kernel =
          record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL;
      if (!kernel && record->kind != CUPTI_ACTIVITY_KIND_MEMCPY && record->kind != CUPTI_ACTIVITY_KIND_MEMSET)
        continue;
      if (t.written >= t.max_rows) {
        ++t.dropped;
        continue;
      }
      if (!kernel) {
        write_copy(t, record);
        continue;
      }
      // The newest record layout this toolkit knows; later CUPTI versions only
      // append fields, so the ones read here keep their offsets.
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      const int id = name_id(t, k->name);
      std::fprintf(t.file, "K,%llu,%llu,%u,%u,%llu,%d,%d,%u,%d\n", static_cast<unsigned long long>(k->start),
                   static_cast<unsigned long long>(k->end), k->correlationId, k->graphId,
                   static_cast<unsigned long long>(k->graphNodeId), k->gridX * k->gridY * k->gridZ,
                   k->blockX * k->blockY * k->blockZ, k->clusterX * k->clusterY * k->clusterZ, id);
      ++t.written;
    }
    std::fflush(t.file);
  }
  std::free(buffer);
}

void flush_at_exit() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  Trace& t = trace();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (t.dropped > 0)
    std::fprintf(stderr, "aph_kernel_trace: %llu records past APH_KERNEL_TRACE_MAX not written\n",
                 static_cast<unsigned long long>(t.dropped));
  std::fclose(t.file);
  t.file = nullptr;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::atomic<bool> done{false};
  if (done.exchange(true)) return 1;
  const char* path = std::getenv("APH_KERNEL_TRACE");
  Trace& t = trace();
  t.file = std::fopen(path && *path ? path : "aph_kernel_trace.csv", "w");
  if (!t.file) {
    std::fprintf(stderr, "aph_kernel_trace: cannot write %s\n", path ? path : "aph_kernel_trace.csv");
    return 0;
  }
  if (const char* m = std::getenv("APH_KERNEL_TRACE_MAX")) t.max_rows = std::strtoull(m, nullptr, 10);
  CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    report("cuptiActivityRegisterCallbacks", r);
    return 0;
  }
  r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    report("cuptiActivityEnable(CONCURRENT_KERNEL)", r);
    return 0;
  }
  for (CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET}) {
    r = cuptiActivityEnable(kind);
    if (r != CUPTI_SUCCESS) report("cuptiActivityEnable(MEMCPY/MEMSET)", r);  // kernels still traced
  }
  std::atexit(flush_at_exit);
  return 1;
}
