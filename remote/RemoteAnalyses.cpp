#include "RemoteAnalyses.h"

#include "RemoteWire.h"

namespace attnscope::remote {

using json = nlohmann::json;

namespace {

const char* const kFlags[] = { "similarity", "attention", "centres", "snr", "decomposition", "norms", "ablation" };

bool AnalysisOptions::*flag(size_t i)
{
    static bool AnalysisOptions::*const members[] = { &AnalysisOptions::similarity, &AnalysisOptions::attention,
                                                      &AnalysisOptions::centres,    &AnalysisOptions::snr,
                                                      &AnalysisOptions::decomposition, &AnalysisOptions::norms,
                                                      &AnalysisOptions::ablation };
    return members[i];
}

Error wrong(const std::string& key, const json& value, const char* expected)
{
    return Error { "analysis option \"" + key + "\" is " + value.dump().substr(0, 40) + ", not " + expected };
}

} // namespace

json encodeAnalysisOptions(const AnalysisOptions& o)
{
    json out = json::object();
    for (size_t i = 0; i < std::size(kFlags); ++i)
        out[kFlags[i]] = o.*flag(i);
    json perturbations = json::array();
    for (const auto& p : o.perturbations)
        perturbations.push_back(p.spec());
    out["perturbations"] = perturbations;
    out["draws"] = o.draws;
    out["seed"] = o.seed;
    out["radius"] = o.radius;
    out["centre_signal"] = o.centreSignal;
    out["outlier_ratio"] = o.outlierRatio;
    out["precision"] = toString(o.precision);
    out["ablation_mode"] = toString(o.ablationMode);
    if (!o.trueClasses.empty())
        out["true_classes"] = o.trueClasses;
    if (o.neutrenoLambda)
        out["neutreno_lambda"] = *o.neutrenoLambda;
    if (o.boostT)
        out["boost_t"] = *o.boostT;
    return out;
}

Result<AnalysisOptions> decodeAnalysisOptions(const json& value)
{
    if (!value.is_object())
        return Error { "the analysis options are " + value.dump().substr(0, 40) + ", not an object" };
    AnalysisOptions o;
    for (const auto& [key, v] : value.items()) {
        const auto named = std::find_if(std::begin(kFlags), std::end(kFlags), [&](const char* f) { return key == f; });
        if (named != std::end(kFlags)) {
            if (!v.is_boolean())
                return wrong(key, v, "true or false");
            o.*flag(size_t(named - std::begin(kFlags))) = v.get<bool>();
        } else if (key == "perturbations") {
            if (!v.is_array() || v.size() > 16)
                return wrong(key, v, "a list of up to 16 perturbations");
            for (const json& spec : v) {
                if (!spec.is_string())
                    return wrong(key, spec, "a perturbation's spec");
                auto p = Perturbation::parse(spec.get<std::string>());
                if (!p)
                    return Error { "analysis option \"perturbations\": " + p.message() };
                o.perturbations.push_back(std::move(*p));
            }
        } else if (key == "draws" || key == "radius") {
            if (!v.is_number_integer() || v.get<int64_t>() < (key == "draws" ? 1 : 0) || v.get<int64_t>() > 64)
                return wrong(key, v, key == "draws" ? "a count 1 to 64" : "a radius 0 to 64");
            (key == "draws" ? o.draws : o.radius) = v.get<int>();
        } else if (key == "seed") {
            if (!isCount(v))
                return wrong(key, v, "a seed (a whole number from 0)");
            o.seed = v.get<uint64_t>();
        } else if (key == "centre_signal") {
            if (!v.is_boolean())
                return wrong(key, v, "true or false");
            o.centreSignal = v.get<bool>();
        } else if (key == "outlier_ratio" || key == "neutreno_lambda" || key == "boost_t") {
            if (!v.is_number() || !std::isfinite(v.get<double>()))
                return wrong(key, v, "a number");
            const double x = v.get<double>();
            if (key == "outlier_ratio")
                o.outlierRatio = x;
            else
                (key == "neutreno_lambda" ? o.neutrenoLambda : o.boostT) = x;
        } else if (key == "ablation_mode") {
            auto m = v.is_string() ? parseAblationMode(v.get<std::string>()) : Result<AblationMode>(Error {});
            if (!m)
                return wrong(key, v, "zero or mean");
            o.ablationMode = *m;
        } else if (key == "true_classes") {
            if (!v.is_array() || v.size() > (size_t(1) << 24))
                return wrong(key, v, "a list of class indices");
            for (const json& c : v) {
                if (!c.is_number_integer() || c.get<int64_t>() < -1 || c.get<int64_t>() > (int64_t(1) << 24))
                    return wrong(key, c, "a class index or -1");
                o.trueClasses.push_back(c.get<int>());
            }
        } else if (key == "precision") {
            auto p = v.is_string() ? parsePrecision(v.get<std::string>()) : Result<Precision>(Error {});
            if (!p)
                return wrong(key, v, "fp32, tf32 or bf16");
            o.precision = *p;
        } else {
            return Error { "no analysis option \"" + key.substr(0, 40) + "\"" };
        }
    }
    return o;
}

json encodeStats(const StatsTable& stats)
{
    json out = json::object();
    for (const auto& [key, s] : stats)
        out[key] = { s.count(), s.count() ? s.mean() : 0.0, s.m2() };
    return out;
}

Result<StatsTable> decodeStats(const json& value)
{
    if (!value.is_object())
        return Error { "the statistics are not an object" };
    StatsTable out;
    for (const auto& [key, v] : value.items()) {
        if (!v.is_array() || v.size() != 3 || !isCountUpTo(v[0], INT64_MAX) || !v[1].is_number() || !v[2].is_number())
            return Error { "the statistic \"" + key.substr(0, 60) + "\" is not [count, mean, m2]" };
        out[key] = RunningStats::fromParts(v[0].get<int64_t>(), v[1].get<double>(), v[2].get<double>());
    }
    return out;
}

json encodeDecomposition(const LogitDecomposition& d)
{
    return { { "tt", encodeTensor(d.tt) }, { "tp", encodeTensor(d.tp) }, { "pt", encodeTensor(d.pt) }, { "pp", encodeTensor(d.pp) },
             { "logits", encodeTensor(d.logits) } };
}

Result<LogitDecomposition> decodeDecomposition(const json& value)
{
    if (!value.is_object())
        return Error { "the logit decomposition is not an object" };
    LogitDecomposition d;
    for (auto [key, member] : { std::pair { "tt", &d.tt }, { "tp", &d.tp }, { "pt", &d.pt }, { "pp", &d.pp }, { "logits", &d.logits } }) {
        auto t = decodeTensor(value.value(key, json()));
        if (!t)
            return Error { std::string("the logit decomposition's ") + key + ": " + t.message() };
        *member = std::move(*t);
    }
    return d;
}

json encodeRelevance(const Relevance& r)
{
    return { { "target_class", r.targetClass }, { "logit", r.logit }, { "probability", r.probability },
             { "gradcam_layer", r.gradCamLayer }, { "grid", { r.gridHeight, r.gridWidth } }, { "prefix_tokens", r.numPrefixTokens },
             { "gae", encodeTensor(r.gae) }, { "gae_tokens", encodeTensor(r.gaeTokens) }, { "grad_cam", encodeTensor(r.gradCam) } };
}

Result<Relevance> decodeRelevance(const json& value)
{
    if (!value.is_object())
        return Error { "the relevance is not an object" };
    Relevance r;
    const json grid = value.value("grid", json());
    if (!value.value("target_class", json()).is_number_integer() || !value.value("gradcam_layer", json()).is_number_integer()
        || !value.value("logit", json()).is_number() || !value.value("probability", json()).is_number() || !grid.is_array()
        || grid.size() != 2 || !grid[0].is_number_integer() || !grid[1].is_number_integer())
        return Error { "the relevance lacks its class, layer, logit, probability or grid" };
    r.targetClass = value["target_class"].get<int>();
    r.gradCamLayer = value["gradcam_layer"].get<int>();
    r.logit = value["logit"].get<double>();
    r.probability = value["probability"].get<double>();
    r.gridHeight = grid[0].get<int>();
    r.gridWidth = grid[1].get<int>();
    r.numPrefixTokens = value.value("prefix_tokens", 0);
    for (auto [key, member] : { std::pair { "gae", &r.gae }, { "gae_tokens", &r.gaeTokens }, { "grad_cam", &r.gradCam } }) {
        auto t = decodeTensor(value.value(key, json()));
        if (!t)
            return Error { std::string("the relevance's ") + key + ": " + t.message() };
        *member = std::move(*t);
    }
    if (r.gae.numel() != int64_t(r.gridHeight) * r.gridWidth || r.gradCam.numel() != r.gae.numel())
        return Error { "the relevance's maps are not of its grid" };
    return r;
}

json encodeTokenNorms(const TokenNorms& n)
{
    json layers = json::array();
    for (const auto& l : n.layers)
        layers.push_back({ { "layer", l.layer }, { "norms", l.norms }, { "patch_median", l.patchMedian }, { "max_ratio", l.maxRatio },
                           { "cls_ratio", l.clsRatio }, { "register_ratio", l.registerRatio }, { "outliers", l.outliers },
                           { "attention_received", l.attentionReceived }, { "outlier_attention", l.outlierAttention },
                           { "prefix_attention", l.prefixAttention } });
    return { { "outlier_ratio", n.outlierRatio }, { "grid", { n.gridHeight, n.gridWidth } }, { "prefix_tokens", n.numPrefixTokens },
             { "layers", layers } };
}

Result<TokenNorms> decodeTokenNorms(const json& value)
{
    try { // the types are checked by nlohmann's get<>(), which throws type_error for a wrong one
        TokenNorms n;
        n.outlierRatio = value.at("outlier_ratio").get<double>();
        n.gridHeight = value.at("grid").at(0).get<int>();
        n.gridWidth = value.at("grid").at(1).get<int>();
        n.numPrefixTokens = value.at("prefix_tokens").get<int>();
        for (const json& l : value.at("layers")) {
            TokenNormLayer layer;
            layer.layer = l.at("layer").get<int>();
            layer.norms = l.at("norms").get<std::vector<double>>();
            layer.patchMedian = l.at("patch_median").get<double>();
            layer.maxRatio = l.at("max_ratio").get<double>();
            layer.clsRatio = l.at("cls_ratio").get<double>();
            layer.registerRatio = l.at("register_ratio").get<double>();
            layer.outliers = l.at("outliers").get<std::vector<int>>();
            layer.attentionReceived = l.at("attention_received").get<std::vector<double>>();
            layer.outlierAttention = l.at("outlier_attention").get<double>();
            layer.prefixAttention = l.at("prefix_attention").get<double>();
            n.layers.push_back(std::move(layer));
        }
        return n;
    } catch (const nlohmann::json::exception& e) {
        return Error { std::string("the token norms: ") + e.what() };
    }
}

json encodeHeadAblation(const HeadAblation& a)
{
    json heads = json::array();
    for (const auto& e : a.heads)
        heads.push_back({ { "layer", e.layer }, { "head", e.head }, { "dlogit", e.dlogit }, { "dprob", e.dprob }, { "kl", e.kl },
                          { "flip", e.flip }, { "predicted", e.predicted }, { "probability", e.probability } });
    return { { "mode", toString(a.mode) }, { "predicted", a.predicted }, { "probability", a.probability }, { "heads", heads } };
}

Result<HeadAblation> decodeHeadAblation(const json& value)
{
    try {
        HeadAblation a;
        auto mode = parseAblationMode(value.at("mode").get<std::string>());
        if (!mode)
            return Error { "the head ablation: " + mode.message() };
        a.mode = *mode;
        a.predicted = value.at("predicted").get<int>();
        a.probability = value.at("probability").get<double>();
        for (const json& h : value.at("heads")) {
            HeadAblationEffect e;
            e.layer = h.at("layer").get<int>();
            e.head = h.at("head").get<int>();
            e.dlogit = h.at("dlogit").get<double>();
            e.dprob = h.at("dprob").get<double>();
            e.kl = h.at("kl").get<double>();
            e.flip = h.at("flip").get<bool>();
            e.predicted = h.at("predicted").get<int>();
            e.probability = h.at("probability").get<double>();
            a.heads.push_back(e);
        }
        return a;
    } catch (const nlohmann::json::exception& e) {
        return Error { std::string("the head ablation: ") + e.what() };
    }
}

json encodeQueryKeyMap(const QueryKeyMap& m)
{
    // The points as columns: 2 x images x tokens of them (12,600 for 32 ViT-B/16 images), seven numbers each.
    std::vector<int> image, token, row, col;
    std::vector<bool> key;
    std::vector<double> x, y;
    for (const auto& p : m.points) {
        image.push_back(p.image);
        token.push_back(p.token);
        key.push_back(p.key);
        row.push_back(p.row);
        col.push_back(p.col);
        x.push_back(p.x);
        y.push_back(p.y);
    }
    return { { "layer", m.layer }, { "head", m.head }, { "images", m.images }, { "tokens", m.tokens }, { "method", toString(m.method) },
             { "rotated", m.rotated }, { "scale", m.scale }, { "components", m.components }, { "tsne_kl", m.tsneKl },
             { "agreement", m.agreement }, { "cosine", m.cosine }, { "stage", m.stage }, { "grid", { m.gridHeight, m.gridWidth } },
             { "points", { { "image", image }, { "token", token }, { "key", key }, { "row", row }, { "col", col }, { "x", x }, { "y", y } } } };
}

Result<QueryKeyMap> decodeQueryKeyMap(const json& value)
{
    try {
        QueryKeyMap m;
        m.layer = value.at("layer").get<int>();
        m.head = value.at("head").get<int>();
        m.images = value.at("images").get<int>();
        m.tokens = value.at("tokens").get<int>();
        auto method = parseQueryKeyMethod(value.at("method").get<std::string>());
        if (!method)
            return Error { "the query-key map: " + method.message() };
        m.method = *method;
        m.rotated = value.at("rotated").get<bool>();
        m.scale = value.at("scale").get<double>();
        m.components = value.at("components").get<std::vector<double>>();
        m.tsneKl = value.at("tsne_kl").get<double>();
        m.agreement = value.at("agreement").get<double>();
        // A Swin block's (its stage and grid); a host before them sends neither
        m.cosine = value.value("cosine", false);
        m.stage = value.value("stage", -1);
        if (const json grid = value.value("grid", json::array({ 0, 0 })); grid.is_array() && grid.size() == 2) {
            m.gridHeight = grid[0].get<int>();
            m.gridWidth = grid[1].get<int>();
        }
        const json& p = value.at("points");
        const auto image = p.at("image").get<std::vector<int>>(), token = p.at("token").get<std::vector<int>>();
        const auto row = p.at("row").get<std::vector<int>>(), col = p.at("col").get<std::vector<int>>();
        const auto key = p.at("key").get<std::vector<bool>>();
        const auto x = p.at("x").get<std::vector<double>>(), y = p.at("y").get<std::vector<double>>();
        const size_t n = image.size();
        if (token.size() != n || row.size() != n || col.size() != n || key.size() != n || x.size() != n || y.size() != n)
            return Error { "the query-key map's point columns differ in length" };
        for (size_t i = 0; i < n; ++i)
            m.points.push_back({ image[i], token[i], bool(key[i]), row[i], col[i], x[i], y[i] });
        return m;
    } catch (const nlohmann::json::exception& e) {
        return Error { std::string("the query-key map: ") + e.what() };
    }
}

json encodeWindows(const std::vector<WindowBlock>& blocks)
{
    json out = json::array();
    for (const WindowBlock& b : blocks)
        out.push_back({ { "stage", b.stage }, { "index", b.index }, { "grid", { b.gridH, b.gridW } }, { "window", { b.windowH, b.windowW } },
                        { "shift", { b.shiftH, b.shiftW } }, { "heads", b.heads }, { "width", b.width } });
    return out;
}

Result<std::vector<WindowBlock>> decodeWindows(const json& value)
{
    if (!value.is_array())
        return Error { "the trace's blocks are not a list" };
    std::vector<WindowBlock> out;
    try {
        for (const json& b : value) {
            WindowBlock w;
            w.stage = b.at("stage").get<int>();
            w.index = b.at("index").get<int>();
            w.gridH = b.at("grid").at(0).get<int>();
            w.gridW = b.at("grid").at(1).get<int>();
            w.windowH = b.at("window").at(0).get<int>();
            w.windowW = b.at("window").at(1).get<int>();
            w.shiftH = b.at("shift").at(0).get<int>();
            w.shiftW = b.at("shift").at(1).get<int>();
            w.heads = b.at("heads").get<int>();
            w.width = b.at("width").get<int>();
            if (w.stage < 0 || w.gridH < 1 || w.gridW < 1 || w.windowH < 1 || w.windowW < 1 || w.heads < 1 || w.shiftH < 0 || w.shiftW < 0
                || w.shiftH >= w.windowH || w.shiftW >= w.windowW)
                return Error { "block " + std::to_string(out.size() + 1) + " of the trace has no valid grid, window, shift or heads" };
            out.push_back(w);
        }
    } catch (const json::exception& e) {
        return Error { std::string("the trace's blocks: ") + e.what() };
    }
    return out;
}

json encodeWindowMaps(const std::vector<std::vector<AttentionMap>>& maps)
{
    json out = json::array();
    for (const auto& block : maps) {
        json b = json::array();
        for (const AttentionMap& m : block)
            b.push_back({ { "patches", encodeTensor(m.patches) }, { "padding_mass", m.paddingMass } });
        out.push_back(std::move(b));
    }
    return out;
}

Result<std::vector<std::vector<AttentionMap>>> decodeWindowMaps(const json& value, const std::vector<WindowBlock>& blocks)
{
    if (!value.is_array() || value.size() != blocks.size())
        return Error { "the host sent window maps for another number of blocks than the trace's " + std::to_string(blocks.size()) };
    std::vector<std::vector<AttentionMap>> out;
    for (size_t l = 0; l < blocks.size(); ++l) {
        const WindowBlock& g = blocks[l];
        const json& b = value[l];
        if (!b.is_array() || int(b.size()) != g.heads + 1)
            return Error { "the host sent block " + std::to_string(l + 1) + " without its " + std::to_string(g.heads) + " heads and their mean" };
        std::vector<AttentionMap> maps;
        for (const json& m : b) {
            auto patches = m.is_object() ? decodeTensor(m.value("patches", json())) : Result<Tensor>(Error { "no map" });
            if (!patches)
                return Error { "block " + std::to_string(l + 1) + ": " + patches.message() };
            if (patches->shape() != std::vector<int64_t> { g.gridH, g.gridW })
                return Error { "the host sent block " + std::to_string(l + 1) + "'s map at another grid than its stage's" };
            AttentionMap map;
            map.patches = std::move(*patches);
            map.paddingMass = m.value("padding_mass", 0.0);
            maps.push_back(std::move(map));
        }
        out.push_back(std::move(maps));
    }
    return out;
}

} // namespace attnscope::remote
