// TrainerCache's settings: byte sizes parse strictly, with units, and a nonsense figure is an
// error naming the flag rather than a wrapped, saturated or silently zero size.
#include "strata/memory/trainer_cache.h"

#include <gtest/gtest.h>

using namespace strata;
using namespace strata::memory;

TEST(ParseByteSize, UnitsArePowersOf1024AndAnOptionalB) {
  EXPECT_EQ(parse_byte_size("4096"), 4096u);
  EXPECT_EQ(parse_byte_size("64K"), 64u << 10);
  EXPECT_EQ(parse_byte_size("1.5G"), 3u << 29);
  EXPECT_EQ(parse_byte_size("800MB"), 800u << 20);
  EXPECT_EQ(parse_byte_size("2GiB"), 2ull << 30);
  EXPECT_EQ(parse_byte_size("1t"), 1ull << 40);
}

TEST(ParseByteSize, NegativeGarbageAndHugeFiguresAreErrorsNamingTheFlag) {
  for (const char* bad : {"-5M", "abc", "", "12Q", "nan", "inf", "99999999999999999999G", "1e30"}) {
    try {
      parse_byte_size(bad, "--memory-budget");
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("--memory-budget"), std::string::npos) << e.what();
    }
  }
}
