// The perturbations of the SNR analysis (docs/analyses.md section 4, Perturbation.h), the adversarial ones through
// autograd.
#include "attnscope/Perturbation.h"

#include "attnscope/Analyses.h"

#include "vit/ModelImpl.h"
#include "io/TensorImpl.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <torch/csrc/autograd/autograd.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cmath>
#include <random>
#include <regex>

namespace attnscope {


Result<Perturbation> Perturbation::parse(const std::string& spec)
{
    static const std::regex form("^([a-z-]+)(?::(.*))?$");
    std::smatch m;
    if (!std::regex_match(spec, m, form))
        return Error { "perturbation \"" + spec + "\": expected KIND[:key=value,...], e.g. gaussian:sigma=8" };
    const std::string kind = m[1];
    Perturbation p;
    std::string key;
    if (kind == "gaussian") {
        p.kind = Kind::Gaussian, p.strength = 8, key = "sigma";
    } else if (kind == "saltpepper" || kind == "salt-and-pepper") {
        p.kind = Kind::SaltPepper, p.strength = 0.05, key = "fraction";
    } else if (kind == "blur") {
        p.kind = Kind::Blur, p.strength = 1.0, key = "sigma";
    } else if (kind == "jpeg") {
        p.kind = Kind::Jpeg, p.strength = 30, key = "quality";
    } else if (kind == "fgsm") {
        p.kind = Kind::Fgsm, p.strength = 2, key = "eps";
    } else if (kind == "pgd") {
        p.kind = Kind::Pgd, p.strength = 2, key = "eps";
    } else {
        return Error { "perturbation \"" + spec + "\": unknown kind (gaussian, saltpepper, blur, jpeg, fgsm, pgd)" };
    }
    const std::string args = m[2];
    static const std::regex pair("([a-z]+)=([-+0-9.eE]+)");
    size_t consumed = 0;
    for (auto it = std::sregex_iterator(args.begin(), args.end(), pair); it != std::sregex_iterator(); ++it) {
        const std::string k = (*it)[1];
        const double v = std::stod((*it)[2]);
        consumed += size_t(it->length());
        if (k == key)
            p.strength = v;
        else if (k == "steps" && p.kind == Kind::Pgd)
            p.steps = int(v);
        else
            return Error { "perturbation \"" + spec + "\": unknown parameter " + k + " (" + kind + " takes " + key + ")" };
    }
    if (consumed + std::count(args.begin(), args.end(), ',') != args.size())
        return Error { "perturbation \"" + spec + "\": cannot read the parameters" };
    const bool valid = p.kind == Kind::SaltPepper ? (p.strength >= 0 && p.strength <= 1)
        : p.kind == Kind::Jpeg                    ? (p.strength >= 1 && p.strength <= 100)
                                                  : p.strength >= 0;
    if (!valid || !std::isfinite(p.strength) || p.steps < 1)
        return Error { "perturbation \"" + spec + "\": strength out of range" };
    return p;
}

std::string Perturbation::spec() const
{
    char v[32];
    std::snprintf(v, sizeof v, "%g", strength);
    switch (kind) {
    case Kind::Gaussian: return std::string("gaussian:sigma=") + v;
    case Kind::SaltPepper: return std::string("saltpepper:fraction=") + v;
    case Kind::Blur: return std::string("blur:sigma=") + v;
    case Kind::Jpeg: return std::string("jpeg:quality=") + v;
    case Kind::Fgsm: return std::string("fgsm:eps=") + v;
    case Kind::Pgd: return std::string("pgd:eps=") + v + ",steps=" + std::to_string(steps);
    }
    return "?";
}

namespace {

// Per-channel [1, C, 1, 1] factors of the normalisation x = (px * rescale - mean) / std.
struct Normalisation {
    at::Tensor mean, std;
    double rescale;
    // A change of `pixels` (0..255 units) in normalised units.
    at::Tensor pixelStep(double pixels) const { return pixels * rescale / std; }
    at::Tensor normalisedValue(double pixel) const { return (pixel * rescale - mean) / std; }
};

Normalisation normalisationOf(const Model& model)
{
    const auto& p = model.info().preprocess;
    return { at::tensor(std::vector<double>(p.mean.begin(), p.mean.end()), at::kFloat).view({ -1, 1, 1 }),
             at::tensor(std::vector<double>(p.std.begin(), p.std.end()), at::kFloat).view({ -1, 1, 1 }), p.rescale };
}

at::Tensor gaussianBlur(const at::Tensor& x, double sigma)
{
    // [C, H, W]; separable kernel of radius ceil(3 sigma), reflect padding. Blur and the per-channel affine
    // normalisation commute (the kernel sums to 1), so blurring the normalised input equals normalising the
    // blurred pixels.
    if (sigma <= 0)
        return x;
    const int64_t r = std::max<int64_t>(1, int64_t(std::ceil(3 * sigma)));
    auto k = at::arange(-r, r + 1, at::kFloat);
    k = at::exp(-(k * k) / (2 * sigma * sigma));
    k = k / k.sum();
    const int64_t C = x.size(0);
    auto y = at::reflection_pad2d(x.unsqueeze(0), { r, r, r, r });
    y = at::conv2d(y, k.view({ 1, 1, 1, -1 }).expand({ C, 1, 1, 2 * r + 1 }).contiguous(), c10::optional<at::Tensor>(), at::IntArrayRef({ 1, 1 }), at::IntArrayRef({ 0, 0 }), at::IntArrayRef({ 1, 1 }), C);
    y = at::conv2d(y, k.view({ 1, 1, -1, 1 }).expand({ C, 1, 2 * r + 1, 1 }).contiguous(), c10::optional<at::Tensor>(), at::IntArrayRef({ 1, 1 }), at::IntArrayRef({ 0, 0 }), at::IntArrayRef({ 1, 1 }), C);
    return y[0];
}

at::Tensor adversarial(const Model& model, const at::Tensor& clean, const Perturbation& p, const Normalisation& n)
{
    const auto& impl = implOf(model);
    // The prepared input is an inference tensor (made under InferenceMode, as every ordinary forward's tensors are),
    // which autograd cannot record: this one forward's input is a normal copy, and the forward runs with autograd on.
    c10::InferenceMode autograd(false);
    torch::AutoGradMode gradients(true);
    const at::Tensor x0 = clean.clone().unsqueeze(0).to(impl.device);
    const at::Tensor eps = (n.pixelStep(p.strength)).unsqueeze(0).to(impl.device);
    const at::Tensor lo = n.normalisedValue(0).unsqueeze(0).to(impl.device), hi = n.normalisedValue(255).unsqueeze(0).to(impl.device);
    at::Tensor target;
    {
        c10::InferenceMode guard;
        ForwardState state;
        state.reset(model.config().depth);
        target = impl.forward(x0, state).argmax(1);
    }
    target = target.clone(); // out of inference mode: the loss saves its target for backward
    const int steps = p.kind == Perturbation::Kind::Fgsm ? 1 : p.steps;
    const at::Tensor stepSize = p.kind == Perturbation::Kind::Fgsm ? eps : eps * 0.15;
    at::Tensor x = x0.clone();
    for (int i = 0; i < steps; ++i) {
        at::Tensor xi = x.detach().requires_grad_(true);
        ForwardState state;
        state.neutrenoLambda = model.config().neutrenoLambda;
        state.boostT = model.config().boostT;
        state.reset(model.config().depth);
        const at::Tensor loss = at::cross_entropy_loss(impl.forward(xi, state), target);
        const at::Tensor grad = torch::autograd::grad({ loss }, { xi })[0];
        // Untargeted: step up the loss of the predicted class, project onto the L-infinity ball, keep pixels valid.
        x = x.detach() + stepSize * grad.sign();
        x = at::max(at::min(x, x0 + eps), x0 - eps);
        x = at::max(at::min(x, hi), lo);
    }
    return x[0].detach().to(at::kCPU);
}

} // namespace

Result<Tensor> perturbInput(const Model& model, const Model::Prepared& prepared, const Perturbation& p, uint64_t seed)
{
    try {
        const Normalisation n = normalisationOf(model);
        const at::Tensor x = unwrap(prepared.input);
        at::Generator gen = at::detail::createCPUGenerator(seed);
        switch (p.kind) {
        case Perturbation::Kind::Gaussian: {
            c10::InferenceMode guard;
            // Added to the resized pixels before normalisation, not clipped: sigma * rescale / std per channel.
            return wrap(x + n.pixelStep(p.strength) * at::normal(0.0, 1.0, x.sizes(), gen));
        }
        case Perturbation::Kind::SaltPepper: {
            c10::InferenceMode guard;
            const at::Tensor u = at::rand({ 1, x.size(1), x.size(2) }, gen);
            const at::Tensor salt = u < p.strength / 2, pepper = (u >= p.strength / 2) & (u < p.strength);
            at::Tensor y = at::where(salt, n.normalisedValue(255).expand_as(x), x);
            return wrap(at::where(pepper, n.normalisedValue(0).expand_as(x), y));
        }
        case Perturbation::Kind::Blur: {
            c10::InferenceMode guard;
            return wrap(gaussianBlur(x, p.strength));
        }
        case Perturbation::Kind::Jpeg: {
            const Image& img = prepared.shown;
            cv::Mat m(img.height, img.width, img.channels == 1 ? CV_8UC1 : CV_8UC3, const_cast<uint8_t*>(img.pixels.data()));
            std::vector<uchar> buf;
            // OpenCV's codecs take BGR; the channel order does not matter for the round trip of a 3-channel image
            // as long as it is the same both ways, except for JPEG's chroma subsampling: convert properly.
            cv::Mat bgr;
            if (img.channels == 3)
                cv::cvtColor(m, bgr, cv::COLOR_RGB2BGR);
            else
                bgr = m;
            cv::imencode(".jpg", bgr, buf, { cv::IMWRITE_JPEG_QUALITY, int(p.strength) });
            cv::Mat back = cv::imdecode(buf, img.channels == 1 ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR);
            if (img.channels == 3)
                cv::cvtColor(back, back, cv::COLOR_BGR2RGB);
            Image out = img;
            out.pixels.assign(back.data, back.data + back.total() * size_t(back.channels()));
            return model.normalise(out);
        }
        case Perturbation::Kind::Fgsm:
        case Perturbation::Kind::Pgd:
            if (model.config().numClasses == 0 || model.config().headIsProjection)
                return Error { p.spec() + ": adversarial perturbations need a classification head" };
            return wrap(adversarial(model, x, p, n));
        }
    } catch (const c10::Error& e) {
        return Error { p.spec() + " failed: " + e.what_without_backtrace() };
    } catch (const cv::Exception& e) {
        return Error { p.spec() + " failed: " + e.err };
    }
    return Error { "unknown perturbation" };
}

} // namespace attnscope
