#include "attnscope/FigureData.h"

#include "attnscope/Files.h"

#include <algorithm>
#include <cmath>

namespace attnscope {

namespace {

std::string quoted(const std::string& s)
{
    std::string q = "\"";
    for (char c : s)
        q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

// An estimate's columns: mean,sd,ci95,n.
std::string estimateColumns(const Estimate& e)
{
    return csvNumber(e.mean) + "," + csvNumber(e.sd) + "," + csvNumber(e.ci95) + "," + std::to_string(e.n);
}

// A head whose offset map was measured: the grid has queries whose whole window fits (else the map is all NaN).
bool hasOffsetMap(const HeadCentreRow& r)
{
    return std::any_of(r.offsetMap.begin(), r.offsetMap.end(), [](double v) { return std::isfinite(v); });
}

const AnalysisSummary* first(const FigureData& data) { return data.series.empty() ? nullptr : &data.series.front(); }

} // namespace

const std::vector<Figure>& allFigures()
{
    static const std::vector<Figure> all { Figure::TokenSimilarity, Figure::Snr, Figure::SnrDiagnostics, Figure::HeadCentres,
                                           Figure::AttentionDistance, Figure::LogitDecomposition, Figure::AttentionSimilarity,
                                           Figure::HeadKernels, Figure::TokenNorms,
                                           Figure::HeadAblation };
    return all;
}

std::string figureFileName(Figure figure)
{
    switch (figure) {
    case Figure::TokenSimilarity: return "token_similarity";
    case Figure::Snr: return "snr";
    case Figure::SnrDiagnostics: return "snr_diagnostics";
    case Figure::HeadCentres: return "head_centres";
    case Figure::AttentionDistance: return "attention_distance";
    case Figure::AttentionSimilarity: return "attention_similarity";
    case Figure::LogitDecomposition: return "logit_decomposition";
    case Figure::HeadKernels: return "head_kernels";
    case Figure::TokenNorms: return "high_norm_tokens";
    case Figure::HeadAblation: return "head_ablation";
    }
    return {};
}

bool figureHasData(Figure figure, const FigureData& data)
{
    const AnalysisSummary* s = first(data);
    switch (figure) {
    case Figure::TokenSimilarity: return s && !s->tokenSimilarity.empty();
    case Figure::Snr: return s && !s->snr.empty();
    case Figure::SnrDiagnostics: return s && !s->snrDiagnostics.empty();
    case Figure::HeadCentres:
    case Figure::AttentionDistance: return s && !s->headCentres.empty();
    case Figure::AttentionSimilarity: return s && !s->attentionSimilarity.empty();
    case Figure::LogitDecomposition: return data.decomposition != nullptr;
    case Figure::HeadKernels: return s && std::any_of(s->headCentres.begin(), s->headCentres.end(), hasOffsetMap);
    case Figure::TokenNorms: return s && !s->tokenNorms.empty();
    case Figure::HeadAblation:
        return std::any_of(data.series.begin(), data.series.end(), [](const AnalysisSummary& x) { return !x.ablation.empty(); });
    }
    return false;
}

std::vector<float> decompositionTerm(const Tensor& term, int head)
{
    if (term.dim() != 3 || head >= term.size(0))
        return {};
    const int64_t heads = term.size(0), cells = term.size(1) * term.size(2);
    if (head >= 0)
        return std::vector<float>(term.data() + head * cells, term.data() + (head + 1) * cells);
    std::vector<double> sum(size_t(cells), 0.0);
    for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < cells; ++i)
            sum[size_t(i)] += term.data()[h * cells + i];
    std::vector<float> mean(static_cast<size_t>(cells));
    for (int64_t i = 0; i < cells; ++i)
        mean[size_t(i)] = float(sum[size_t(i)] / double(heads));
    return mean;
}

std::string figureCsv(Figure figure, const FigureData& data)
{
    std::string csv;
    switch (figure) {
    case Figure::TokenSimilarity:
        csv = "label,layer,tap,tokens,mean,sd,ci95,n\n";
        for (const auto& s : data.series)
            for (const auto& r : s.tokenSimilarity)
                if (r.tap == Tap::Block)
                    csv += quoted(s.label) + "," + std::to_string(r.layer) + "," + toString(r.tap) + "," + toString(r.tokens) + ","
                        + estimateColumns(r.value) + "\n";
        break;
    case Figure::Snr:
        csv = "label,perturbation,layer,tap,snr_db_mean,snr_db_sd,ci95,n\n";
        for (const auto& s : data.series)
            for (const auto& r : s.snr)
                csv += quoted(s.label) + "," + quoted(r.perturbation) + "," + std::to_string(r.layer) + "," + toString(r.tap) + ","
                    + estimateColumns(r.snrDb) + "\n";
        break;
    case Figure::SnrDiagnostics:
        csv = "label,perturbation,layer,alpha,beta,gamma,gain,bound,condition_share,sensitivity\n";
        for (const auto& s : data.series)
            for (const auto& r : s.snrDiagnostics)
                csv += quoted(s.label) + "," + quoted(r.perturbation) + "," + std::to_string(r.layer) + "," + csvNumber(r.alpha.mean)
                    + "," + csvNumber(r.beta.mean) + "," + csvNumber(r.gamma.mean) + "," + csvNumber(r.gain.mean) + ","
                    + csvNumber(r.bound.mean) + "," + csvNumber(r.conditionShare) + "," + csvNumber(r.sensitivity.mean) + "\n";
        break;
    case Figure::HeadCentres:
        csv = "label,layer,head,centre_dy,centre_dx,mean_distance_px,contour50,contour90,offset_map\n";
        if (const AnalysisSummary* s = first(data))
            for (const auto& r : s->headCentres) {
                std::string map;
                for (double v : r.offsetMap)
                    map += (map.empty() ? "" : " ") + csvNumber(v);
                csv += quoted(s->label) + "," + std::to_string(r.layer) + "," + std::to_string(r.head) + ","
                    + csvNumber(r.centreDy.mean) + "," + csvNumber(r.centreDx.mean) + "," + csvNumber(r.meanDistancePx.mean) + ","
                    + csvNumber(r.contour50) + "," + csvNumber(r.contour90) + "," + map + "\n";
            }
        break;
    case Figure::HeadKernels:
        // One row per offset cell (rows dy = -R..R, columns dx = -R..R), with the head's centre and bandwidth repeated.
        csv = "label,layer,head,dy,dx,weight,centre_dy,centre_dx,bandwidth\n";
        if (const AnalysisSummary* s = first(data))
            for (const auto& r : s->headCentres) {
                const int side = 2 * r.radius + 1;
                if (!hasOffsetMap(r) || r.offsetMap.size() != size_t(side) * size_t(side))
                    continue;
                const std::string head = quoted(s->label) + "," + std::to_string(r.layer) + "," + std::to_string(r.head) + ",";
                const std::string tail = "," + csvNumber(r.centreDy.mean) + "," + csvNumber(r.centreDx.mean) + ","
                    + csvNumber(r.bandwidth.mean) + "\n";
                for (int c = 0; c < side * side; ++c)
                    csv += head + std::to_string(c / side - r.radius) + "," + std::to_string(c % side - r.radius) + ","
                        + csvNumber(r.offsetMap[size_t(c)]) + tail;
            }
        break;
    case Figure::AttentionSimilarity:
        csv = "label,layer,successive_cos,successive_cos_sd,successive_cos_ci95,head_redundancy,head_redundancy_sd,head_redundancy_ci95,n\n";
        for (const auto& s : data.series)
            for (const auto& r : s.attentionSimilarity)
                csv += quoted(s.label) + "," + std::to_string(r.layer) + "," + csvNumber(r.successiveCos.mean) + ","
                    + csvNumber(r.successiveCos.sd) + "," + csvNumber(r.successiveCos.ci95) + "," + csvNumber(r.headRedundancy.mean)
                    + "," + csvNumber(r.headRedundancy.sd) + "," + csvNumber(r.headRedundancy.ci95) + ","
                    + std::to_string(std::max(r.successiveCos.n, r.headRedundancy.n)) + "\n";
        break;
    case Figure::AttentionDistance:
        csv = "label,layer,head,mean_distance_px,n\n";
        for (const auto& s : data.series)
            for (const auto& r : s.headCentres)
                csv += quoted(s.label) + "," + std::to_string(r.layer) + "," + std::to_string(r.head) + ","
                    + csvNumber(r.meanDistancePx.mean) + "," + std::to_string(r.meanDistancePx.n) + "\n";
        break;
    case Figure::TokenNorms:
        csv = "label,layer,outliers_mean,outliers_sd,outliers_ci95,max_ratio,cls_ratio,register_ratio,outlier_attention,prefix_attention,n\n";
        for (const auto& s : data.series)
            for (const auto& r : s.tokenNorms)
                csv += quoted(s.label) + "," + std::to_string(r.layer) + "," + csvNumber(r.outliers.mean) + "," + csvNumber(r.outliers.sd)
                    + "," + csvNumber(r.outliers.ci95) + "," + csvNumber(r.maxRatio.mean) + "," + csvNumber(r.clsRatio.mean) + ","
                    + csvNumber(r.registerRatio.mean) + "," + csvNumber(r.outlierAttention.mean) + ","
                    + csvNumber(r.prefixAttention.mean) + "," + std::to_string(r.outliers.n) + "\n";
        break;
    case Figure::HeadAblation:
        // The map's cells (mean KL) with what the caption names: the share of flips and the accuracy change.
        csv = "label,layer,head,kl_mean,kl_ci95,dprob_mean,flip_share,acc_change,labelled,n\n";
        for (const auto& s : data.series)
            for (const auto& r : s.ablation)
                csv += quoted(s.label) + "," + std::to_string(r.layer) + "," + std::to_string(r.head) + "," + csvNumber(r.kl.mean) + ","
                    + csvNumber(r.kl.ci95) + "," + csvNumber(r.dprob.mean) + "," + csvNumber(r.flipShare) + ","
                    + csvNumber(r.accuracy.n > 0 ? r.accuracy.mean : std::nan("")) + "," + std::to_string(r.accuracy.n) + ","
                    + std::to_string(r.kl.n) + "\n";
        break;
    case Figure::LogitDecomposition:
        csv = "term,query,key,value\n";
        if (const LogitDecomposition* d = data.decomposition; d && d->tt.dim() == 3) {
            const int64_t n = d->tt.size(1);
            // the figure's head, or the mean of the heads (head < 0)
            const int head = std::min<int>(data.decompositionHead, int(d->tt.size(0)) - 1);
            for (auto [t, name] : { std::pair<const Tensor*, const char*> { &d->tt, "TT" }, { &d->tp, "TP" }, { &d->pt, "PT" },
                                    { &d->pp, "PP" } }) {
                const std::vector<float> v = decompositionTerm(*t, head);
                for (int64_t q = 0; q < n && !v.empty(); ++q)
                    for (int64_t k = 0; k < n; ++k)
                        csv += std::string(name) + "," + std::to_string(q) + "," + std::to_string(k) + "," + csvNumber(v[size_t(q * n + k)]) + "\n";
            }
        }
        break;
    }
    return csv;
}

namespace {

// A hierarchical model's grid: per block its stage and block (1-based), whether its windows are shifted, and the cells
// of the query's window at the stage's grid (the rest is outside the window, not zero attention); the share on the
// padding, when there is one, as row and column -1. No rollout.
std::string windowGridCsv(const AttentionGrid& g)
{
    std::string csv = "layer,stage,block,shifted,head,row,col,attention\n";
    for (size_t l = 0; l < g.maps.size() && l < g.windows.size(); ++l) {
        const WindowBlock& b = g.windows[l];
        const std::string block = std::to_string(l + 1) + "," + std::to_string(b.stage + 1) + "," + std::to_string(b.index + 1) + ","
            + (b.shiftH || b.shiftW ? "1" : "0") + ",";
        for (size_t h = 0; h < g.maps[l].size(); ++h) {
            const AttentionMap& map = g.maps[l][h];
            const std::string head = block + (h + 1 == g.maps[l].size() ? "mean" : std::to_string(h)) + ",";
            const int64_t rows = map.patches.size(0), cols = map.patches.size(1);
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t c = 0; c < cols; ++c)
                    if (const float v = map.patches.data()[r * cols + c]; !std::isnan(v))
                        csv += head + std::to_string(r) + "," + std::to_string(c) + "," + csvNumber(v) + "\n";
            if (map.paddingMass > 0)
                csv += head + "-1,-1," + csvNumber(map.paddingMass) + "\n";
        }
    }
    return csv;
}

} // namespace

std::string figureCsv(const AttentionGrid& g)
{
    if (!g.windows.empty())
        return windowGridCsv(g);
    std::string csv = "layer,head,row,col,attention\n";
    for (size_t l = 0; l < g.maps.size(); ++l)
        for (size_t h = 0; h < g.maps[l].size(); ++h) {
            const Tensor& m = g.maps[l][h].patches;
            const std::string head = h + 1 == g.maps[l].size() ? "mean" : std::to_string(h);
            for (int r = 0; r < g.gridHeight; ++r)
                for (int c = 0; c < g.gridWidth; ++c)
                    csv += std::to_string(l + 1) + "," + head + "," + std::to_string(r) + "," + std::to_string(c) + ","
                        + csvNumber(m.data()[r * g.gridWidth + c]) + "\n";
        }
    for (int r = 0; r < g.gridHeight; ++r)
        for (int c = 0; c < g.gridWidth; ++c)
            csv += "rollout,mean," + std::to_string(r) + "," + std::to_string(c) + "," + csvNumber(g.rollout.patches.data()[r * g.gridWidth + c]) + "\n";
    return csv;
}

std::string figureCsv(const RelevanceFigure& f)
{
    const Relevance& r = f.relevance;
    const std::string head = std::to_string(r.targetClass) + "," + csvField(f.label) + "," + csvNumber(r.probability) + "," + std::to_string(r.gradCamLayer) + ",";
    std::string csv = "class,label,probability,gradcam_layer,row,col,gae,gradcam\n";
    for (int y = 0; y < r.gridHeight; ++y)
        for (int x = 0; x < r.gridWidth; ++x) {
            const int i = y * r.gridWidth + x;
            csv += head + std::to_string(y) + "," + std::to_string(x) + "," + csvNumber(r.gae.data()[i]) + "," + csvNumber(r.gradCam.data()[i]) + "\n";
        }
    return csv;
}

std::string figureCsv(const TokenNormsFigure& f)
{
    const TokenNorms& t = f.norms;
    const int P = t.numPrefixTokens;
    const auto kind = [&](int i) -> const char* {
        if (i >= P)
            return "patch";
        if (i == 0 && f.hasClassToken)
            return "cls";
        return i >= P - f.registers ? "register" : "dist";
    };
    std::string csv = "layer,token,kind,row,col,norm,ratio,outlier,attention_received\n";
    for (const auto& l : t.layers) {
        for (size_t i = 0; i < l.norms.size(); ++i) {
            const int token = int(i), patch = token - P;
            const bool outlier = std::binary_search(l.outliers.begin(), l.outliers.end(), token);
            csv += std::to_string(l.layer) + "," + std::to_string(token) + "," + kind(token) + ","
                + (patch >= 0 ? std::to_string(patch / t.gridWidth) + "," + std::to_string(patch % t.gridWidth) : std::string("-1,-1")) + ","
                + csvNumber(l.norms[i]) + "," + csvNumber(l.norms[i] / l.patchMedian) + "," + (outlier ? "1" : "0") + ","
                + (l.attentionReceived.empty() ? std::string("nan") : csvNumber(l.attentionReceived[i])) + "\n";
        }
    }
    return csv;
}

std::string figureCsv(const QueryKeyFigure& f)
{
    if (f.maps.empty())
        return "layer,head,image,token,kind,row,col,x,y\n";
    const QueryKeyMap& m = f.maps[std::min(f.focus, f.maps.size() - 1)];
    const bool staged = m.stage >= 0; // a Swin's block: its stage (1-based), the points at its grid
    std::string csv = staged ? "layer,stage,head,image,token,kind,row,col,x,y\n" : "layer,head,image,token,kind,row,col,x,y\n";
    const std::string lh = std::to_string(m.layer) + "," + (staged ? std::to_string(m.stage + 1) + "," : "") + std::to_string(m.head) + ",";
    for (const auto& p : m.points)
        csv += lh + quoted(size_t(p.image) < f.images.size() ? f.images[size_t(p.image)] : "")
            + "," + std::to_string(p.token) + "," + (p.key ? "key," : "query,") + std::to_string(p.row) + "," + std::to_string(p.col) + ","
            + csvNumber(p.x) + "," + csvNumber(p.y) + "\n";
    return csv;
}

std::string queryKeyGridCsv(const QueryKeyFigure& f)
{
    const bool staged = !f.maps.empty() && f.maps.front().stage >= 0;
    std::string csv = staged ? "layer,stage,head,method,scale,agreement\n" : "layer,head,method,scale,agreement\n";
    for (const auto& m : f.maps)
        csv += std::to_string(m.layer) + "," + (staged ? std::to_string(m.stage + 1) + "," : "") + std::to_string(m.head) + "," + toString(m.method) + "," + csvNumber(m.scale) + ","
            + csvNumber(m.agreement) + "\n";
    return csv;
}

} // namespace attnscope
