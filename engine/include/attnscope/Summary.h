#pragma once

// Dataset-level results: what the CSVs of docs/design.md section 7 hold and what the figures draw. Built from the
// mergeable StatsTable of a run (one image or many, one shard or merged shards).

#include "attnscope/Analyses.h"
#include "attnscope/Image.h"
#include "attnscope/Result.h"
#include "attnscope/Statistics.h"

#include <string>
#include <vector>

namespace attnscope {

struct Estimate {
    double mean = 0, sd = 0, ci95 = 0; // ci95: half-width 1.96 sd / sqrt(n)
    int64_t n = 0;
};

struct TokenSimilarityRow {
    int layer;
    Tap tap;
    TokenSet tokens;
    Estimate value;
};

struct HeadCentreRow {
    int layer, head;
    Estimate centreDy, centreDx, peakDy, peakDx, meanDistancePx, bandwidth, prefixMass, windowMass;
    std::vector<double> offsetMap; // mean offset map, (2R+1)^2 row-major, rows dy = -R..R
    int radius = 3;
    double contour50 = 0, contour90 = 0; // levels of the mean offset map holding 50% / 90% of its mass
};

struct AttentionSimilarityRow {
    int layer;
    Estimate successiveCos, headRedundancy;
};

struct SnrRow {
    std::string perturbation; // e.g. "gaussian:sigma=8"
    int layer;
    Tap tap;
    Estimate snrDb;
};

struct SnrDiagnosticsRow {
    std::string perturbation;
    int layer;
    Estimate alpha, beta, gamma, gain, bound, sensitivity;
    double conditionShare = 0; // share of image draws where min(alpha, beta) > gamma
};

// Token norms of X_l over the images (Analyses.h section 7): per image, the count of high-norm patch tokens, the patch
// median, the largest patch norm and the CLS and register norms over that median, and the shares of A_{l+1}'s attention
// on the outliers and on the prefix.
struct TokenNormRow {
    int layer = 0;
    Estimate outliers, patchMedian, maxRatio, clsRatio, registerRatio, outlierAttention, prefixAttention;
};

// Head ablation (Analyses.h section 8) of one head over the images: the changes of the clean class's logit and
// probability, the KL divergence of the prediction, and the share of images whose prediction flips.
struct HeadAblationRow {
    int layer = 0, head = 0;
    Estimate dlogit, dprob, kl;
    double flipShare = 0;
    // The accuracy with the head ablated minus the clean accuracy, over the accuracy.n images of known class (their
    // class folders); n 0 when none was known.
    Estimate accuracy;
};

// One model (or one variant of a model) over a set of images.
struct AnalysisSummary {
    std::string model;   // name shown in figures
    std::string label;   // curve label: the model, or "model (NeuTRENO 0.6)" ...
    std::string options; // e.g. "gaussian:sigma=8, seed 0"
    int64_t images = 0;
    int patchSize = 0;
    std::vector<TokenSimilarityRow> tokenSimilarity;
    std::vector<HeadCentreRow> headCentres;
    std::vector<AttentionSimilarityRow> attentionSimilarity;
    std::vector<SnrRow> snr;
    std::vector<SnrDiagnosticsRow> snrDiagnostics;
    std::vector<TokenNormRow> tokenNorms;
    std::vector<HeadAblationRow> ablation;
    std::string ablationMode; // "zero" or "mean" when the ablation ran ("" unknown)
    // A hierarchical model's (Swin's) stage of each block, 1-based (blockStages[l - 1] of layer l; layer 0, the patch
    // embedding, is stage 1's): the CSVs then have a stage column and the figures mark the merges. Empty for a ViT.
    std::vector<int> blockStages;
    int stageOf(int layer) const { return layer <= 0 || blockStages.empty() ? 1 : blockStages.at(size_t(layer - 1)); }
};
// The stage of each block of a hierarchical model (Swin), 1-based, as AnalysisSummary::blockStages has them; empty for
// a ViT.
std::vector<int> blockStagesOf(const ModelConfig& config);

// One image's class relevance (Analyses.h, section 10) with what its figure names.
struct RelevanceFigure {
    std::string model;
    std::string image;
    std::string label; // of the target class ("" without labels)
    Image shown;       // the preprocessed image the model saw
    Relevance relevance;
};

// One image's token norms (Analyses.h, section 7) with what its figure names.
struct TokenNormsFigure {
    std::string model;
    std::string image;
    Image shown; // the preprocessed image the model saw
    bool hasClassToken = true; // the first prefix token is a CLS token
    int registers = 0;         // the last prefix tokens are registers
    TokenNorms norms;
};

// Turns statistics (of one run or merged shards) into the rows of the CSVs and figures.
AnalysisSummary summarise(const StatsTable& stats, int64_t images, int radius);

// Writes token_similarity.csv, head_centres.csv, attention_similarity.csv, snr.csv, snr_diagnostics.csv,
// token_norms.csv and ablation.csv (docs/design.md section 7) for what the summary holds; with several perturbations
// the SNR files are named snr_<slug>.csv. Returns the files written. Every file goes through a temporary name.
Result<std::vector<std::string>> writeSummaryCsvs(const std::string& dir, const AnalysisSummary& summary);

// Statistics as JSON text and back (exact: 17 significant digits), for shards and `merge`.
std::string statisticsToJson(const StatsTable& stats);
Result<StatsTable> statisticsFromJson(const std::string& json);

// "gaussian:sigma=8" -> "gaussian-sigma-8"
std::string perturbationSlug(const std::string& spec);

} // namespace attnscope
