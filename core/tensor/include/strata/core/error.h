// Strata's exception hierarchy and the STRATA_CHECK precondition macro.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace strata {

// Base of every error Strata throws on bad input; the message names the op, shapes, file or
// offset at fault.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ShapeError : public Error { using Error::Error; };
class TypeError : public Error { using Error::Error; };
class DeviceError : public Error { using Error::Error; };
// A device allocator could not satisfy a request: the message names the request, the capacity and the
// bytes in use per category.
class OutOfMemoryError : public DeviceError {
  using DeviceError::DeviceError;
};
class IndexError : public Error { using Error::Error; };
class ValueError : public Error { using Error::Error; };
class IoError : public Error { using Error::Error; };
class AutogradError : public Error { using Error::Error; };
class NotImplementedError : public Error { using Error::Error; };

namespace detail {
template <class... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}
}  // namespace detail

}  // namespace strata

// Throws ErrorType with the concatenated message when cond is false.
#define STRATA_CHECK(cond, ErrorType, ...)                                 \
  do {                                                                     \
    if (!(cond)) throw ErrorType(::strata::detail::concat(__VA_ARGS__));   \
  } while (0)
