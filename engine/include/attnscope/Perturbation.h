#pragma once

#include "attnscope/Model.h"

#include <cstdint>
#include <string>

namespace attnscope {

// The perturbations of docs/analyses.md section 4, each seeded. Strengths in the units of the paper:
// gaussian sigma and salt-and-pepper in 0..255 pixel units / a fraction of pixels, blur sigma in pixels, JPEG
// quality, FGSM/PGD epsilon in 1/255 units (L-infinity, untargeted against the predicted class; PGD takes 20
// steps of 0.15 epsilon).
struct Perturbation {
    enum class Kind { Gaussian, SaltPepper, Blur, Jpeg, Fgsm, Pgd };
    Kind kind = Kind::Gaussian;
    double strength = 8;
    int steps = 20; // PGD only

    // "gaussian:sigma=8", "saltpepper:fraction=0.05", "blur:sigma=1.5", "jpeg:quality=30", "fgsm:eps=2",
    // "pgd:eps=2,steps=20"
    static Result<Perturbation> parse(const std::string& spec);
    std::string spec() const;
};

// The perturbed normalised input [C, H, W] for image `prepared` (draw `draw` of the seeded sequence). Gaussian noise is
// added to the resized image before normalisation and not clipped (docs/analyses.md section 4); the adversarial kinds
// need a classification head.
Result<Tensor> perturbInput(const Model& model, const Model::Prepared& prepared, const Perturbation& perturbation,
                            uint64_t seed);

} // namespace attnscope
