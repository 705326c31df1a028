#include "Figures.h"

#include "FigureDrawing.h"

#include <attnscope/Files.h>

#include <FigureData.h>

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

AttentionGrid attentionGridOf(const Trace& trace, const Image& shown, const std::string& model, const std::string& image, int query)
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
    g.rollout = rolloutMap(trace, attentionRollout(trace), g.query);
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

std::string writeFigures(const std::string& outDir, const std::vector<RunOutput>& runs, const AttentionGrid* grid,
                         const LogitDecomposition* decomposition, const std::vector<std::string>& formats)
{
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
        data.decompositionInfo.image = grid ? grid->image : std::string();
        data.decompositionInfo.numPrefixTokens = grid ? grid->numPrefixTokens : 1;
    }
    // The data first, in every build; then the pictures of it, where this build draws them.
    for (Figure figure : allFigures())
        if (figureHasData(figure, data))
            if (auto w = writeTextFile((dir / (figureFileName(figure) + ".csv")).string(), figureCsv(figure, data)); !w)
                return w.message();
    if (grid)
        if (auto w = writeTextFile((dir / "attention_grid.csv").string(), attentionGridCsv(*grid)); !w)
            return w.message();
    return formats.empty() ? std::string() : drawFigures(dir.string(), data, grid, formats);
}

nlohmann::json figuresRecord(const std::vector<std::string>& formats)
{
    nlohmann::json record = { { "drawn", formats } };
    if (const std::string why = figureDrawingUnavailable(); !why.empty())
        record["not_drawn"] = why;
    return record;
}
