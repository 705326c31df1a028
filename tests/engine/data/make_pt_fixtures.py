#!/usr/bin/python3
"""Writes the small torch.save() fixtures of TorchCheckpointTest under tests/engine/data/pt/.

Run with Debian's python3-torch (1.13): /usr/bin/python3 tests/engine/data/make_pt_fixtures.py
The outputs are committed; rerun only to change them. expected.json holds the values the C++ reader must
return for the good files (every value is exactly representable in its dtype, so the test compares exactly).
Nothing here unpickles the hostile fixtures: they are only written.
"""

import argparse
import collections
import json
import os
import pickle
import struct
import sys
import zipfile

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pt")
FIXED_TIME = (1980, 1, 1, 0, 0, 0)


def path(name):
    return os.path.join(OUT, name)


def describe(t):
    t = t.detach()
    values = t.reshape(-1).tolist() if t.dim() > 0 else [t.item()]
    if t.dtype == torch.bool:
        values = [int(v) for v in values]
    return {"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape), "values": values}


def base_state_dict():
    """Every dtype the reader maps, plus views that exercise offsets, strides and shared storages."""
    sd = collections.OrderedDict()
    sd["f32"] = torch.arange(12, dtype=torch.float32).reshape(3, 4) * 0.5 - 1.0
    sd["f16"] = torch.tensor([1.5, -2.25, 0.125, 65504.0, -0.0], dtype=torch.float16)
    sd["bf16"] = torch.tensor([1.5, -3.0, 0.0078125, 256.0], dtype=torch.bfloat16)
    sd["f64"] = torch.tensor([[0.1, -1e300], [3.0, 2.5]], dtype=torch.float64)
    sd["i64"] = torch.tensor([0, -1, 2**40, -(2**53)], dtype=torch.int64)
    sd["i32"] = torch.tensor([7, -2**31, 2**31 - 1], dtype=torch.int32)
    sd["i16"] = torch.tensor([-300, 300], dtype=torch.int16)
    sd["i8"] = torch.tensor([-128, 127, 5], dtype=torch.int8)
    sd["u8"] = torch.tensor([0, 255, 17], dtype=torch.uint8)
    sd["flags"] = torch.tensor([True, False, True], dtype=torch.bool)
    # A strided view saved as a view of a bigger storage: torch.save keeps the whole 24-element storage,
    # storage_offset 1 and strides (6, 2).
    grid = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    sd["strided"] = grid[:, 1::2]
    sd["transposed"] = (torch.arange(6, dtype=torch.float32) + 100).reshape(2, 3).t()
    # Two tensors on one storage, the second at an offset.
    whole = torch.arange(10, dtype=torch.float64) * 0.25
    sd["shared_whole"] = whole
    sd["shared_tail"] = whole[4:]
    sd["scalar"] = torch.tensor(7, dtype=torch.int64)
    sd["empty"] = torch.zeros(0, 3)
    return sd


def small_state_dict():
    sd = collections.OrderedDict()
    sd["encoder.weight"] = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    sd["encoder.bias"] = torch.tensor([0.5, -0.5])
    return sd


# --- a tiny pickle assembler for files torch.save would never write -------------------------------------

def p_str(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def p_int(i):
    return b"J" + struct.pack("<i", i)


def p_global(module, name):
    return b"c" + f"{module}\n{name}\n".encode()


def p_tuple(items):
    return b"(" + b"".join(items) + b"t"


def p_tensor(storage_type, key, location, numel, offset, size, stride):
    pid = p_tuple([p_str("storage"), p_global("torch", storage_type), p_str(key), p_str(location), p_int(numel)])
    args = p_tuple([pid + b"Q", p_int(offset), p_tuple([p_int(s) for s in size]), p_tuple([p_int(s) for s in stride]),
                    b"\x89", p_global("collections", "OrderedDict") + b")R"])
    return p_global("torch._utils", "_rebuild_tensor_v2") + args + b"R"


def p_state_dict(entries):
    return b"\x80\x02}(" + b"".join(p_str(k) + v for k, v in entries) + b"u."


def write_zip(name, folder, records):
    with zipfile.ZipFile(path(name), "w", zipfile.ZIP_STORED) as z:
        for rec, data in records.items():
            z.writestr(zipfile.ZipInfo(f"{folder}/{rec}" if folder else rec, FIXED_TIME), data)


def f32_bytes(values, byteorder="<"):
    return struct.pack(byteorder + "%df" % len(values), *values)


class RunsShell:
    """Pickles as a call of os.system: what a hostile checkpoint does. Never unpickled here."""

    def __reduce__(self):
        return (os.system, ("touch /tmp/attnscope_pwned_marker",))


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.remove(path(f))
    torch.manual_seed(0)
    expected = {}

    # --- files that must load ---
    sd = base_state_dict()
    torch.save(sd, path("plain.pt"))
    expected["plain.pt"] = {k: describe(v) for k, v in sd.items()}

    torch.save(sd, path("proto4.pt"), pickle_protocol=4)  # FRAME, MEMOIZE, STACK_GLOBAL, SHORT_BINUNICODE
    expected["proto4.pt"] = expected["plain.pt"]

    small = small_state_dict()
    torch.save({"model": small, "epoch": 3}, path("wrapped.pt"))
    expected["wrapped.pt"] = {k: describe(v) for k, v in small.items()}

    linear = torch.nn.Linear(3, 2)
    with torch.no_grad():
        linear.weight.copy_(torch.tensor([[1.0, -1.0, 0.5], [2.0, 0.25, -4.0]]))
        linear.bias.copy_(torch.tensor([0.125, -8.0]))
    # keep_vars=True: nn.Parameter objects (torch._utils._rebuild_parameter), in an OrderedDict whose
    # _metadata attribute pickle restores with BUILD.
    torch.save(linear.state_dict(keep_vars=True), path("parameters.pt"))
    expected["parameters.pt"] = {k: describe(v) for k, v in linear.state_dict().items()}

    optimizer = {"state": {0: {"step": 3, "exp_avg": torch.ones(2)}},
                 "param_groups": [{"lr": 0.01, "betas": (0.9, 0.999), "params": [0], "name": None}]}
    torch.save({"epoch": 5, "best": 0.75, "arch": "vit", "state_dict": small, "optimizer": optimizer},
               path("nested.pt"))
    expected["nested.pt"] = expected["wrapped.pt"]

    flat = {"encoder": {"w": torch.tensor([1.0, 2.0]), "inner": {"b": torch.tensor([3], dtype=torch.int64)}},
            "head": torch.tensor([[5.0]]), "epoch": 1}
    torch.save(flat, path("flatten.pt"))
    expected["flatten.pt"] = {"encoder.w": describe(flat["encoder"]["w"]),
                              "encoder.inner.b": describe(flat["encoder"]["inner"]["b"]),
                              "head": describe(flat["head"])}

    # Saved from a GPU: location 'cuda:1', an arbitrary top folder, and torch 2.x's byteorder record.
    values = [1.0, -2.0, 3.5, 0.25, 8.0, -0.5]
    cuda_pickle = p_state_dict([("w", p_tensor("FloatStorage", "0", "cuda:1", 6, 0, [2, 3], [3, 1])),
                                ("w_tail", p_tensor("FloatStorage", "0", "cuda:1", 6, 2, [2, 2], [1, 2]))])
    write_zip("cuda_location.pt", "checkpoint-v2", {"data.pkl": cuda_pickle, "byteorder": b"little",
                                                    "data/0": f32_bytes(values), "version": b"3\n"})
    w = torch.tensor(values).reshape(2, 3)
    expected["cuda_location.pt"] = {"w": describe(w), "w_tail": describe(torch.tensor(values).as_strided([2, 2], [1, 2], 2))}
    write_zip("big_endian.pt", "be", {"data.pkl": cuda_pickle, "byteorder": b"big",
                                      "data/0": f32_bytes(values, ">"), "version": b"3\n"})
    expected["big_endian.pt"] = expected["cuda_location.pt"]

    # --- files that must be refused ---
    torch.save({"weights": torch.ones(2), "hook": RunsShell()}, path("evil_system.pt"))
    torch.save({"model": small, "args": argparse.Namespace(lr=0.1)}, path("evil_namespace.pt"))
    torch.save({"x": np.arange(3, dtype=np.float32)}, path("evil_numpy.pt"))
    torch.save(torch.nn.Linear(2, 1), path("whole_module.pt"))

    with open(path("plain.pt"), "rb") as f:
        data = f.read()
    with open(path("truncated.pt"), "wb") as f:
        f.write(data[: len(data) // 2])

    class Tiny(torch.nn.Module):
        def forward(self, x):
            return x * 2

    torch.jit.save(torch.jit.script(Tiny()), path("torchscript.pt"))
    torch.save(small, path("legacy.pt"), _use_new_zipfile_serialization=False)
    with open(path("not_a_zip.pt"), "wb") as f:
        f.write(b"this is not a checkpoint\n")
    with open(path("bare_pickle.pt"), "wb") as f:
        f.write(pickle.dumps({"a": 1}, protocol=2))
    write_zip("no_data_pkl.pt", "archive", {"readme.txt": b"hello"})
    torch.save({"epoch": 3, "lr": 0.1}, path("no_tensors.pt"))

    one = p_state_dict([("w", p_tensor("FloatStorage", "0", "cpu", 4, 0, [4], [1]))])
    write_zip("missing_storage.pt", "a", {"data.pkl": one})
    write_zip("short_storage.pt", "a", {"data.pkl": one, "data/0": f32_bytes([1.0, 2.0])})
    oob = p_state_dict([("w", p_tensor("FloatStorage", "0", "cpu", 4, 1, [2, 2], [2, 1]))])
    write_zip("out_of_bounds.pt", "a", {"data.pkl": oob, "data/0": f32_bytes([1.0, 2.0, 3.0, 4.0])})
    neg = p_state_dict([("w", p_tensor("FloatStorage", "0", "cpu", 4, 3, [4], [-1]))])
    write_zip("negative_stride.pt", "a", {"data.pkl": neg, "data/0": f32_bytes([1.0, 2.0, 3.0, 4.0])})
    write_zip("bad_opcode.pt", "a", {"data.pkl": b"\x80\x02}\xff."})
    write_zip("truncated_pickle.pt", "a", {"data.pkl": one[: len(one) - 20], "data/0": f32_bytes([1.0] * 4)})
    write_zip("stack_underflow.pt", "a", {"data.pkl": b"\x80\x02\x86."})

    with open(path("expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")

    total = 0
    for name in sorted(os.listdir(OUT)):
        size = os.path.getsize(path(name))
        total += size
        print(f"{size:7d}  {name}")
    print(f"{total:7d}  total")


if __name__ == "__main__":
    sys.exit(main())
