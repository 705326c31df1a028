#include "Bindings.h"

#include <attnscope/Analyses.h>
#include <attnscope/QueryKey.h>

#include <limits>

// The analyses of docs/analyses.md over one trace, as dicts of numpy columns named as the CLI's CSVs name them (per
// image, so a value where the dataset CSVs have mean, sd and n). Everything here reads a Trace the caller holds: the
// GIL is released while the engine computes.

namespace attnscope::python {

py::dict attentionMapDict(const AttentionMap& map)
{
    py::dict d;
    d["patches"] = view(map.patches);
    d["prefix_mass"] = map.prefixMass;
    d["padding_mass"] = map.paddingMass; // a Swin's: the row's share on the padding (its patches NaN outside the window)
    return d;
}

py::object windowsList(const Trace& trace)
{
    if (!trace.hierarchical())
        return py::none();
    py::list blocks;
    for (const WindowBlock& b : trace.windows) {
        py::dict d;
        d["stage"] = b.stage + 1;
        d["block"] = b.index + 1;
        d["name"] = blockName(b);
        d["grid"] = py::make_tuple(b.gridH, b.gridW);
        d["window"] = py::make_tuple(b.windowH, b.windowW);
        d["shift"] = py::make_tuple(b.shiftH, b.shiftW);
        d["windows"] = b.numWindows();
        d["heads"] = b.heads;
        d["width"] = b.width;
        blocks.append(d);
    }
    return py::object(blocks);
}

RolloutOptions rolloutOptions(const std::string& fusion, double discard)
{
    if (!(discard >= 0.0 && discard < 1.0))
        raise("discard " + std::to_string(discard) + ": expected a share from 0 up to (not including) 1");
    return { take(parseHeadFusion(fusion)), discard };
}

void checkOutlierRatio(double ratio)
{
    if (!(ratio > 1.0))
        raise("outlier_ratio " + std::to_string(ratio) + ": expected a number above 1");
}

// A Swin's grid (docs/analyses.md, "Hierarchical models"): per block its maps [heads + 1, h, w] at the stage's grid,
// the stage's heads then their mean, NaN outside the query's window; no rollout, for the reason given.
py::dict windowGridDict(const AttentionGrid& grid)
{
    py::list maps, padding, blocks;
    for (size_t l = 0; l < grid.maps.size(); ++l) {
        const auto& row = grid.maps[l];
        const WindowBlock& b = grid.windows.at(l);
        std::vector<double> cells, pad;
        for (const auto& map : row) {
            cells.insert(cells.end(), map.patches.data(), map.patches.data() + map.patches.numel());
            pad.push_back(map.paddingMass);
        }
        maps.append(doubles(cells, { py::ssize_t(row.size()), b.gridH, b.gridW }));
        padding.append(doubles(pad));
        blocks.append(blockName(b));
    }
    py::dict d;
    d["query"] = grid.query;
    d["maps"] = maps;
    d["padding_mass"] = padding;
    d["blocks"] = blocks;
    d["rollout"] = py::none();
    d["rollout_refused"] = grid.rolloutRefused;
    return d;
}

py::dict attentionGridDict(const AttentionGrid& grid)
{
    if (!grid.windows.empty())
        return windowGridDict(grid);
    const size_t layers = grid.maps.size(), columns = layers ? grid.maps.front().size() : 0;
    const size_t cells = size_t(grid.gridHeight) * size_t(grid.gridWidth);
    std::vector<double> maps, prefix;
    for (const auto& row : grid.maps)
        for (const auto& map : row) {
            maps.insert(maps.end(), map.patches.data(), map.patches.data() + cells);
            prefix.push_back(map.prefixMass);
        }
    py::dict d;
    d["query"] = grid.query;
    d["maps"] = doubles(maps, { py::ssize_t(layers), py::ssize_t(columns), grid.gridHeight, grid.gridWidth });
    d["prefix_mass"] = doubles(prefix, { py::ssize_t(layers), py::ssize_t(columns) });
    d["rollout"] = view(grid.rollout.patches);
    d["rollout_prefix_mass"] = grid.rollout.prefixMass;
    return d;
}

py::dict tokenNormsDict(const TokenNorms& norms)
{
    std::vector<int64_t> layer, count;
    std::vector<double> median, maxRatio, cls, reg, outlierAttention, prefixAttention, all, received;
    py::list outliers;
    const size_t tokens = norms.layers.empty() ? 0 : norms.layers.front().norms.size();
    for (const auto& l : norms.layers) {
        layer.push_back(l.layer);
        count.push_back(int64_t(l.outliers.size()));
        median.push_back(l.patchMedian);
        maxRatio.push_back(l.maxRatio);
        cls.push_back(l.clsRatio);
        reg.push_back(l.registerRatio);
        outlierAttention.push_back(l.outlierAttention);
        prefixAttention.push_back(l.prefixAttention);
        all.insert(all.end(), l.norms.begin(), l.norms.end());
        if (l.attentionReceived.size() == tokens)
            received.insert(received.end(), l.attentionReceived.begin(), l.attentionReceived.end());
        else
            received.insert(received.end(), tokens, std::numeric_limits<double>::quiet_NaN());
        outliers.append(ints(std::vector<int64_t>(l.outliers.begin(), l.outliers.end())));
    }
    const py::ssize_t rows = py::ssize_t(norms.layers.size());
    py::dict d;
    d["layer"] = ints(layer);
    d["outliers"] = ints(count);
    d["patch_median"] = doubles(median);
    d["max_ratio"] = doubles(maxRatio);
    d["cls_ratio"] = doubles(cls);
    d["register_ratio"] = doubles(reg);
    d["outlier_attention"] = doubles(outlierAttention);
    d["prefix_attention"] = doubles(prefixAttention);
    d["norms"] = doubles(all, { rows, py::ssize_t(tokens) });
    d["attention_received"] = doubles(received, { rows, py::ssize_t(tokens) });
    d["outlier_tokens"] = outliers;
    return d;
}

py::dict decompositionDict(const LogitDecomposition& result)
{
    py::dict d;
    d["tt"] = view(result.tt);
    d["tp"] = view(result.tp);
    d["pt"] = view(result.pt);
    d["pp"] = view(result.pp);
    d["logits"] = view(result.logits);
    return d;
}

py::dict headAblationDict(const HeadAblation& a)
{
    std::vector<int64_t> layer, head, flip, predicted;
    std::vector<double> dlogit, dprob, kl, probability;
    for (const auto& e : a.heads) {
        predicted.push_back(e.predicted);
        probability.push_back(e.probability);
        layer.push_back(e.layer);
        head.push_back(e.head);
        dlogit.push_back(e.dlogit);
        dprob.push_back(e.dprob);
        kl.push_back(e.kl);
        flip.push_back(e.flip ? 1 : 0);
    }
    py::dict d;
    d["layer"] = ints(layer);
    d["head"] = ints(head);
    d["dlogit"] = doubles(dlogit);
    d["dprob"] = doubles(dprob);
    d["kl"] = doubles(kl);
    d["ablated_class"] = ints(predicted);
    d["ablated_probability"] = doubles(probability);
    d["flip"] = ints(flip);
    d["predicted"] = a.predicted;
    d["probability"] = a.probability;
    d["mode"] = toString(a.mode);
    return d;
}

py::dict queryKeyMapDict(const QueryKeyMap& map)
{
    std::vector<int64_t> image, token, row, col;
    std::vector<std::string> kind;
    std::vector<double> x, y;
    for (const auto& p : map.points) {
        image.push_back(p.image);
        token.push_back(p.token);
        kind.push_back(p.key ? "key" : "query");
        row.push_back(p.row);
        col.push_back(p.col);
        x.push_back(p.x);
        y.push_back(p.y);
    }
    py::dict d;
    d["image"] = ints(image);
    d["token"] = ints(token);
    d["kind"] = strings(kind);
    d["row"] = ints(row);
    d["col"] = ints(col);
    d["x"] = doubles(x);
    d["y"] = doubles(y);
    d["layer"] = map.layer;
    d["head"] = map.head;
    d["scale"] = map.scale;
    d["agreement"] = map.agreement;
    d["rotated"] = map.rotated;
    d["cosine"] = map.cosine; // Swin v2: unit q and k
    // A Swin block's stage (0-based; None for a ViT) and the grid of its rows and columns
    d["stage"] = map.stage >= 0 ? py::object(py::int_(map.stage)) : py::object(py::none());
    d["grid"] = py::make_tuple(map.gridHeight, map.gridWidth);
    d["components"] = doubles(map.components, { 2, py::ssize_t(map.components.size() / 2) });
    d["method"] = toString(map.method);
    return d;
}

py::dict relevanceDict(const Relevance& r)
{
    py::dict d;
    d["target_class"] = r.targetClass;
    d["logit"] = r.logit;
    d["probability"] = r.probability;
    d["gradcam_layer"] = r.gradCamLayer;
    d["gae"] = view(r.gae);
    d["gae_tokens"] = view(r.gaeTokens);
    d["gradcam"] = view(r.gradCam);
    return d;
}

namespace {

void checkLayer(const Trace& trace, int layer)
{
    if (layer < 1 || layer > trace.depth)
        raise("layer " + std::to_string(layer) + ": the model's attention layers are 1.." + std::to_string(trace.depth));
    if (trace.attention[size_t(layer)].empty())
        raise("the attention of layer " + std::to_string(layer) + " was not recorded: run with record=\"all\" or record=[\"attention\"]");
}

void checkAllAttention(const Trace& trace, const char* analysis)
{
    for (int l = 1; l <= trace.depth; ++l)
        if (trace.attention[size_t(l)].empty())
            raise(std::string(analysis) + " needs the attention of every layer: run with record=\"all\" or record=[\"attention\"]");
}

template <typename F>
auto released(F&& f)
{
    py::gil_scoped_release release;
    return f();
}

// Section 1 of docs/analyses.md: token similarity through depth.
void bindTokenSimilarity(py::module_& m)
{
    m.def("token_similarity", [](const Trace& trace) {
        auto points = released([&] { return tokenSimilarity(trace); });
        std::vector<int64_t> layer;
        std::vector<std::string> tap, tokens;
        std::vector<double> value;
        for (const auto& p : points) {
            layer.push_back(p.layer);
            tap.push_back(toString(p.tap));
            tokens.push_back(toString(p.tokens));
            value.push_back(p.value);
        }
        py::dict d;
        d["layer"] = ints(layer);
        d["tap"] = strings(tap);
        d["tokens"] = strings(tokens);
        d["value"] = doubles(value);
        return d;
    });
    m.def("token_cosine_similarity", [](const py::array& tokens) { return tokenCosineSimilarity(tensorFrom(tokens)); });
    m.def("token_cosine_matrix", [](const py::array& tokens) { return view(tokenCosineMatrix(tensorFrom(tokens))); });
}

// Section 2: attention maps, rollout, the layers x heads grid and attention similarity.
void bindAttentionMaps(py::module_& m)
{
    m.def(
        "attention_map",
        [](const Trace& trace, int layer, int head, int query, bool renormalise) {
            checkLayer(trace, layer);
            // A Swin block has its stage's heads, and its query is a patch of the first grid.
            const int heads = trace.hierarchical() ? trace.windows[size_t(layer - 1)].heads : trace.numHeads;
            if (head < -1 || head >= heads)
                raise("head " + std::to_string(head) + (trace.hierarchical() ? ": the heads of layer " + std::to_string(layer) : std::string(": the model's heads"))
                      + " are 0.." + std::to_string(heads - 1) + " (-1: their mean)");
            const int tokens = trace.hierarchical() ? trace.gridHeight * trace.gridWidth : int(trace.attention[size_t(layer)].size(1));
            if (query < 0 || query >= tokens)
                raise("query " + std::to_string(query) + ": the model's " + (trace.hierarchical() ? "patches" : "tokens") + " are 0.." + std::to_string(tokens - 1));
            return attentionMapDict(released([&] { return attentionMap(trace, layer, head, query, renormalise); }));
        },
        py::arg("trace"), py::arg("layer"), py::arg("head") = -1, py::arg("query") = 0, py::arg("renormalise") = false);
    m.def(
        "rollout",
        [](const Trace& trace, const std::string& fusion, double discard) {
            checkAllAttention(trace, "the rollout");
            if (trace.hierarchical())
                raise(kNoHierarchicalRollout);
            const auto options = rolloutOptions(fusion, discard);
            return view(released([&] { return attentionRollout(trace, options); }));
        },
        py::arg("trace"), py::arg("fusion") = "mean", py::arg("discard") = 0.0);
    m.def(
        "rollout_map",
        [](const Trace& trace, const py::array& rollout, int query) {
            const Tensor r = tensorFrom(rollout);
            if (r.dim() != 2 || r.size(0) != r.size(1) || query < 0 || query >= r.size(0))
                raise("expected the [N, N] rollout of this trace and a query token in 0..N-1");
            return attentionMapDict(released([&] { return rolloutMap(trace, r, query); }));
        },
        py::arg("trace"), py::arg("rollout"), py::arg("query") = 0);
    m.def(
        "attention_grid",
        [](const Trace& trace, int query, const std::string& fusion, double discard) {
            checkAllAttention(trace, "the attention grid");
            const auto options = rolloutOptions(fusion, discard);
            return attentionGridDict(released([&] { return attentionGrid(trace, query, options); }));
        },
        py::arg("trace"), py::arg("query") = -1, py::arg("fusion") = "mean", py::arg("discard") = 0.0);
    m.def("attention_similarity", [](const Trace& trace) {
        checkAllAttention(trace, "the attention similarity");
        auto points = released([&] { return attentionSimilarity(trace); });
        std::vector<int64_t> layer;
        std::vector<double> successive, redundancy;
        for (const auto& p : points) {
            layer.push_back(p.layer);
            successive.push_back(p.successiveCos);
            redundancy.push_back(p.headRedundancy);
        }
        py::dict d;
        d["layer"] = ints(layer);
        d["successive_cos"] = doubles(successive);
        d["head_redundancy"] = doubles(redundancy);
        return d;
    });
}

// Section 3: head centres.
void bindHeadCentres(py::module_& m)
{
    m.def(
        "head_centres",
        [](const Trace& trace, int patchSize, int radius) {
            if (radius < 1)
                raise("radius " + std::to_string(radius) + ": expected 1 or more");
            auto centres = released([&] { return headCentres(trace, patchSize, radius); });
            std::vector<int64_t> layer, head;
            std::vector<double> cdy, cdx, pdy, pdx, dist, band, prefix, window, c50, c90, maps;
            for (const auto& c : centres) {
                layer.push_back(c.layer);
                head.push_back(c.head);
                cdy.push_back(c.centreDy);
                cdx.push_back(c.centreDx);
                pdy.push_back(c.peakDy);
                pdx.push_back(c.peakDx);
                dist.push_back(c.meanDistancePx);
                band.push_back(c.bandwidth);
                prefix.push_back(c.prefixMass);
                window.push_back(c.windowMass);
                c50.push_back(c.contour50);
                c90.push_back(c.contour90);
                maps.insert(maps.end(), c.offsetMap.data(), c.offsetMap.data() + c.offsetMap.numel());
            }
            const py::ssize_t side = 2 * radius + 1;
            py::dict d;
            d["layer"] = ints(layer);
            d["head"] = ints(head);
            d["centre_dy"] = doubles(cdy);
            d["centre_dx"] = doubles(cdx);
            d["peak_dy"] = doubles(pdy);
            d["peak_dx"] = doubles(pdx);
            d["mean_distance_px"] = doubles(dist);
            d["bandwidth"] = doubles(band);
            d["prefix_mass"] = doubles(prefix);
            d["window_mass"] = doubles(window);
            d["contour50"] = doubles(c50);
            d["contour90"] = doubles(c90);
            d["offset_map"] = doubles(maps, { py::ssize_t(centres.size()), side, side });
            return d;
        },
        py::arg("trace"), py::arg("patch_size"), py::arg("radius") = 3);
}

// Section 4: SNR through depth.
void bindSignalToNoise(py::module_& m)
{
    m.def(
        "snr",
        [](const Trace& clean, const Trace& noisy, bool centre) {
            for (const Trace* t : { &clean, &noisy })
                for (int l = 0; l <= t->depth; ++l)
                    if (t->blocks[size_t(l)].empty() || (l > 0 && (t->attnBranch[size_t(l)].empty() || t->attention[size_t(l)].empty())))
                        raise("the SNR needs the block outputs, attention branches and attention of every layer of both traces: run "
                              "them with record=\"all\"");
            if (clean.input.shape() != noisy.input.shape() || clean.depth != noisy.depth)
                raise("the SNR compares two traces of one model and input size: these differ");
            auto result = released([&] { return signalToNoise(clean, noisy, centre); });
            std::vector<int64_t> layer, dlayer;
            std::vector<std::string> tap;
            std::vector<double> snr, alpha, beta, gamma, gain, bound, holds, sensitivity;
            for (const auto& p : result.snr) {
                layer.push_back(p.layer);
                tap.push_back(toString(p.tap));
                snr.push_back(p.snrDb);
            }
            for (const auto& d : result.diagnostics) {
                dlayer.push_back(d.layer);
                alpha.push_back(d.alpha);
                beta.push_back(d.beta);
                gamma.push_back(d.gamma);
                gain.push_back(d.gain);
                bound.push_back(d.bound);
                holds.push_back(d.conditionHolds ? 1.0 : 0.0);
                sensitivity.push_back(d.sensitivity);
            }
            py::dict s, diag, out;
            s["layer"] = ints(layer);
            s["tap"] = strings(tap);
            s["snr_db"] = doubles(snr);
            diag["layer"] = ints(dlayer);
            diag["alpha"] = doubles(alpha);
            diag["beta"] = doubles(beta);
            diag["gamma"] = doubles(gamma);
            diag["gain"] = doubles(gain);
            diag["bound"] = doubles(bound);
            diag["condition_holds"] = doubles(holds);
            diag["sensitivity"] = doubles(sensitivity);
            out["snr"] = s;
            out["diagnostics"] = diag;
            return out;
        },
        py::arg("clean"), py::arg("noisy"), py::arg("centre") = true);
}

// Section 7: token norms and high-norm outliers.
void bindTokenNorms(py::module_& m)
{
    m.def(
        "token_norms",
        [](const Trace& trace, const PyModel& model, double outlierRatio) {
            checkOutlierRatio(outlierRatio);
            if (trace.hierarchical())
                raise("token norms: not of a hierarchical (Swin) model yet");
            const TokenNorms norms = released([&] { return tokenNorms(trace, model.model->config(), outlierRatio); });
            if (norms.layers.empty())
                raise("token norms need the block outputs: run with record=\"all\" or record=[\"blocks\"]");
            return tokenNormsDict(norms);
        },
        py::arg("trace"), py::arg("model"), py::arg("outlier_ratio") = kDefaultOutlierRatio);
}

// Section 5: token and position terms of the first layer's logits.
void bindLogitDecomposition(py::module_& m)
{
    m.def(
        "decompose_logits",
        [](const PyModel& model, const py::array& input) {
            const Tensor x = tensorFrom(input);
            return decompositionDict(take(released([&] { return decomposeLogits(*model.model, x); })));
        },
        py::arg("model"), py::arg("input"));
}

// Section 8: head ablation.
void bindHeadAblation(py::module_& m)
{
    m.def(
        "head_ablation",
        [](const PyModel& model, const py::array& input, const std::string& mode, std::optional<double> neutreno, std::optional<double> boost,
           int batch) {
            const Tensor x = tensorFrom(input);
            RunOptions run;
            run.neutrenoLambda = neutreno;
            run.boostT = boost;
            const AblationMode m = take(parseAblationMode(mode));
            if (batch < 0)
                raise("batch " + std::to_string(batch) + ": expected 0 (every head at once) or a positive count");
            return headAblationDict(take(released([&] { return headAblation(*model.model, x, m, run, batch); })));
        },
        py::arg("model"), py::arg("input"), py::arg("mode") = "zero", py::arg("neutreno") = py::none(), py::arg("boost") = py::none(),
        py::arg("batch") = 0);
}

// Section 9: the query-key map.
void bindQueryKeyMap(py::module_& m)
{
    m.def(
        "query_key_map",
        [](const PyModel& model, const std::vector<py::array>& inputs, int layer, int head, const std::string& method, uint64_t seed) {
            std::vector<Tensor> xs;
            for (const auto& a : inputs)
                xs.push_back(tensorFrom(a));
            QueryKeyOptions options;
            options.method = take(parseQueryKeyMethod(method));
            options.seed = seed;
            return queryKeyMapDict(take(released([&] { return queryKeyMap(*model.model, xs, layer, head, options); })));
        },
        py::arg("model"), py::arg("inputs"), py::arg("layer"), py::arg("head"), py::arg("method") = "pca", py::arg("seed") = 0);
}

// Section 10: class relevance.
void bindRelevance(py::module_& m)
{
    m.def(
        "relevance",
        [](const PyModel& model, const py::array& input, int targetClass, int gradCamLayer) {
            const Tensor x = tensorFrom(input);
            RelevanceOptions options;
            options.targetClass = targetClass;
            options.gradCamLayer = gradCamLayer;
            return relevanceDict(take(released([&] { return classRelevance(*model.model, x, options); })));
        },
        py::arg("model"), py::arg("input"), py::arg("target_class") = -1, py::arg("gradcam_layer") = -1);
}

} // namespace

void bindAnalyses(py::module_& m)
{
    // One function per section of docs/analyses.md, registered in the order the module always had.
    bindTokenSimilarity(m);
    bindAttentionMaps(m);
    bindHeadCentres(m);
    bindSignalToNoise(m);
    bindTokenNorms(m);
    bindLogitDecomposition(m);
    bindHeadAblation(m);
    bindQueryKeyMap(m);
    bindRelevance(m);
}

} // namespace attnscope::python
