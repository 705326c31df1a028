// The remote server's methods for Python's attnscope.connect (docs/remote.md, docs/python.md "On a remote engine"):
// a notebook asks for what the local module returns, so it needs what the window never asks for: Model.run's options
// on an image or on an input tensor (`forward`), the prepared or perturbed input (`prepare`), and a trace's tensors
// one layer at a time (`trace_tensor`). Each answer is bounded by the link's frame size, and refused in one line that
// says how to ask for less where it would not fit.
#include "RemoteServer.h"

#include "RemoteAnalyses.h"
#include "ServerRequests.h"

#include <attnscope/Analyses.h>
#include <attnscope/Perturbation.h>

#include <algorithm>

namespace attnscope::remote {

using json = nlohmann::json;

namespace {

// What an answer may hold besides its tensor: ids, names, a shape.
constexpr size_t kAnswerHeadroom = size_t(1) << 20;

std::string shapeText(const std::vector<int64_t>& shape)
{
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i)
        s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

// The rollout's options of a request, as attention_rows reads them: {"fusion": mean | max | min, "discard": [0,
// 1)}.
RolloutOptions rolloutOf(const json& params)
{
    const json& r = field(params, "rollout");
    RolloutOptions options;
    if (r.is_null())
        return options;
    if (!r.is_object())
        throw RequestError { InvalidParams,
            "\"rollout\" is " + r.dump().substr(0, 40) + ", not {\"fusion\": ..., \"discard\": ...}" };
    if (const json& fusion = field(r, "fusion"); !fusion.is_null()) {
        auto parsed = fusion.is_string()
            ? parseHeadFusion(fusion.get<std::string>())
            : Result<HeadFusion>(
                Error { "the head fusion " + fusion.dump().substr(0, 40) + " is not mean, max or min" });
        if (!parsed)
            throw RequestError { InvalidParams, "\"rollout\": " + parsed.message() };
        options.fusion = *parsed;
    }
    if (const json& discard = field(r, "discard"); !discard.is_null()) {
        if (!discard.is_number() || !(discard.get<double>() >= 0.0 && discard.get<double>() < 1.0))
            throw RequestError { InvalidParams,
                "\"rollout\": discard " + discard.dump().substr(0, 40) + " is not a number in [0, 1)" };
        options.discard = discard.get<double>();
    }
    return options;
}

json pixels(const Image& image)
{
    return { { "width", image.width }, { "height", image.height }, { "channels", image.channels },
        { "pixels", encodeBytes(image.pixels.data(), image.pixels.size()) } };
}

} // namespace

json Server::forward(const json& params)
{
    const std::shared_ptr<const Model> model = modelOf(params);
    const bool fromImage = !field(params, "image").is_null();
    if (fromImage == !field(params, "input").is_null())
        throw RequestError { InvalidParams,
            "give one of \"image\" (a path on the host, or {\"sha256\": HEX}) and \"input\" (a tensor [C, H, W])" };
    std::optional<Input> image;
    Tensor input;
    std::string what = "the input";
    if (fromImage) {
        image = inputOf(*model, params);
        input = image->prepared.input;
        what = image->path;
    } else {
        auto decoded = decodeTensor(field(params, "input"));
        if (!decoded)
            throw RequestError { InvalidParams, "\"input\": " + decoded.message() };
        input = std::move(*decoded);
        // Another height and width is the model at another input size (Model::run resamples its position table).
        if (input.dim() != 3 || input.size(0) != model->config().channels)
            throw RequestError { InvalidParams,
                "\"input\" is " + shapeText(input.shape()) + ", not [" + std::to_string(model->config().channels)
                    + ", H, W] (the model's channels first)" };
    }
    RunOptions run;
    run.record = RecordSpec::everything(); // the taps stay here; the client asks for those it reads (trace_tensor)
    run.neutrenoLambda = number(params, "neutreno_lambda");
    run.boostT = number(params, "boost_t");
    if (const std::string precision = text(params, "precision", false); !precision.empty()) {
        auto p = parsePrecision(precision);
        if (!p)
            throw RequestError { InvalidParams, "\"precision\": " + p.message() };
        run.precision = *p;
    }
    if (const json& ablate = field(params, "ablate"); !ablate.is_null()) {
        if (!ablate.is_array() || ablate.size() != 2 || !isCountUpTo(ablate[0], INT_MAX) || !isCountUpTo(ablate[1], INT_MAX))
            throw RequestError { InvalidParams,
                "\"ablate\" is " + ablate.dump().substr(0, 40) + ", not [layer, head]" };
        run.ablatedHeads = { { ablate[0].get<int>(), ablate[1].get<int>() } };
        auto mode = parseAblationMode(text(params, "ablation", false).empty() ? "zero" : text(params, "ablation"));
        if (!mode)
            throw RequestError { InvalidParams, "\"ablation\": " + mode.message() };
        run.ablation = *mode;
    }
    auto trace = model->run(input, run);
    if (!trace)
        throw RequestError { Failed, what + ": " + trace.message() };
    auto traced = std::make_shared<Traced>();
    traced->model = model;
    traced->image = fromImage ? image->path : std::string();
    traced->trace = std::move(*trace);
    const int64_t id = m_nextId++;
    m_traces.emplace_front(id, traced);
    while (int(m_traces.size()) > std::max(1, m_options.maxTraces))
        m_traces.pop_back();
    const Trace& t = traced->trace;
    json out = { { "trace", id }, { "grid", { t.gridHeight, t.gridWidth } }, { "prefix_tokens", t.numPrefixTokens },
        { "depth", t.depth }, { "heads", t.numHeads }, { "map_layers", lastMapLayer(t) },
        { "neutreno_lambda", t.neutrenoLambda }, { "boost_t", t.boostT }, { "logits", encodeTensor(t.logits) } };
    if (t.poolAttention.numel() > 0)
        out["pool"] = encodeTensor(t.poolAttention);
    if (t.hierarchical())
        out["windows"] = encodeWindows(t.windows); // a Swin's blocks, as trace gives them
    if (image) {
        out["preparation"] = image->preparation;
        out["shown"] = pixels(image->prepared.shown);
    }
    return out;
}

json Server::prepare(const json& params)
{
    const std::shared_ptr<const Model> model = modelOf(params);
    const Input in = inputOf(*model, params);
    Tensor input = in.prepared.input;
    if (const std::string spec = text(params, "perturbation", false); !spec.empty()) {
        auto perturbation = Perturbation::parse(spec);
        if (!perturbation)
            throw RequestError { InvalidParams, "\"perturbation\": " + perturbation.message() };
        const json& seed = field(params, "seed");
        if (!seed.is_null() && !isCount(seed))
            throw RequestError { InvalidParams,
                "\"seed\" is " + seed.dump().substr(0, 40) + ", not a whole number from 0" };
        auto perturbed = perturbInput(*model, in.prepared, *perturbation, seed.is_null() ? 0 : seed.get<uint64_t>());
        if (!perturbed)
            throw RequestError { Failed, in.path + ": " + perturbed.message() };
        input = std::move(*perturbed);
    }
    return { { "input", encodeTensor(input) }, { "shown", pixels(in.prepared.shown) },
        { "preparation", in.preparation } };
}

json Server::traceTensor(const json& params)
{
    const auto traced = traceOf(params);
    const Trace& t = traced->trace;
    const std::string name = text(params, "tensor");
    Tensor tensor;
    if (name == "input") {
        tensor = t.input;
    } else if (name == "rollout") {
        // The same rollout attention_rows sends a row of, kept beside the trace for the next ask.
        const RolloutOptions options = rolloutOf(params);
        for (int l = 1; l <= t.depth; ++l)
            if (t.attention[size_t(l)].empty())
                throw RequestError { Failed,
                    "the rollout needs the attention of every layer, and this trace has not layer " + std::to_string(l)
                        + "'s" };
        const RolloutOptions& made = traced->rolloutMadeWith.value_or(RolloutOptions {});
        if (!traced->rolloutMadeWith || made.fusion != options.fusion || made.discard != options.discard) {
            traced->rollout = attentionRollout(t, options);
            traced->rolloutMadeWith = options;
        }
        tensor = traced->rollout;
    } else {
        const std::vector<Tensor>* taps = name == "attention" ? &t.attention
            : name == "attn_branch"                           ? &t.attnBranch
            : name == "residual"                              ? &t.residual
            : name == "block"                                 ? &t.blocks
                                                              : nullptr;
        if (!taps)
            throw RequestError { InvalidParams,
                "\"tensor\" is \"" + name.substr(0, 40)
                    + "\", not input, rollout, attention, attn_branch, residual or block" };
        const int64_t layer = integer(params, "layer");
        const int64_t first = name == "block" ? 0 : 1;
        if (layer < first || layer > t.depth || size_t(layer) >= taps->size())
            throw RequestError { InvalidParams,
                name + " of layer " + std::to_string(layer) + ": the trace's layers are " + std::to_string(first)
                    + " to " + std::to_string(t.depth) };
        tensor = (*taps)[size_t(layer)];
        if (tensor.empty())
            throw RequestError { Failed, name + " of layer " + std::to_string(layer) + " was not recorded" };
        if (!field(params, "head").is_null()) {
            const int64_t head = integer(params, "head");
            const bool windowed = tensor.dim() == 4; // a Swin's [nW, H, n, n]: the head's [nW, n, n]
            const int64_t heads = windowed ? tensor.size(1) : tensor.size(0);
            if (name != "attention" || head < 0 || head >= heads)
                throw RequestError { InvalidParams,
                    "\"head\" " + std::to_string(head) + ": one of the attention's heads 0 to " + std::to_string(heads - 1) };
            if (windowed) {
                const int64_t windows = tensor.size(0), n = tensor.size(2) * tensor.size(3);
                std::vector<float> maps(size_t(windows * n));
                for (int64_t w = 0; w < windows; ++w)
                    std::copy_n(tensor.data() + (w * heads + head) * n, n, maps.data() + w * n);
                tensor = Tensor::fromVector({ windows, tensor.size(2), tensor.size(3) }, std::move(maps));
            } else {
                const int64_t n = tensor.numel() / tensor.size(0);
                tensor = Tensor::fromData({ tensor.size(1), tensor.size(2) }, tensor.data() + head * n);
            }
        }
    }
    const size_t bytes = size_t(tensor.numel()) * sizeof(float);
    if (bytes + kAnswerHeadroom > m_options.limits.maxFrameBytes)
        throw RequestError { Failed,
            name + " " + shapeText(tensor.shape()) + " is " + std::to_string(bytes)
                + " bytes, more than a frame of the link holds (" + std::to_string(m_options.limits.maxFrameBytes) + ")"
                + (name == "attention" ? ": ask one head at a time" : "") };
    return { { "tensor", encodeTensor(tensor) } };
}

} // namespace attnscope::remote
