#pragma once

#include "AttentionProducts.h"
#include "PackedLinear.h"
#include "VisionTransformer.h"
#include "attnscope/Model.h"

namespace attnscope {

// The inside of a loaded Model, for the engine functions that need its weights (decomposition, adversarial
// perturbations, training).
struct Model::Impl {
    ModelInfo info;
    VisionTransformer net { nullptr };
    at::Device device = at::kCPU;
    std::unique_ptr<PackedLinears> linears = std::make_unique<PackedLinears>(); // the inference forward's
    std::unique_ptr<AttentionProducts> products = std::make_unique<AttentionProducts>(); // ... and its attention's
};

inline const Model::Impl& implOf(const Model& model) { return *model.m_impl; }

} // namespace attnscope
