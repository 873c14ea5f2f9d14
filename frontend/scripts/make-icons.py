#!/usr/bin/env python3
"""Draws the app's icons (public/icons/*.png) from the logo (src/components/Logo.tsx): the
indigo rounded square with the white W, at the sizes the web app manifest names. Pure Python
(zlib), supersampled 4x for smooth edges. Run again only when the logo changes."""
import math, struct, zlib, pathlib

ACCENT = (0x4F, 0x46, 0xE5)
WHITE = (255, 255, 255)
POINTS = [(7, 9), (11, 23), (16, 13), (21, 23), (25, 9)]  # the logo's path, in a 32-unit box
STROKE = 2.6

def segment_distance(px, py, ax, ay, bx, by):
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(px - (ax + t * dx), py - (ay + t * dy))

def inside_rounded(x, y, size, radius):
    cx = min(max(x, radius), size - radius)
    cy = min(max(y, radius), size - radius)
    return math.hypot(x - cx, y - cy) <= radius

def draw(size, maskable):
    # A maskable icon keeps its drawing inside the central 80% safe zone and fills the square.
    scale = size / 32 * (0.7 if maskable else 1.0)
    offset = (size - 32 * scale) / 2
    rows = []
    samples = 4
    for y in range(size):
        row = bytearray([0])
        for x in range(size):
            r = g = b = a = 0.0
            for sy in range(samples):
                for sx in range(samples):
                    px = x + (sx + 0.5) / samples
                    py = y + (sy + 0.5) / samples
                    if not maskable and not inside_rounded(px, py, size, 8 / 32 * size):
                        continue
                    ux, uy = (px - offset) / scale, (py - offset) / scale
                    on_w = min(segment_distance(ux, uy, *POINTS[i], *POINTS[i + 1]) for i in range(4)) <= STROKE / 2
                    colour = WHITE if on_w else ACCENT
                    r += colour[0]; g += colour[1]; b += colour[2]; a += 255
            n = samples * samples
            if a:
                row += bytes([round(r / (a / 255)), round(g / (a / 255)), round(b / (a / 255)), round(a / n)])
            else:
                row += bytes([0, 0, 0, 0])
        rows.append(bytes(row))
    def chunk(kind, data):
        return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data) & 0xFFFFFFFF)
    header = struct.pack('>IIBBBBB', size, size, 8, 6, 0, 0, 0)
    return b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', header) + chunk(b'IDAT', zlib.compress(b''.join(rows), 9)) + chunk(b'IEND', b'')

out = pathlib.Path(__file__).resolve().parent.parent / 'public' / 'icons'
out.mkdir(parents=True, exist_ok=True)
for size in (192, 512):
    (out / f'icon-{size}.png').write_bytes(draw(size, False))
(out / 'maskable-512.png').write_bytes(draw(512, True))
(out / 'apple-touch-icon.png').write_bytes(draw(180, True))
