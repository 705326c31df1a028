#include "QueryKeyReport.h"

#include <attnscope/Files.h>
#include <attnscope/Image.h>
#include <attnscope/Npy.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace fs = std::filesystem;
using attnscope::Error;

attnscope::Result<std::vector<attnscope::HeadRef>> queryKeyHeads(const QueryKeyRequest& q, const attnscope::ModelConfig& c,
                                                                 const std::string& layerOption, const std::string& headOption)
{
    if (q.layer < 0 || q.layer > c.depth)
        return Error { layerOption + " " + std::to_string(q.layer) + ": the model has layers 1.." + std::to_string(c.depth) + " (0: every layer)" };
    // A Swin block has its stage's heads: a head is asked of the layers that have it.
    const int most = q.layer > 0 ? c.headsAt(q.layer) : c.maxHeads();
    if (q.head < -1 || q.head >= most)
        return Error { headOption + " " + std::to_string(q.head) + ": " + (q.layer > 0 && c.hierarchical() ? "layer " + std::to_string(q.layer) + " has" : std::string("the model has"))
                       + " heads 0.." + std::to_string(most - 1) + " (-1: every head)" };
    std::vector<attnscope::HeadRef> heads;
    for (int l = 1; l <= c.depth; ++l)
        for (int h = 0; h < c.headsAt(l); ++h)
            if ((q.layer == 0 || q.layer == l) && (q.head < 0 || q.head == h))
                heads.push_back({ l, h });
    return heads;
}

attnscope::Result<QueryKeyOutput> writeQueryKeyMaps(const ReportRequest& request, const attnscope::Model& model,
                                                   const std::vector<std::string>& paths, const std::vector<std::string>& stems)
{
    const QueryKeyRequest& q = request.queryKey;
    auto heads = queryKeyHeads(q, model.config());
    if (!heads)
        return heads.error();
    QueryKeyOutput out;
    out.figure.model = request.modelName;
    std::vector<attnscope::Tensor> inputs;
    for (size_t i = 0; i < paths.size() && int(inputs.size()) < q.images; ++i) {
        auto image = attnscope::decodeImage(paths[i]);
        if (!image)
            continue; // the run lists it among the skipped images
        auto prepared = model.prepare(*image);
        if (!prepared)
            return Error { paths[i] + ": " + prepared.message() };
        inputs.push_back(prepared->input);
        out.figure.images.push_back(stems[i]);
    }
    if (inputs.empty())
        return Error { "query-key map: none of the images could be read" };
    auto maps = attnscope::queryKeyMaps(model, inputs, *heads, q.options);
    if (!maps)
        return Error { model.info().path + ": " + maps.message() };
    out.figure.maps = std::move(*maps);
    // The figure's head: the one asked for, or the one whose plane keeps the attention order best.
    const auto& m = out.figure.maps;
    for (size_t i = 1; i < m.size(); ++i)
        if (m[i].agreement > m[out.figure.focus].agreement || std::isnan(m[out.figure.focus].agreement))
            out.figure.focus = i;

    // A Swin's rows name their stage (1-based), its points are at the stage's grid, and its later stages have fewer
    // tokens: their rows of qkmap.npy are NaN past their count (qkmap_heads.csv's `tokens`).
    const bool staged = m.front().stage >= 0;
    const std::string stageColumn = staged ? "stage," : "";
    std::string points = "layer," + stageColumn + "head,image,token,kind,row,col,x,y\n";
    std::string perHead = "layer," + stageColumn + "head,method,scale,agreement,tsne_kl,images,tokens\n";
    int tokens = 0;
    for (const auto& map : m)
        tokens = std::max(tokens, map.tokens);
    std::vector<float> xy;
    for (const auto& map : m) {
        const std::string lh = std::to_string(map.layer) + "," + (staged ? std::to_string(map.stage + 1) + "," : "") + std::to_string(map.head) + ",";
        for (size_t i = 0; i < map.points.size(); ++i) {
            const auto& p = map.points[i];
            points += lh + out.figure.images[size_t(p.image)] + "," + std::to_string(p.token) + "," + (p.key ? "key," : "query,")
                + std::to_string(p.row) + "," + std::to_string(p.col) + "," + attnscope::csvNumber(p.x) + "," + attnscope::csvNumber(p.y) + "\n";
            xy.push_back(float(p.x));
            xy.push_back(float(p.y));
            if (p.token == map.tokens - 1) // the end of an image's queries or keys
                xy.insert(xy.end(), size_t(2 * (tokens - map.tokens)), std::nanf(""));
        }
        perHead += lh + attnscope::toString(map.method) + "," + attnscope::csvNumber(map.scale) + "," + attnscope::csvNumber(map.agreement)
            + "," + (map.method == attnscope::QueryKeyMethod::Tsne ? attnscope::csvNumber(map.tsneKl) : std::string("nan")) + ","
            + std::to_string(map.images) + "," + std::to_string(map.tokens) + "\n";
    }
    const fs::path dir(request.out);
    if (auto w = attnscope::writeTextFile((dir / "qkmap.csv").string(), points); !w)
        return w.error();
    if (auto w = attnscope::writeTextFile((dir / "qkmap_heads.csv").string(), perHead); !w)
        return w.error();
    const int64_t images = int64_t(inputs.size());
    if (auto w = attnscope::writeNpy((dir / "qkmap.npy").string(),
                                     attnscope::Tensor::fromVector({ int64_t(m.size()), 2, images, tokens, 2 }, std::move(xy)));
        !w)
        return w.error();
    out.record = { { "method", attnscope::toString(q.options.method) }, { "seed", q.options.seed },
                   { "layer", q.layer }, { "head", q.head }, { "heads", m.size() }, { "images", out.figure.images },
                   { "figure_head", { m[out.figure.focus].layer, m[out.figure.focus].head } } };
    return out;
}
