// cuda_archs_run_on: whether a build's CUDA architectures (CMake's CUDA_ARCHITECTURES list, as
// STRATA_CUDA_ARCHITECTURES gives it: "90", "80;86;89;90", "86-real;90a") hold code that a device
// of compute capability major.minor runs. SASS for X.Y runs on X.Z with Z >= Y (binary
// compatibility within a major version); an architecture-specific one ("90a") only on X.Y itself.
// PTX (entries not marked -real) is compiled by the driver for the device when it is X.Y or newer.
// Host-only and free of CUDA headers, so the CPU tests check it.
#pragma once

#include <cctype>
#include <string>
#include <vector>

namespace strata::common {

struct CudaArch {
  int major = 0, minor = 0;
  bool sass = true, ptx = true, specific = false;
};

// Entries separated by ';' or ','. "all", "all-major" and "native" hold code for every device the
// toolkit knows (returned as an empty list with *any = true). Throws nothing: unreadable entries
// are skipped.
inline std::vector<CudaArch> parse_cuda_archs(const std::string& list, bool* any) {
  std::vector<CudaArch> out;
  *any = false;
  size_t i = 0;
  while (i <= list.size()) {
    size_t j = list.find_first_of(";,", i);
    if (j == std::string::npos) j = list.size();
    std::string e = list.substr(i, j - i);
    i = j + 1;
    while (!e.empty() && std::isspace(static_cast<unsigned char>(e.back()))) e.pop_back();
    while (!e.empty() && std::isspace(static_cast<unsigned char>(e.front()))) e.erase(e.begin());
    if (e.empty()) continue;
    if (e == "all" || e == "all-major" || e == "native") {
      *any = true;
      continue;
    }
    CudaArch a;
    if (const size_t dash = e.find('-'); dash != std::string::npos) {
      const std::string kind = e.substr(dash + 1);
      e = e.substr(0, dash);
      if (kind == "real")
        a.ptx = false;
      else if (kind == "virtual")
        a.sass = false;
    }
    if (!e.empty() && (e.back() == 'a' || e.back() == 'f')) a.specific = true, e.pop_back();
    if (e.size() < 2 || e.find_first_not_of("0123456789") != std::string::npos) continue;
    a.major = std::stoi(e.substr(0, e.size() - 1));
    a.minor = e.back() - '0';
    out.push_back(a);
  }
  return out;
}

inline bool cuda_archs_run_on(const std::string& list, int major, int minor) {
  bool any = false;
  for (const CudaArch& a : parse_cuda_archs(list, &any)) {
    const bool exact = a.major == major && a.minor == minor;
    if (a.sass && (exact || (!a.specific && a.major == major && a.minor <= minor))) return true;
    if (a.ptx && (exact || (!a.specific && (a.major < major || (a.major == major && a.minor <= minor)))))
      return true;
  }
  return any;
}

}  // namespace strata::common
