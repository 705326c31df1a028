#pragma once

// The figures attnscope draws, as data: which figures there are, what each is drawn from, its file name and the CSV
// of what it plots. No Qt: the headless build (ATTNSCOPE_GUI=OFF) and the Python module write these CSVs too, and the
// widgets' figures/FigureCatalog.h draws the same table with QCustomPlot in the Qt build.

#include "attnscope/Analyses.h"
#include "attnscope/LogitDecompositionInfo.h"
#include "attnscope/QueryKey.h"
#include "attnscope/Summary.h"

#include <string>
#include <vector>

namespace attnscope {

enum class Figure { TokenSimilarity, Snr, SnrDiagnostics, HeadCentres, AttentionDistance, LogitDecomposition, AttentionSimilarity,
                    HeadKernels, TokenNorms, HeadAblation };

// What the figures are drawn from: one summary per curve (model, variant, compared model), and for the logit
// decomposition one image's decomposition (optional, not owned).
struct FigureData {
    std::vector<AnalysisSummary> series;
    const LogitDecomposition* decomposition = nullptr;
    LogitDecompositionInfo decompositionInfo;
    int decompositionHead = 0; // < 0: the mean over the heads
};

// One logit-decomposition term [H, N, N] at `head` as N x N values, row-major (query, key); head < 0: the mean over
// the heads. Empty for a head the term does not have.
std::vector<float> decompositionTerm(const Tensor& term, int head);

const std::vector<Figure>& allFigures();
std::string figureFileName(Figure figure); // "token_similarity" (the names in the output folder's figures/)
bool figureHasData(Figure figure, const FigureData& data);
// The plotted data as CSV text, with a header row.
std::string figureCsv(Figure figure, const FigureData& data);

// The figures of one image, beside those of a dataset: the layers x heads attention grid (layer,head,row,col,attention;
// head "mean"; layer "rollout"), the class relevance (one row per patch: class, label, probability, Grad-CAM layer, row,
// col, gae, gradcam) and the token norms (one row per layer and token: layer, token, kind cls|dist|register|patch, row,
// col (-1 for prefix tokens), norm, ratio to the layer's patch median, outlier 0|1, attention received from A_{l+1}).
// FigureCatalog.h draws them.
std::string figureCsv(const AttentionGrid& grid);
std::string figureCsv(const RelevanceFigure& figure);
std::string figureCsv(const TokenNormsFigure& figure);
// The query-key maps: the one-head figure's points (layer,head,image,token,kind query|key,row,col,x,y; row and col -1
// for prefix tokens), and the global view's heads (layer,head,method,scale,agreement).
std::string figureCsv(const QueryKeyFigure& figure);
std::string queryKeyGridCsv(const QueryKeyFigure& figure);

} // namespace attnscope
