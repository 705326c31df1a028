#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <map>
#include <string>

namespace attnscope {

using TensorMap = std::map<std::string, at::Tensor>;

struct SafetensorsFile {
    TensorMap tensors;                           // F32 tensors alias the memory map; others are converted copies
    std::map<std::string, std::string> metadata; // the header's __metadata__
};

// Safetensors header lengths above this are refused (the format's own reference reader uses the same cap).
constexpr uint64_t kMaxSafetensorsHeader = 100u * 1024 * 1024;

// Reads a .safetensors file through a memory map. Every offset and shape is checked against the file before any
// tensor is made; F16, BF16 and F64 are converted to float32, integer tensors keep their type.
// Throws LoadError("<path>: <problem>").
SafetensorsFile readSafetensors(const std::string& path);

// Writes float32 tensors (contiguous CPU copies are made as needed) with optional metadata, via a temporary
// file and rename. Throws LoadError on I/O failure.
void writeSafetensors(const std::string& path, const TensorMap& tensors,
                      const std::map<std::string, std::string>& metadata = {});

} // namespace attnscope
