// error_of<E>(f): the message of the E that f() throws, or "" and a test failure when it returns or
// throws something else.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <string>

namespace strata::testing {

template <class E, class F>
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
