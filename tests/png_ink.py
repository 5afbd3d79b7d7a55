#!/usr/bin/env python3
"""png_ink.py FILE.png — how much a screenshot shows, read from the PNG with zlib alone (no
PIL): prints "WIDTH HEIGHT COLOURS INK SATURATED": distinct colours, the share of pixels that are
not white, and how many pixels are strongly coloured (max - min channel over 80: chart marks and
bars, not text). 8-bit greyscale, RGB or RGBA, not interlaced."""
import struct
import sys
import zlib


def rows(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    if depth != 8 or interlace or ctype not in (0, 2, 4, 6):
        sys.exit(f"{path}: depth {depth}, colour type {ctype}, interlace {interlace}: not read here")
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
    raw, stride, prev = zlib.decompress(idat), w * bpp, bytearray(w * bpp)
    yield w, h, bpp
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride) if f else ():
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            else:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        yield line


def main():
    it = rows(sys.argv[1])
    w, h, bpp = next(it)
    colours, ink, sat = set(), 0, 0
    for line in it:
        for x in range(0, len(line), bpp):
            px = bytes(line[x:x + min(bpp, 3)])
            colours.add(px)
            ink += px != b"\xff" * len(px)
            sat += max(px) - min(px) > 80
    print(w, h, len(colours), f"{ink / (w * h):.4f}", sat)


if __name__ == "__main__":
    main()
