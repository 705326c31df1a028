#include "Figures.h"

#include "FigureDrawing.h"

#include <attnscope/Files.h>
#include <attnscope/Npy.h>

#include <FigureData.h>

#include <algorithm>
#include <filesystem>

namespace fs = std::filesystem;
using namespace attnscope;

Result<std::vector<std::string>> parseFigureFormats(const std::string& list)
{
    std::vector<std::string> out;
    if (list == "none") // the data only
        return out;
    std::string item;
    for (size_t i = 0; i <= list.size(); ++i) {
        if (i == list.size() || list[i] == ',') {
            if (item != "png" && item != "svg" && item != "pdf" && !item.empty())
                return Error { "--formats: unknown format \"" + item + "\" (png, svg, pdf, or none)" };
            if (!item.empty())
                out.push_back(item);
            item.clear();
        } else {
            item += list[i];
        }
    }
    return out;
}

AttentionGrid attentionGridOf(const Trace& trace, const Image& shown, const std::string& model, const std::string& image, int query,
                              const RolloutOptions& rollout)
{
    AttentionGrid g;
    g.model = model;
    g.image = image;
    g.shown = shown;
    g.gridHeight = trace.gridHeight;
    g.gridWidth = trace.gridWidth;
    g.numPrefixTokens = trace.numPrefixTokens;
    g.query = query >= 0 ? query : trace.numPrefixTokens > 0 ? 0 : (trace.gridHeight / 2) * trace.gridWidth + trace.gridWidth / 2;
    for (int l = 1; l <= trace.depth; ++l) {
        std::vector<AttentionMap> row;
        for (int h = 0; h < trace.numHeads; ++h)
            row.push_back(attentionMap(trace, l, h, g.query));
        row.push_back(attentionMap(trace, l, -1, g.query));
        g.maps.push_back(std::move(row));
    }
    g.rollout = rolloutMap(trace, attentionRollout(trace, rollout), g.query);
    g.rolloutOptions = rollout;
    return g;
}

std::string attentionGridCsv(const AttentionGrid& g)
{
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

Result<bool> checkGridQuery(const std::string& spec)
{
    auto token = gridQueryToken(spec, 1 << 20, 1 << 20, 1);
    if (!token)
        return token.error();
    return true;
}

Result<int> gridQueryToken(const std::string& spec, int gridHeight, int gridWidth, int prefixTokens)
{
    if (spec == "cls")
        return -1;
    int row = -1, column = -1;
    char end = 0;
    if (std::sscanf(spec.c_str(), "%d,%d%c", &row, &column, &end) != 2)
        return Error { "--query " + spec + ": expected cls or ROW,COL (a patch of the grid, from 0)" };
    if (row < 0 || column < 0 || row >= gridHeight || column >= gridWidth)
        return Error { "--query " + spec + ": outside the model's " + std::to_string(gridHeight) + "x" + std::to_string(gridWidth)
                       + " patch grid" };
    return prefixTokens + row * gridWidth + column;
}

std::string csvField(const std::string& s)
{
    if (s.find_first_of(",\"\n") == std::string::npos)
        return s;
    std::string q = "\"";
    for (char c : s)
        q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

std::string relevanceCsv(const RelevanceFigure& f)
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

std::string tokenNormsCsv(const TokenNormsFigure& f)
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

std::string writeFigures(const std::string& outDir, const std::vector<RunOutput>& runs, const ImageFigures& images,
                         const LogitDecomposition* decomposition, const std::vector<std::string>& formats)
{
    const std::vector<NamedGrid>& grids = images.grids;
    if (runs.empty())
        return {};
    const fs::path dir = fs::path(outDir) / "figures";
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
        return dir.string() + ": cannot create (" + ec.message() + ")";
    FigureData data;
    for (const auto& r : runs)
        data.series.push_back(summaryOf(r));
    if (decomposition) {
        data.decomposition = decomposition;
        data.decompositionInfo.model = data.series.front().model;
        data.decompositionInfo.image = grids.empty() ? std::string() : grids.front().grid.image;
        data.decompositionInfo.numPrefixTokens = grids.empty() ? 1 : grids.front().grid.numPrefixTokens;
    }
    // The data first, in every build; then the pictures of it, where this build draws them.
    for (Figure figure : allFigures())
        if (figureHasData(figure, data))
            if (auto w = writeTextFile((dir / (figureFileName(figure) + ".csv")).string(), figureCsv(figure, data)); !w)
                return w.message();
    for (const auto& g : grids)
        if (auto w = writeTextFile((dir / (g.name + ".csv")).string(), attentionGridCsv(g.grid)); !w)
            return w.message();
    for (const auto& r : images.relevances) {
        if (auto w = writeTextFile((dir / (r.name + ".csv")).string(), relevanceCsv(r.figure)); !w)
            return w.message();
        // Both maps as one array [2, gh, gw]: GAE, then Grad-CAM.
        const Relevance& rel = r.figure.relevance;
        std::vector<float> both(rel.gae.data(), rel.gae.data() + rel.gae.numel());
        both.insert(both.end(), rel.gradCam.data(), rel.gradCam.data() + rel.gradCam.numel());
        if (auto w = writeNpy((dir / (r.name + ".npy")).string(), Tensor::fromVector({ 2, rel.gridHeight, rel.gridWidth }, std::move(both))); !w)
            return w.message();
    }
    for (const auto& n : images.norms) {
        if (auto w = writeTextFile((dir / (n.name + ".csv")).string(), tokenNormsCsv(n.figure)); !w)
            return w.message();
        // Every layer's norms as one array [layers, N], prefix tokens first.
        const TokenNorms& t = n.figure.norms;
        std::vector<float> all;
        for (const auto& l : t.layers)
            all.insert(all.end(), l.norms.begin(), l.norms.end());
        const int64_t tokens = t.layers.empty() ? 0 : int64_t(t.layers.front().norms.size());
        if (auto w = writeNpy((dir / (n.name + ".npy")).string(), Tensor::fromVector({ int64_t(t.layers.size()), tokens }, std::move(all))); !w)
            return w.message();
    }
    return formats.empty() ? std::string() : drawFigures(dir.string(), data, images, formats);
}

nlohmann::json figuresRecord(const std::vector<std::string>& formats)
{
    nlohmann::json record = { { "drawn", formats } };
    if (const std::string why = figureDrawingUnavailable(); !why.empty())
        record["not_drawn"] = why;
    return record;
}
