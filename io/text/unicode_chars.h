// Code points for the BERT basic tokenizer: lenient UTF-8 decoding and encoding, the character
// classes it splits and drops by, and NFD with nonspacing marks removed (ICU underneath).
#pragma once

#include <string>
#include <string_view>

namespace strata::io::text {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Decodes UTF-8; every byte that does not start a well-formed sequence (overlong forms,
// surrogates and values past U+10FFFF included) becomes U+FFFD, as Python's errors="replace".
std::u32string decode_utf8(std::string_view bytes);
void append_utf8(std::string& out, char32_t cp);
std::string encode_utf8(std::u32string_view cps);

// Tab, newline, carriage return and the Unicode White_Space property (Rust's char::is_whitespace,
// which tokenizers' BertNormalizer uses).
bool is_bert_whitespace(char32_t cp);
// Categories Cc, Cf, Cs and Co, except tab, newline and carriage return (unassigned Cn is kept,
// as tokenizers does; BERT's Python tokenization.py drops it too).
bool is_bert_control(char32_t cp);
// ASCII 33-47, 58-64, 91-96, 123-126, and category P*.
bool is_bert_punctuation(char32_t cp);
// The CJK Unified Ideographs blocks and compatibility ideographs BERT's tokenization.py lists.
bool is_cjk_ideograph(char32_t cp);

// NFD, then every nonspacing mark (Mn) dropped.
std::u32string strip_accents(std::u32string_view cps);
// Each code point's full lower-case mapping (one code point may become several), no context.
std::u32string to_lower(std::u32string_view cps);

}  // namespace strata::io::text
