#!/usr/bin/env python3
"""Parity fixture for Strata's WordPiece tokenizer (io/text): run by hand, outputs committed.

  python3 -m venv /path/to/venv && /path/to/venv/bin/pip install tokenizers
  /path/to/venv/bin/python tools/goldens/wordpiece_goldens.py [--out tests/goldens/wordpiece]

Hugging Face's tokenizers (PyPI) is the reference. For do_lower_case true and false it trains a
BertWordPieceTokenizer vocabulary on tests/goldens/wordpiece/corpus.txt (special tokens [PAD],
[UNK], [CLS], [SEP], [MASK] first), saves it as vocab_uncased.txt / vocab_cased.txt, loads it
back the way a model folder is loaded, and writes wordpiece.json: every corpus line and every
held-out line below (control characters, odd whitespace, special tokens inside words, long
words, characters the vocabulary lacks, ...) with the ids encode(line, add_special_tokens=False)
gives for each vocabulary.
"""
import argparse, json, os, shutil, sys, tempfile

from tokenizers import BertWordPieceTokenizer, __version__ as tokenizers_version

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

# Lines the vocabulary was not trained on: each exercises one rule or a mix of them.
HELD_OUT = [
    "",
    "   \t \n ",
    "hello world",
    "Hello, World! HELLO world?",
    "unbelievably memorable runners recomputed the planners' caches",
    "tokenizers tokenization tokenized retokenizing",
    "NUL\x00inside and bell\x07and delete\x7fand escape\x1b[0m",
    "line one\r\nline two\rline three\nline four",
    "vertical\x0btab and form\x0cfeed and next\x85line",
    "no-break\xa0space, ideographic\u3000space, thin\u2009space, line\u2028separator, para\u2029sep",
    "zero\u200bwidth, joiner\u200dhere, soft\xadhyphen, bom\ufeffmark, rtl\u200fmark",
    "replacement \ufffd char and private use \ue000 and unassigned \u0378 here",
    "[CLS] the first segment [SEP] the second segment [SEP]",
    "glued[MASK]word and [PAD][PAD][PAD] and [UNK] itself",
    "lower case [cls] and [sep] are not special, nor is [ MASK ]",
    "[CLS][SEP][CLS]",
    "a" * 100,
    "b" * 101,
    "é" * 100,
    "e\u0301" * 60,
    "Supercalifragilisticexpialidocious" * 3 + " then a short word",
    "x" * 99 + "," + "y" * 150,
    "中文字符一个一个切分，日本語のひらがなは切らない。",
    "rare CJK: \U00020000 \U0002A700 \U0002B740 \U0002B820 \U0002B91F \U0002B920 \uf900 \U0002f800 \u3400",
    "emoji old 😀 newer 🥰 newest 🫠 🫨, with modifiers 👍🏽 and ZWJ 👨\u200d👩\u200d👧 and keycap 1\ufe0f\u20e3",
    "ΟΔΥΣΣΕΥΣ Σ σ ς; İstanbul ıi; ß ẞ; ǅ ǆ Ǆ; ﬁ ﬀ; Ａ Ｂ ｃ",
    "Å Å Å, ḱ ṩ, ệ ẫ, Ω Ω, ñ ñ",
    "Tiếng Việt: Người ta nói rằng học một ngôn ngữ mới rất khó.",
    "Ελληνικός ΤΟΝΟΣ ά έ ή ί ό ύ ώ ΐ ΰ",
    "«Guillemets» ‹single› „low‟ ‚quote‛ — – ‐ ‑ ‒ ― … ‰ ′ ″ ‹› ¿¡ § ¶ † ‡ • ※ ¡",
    "symbols are not punctuation: € £ ¥ © ® ™ ° ± × ÷ ∑ ∞ ≈ ≠ → ⇒ ♥ ☃",
    "ascii punctuation!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ all split",
    "Arabic, Hebrew: مرحبا بالعالم שלום עולם; Devanagari नमस्ते; Thai สวัสดี",
    "한국어 텍스트와 ㄱㄴㄷ 자모",
    "combining alone: \u0301\u0308 and after space \u0300x and on digit 1\u0301",
    "Mixed CASE with ÀÉÎÕÜ and àéîõü and ÇÑ",
    "wordsthatareverylongbutnotquitelongenoughtobeunknownbecausetheyarebelowthelimit",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "..", "tests", "goldens", "wordpiece"))
    ap.add_argument("--vocab-size", type=int, default=1500)
    args = ap.parse_args()
    corpus = os.path.join(args.out, "corpus.txt")
    with open(corpus, encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f]
    lines += HELD_OUT
    fixture = {"generator": "tools/goldens/wordpiece_goldens.py", "tokenizers_version": tokenizers_version,
               "lines": lines, "vocabularies": []}
    for name, lowercase in (("uncased", True), ("cased", False)):
        trainer = BertWordPieceTokenizer(clean_text=True, handle_chinese_chars=True, strip_accents=None,
                                         lowercase=lowercase)
        # limit_alphabet below the corpus's character count: the rarest characters stay out of the
        # vocabulary, so words holding them become [UNK].
        trainer.train([corpus], vocab_size=args.vocab_size, min_frequency=1, limit_alphabet=300,
                      special_tokens=SPECIAL, wordpieces_prefix="##", show_progress=False)
        with tempfile.TemporaryDirectory() as tmp:
            trainer.save_model(tmp)
            vocab = os.path.join(args.out, f"vocab_{name}.txt")
            shutil.copyfile(os.path.join(tmp, "vocab.txt"), vocab)
        tok = BertWordPieceTokenizer(vocab, clean_text=True, handle_chinese_chars=True, strip_accents=None,
                                     lowercase=lowercase)
        ids = [tok.encode(line, add_special_tokens=False).ids for line in lines]
        fixture["vocabularies"].append({"vocab": os.path.basename(vocab), "do_lower_case": lowercase,
                                        "vocab_size": tok.get_vocab_size(), "ids": ids})
        print(f"{name}: {tok.get_vocab_size()} tokens, {sum(map(len, ids))} ids over {len(lines)} lines")
    with open(os.path.join(args.out, "wordpiece.json"), "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=True, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
