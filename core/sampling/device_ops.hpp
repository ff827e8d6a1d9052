// The few device transfers the chain runner needs, on the engine's stream.
// On a CPU-only build, calls with a device pointer throw.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aph::sampling {

void device_fill_i32(int32_t* dst, int32_t value_byte_pattern, size_t count, void* stream);
void device_upload(void* dst, const void* src, size_t bytes, void* stream);
void device_download(void* dst, const void* src, size_t bytes, void* stream);
void device_sync(void* stream);

// A point in the stream the host can wait for without waiting for what was
// queued after it (the next step's forward, when the engine overlaps steps).
class DeviceEvent {
 public:
  DeviceEvent() = default;
  DeviceEvent(const DeviceEvent&) = delete;
  DeviceEvent& operator=(const DeviceEvent&) = delete;
  ~DeviceEvent();
  void record(void* stream);
  void wait();

 private:
  void* event_ = nullptr;
};

// Page-locked host memory, so an upload is one true async DMA. Grows on
// demand; the caller must not refill it while an upload from it is in flight.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer();
  void* reserve(size_t bytes);
  // Queues a copy of `bytes` from device memory src into the start of the
  // buffer (reserved first): a kernel that writes the page-locked memory over
  // the bus where it is mapped and `bytes` is whole 4-byte words
  // (APH_KERNEL_COPIES, on by default), else the copy engine.
  void fill_from_device(const void* src, size_t bytes, void* stream);

 private:
  void* data_ = nullptr;
  void* on_device_ = nullptr;  // data_ as the device addresses it; NULL: not mapped
  size_t bytes_ = 0;
};

}  // namespace aph::sampling
