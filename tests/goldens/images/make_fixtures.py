#!/usr/bin/env python3
"""Writes the small PNG fixtures tests/io/image_codec_test.cpp decodes, with a PNG encoder
written here from the specification (zlib + CRC from the standard library), independent of
libpng. Pixel values follow the formulas below, which the test repeats. Run by hand:
    python3 tests/goldens/images/make_fixtures.py
"""
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
W, H = 5, 4


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def png(width, height, bit_depth, color_type, rows, extra=b""):
    """rows: raw scanline bytes without the filter byte (filter 0 = None is added)."""
    raw = b"".join(b"\x00" + r for r in rows)
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + extra + chunk(b"IDAT", zlib.compress(raw, 9)) +
            chunk(b"IEND", b""))


def png_adam7(width, height, pixel):
    """8-bit RGB, Adam7-interlaced: seven passes of sub-images, each row with filter 0."""
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
    raw = b""
    for x0, y0, dx, dy in passes:
        xs, ys = range(x0, width, dx), range(y0, height, dy)
        if not xs or not ys:
            continue
        for y in ys:
            raw += b"\x00" + bytes(c for x in xs for c in pixel(x, y))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 1)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) +
            chunk(b"IEND", b""))


def rgb(x, y):
    return ((x * 40 + y * 7) & 255, (y * 50 + 3) & 255, (x * y * 11) & 255)


PALETTE = [(255, 0, 0), (0, 128, 255), (10, 20, 30), (250, 250, 5)]


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def main():
    # 8-bit RGB.
    write("rgb8.png", png(W, H, 8, 2, [bytes(c for x in range(W) for c in rgb(x, y)) for y in range(H)]))
    # 8-bit RGBA: alpha is dropped.
    write("rgba8.png", png(W, H, 8, 6, [bytes(c for x in range(W) for c in rgb(x, y) + ((x * 60) & 255,))
                                         for y in range(H)]))
    # 16-bit RGB: the high byte of each sample is kept.
    write("rgb16.png", png(W, H, 16, 2, [b"".join(struct.pack(">H", c * 256 + (x * 17 + 5) % 256)
                                                   for x in range(W) for c in rgb(x, y)) for y in range(H)]))
    # 8-bit palette: index (x + y) % 4.
    plte = chunk(b"PLTE", bytes(c for p in PALETTE for c in p))
    write("palette8.png", png(W, H, 8, 3, [bytes((x + y) % 4 for x in range(W)) for y in range(H)], plte))
    # 8-bit gray + alpha: gray x * 30 + y replicated to RGB.
    write("gray_alpha8.png", png(W, H, 8, 4, [bytes(v for x in range(W) for v in (x * 30 + y, 200)) for y in range(H)]))
    # 8-bit RGB, Adam7-interlaced, 9x7 so that every pass holds pixels.
    write("rgb8_adam7.png", png_adam7(9, 7, rgb))
    # 1-bit gray: bit x ^ y, expanded to 0 / 255 (rows padded to a byte).
    write("gray1.png", png(W, H, 1, 0, [bytes([sum(((x ^ y) & 1) << (7 - x) for x in range(W))]) for y in range(H)]))


if __name__ == "__main__":
    main()
