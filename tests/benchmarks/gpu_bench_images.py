"""The images gpu_bench.py runs both sides on (split from it): PNGs written with the standard library only, and the
lists that repeat them."""
import os
import struct
import zlib


def png_bytes(rows, width):
    """An 8-bit RGB PNG with filter 0 on every row (what gpu_peer.py reads when PIL is absent)."""
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    raw = b"".join(b"\x00" + r for r in rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, len(rows), 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b""))


def base_image(seed, size):
    """Rows of a smooth picture with edges: two colour gradients, discs and stripes, a little pixel noise."""
    import math
    import random
    rnd = random.Random(seed)
    discs = [(rnd.uniform(0, size), rnd.uniform(0, size), rnd.uniform(size / 12, size / 4),
              [rnd.randrange(256) for _ in range(3)]) for _ in range(5)]
    f = [rnd.uniform(0.01, 0.08) for _ in range(6)]
    c0, c1 = [rnd.randrange(256) for _ in range(3)], [rnd.randrange(256) for _ in range(3)]
    rows = []
    for y in range(size):
        row = bytearray(3 * size)
        for x in range(size):
            t = (x + y) / (2 * size)
            px = [c0[c] * (1 - t) + c1[c] * t + 40 * math.sin(f[c] * x + f[c + 3] * y) for c in range(3)]
            for cx, cy, r, col in discs:
                if (x - cx) ** 2 + (y - cy) ** 2 < r * r:
                    px = [0.3 * p + 0.7 * q for p, q in zip(px, col)]
            for c in range(3):
                row[3 * x + c] = max(0, min(255, int(px[c] + rnd.gauss(0, 6))))
        rows.append(bytes(row))
    return rows


def make_images(folder, distinct, size):
    """`distinct` PNGs: 8 base pictures, each rolled down and across by a different amount (and some inverted)."""
    os.makedirs(folder, exist_ok=True)
    bases = [base_image(s, size) for s in range(min(8, distinct))]
    invert = bytes(255 - v for v in range(256))
    paths = []
    for i in range(distinct):
        rows = bases[i % len(bases)]
        k = i // len(bases)
        dy, dx = (k * 37) % size, (k * 53) % size
        rows = rows[dy:] + rows[:dy]
        rows = [r[3 * dx:] + r[:3 * dx] for r in rows]
        if k % 3 == 2:
            rows = [r.translate(invert) for r in rows]
        path = os.path.join(folder, f"img{i:06d}.png")
        with open(path, "wb") as f:
            f.write(png_bytes(rows, size))
        paths.append(path)
    return paths


def write_list(path, paths, count):
    with open(path, "w") as f:
        for i in range(count):
            f.write(paths[i % len(paths)] + "\n")
    return path
