#include "io/text/unicode_chars.h"

#include <unicode/uchar.h>
#include <unicode/ustring.h>

#include <cstdint>
#include <unicode/unorm2.h>
#include <unicode/utf16.h>
#include <vector>

#include "strata/core/error.h"

namespace strata::io::text {

namespace {

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

std::u16string to_utf16(std::u32string_view cps) {
  std::u16string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) {
    if (cp < 0x10000) {
      out.push_back(char16_t(cp));
    } else {
      out.push_back(char16_t(U16_LEAD(cp)));
      out.push_back(char16_t(U16_TRAIL(cp)));
    }
  }
  return out;
}

std::u32string from_utf16(const char16_t* s, int32_t n) {
  std::u32string out;
  out.reserve(size_t(n));
  for (int32_t i = 0; i < n;) {
    UChar32 c;
    U16_NEXT(s, i, n, c);
    out.push_back(char32_t(c));
  }
  return out;
}

void check_icu(UErrorCode status, const char* what) {
  STRATA_CHECK(U_SUCCESS(status), ValueError, "BERT basic tokenizer: ICU ", what,
               " failed: ", u_errorName(status));
}

}  // namespace

std::u32string decode_utf8(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out.push_back(c);
      ++i;
      continue;
    }
    // The sequence length and the range its second byte must lie in (Unicode 15, table 3-7).
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    char32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3, cp = c & 0x0F;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4, cp = c & 0x07;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    }
    bool ok = len > 0 && i + len <= n;
    if (ok) {
      const unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      ok = c1 >= lo && c1 <= hi;
      for (size_t k = 2; ok && k < len; ++k) ok = is_continuation(static_cast<unsigned char>(s[i + k]));
    }
    if (!ok) {
      out.push_back(kReplacementChar);
      ++i;
      continue;
    }
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += len;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(char(cp));
  } else if (cp < 0x800) {
    out.push_back(char(0xC0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(char(0xE0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

std::string encode_utf8(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) append_utf8(out, cp);
  return out;
}

bool is_bert_whitespace(char32_t cp) {
  if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r') return true;
  return cp >= 0x80 && u_hasBinaryProperty(UChar32(cp), UCHAR_WHITE_SPACE);
}

bool is_bert_control(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  if (cp < 0x80) return cp < 0x20 || cp == 0x7F;
  // Not Cn: tokenizers' BertNormalizer keeps unassigned code points (its category tables have no Cn).
  return (U_GET_GC_MASK(UChar32(cp)) & (U_GC_CC_MASK | U_GC_CF_MASK | U_GC_CS_MASK | U_GC_CO_MASK)) != 0;
}

bool is_bert_punctuation(char32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126))
    return true;
  return cp >= 0x80 && (U_GET_GC_MASK(UChar32(cp)) & U_GC_P_MASK) != 0;
}

bool is_cjk_ideograph(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

std::u32string strip_accents(std::u32string_view cps) {
  bool ascii = true;
  for (char32_t cp : cps) ascii = ascii && cp < 0x80;
  if (ascii) return std::u32string(cps);
  UErrorCode status = U_ZERO_ERROR;
  const UNormalizer2* nfd = unorm2_getNFDInstance(&status);
  check_icu(status, "NFD instance");
  const std::u16string src = to_utf16(cps);
  // A canonical decomposition is at most 4 code units per input unit (Unicode's stability policy
  // bounds it; U+1D160 and Hangul syllables reach 3), so one pass with 4x room is enough.
  std::vector<UChar> dst(src.size() * 4 + 4);
  const int32_t n = unorm2_normalize(nfd, reinterpret_cast<const UChar*>(src.data()), int32_t(src.size()),
                                     dst.data(), int32_t(dst.size()), &status);
  check_icu(status, "NFD");
  std::u32string out;
  out.reserve(size_t(n));
  for (char32_t cp : from_utf16(reinterpret_cast<const char16_t*>(dst.data()), n))
    if (u_charType(UChar32(cp)) != U_NON_SPACING_MARK) out.push_back(cp);
  return out;
}

std::u32string to_lower(std::u32string_view cps) {
  std::u32string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) {
    if (cp < 0x80) {
      out.push_back(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
      continue;
    }
    // One code point at a time, so that no context rule (final sigma) applies: Rust's
    // char::to_lowercase, which tokenizers' NormalizedString::lowercase maps over the text.
    const std::u16string one = to_utf16(std::u32string_view(&cp, 1));
    UChar buf[8];
    UErrorCode status = U_ZERO_ERROR;
    const int32_t n =
        u_strToLower(buf, 8, reinterpret_cast<const UChar*>(one.data()), int32_t(one.size()), "", &status);
    check_icu(status, "lower-casing");
    out += from_utf16(reinterpret_cast<const char16_t*>(buf), n);
  }
  return out;
}

}  // namespace strata::io::text
