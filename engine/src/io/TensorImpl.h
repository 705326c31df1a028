#pragma once

#include "attnscope/Tensor.h"

#include <ATen/Tensor.h>

namespace attnscope {

// The backing store of a public Tensor: a contiguous float32 CPU at::Tensor.
struct Tensor::Impl {
    at::Tensor tensor;
    std::vector<int64_t> shape;
};

// Wraps (moving to the CPU, float32, contiguous as needed) without copying when it already is.
Tensor wrap(const at::Tensor& t);
// The at::Tensor behind a public Tensor (undefined for an empty one); shares memory, treat as read-only.
at::Tensor unwrap(const Tensor& t);

} // namespace attnscope
