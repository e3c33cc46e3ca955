// What every benchmark reads of its host: a steady clock in seconds and the CPU's model name.
#pragma once

#include <chrono>
#include <fstream>
#include <string>

namespace strata::bench {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The "model name" line of /proc/cpuinfo ("AMD EPYC 9R14 96-Core Processor"), or "unknown CPU".
inline std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

}  // namespace strata::bench
