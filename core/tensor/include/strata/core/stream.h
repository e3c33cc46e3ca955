// Stream and Event: ordered work queues and markers in them, implemented by each backend.
#pragma once

#include <functional>
#include <memory>

#include "strata/core/device.h"

namespace strata {

class Event;

// An in-order queue of work on one device. On CPU a worker thread runs the enqueued tasks,
// so asynchronous copies and I/O have the same shape as on CUDA.
class Stream {
 public:
  virtual ~Stream() = default;
  virtual Device device() const = 0;
  // Runs `task` after everything enqueued before it (CPU streams; CUDA streams run host
  // callbacks). Exceptions thrown by tasks are rethrown by synchronize().
  virtual void enqueue(std::function<void()> task) = 0;
  // Blocks until everything enqueued so far has finished.
  virtual void synchronize() = 0;
  // Makes later work on this stream wait for `event`.
  virtual void wait(Event& event) = 0;
  // Backend handle (cudaStream_t on CUDA, nullptr on CPU).
  virtual void* native_handle() const { return nullptr; }
};

// A marker recorded in a stream; completes when the work before it has.
class Event {
 public:
  virtual ~Event() = default;
  virtual void record(Stream& stream) = 0;
  virtual bool query() const = 0;  // true once complete (or never recorded)
  virtual void synchronize() = 0;
};

}  // namespace strata
