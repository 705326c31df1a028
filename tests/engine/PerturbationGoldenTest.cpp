// Every perturbation of the SNR analysis against tests/golden/perturbations (make_perturbations.py: each perturbation
// written independently in Python, the SNR and diagnostics through a float64 forward): the perturbed input itself,
// then the per-layer SNR and Proposition 3.1's diagnostics, for the tv_grid16 fixture.
#include "TestSupport.h"

#include <attnscope/Analyses.h>
#include <attnscope/Image.h>
#include <attnscope/Model.h>
#include <attnscope/Perturbation.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

using namespace attnscope;
using namespace attnscope::test;

namespace {

const std::string kFixture = goldenDir() + "/tv_grid16";
const std::string kCases = ATTNSCOPE_TEST_SOURCE_DIR "/golden/perturbations/";

struct Case {
    std::string dir;
    // How close the engine's perturbed input must be: at most `share` of its elements differ from the reference by
    // more than `tolerance` (normalised units; one pixel level is about 0.017).
    double tolerance;
    double share;
    // How close the SNR (dB) of the engine's own perturbed input must be to the reference's.
    double snrDb;
};

// Measured with Debian's LibTorch 1.13: every element of every case within 3.6e-7 of the reference (float32 rounding;
// JPEG goes through OpenCV's libjpeg in the engine and PIL's in the reference, same codec and settings, same bytes).
// FGSM and PGD follow the sign of a gradient the engine takes in float32 and the reference in float64: a component
// near zero may take the other sign on another build (then that element moves by 2 eps, or by a PGD step), so those
// two may differ at 0.5% of the elements, with their SNR correspondingly looser. A wrong sign convention, step or
// projection moves every element.
const Case kAll[] = {
    { "saltpepper-fraction-0.1", 1e-6, 0.0, 1e-3 },
    { "blur-sigma-1.5", 1e-6, 0.0, 1e-3 },
    { "jpeg-quality-30", 1e-6, 0.0, 1e-3 },
    { "fgsm-eps-2", 1e-6, 0.005, 0.02 },
    { "pgd-eps-2-steps-20", 1e-6, 0.005, 0.02 },
};

Trace traceOf(const Model& model, const Tensor& input)
{
    RunOptions options;
    options.record.blocks = options.record.attnBranch = options.record.residual = true;
    auto trace = model.run(input, options);
    EXPECT_TRUE(trace) << trace.message();
    return trace ? *trace : Trace();
}

// The SNR rows and diagnostics of `snr` against the case's CSVs, within `db` (SNR) and `relative` (diagnostics).
void expectSnrMatches(const SnrResult& snr, const std::string& dir, double db, double relative)
{
    const auto rows = readCsv(dir + "/snr.csv");
    ASSERT_EQ(rows.size(), snr.snr.size());
    for (const auto& p : snr.snr) {
        bool found = false;
        for (const auto& r : rows)
            if (std::stoi(r.at("layer")) == p.layer && r.at("tap") == toString(p.tap)) {
                EXPECT_NEAR(p.snrDb, std::stod(r.at("value")), db) << dir << " layer " << p.layer << " " << toString(p.tap);
                found = true;
            }
        EXPECT_TRUE(found) << p.layer << toString(p.tap);
    }
    const auto diag = readCsv(dir + "/snr_diagnostics.csv");
    ASSERT_EQ(diag.size(), snr.diagnostics.size());
    for (size_t i = 0; i < diag.size(); ++i) {
        const SnrDiagnostics& d = snr.diagnostics[i];
        ASSERT_EQ(d.layer, std::stoi(diag[i].at("layer")));
        const std::pair<const char*, double> fields[] = { { "alpha", d.alpha }, { "beta", d.beta }, { "gamma", d.gamma },
                                                          { "gain", d.gain }, { "bound", d.bound }, { "sensitivity", d.sensitivity } };
        for (const auto& [name, value] : fields) {
            const double ref = std::stod(diag[i].at(name));
            EXPECT_NEAR(value, ref, relative * std::abs(ref) + 1e-9) << dir << " layer " << d.layer << " " << name;
        }
        EXPECT_EQ(d.conditionHolds ? "1" : "0", diag[i].at("condition_holds")) << dir << " layer " << d.layer;
    }
}

} // namespace

TEST(PerturbationGolden, EveryPerturbationMatchesItsReference)
{
    auto model = Model::load(kFixture);
    ASSERT_TRUE(model) << model.message();
    auto shown = decodeImage(kFixture + "/image.png");
    ASSERT_TRUE(shown) << shown.message();
    auto input = (*model)->normalise(*shown);
    ASSERT_TRUE(input) << input.message();
    const Model::Prepared prepared { *shown, *input };
    const Trace clean = traceOf(**model, prepared.input);
    for (const Case& c : kAll) {
        SCOPED_TRACE(c.dir);
        const std::string dir = kCases + c.dir;
        std::ifstream in(dir + "/case.json");
        ASSERT_TRUE(in) << dir << "/case.json is missing (tests/golden/make_perturbations.py writes it)";
        const auto meta = nlohmann::json::parse(in);
        auto perturbation = Perturbation::parse(meta["spec"].get<std::string>());
        ASSERT_TRUE(perturbation) << perturbation.message();
        auto perturbed = perturbInput(**model, prepared, *perturbation, meta["seed"].get<uint64_t>());
        ASSERT_TRUE(perturbed) << perturbed.message();
        const Tensor reference = loadNpy(dir + "/input_perturbed.npy");
        ASSERT_EQ(perturbed->numel(), reference.numel());
        int64_t off = 0;
        double largest = 0;
        for (int64_t i = 0; i < reference.numel(); ++i) {
            const double d = std::abs(double(perturbed->data()[i]) - reference.data()[i]);
            off += d > c.tolerance;
            largest = std::max(largest, d);
        }
        const double share = double(off) / double(reference.numel());
        EXPECT_LE(share, c.share) << off << " of " << reference.numel() << " elements differ by more than " << c.tolerance
                                  << " (largest " << largest << ")";
        // The SNR machinery, held tightly on the reference's own perturbed input ...
        const Trace onReference = traceOf(**model, reference);
        expectSnrMatches(signalToNoise(clean, onReference), dir, 1e-4, 1e-4);
        // ... and what a user gets: the engine's perturbation through it.
        const Trace onEngine = traceOf(**model, *perturbed);
        expectSnrMatches(signalToNoise(clean, onEngine), dir, c.snrDb, c.snrDb);
    }
}

// FGSM and PGD need the gradient of a classification head: a model without one gets one clear line.
TEST(PerturbationGolden, AdversarialNeedsAClassificationHead)
{
    auto model = Model::load("builtin:conv3x3-as-attention");
    ASSERT_TRUE(model) << model.message();
    if ((*model)->config().numClasses > 0 && !(*model)->config().headIsProjection)
        GTEST_SKIP() << "conv3x3-as-attention has a head";
    const auto images = fashionSamples(**model, 1);
    ASSERT_EQ(images.size(), 1u);
    for (const char* spec : { "fgsm:eps=2", "pgd:eps=2" }) {
        auto r = perturbInput(**model, images[0], *Perturbation::parse(spec), 1);
        ASSERT_FALSE(r) << spec;
        EXPECT_NE(r.message().find("need a classification head"), std::string::npos) << r.message();
    }
}
