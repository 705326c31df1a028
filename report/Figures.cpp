#include "Figures.h"

#include "FigureDrawing.h"

#include <attnscope/FigureData.h>
#include <attnscope/Files.h>
#include <attnscope/Npy.h>

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

Status checkGridQuery(const std::string& spec)
{
    auto token = gridQueryToken(spec, 1 << 20, 1 << 20, 1);
    if (!token)
        return token.error();
    return attnscope::Done {};
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

Status writeFigures(const std::string& outDir, const std::vector<RunOutput>& runs, const ImageFigures& images,
                    const LogitDecomposition* decomposition, const std::vector<std::string>& formats)
{
    const std::vector<NamedGrid>& grids = images.grids;
    if (runs.empty())
        return Done {};
    const fs::path dir = fs::path(outDir) / "figures";
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
        return Error { dir.string() + ": cannot create (" + ec.message() + ")" };
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
                return w;
    for (const auto& g : grids)
        if (auto w = writeTextFile((dir / (g.name + ".csv")).string(), figureCsv(g.grid)); !w)
            return w;
    for (const auto& r : images.relevances) {
        if (auto w = writeTextFile((dir / (r.name + ".csv")).string(), figureCsv(r.figure)); !w)
            return w;
        // Both maps as one array [2, gh, gw]: GAE, then Grad-CAM.
        const Relevance& rel = r.figure.relevance;
        std::vector<float> both(rel.gae.data(), rel.gae.data() + rel.gae.numel());
        both.insert(both.end(), rel.gradCam.data(), rel.gradCam.data() + rel.gradCam.numel());
        if (auto w = writeNpy((dir / (r.name + ".npy")).string(), Tensor::fromVector({ 2, rel.gridHeight, rel.gridWidth }, std::move(both))); !w)
            return w;
    }
    for (const auto& n : images.norms) {
        if (auto w = writeTextFile((dir / (n.name + ".csv")).string(), figureCsv(n.figure)); !w)
            return w;
        // Every layer's norms as one array [layers, N], prefix tokens first.
        const TokenNorms& t = n.figure.norms;
        std::vector<float> all;
        for (const auto& l : t.layers)
            all.insert(all.end(), l.norms.begin(), l.norms.end());
        const int64_t tokens = t.layers.empty() ? 0 : int64_t(t.layers.front().norms.size());
        if (auto w = writeNpy((dir / (n.name + ".npy")).string(), Tensor::fromVector({ int64_t(t.layers.size()), tokens }, std::move(all))); !w)
            return w;
    }
    if (images.queryKey) {
        if (auto w = writeTextFile((dir / "qkmap.csv").string(), figureCsv(*images.queryKey)); !w)
            return w;
        if (images.queryKey->maps.size() > 1)
            if (auto w = writeTextFile((dir / "qkmap_grid.csv").string(), queryKeyGridCsv(*images.queryKey)); !w)
                return w;
    }
    return formats.empty() ? Status(Done {}) : drawFigures(dir.string(), data, images, formats);
}

nlohmann::json figuresRecord(const std::vector<std::string>& formats)
{
    nlohmann::json record = { { "drawn", formats } };
    if (const std::string why = figureDrawingUnavailable(); !why.empty())
        record["not_drawn"] = why;
    return record;
}
