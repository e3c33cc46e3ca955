// The sim device's settings: how many sim devices there are and each one's memory capacity.
//
// `sim:N` is a simulated accelerator: its memory is host memory behind a caching allocator with a
// hard capacity (running out raises OutOfMemoryError as a GPU would), its kernels are the CPU's
// (results equal the CPU's bit for bit), and copies between it and the host run on a copy stream
// of its own (a worker thread) with events, as a GPU's do.
#pragma once

#include <cstdint>

namespace strata {

// How many sim devices exist: STRATA_SIM_DEVICES (1 to 64), else 8.
int sim_device_count();

// The capacity of sim:<index> in bytes: what set_sim_memory_capacity set, else STRATA_SIM_MEMORY
// ("2G", "512M", ...), else the machine's physical memory.
uint64_t sim_memory_capacity(int index = 0);

// Sets sim:<index>'s capacity (0: back to the default above). Allocations already made stay; the
// next one that would pass the capacity fails. Throws DeviceError for a device that does not exist.
void set_sim_memory_capacity(int index, uint64_t bytes);

}  // namespace strata
