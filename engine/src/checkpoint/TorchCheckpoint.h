#pragma once

#include <ATen/Tensor.h>

#include <cstddef>
#include <map>
#include <string>

namespace attnscope {

// Reads the tensors of a torch.save() zip archive (PyTorch >= 1.6, any pickle protocol 2-5) without running
// pickle code: data.pkl is read by a restricted unpickler that knows only OrderedDict, the tensor/parameter
// rebuild functions and the torch.<Type>Storage classes, and refuses any other global at the point it is named.
//
// Returns a flat map name -> contiguous CPU tensor that owns its memory, with the dtype as stored. Storages are
// read to the CPU whatever their saved location ('cuda:1' included). The tensors are taken from:
//  - a plain (Ordered)dict of tensors: its keys, as they are;
//  - a wrapper that also holds non-tensor entries, e.g. {"model_state": sd, "optimizer": ..., "epoch": 3}: the first of
//    "model", "state_dict", "model_state", "model_state_dict", "module", "net", "network" that is a dict holding
//    tensors (repeatedly, for wrappers in wrappers), or else an EMA copy ("model_ema", "ema", "state_dict_ema", ...);
//    the model's own is taken before an EMA copy. `key` names the entry to take instead (a description's
//    "weights_key"); `taken` receives which entries were walked through, with what else was beside them, or "" for a
//    plain dict;
//  - otherwise every tensor in the dict, nested dicts flattened with '.' ({"enc": {"w": t}} -> "enc.w"),
//    non-tensor values skipped.
// Refused with a message: legacy (pre-1.6) files, TorchScript archives, zips without data.pkl, missing or short
// storage records, views reaching outside their storage, pickles naming any other global, and files without
// tensors. Throws LoadError with a one-line message "<path>: <problem>".
std::map<std::string, at::Tensor> readTorchCheckpoint(const std::string& path, const std::string& key = {},
                                                      std::string* taken = nullptr);

// The same for a checkpoint already in memory (the fuzz harness uses it); `nameForMessages` starts every error
// message in place of the path. The bytes need only live for the duration of the call.
std::map<std::string, at::Tensor> readTorchCheckpointFromMemory(const void* data, size_t size,
                                                                const std::string& nameForMessages);

} // namespace attnscope
