#include "RemoteBindings.h"

#include <RemoteAnalyses.h>

#include <mutex>
#include <optional>

// A trace on the host as Python reads it (attnscope.RemoteTrace): what crosses is what is asked for, once. Its numbers
// land in a Trace here (`local`), so that the analyses the server has no method for run on them by the local module's
// own code, and every accessor checks and refuses as the local Trace's does, in the same words.

namespace attnscope::python {

namespace {

// ---- A trace on the host

struct RemoteTrace {
    std::shared_ptr<RemoteModel> model;
    json made; // the forward that made it: asked again when the host has dropped the trace from the ones it keeps
    int64_t id = 0;
    RecordSpec recorded; // what the caller asked to record: the taps outside it read as the local trace's do
    std::shared_ptr<Trace> local; // the trace's numbers here: its logits, and each tensor once it has been read
    Image shown;
    std::string preparation;
    std::optional<QueryRows> rows; // the last query's
    // One request of this trace at a time, as threads may share it as they share a local Trace. Taken without the GIL:
    // the thread holding it gives the GIL up while it waits for the host, and needs it back to return.
    std::mutex mutex;

    std::unique_lock<std::mutex> lock()
    {
        py::gil_scoped_release release;
        return std::unique_lock<std::mutex>(mutex);
    }
    std::shared_ptr<Trace> current()
    {
        const auto held = lock();
        return local;
    }

    ~RemoteTrace()
    {
        if (model && model->link)
            model->link->releaseLater("release_trace", "trace", id);
    }

    Link& link() const { return *model->link; }

    json ask(const std::string& method, json params)
    {
        params["trace"] = id;
        auto result = link().tryCall(method, params);
        if (!result && result.message().find(": no trace ") != std::string::npos) {
            id = link().call("forward", made).value("trace", int64_t(0));
            params["trace"] = id;
            return link().call(method, params);
        }
        if (!result)
            raise(result.message());
        return std::move(*result);
    }

    int tokens() const { return local->numPrefixTokens + local->gridHeight * local->gridWidth; }

    std::vector<Tensor> Trace::*tapOf(const std::string& name) const
    {
        return name == "attention"  ? &Trace::attention
            : name == "attn_branch" ? &Trace::attnBranch
            : name == "residual"    ? &Trace::residual
                                    : &Trace::blocks;
    }

    bool keeps(const std::string& name) const
    {
        return name == "attention" ? recorded.attention
            : name == "attn_branch" ? recorded.attnBranch
            : name == "residual"    ? recorded.residual
                                    : recorded.blocks;
    }

    // The local module's checks and messages (ModelBindings.cpp, tap()).
    void checkTap(const std::string& name, const char* what, int layer) const
    {
        const int first = name == "block" ? 0 : 1;
        if (layer < first || layer > local->depth)
            raise(std::string(what) + " " + std::to_string(layer) + ": the model's layers are " + std::to_string(first)
                + ".." + std::to_string(local->depth));
        if (!keeps(name) || !recorded.wants(layer))
            raise(std::string(what) + " " + std::to_string(layer)
                + " was not recorded: run with record=\"all\" or record=[\"" + (name == "block" ? "blocks" : name)
                + "\"]");
    }

    Tensor fetch(const std::string& name, int layer, int head = -1)
    {
        json params = { { "tensor", name }, { "layer", layer } };
        if (head >= 0)
            params["head"] = head;
        return decoded(remote::decodeTensor(ask("trace_tensor", params).value("tensor", json())), link(), name.c_str());
    }

    // The taps asked for, every recorded layer's, fetched where they are not here yet. A new Trace replaces the old
    // (shared with whoever reads it, perhaps without the GIL), which is never changed.
    std::shared_ptr<Trace> withTaps(const std::vector<std::string>& names)
    {
        std::shared_ptr<Trace> next;
        for (const auto& name : names) {
            for (int l = name == "block" ? 0 : 1; keeps(name) && l <= local->depth; ++l) {
                if (!recorded.wants(l) || !(local.get()->*tapOf(name))[size_t(l)].empty())
                    continue;
                if (!next)
                    next = std::make_shared<Trace>(*local);
                ((*next).*tapOf(name))[size_t(l)] = fetch(name, l);
            }
        }
        if (next)
            local = next;
        return local;
    }

    py::array tensor(const std::string& name, const char* what, int layer)
    {
        checkTap(name, what, layer);
        if ((local.get()->*tapOf(name))[size_t(layer)].empty()) {
            auto next = std::make_shared<Trace>(*local);
            ((*next).*tapOf(name))[size_t(layer)] = fetch(name, layer);
            local = next;
        }
        return view((local.get()->*tapOf(name))[size_t(layer)]);
    }

    // Row `query` of every head of every layer (attention_rows), with the rollout's row when `rollout` is given.
    json queryRows(int query, const std::optional<RolloutOptions>& rollout)
    {
        if (rows && rows->query == query && !rollout)
            return json::object(); // the rows are here: a map of another layer or head costs no round trip
        json params = { { "query", query } };
        if (rollout)
            params["rollout"] = { { "fusion", toString(rollout->fusion) }, { "discard", rollout->discard } };
        json answer = ask("attention_rows", params);
        QueryRows r;
        r.query = query;
        r.gridHeight = local->gridHeight;
        r.gridWidth = local->gridWidth;
        r.numPrefixTokens = local->numPrefixTokens;
        r.numHeads = local->numHeads;
        r.depth = local->depth;
        if (local->hierarchical()) { // a Swin's: each block's maps at its stage grid, its heads then their mean
            r.windows = local->windows;
            r.windowMaps = decoded(remote::decodeWindowMaps(answer.value("window_maps", json()), r.windows), link(), "window maps");
            r.numHeads = 0;
            for (const WindowBlock& g : r.windows)
                r.numHeads = std::max(r.numHeads, g.heads);
            rows = std::move(r);
            return answer;
        }
        r.rows = decoded(remote::decodeTensor(answer.value("rows", json())), link(), "attention rows");
        if (answer.contains("pool"))
            r.pool = decoded(remote::decodeTensor(answer["pool"]), link(), "attention-pool map");
        if (r.rows.shape() != std::vector<int64_t> { r.depth, r.numHeads, int64_t(tokens()) })
            raise(link().host() + ": the host sent attention rows of another shape than the trace's");
        rows = std::move(r);
        return answer;
    }

    void checkAllAttention(const char* analysis) const
    {
        for (int l = 1; l <= local->depth; ++l)
            if (!recorded.attention || !recorded.wants(l))
                raise(std::string(analysis)
                    + " needs the attention of every layer: run with record=\"all\" or record=[\"attention\"]");
    }

    py::dict attentionMapOf(int layer, int head, int query, bool renormalise)
    {
        if (layer < 1 || layer > local->depth)
            raise("layer " + std::to_string(layer) + ": the model's attention layers are 1.."
                + std::to_string(local->depth));
        if (!recorded.attention || !recorded.wants(layer))
            raise("the attention of layer " + std::to_string(layer)
                + " was not recorded: run with record=\"all\" or record=[\"attention\"]");
        // A Swin block has its stage's heads, and its query is a patch of the first grid (the local module's words).
        const bool swin = local->hierarchical();
        const int heads = swin ? local->windows[size_t(layer - 1)].heads : local->numHeads;
        if (head < -1 || head >= heads)
            raise("head " + std::to_string(head) + (swin ? ": the heads of layer " + std::to_string(layer) : std::string(": the model's heads"))
                + " are 0.." + std::to_string(heads - 1) + " (-1: their mean)");
        if (query < 0 || query >= tokens())
            raise("query " + std::to_string(query) + ": the model's " + (swin ? "patches" : "tokens") + " are 0.." + std::to_string(tokens() - 1));
        queryRows(query, std::nullopt);
        return attentionMapDict(attentionMap(*rows, layer, head, renormalise));
    }

    py::dict gridOf(int query, const std::string& fusion, double discard)
    {
        checkAllAttention("the attention grid");
        const RolloutOptions options = rolloutOptions(fusion, discard);
        AttentionGrid g;
        g.gridHeight = local->gridHeight;
        g.gridWidth = local->gridWidth;
        g.numPrefixTokens = local->numPrefixTokens;
        // attentionGrid's query: the CLS token, or the centre patch of a model without prefix tokens.
        g.query = query >= 0             ? query
            : local->numPrefixTokens > 0 ? 0
                                         : (local->gridHeight / 2) * local->gridWidth + local->gridWidth / 2;
        if (g.query >= tokens())
            raise("query " + std::to_string(g.query) + ": the model's tokens are 0.." + std::to_string(tokens() - 1));
        if (local->hierarchical()) { // per block at its stage grid, and no rollout (attentionGrid's)
            queryRows(g.query, std::nullopt);
            g.windows = local->windows;
            g.rolloutRefused = kNoHierarchicalRollout;
            for (int l = 1; l <= local->depth; ++l)
                g.maps.push_back(rows->windowMaps[size_t(l - 1)]);
            return attentionGridDict(g);
        }
        const json answer = queryRows(g.query, options);
        for (int l = 1; l <= local->depth; ++l) {
            std::vector<AttentionMap> row; // the heads in order, their mean last, as attentionGrid makes them
            for (int h = 0; h < local->numHeads; ++h)
                row.push_back(attentionMap(*rows, l, h));
            row.push_back(attentionMap(*rows, l, -1));
            g.maps.push_back(std::move(row));
        }
        const json& r = answer.value("rollout", json());
        g.rollout.patches = decoded(remote::decodeTensor(r.value("patches", json())), link(), "rollout");
        g.rollout.prefixMass = r.value("prefix_mass", 0.0);
        g.rolloutOptions = options;
        return attentionGridDict(g);
    }

    py::array rolloutOf(const std::string& fusion, double discard)
    {
        checkAllAttention("the rollout");
        if (local->hierarchical())
            raise(kNoHierarchicalRollout);
        const RolloutOptions o = rolloutOptions(fusion, discard);
        const json params = { { "tensor", "rollout" },
            { "rollout", { { "fusion", toString(o.fusion) }, { "discard", o.discard } } } };
        return view(
            decoded(remote::decodeTensor(ask("trace_tensor", params).value("tensor", json())), link(), "rollout"));
    }

    py::dict tokenNormsOf(double ratio)
    {
        checkOutlierRatio(ratio);
        if (local->hierarchical())
            raise("token norms: not of a hierarchical (Swin) model yet");
        TokenNorms norms;
        if (recorded.blocks && recorded.attention && recorded.layers.empty()) {
            // The host's (attention_rows' "norms"): every layer's, from the trace kept there.
            norms = decoded(remote::decodeTokenNorms(
                                ask("attention_rows", { { "query", 0 }, { "norms", ratio } }).value("norms", json())),
                link(), "token norms");
        } else {
            // Some taps not recorded: those that were, as the local module reads them.
            const auto t = withTaps({ "attention", "block" });
            norms = tokenNorms(*t, model->info.config, ratio);
        }
        if (norms.layers.empty())
            raise("token norms need the block outputs: run with record=\"all\" or record=[\"blocks\"]");
        return tokenNormsDict(norms);
    }
};

// The trace a `forward` answer describes.
std::shared_ptr<RemoteTrace> traceOf(
    const std::shared_ptr<RemoteModel>& model, json made, const json& answer, const RecordSpec& recorded)
{
    const Link& link = *model->link;
    auto t = std::make_shared<RemoteTrace>();
    t->model = model;
    t->made = std::move(made);
    t->id = answer.value("trace", int64_t(0));
    t->recorded = recorded;
    auto local = std::make_shared<Trace>();
    const json grid = answer.value("grid", json::array({ 0, 0 }));
    local->gridHeight = grid.at(0).get<int>();
    local->gridWidth = grid.at(1).get<int>();
    local->numPrefixTokens = answer.value("prefix_tokens", 0);
    local->depth = answer.value("depth", 0);
    local->numHeads = answer.value("heads", 0);
    local->neutrenoLambda = answer.value("neutreno_lambda", 0.0);
    local->boostT = answer.value("boost_t", 0.0);
    local->logits = decoded(remote::decodeTensor(answer.value("logits", json())), link, "logits");
    if (answer.contains("pool"))
        local->poolAttention = decoded(remote::decodeTensor(answer["pool"]), link, "attention-pool map");
    if (answer.contains("windows")) // a Swin's blocks
        local->windows = decoded(remote::decodeWindows(answer["windows"]), link, "the trace's blocks");
    for (auto* taps : { &local->attention, &local->attnBranch, &local->residual, &local->blocks })
        taps->resize(size_t(std::max(local->depth, 0)) + 1);
    t->local = std::move(local);
    t->shown = pixelsOf(answer.value("shown", json()), link);
    t->preparation = answer.value("preparation", "");
    return t;
}

} // namespace

py::object traceFromAnswer(
    const std::shared_ptr<RemoteModel>& model, json made, const json& answer, const RecordSpec& recorded)
{
    return py::cast(traceOf(model, std::move(made), answer, recorded));
}

void bindRemoteTrace(py::module_& m)
{
    // Every method under the trace's lock; the numbers that never change read from a snapshot of it.
    const auto numbers = [](RemoteTrace& t) { return t.current(); };
    py::class_<RemoteTrace, std::shared_ptr<RemoteTrace>>(m, "RemoteTrace")
        .def_property_readonly("id", [](RemoteTrace& t) {
            const auto held = t.lock();
            return t.id;
        })
        .def_property_readonly("logits", [=](RemoteTrace& t) { return view(numbers(t)->logits); })
        .def_property_readonly("depth", [=](RemoteTrace& t) { return numbers(t)->depth; })
        .def_property_readonly("heads", [=](RemoteTrace& t) { return numbers(t)->numHeads; })
        .def_property_readonly("prefix_tokens", [=](RemoteTrace& t) { return numbers(t)->numPrefixTokens; })
        .def_property_readonly("grid",
            [=](RemoteTrace& t) {
                const auto n = numbers(t);
                return py::make_tuple(n->gridHeight, n->gridWidth);
            })
        .def_property_readonly("windows", [=](RemoteTrace& t) { return windowsList(*numbers(t)); })
        .def_property_readonly("neutreno_lambda", [=](RemoteTrace& t) { return numbers(t)->neutrenoLambda; })
        .def_property_readonly("boost_t", [=](RemoteTrace& t) { return numbers(t)->boostT; })
        .def_property_readonly("pool_attention",
            [=](RemoteTrace& t) -> py::object {
                const auto n = numbers(t);
                return n->poolAttention.numel() > 0 ? py::object(view(n->poolAttention)) : py::object(py::none());
            })
        .def_property_readonly("shown",
            [](const std::shared_ptr<RemoteTrace>& t) -> py::object {
                return t->shown.empty() ? py::object(py::none()) : py::object(view(t->shown, t));
            })
        .def_readonly("preparation", &RemoteTrace::preparation)
        .def_property_readonly("input",
            [](RemoteTrace& t) {
                const auto held = t.lock();
                if (t.local->input.empty()) {
                    auto next = std::make_shared<Trace>(*t.local);
                    next->input = t.fetch("input", 0);
                    t.local = next;
                }
                return view(t.local->input);
            })
        .def(
            "attention",
            [](RemoteTrace& t, int l) {
                const auto held = t.lock();
                return t.tensor("attention", "attention of layer", l);
            },
            py::arg("layer"))
        .def(
            "attention_head",
            [](RemoteTrace& t, int l, int h) {
                const auto held = t.lock();
                t.checkTap("attention", "attention of layer", l);
                const int heads = t.local->hierarchical() ? t.local->windows[size_t(l - 1)].heads : t.local->numHeads;
                if (h < 0 || h >= heads)
                    raise("head " + std::to_string(h) + ": the " + (t.local->hierarchical() ? "layer's" : "model's") + " heads are 0.."
                        + std::to_string(heads - 1));
                return view(t.fetch("attention", l, h));
            },
            py::arg("layer"), py::arg("head"))
        .def(
            "attn_branch",
            [](RemoteTrace& t, int l) {
                const auto held = t.lock();
                return t.tensor("attn_branch", "attention branch of layer", l);
            },
            py::arg("layer"))
        .def(
            "residual",
            [](RemoteTrace& t, int l) {
                const auto held = t.lock();
                return t.tensor("residual", "residual of layer", l);
            },
            py::arg("layer"))
        .def(
            "block",
            [](RemoteTrace& t, int l) {
                const auto held = t.lock();
                return t.tensor("block", "block output of layer", l);
            },
            py::arg("layer"))
        .def(
            "local",
            [](RemoteTrace& t, const std::vector<std::string>& taps) {
                const auto held = t.lock();
                return t.withTaps(taps);
            },
            py::arg("taps"),
            "An attnscope.Trace here holding the taps named (attention, attn_branch, residual, block), fetched once.")
        .def(
            "attention_map",
            [](RemoteTrace& t, int layer, int head, int query, bool renormalise) {
                const auto held = t.lock();
                return t.attentionMapOf(layer, head, query, renormalise);
            },
            py::arg("layer"), py::arg("head"), py::arg("query"), py::arg("renormalise"))
        .def(
            "attention_grid",
            [](RemoteTrace& t, int query, const std::string& fusion, double discard) {
                const auto held = t.lock();
                return t.gridOf(query, fusion, discard);
            },
            py::arg("query"), py::arg("fusion"), py::arg("discard"))
        .def(
            "rollout",
            [](RemoteTrace& t, const std::string& fusion, double discard) {
                const auto held = t.lock();
                return t.rolloutOf(fusion, discard);
            },
            py::arg("fusion"), py::arg("discard"))
        .def(
            "token_norms",
            [](RemoteTrace& t, double ratio) {
                const auto held = t.lock();
                return t.tokenNormsOf(ratio);
            },
            py::arg("outlier_ratio"));
}

} // namespace attnscope::python
