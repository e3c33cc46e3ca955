// error_of<E>(f): the message of the E that f() throws (E: any strata::Error unless named), or ""
// and a test failure when it returns or throws something else.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <string>

#include "strata/core/error.h"

namespace strata::testing {

template <class E = Error, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected another error, got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected an error, none was thrown";
  return "";
}

}  // namespace strata::testing
