#include "Bindings.h"

#include <attnscope/Analyses.h>
#include <attnscope/Datasets.h>
#include <attnscope/Perturbation.h>

#include <filesystem>

namespace attnscope::python {

py::dict configDict(const ModelInfo& info)
{
    const ModelConfig& c = info.config;
    const PreprocessConfig& p = info.preprocess;
    py::dict pre;
    pre["resize"] = toString(p.resize);
    pre["resize_shortest"] = p.resizeShortest;
    pre["resize_size"] = py::make_tuple(p.resizeHeight, p.resizeWidth);
    pre["interpolation"] = toString(p.interpolation);
    pre["center_crop"] = p.centerCrop;
    pre["crop_size"] = py::make_tuple(p.cropHeight, p.cropWidth);
    pre["rescale"] = p.rescale;
    pre["mean"] = p.mean;
    pre["std"] = p.std;
    pre["crop_pct"] = p.cropPct;
    pre["source"] = p.source;
    py::dict d;
    d["depth"] = c.depth;
    d["heads"] = c.numHeads;
    d["width"] = c.width;
    d["head_dim"] = c.headDim();
    d["mlp_hidden"] = c.mlpHidden;
    d["mlp_gated"] = c.mlpGated;
    d["patch_size"] = c.patchSize;
    d["image_size"] = py::make_tuple(c.imageHeight, c.imageWidth);
    d["trained_size"] = py::make_tuple(info.trainedHeight, info.trainedWidth);
    d["channels"] = c.channels;
    d["classes"] = c.numClasses;
    d["head_is_projection"] = c.headIsProjection;
    d["class_token"] = c.classToken;
    d["dist_token"] = c.distToken;
    d["registers"] = c.numRegisters;
    d["prefix_tokens"] = c.numPrefixTokens();
    d["grid"] = py::make_tuple(c.gridHeight(), c.gridWidth());
    d["tokens"] = c.numTokens();
    d["pos_embed"] = c.posEmbed;
    d["position"] = c.positionScheme();
    d["patch_embedding"] = toString(c.patchEmbedding);
    d["attention_width"] = c.attnWidth();
    d["layer_scale"] = c.layerScale;
    d["block_norm"] = toString(c.blockNorm);
    d["final_norm"] = toString(c.finalNorm);
    d["pooling"] = toString(c.pooling);
    d["activation"] = toString(c.activation);
    d["layer_norm_eps"] = c.layerNormEps;
    d["attention"] = toString(c.attention);
    d["block"] = toString(c.block);
    d["neutreno_lambda"] = c.neutrenoLambda;
    d["boost_t"] = c.boostT;
    d["hierarchy"] = toString(c.hierarchy); // none | swin | swinv2
    py::list stages; // a Swin's: blocks, heads, width, MLP, window, pretraining window (Swin v2) per stage
    for (const SwinStage& s : c.stages) {
        py::dict stage;
        stage["depth"] = s.depth;
        stage["heads"] = s.heads;
        stage["width"] = s.width;
        stage["mlp_hidden"] = s.mlpHidden;
        stage["window"] = s.window;
        stage["pretrained_window"] = s.pretrainedWindow;
        stages.append(stage);
    }
    d["stages"] = stages;
    d["preprocess"] = pre;
    return d;
}

py::dict infoDict(const ModelInfo& info)
{
    py::dict d;
    d["path"] = info.path;
    d["weights_path"] = info.weightsPath;
    d["format"] = info.format;
    d["naming"] = info.naming;
    d["family"] = info.family;
    d["recognition"] = info.recognition;
    d["inferred"] = info.inferred;
    d["config_source"] = info.configSource;
    d["guesses"] = info.guesses;
    d["ignored_config_keys"] = info.ignoredConfigKeys;
    d["device"] = info.device;
    d["parameters"] = info.parameterCount;
    return d;
}

Image imageFrom(const py::array& pixels)
{
    if (std::string(py::str(pixels.dtype())) != "uint8")
        raise("expected uint8 pixels (0..255), got dtype " + std::string(py::str(pixels.dtype()))
              + ": convert first, e.g. (x * 255).round().astype(numpy.uint8) for values in 0..1");
    const int dims = int(pixels.ndim());
    const int channels = dims == 2 ? 1 : dims == 3 ? int(pixels.shape(2)) : 0;
    if (!(channels == 1 || channels == 3))
        raise("expected an image of shape (H, W), (H, W, 1) or (H, W, 3), got " + std::string(py::str(py::cast(std::vector<py::ssize_t>(pixels.shape(), pixels.shape() + dims)))));
    if (pixels.shape(0) <= 0 || pixels.shape(1) <= 0)
        raise("the image is empty (0 pixels)");
    auto c = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>::ensure(pixels);
    Image image;
    image.height = int(pixels.shape(0));
    image.width = int(pixels.shape(1));
    image.channels = channels;
    image.pixels.assign(c.data(), c.data() + c.size());
    return image;
}

namespace {

const Tensor& tap(const std::vector<Tensor>& taps, int layer, int first, const Trace& trace, const char* what, const char* record)
{
    if (layer < first || layer > trace.depth)
        raise(std::string(what) + " " + std::to_string(layer) + ": the model's layers are " + std::to_string(first) + ".." + std::to_string(trace.depth));
    const Tensor& t = taps[size_t(layer)];
    if (t.empty())
        raise(std::string(what) + " " + std::to_string(layer) + " was not recorded: run with record=\"all\" or record=[\"" + record + "\"]");
    return t;
}

std::shared_ptr<Model::Prepared> prepared(const PyModel& m, const Image& image)
{
    Result<Model::Prepared> p = Error {};
    {
        py::gil_scoped_release release;
        p = m.model->prepare(image);
    }
    return std::make_shared<Model::Prepared>(take(std::move(p)));
}

// The module-level functions: version, threads, the Fashion-MNIST reader and load().
void bindModuleFunctions(py::module_& m)
{
    m.def("version", &version);
    m.def("builtins", &builtinModelNames);
    m.def("set_threads", &setNumThreads, py::arg("threads"));
    m.def("threads", [] {
        auto t = threadSetup();
        return py::make_tuple(t.intraOp, t.interOp);
    });
    m.def(
        "fashion_mnist",
        [](const std::string& dir, const std::string& split, int limit) {
            if (split != "train" && split != "test")
                raise("split " + split + ": expected train or test");
            Result<LabelledImages> set = Error {};
            {
                py::gil_scoped_release release;
                set = readFashionMnist(dir.empty() ? kFashionMnistDir : dir, split, limit);
            }
            auto data = take(std::move(set), dir.empty() ? kFashionMnistDir : dir);
            const py::ssize_t n = py::ssize_t(data.images.size());
            const int h = n ? data.images.front().height : 28, w = n ? data.images.front().width : 28;
            const std::vector<py::ssize_t> shape { n, py::ssize_t(h), py::ssize_t(w) };
            py::array_t<uint8_t> pixels(shape, cStrides(shape, 1));
            for (py::ssize_t i = 0; i < n; ++i)
                std::copy(data.images[size_t(i)].pixels.begin(), data.images[size_t(i)].pixels.end(), pixels.mutable_data(i));
            std::vector<int64_t> labels(data.labels.begin(), data.labels.end());
            return py::make_tuple(pixels, ints(labels), data.classNames);
        },
        py::arg("dir"), py::arg("split"), py::arg("limit"));
    m.def(
        "load",
        [](const std::string& path, const std::string& description, const std::string& device, int height, int width) {
            LoadOptions options;
            options.acceptHierarchical = true; // a Swin's traces: attention per window, taps per stage (Trace.windows)
            options.device = device;
            options.descriptionPath = description;
            options.inputHeight = height;
            options.inputWidth = width;
            Result<std::shared_ptr<const Model>> loaded = Error {};
            {
                py::gil_scoped_release release;
                loaded = Model::load(path, options);
            }
            if (!loaded) {
                // Of the two files, name the one that is not there.
                std::error_code ec;
                const bool descriptionMissing = !description.empty() && !std::filesystem::exists(description, ec);
                raise(loaded.error(), descriptionMissing ? description : path);
            }
            return PyModel { *loaded, path, description };
        },
        py::arg("path"), py::arg("description") = "", py::arg("device") = "auto", py::arg("height") = 0, py::arg("width") = 0);
}

// Prepared and Trace, which Model's methods return: registered before Model, so that its signatures name them.
void bindTraceClasses(py::module_& m)
{
    py::class_<Model::Prepared, std::shared_ptr<Model::Prepared>>(m, "Prepared")
        .def_property_readonly("input", [](const std::shared_ptr<Model::Prepared>& p) { return view(p->input); })
        .def_property_readonly("shown", [](const std::shared_ptr<Model::Prepared>& p) { return view(p->shown, p); });

    py::class_<Trace, std::shared_ptr<Trace>>(m, "Trace")
        .def_property_readonly("logits", [](const Trace& t) { return view(t.logits); })
        .def_property_readonly("input", [](const Trace& t) { return view(t.input); })
        .def_readonly("depth", &Trace::depth)
        .def_readonly("heads", &Trace::numHeads)
        .def_readonly("prefix_tokens", &Trace::numPrefixTokens)
        .def_property_readonly("grid", [](const Trace& t) { return py::make_tuple(t.gridHeight, t.gridWidth); })
        // A Swin's blocks (docs/python.md): per block its stage, grid, window, shift, heads and width; None for a ViT.
        .def_property_readonly("windows", &windowsList)
        .def_readonly("neutreno_lambda", &Trace::neutrenoLambda)
        .def_readonly("boost_t", &Trace::boostT)
        .def("attention", [](const Trace& t, int l) { return view(tap(t.attention, l, 1, t, "attention of layer", "attention")); }, py::arg("layer"))
        // An attention-pool head's map [H, patches] (SigLIP's "map" head), None without one.
        .def_property_readonly("pool_attention", [](const Trace& t) -> py::object {
            return t.poolAttention.numel() > 0 ? py::object(view(t.poolAttention)) : py::object(py::none());
        })
        .def("attn_branch", [](const Trace& t, int l) { return view(tap(t.attnBranch, l, 1, t, "attention branch of layer", "attn_branch")); }, py::arg("layer"))
        .def("residual", [](const Trace& t, int l) { return view(tap(t.residual, l, 1, t, "residual of layer", "residual")); }, py::arg("layer"))
        .def("block", [](const Trace& t, int l) { return view(tap(t.blocks, l, 0, t, "block output of layer", "blocks")); }, py::arg("layer"));
}

// Model: its config and info as dicts, preparing inputs, running and perturbing them.
void bindModelClass(py::module_& m)
{
    py::class_<PyModel>(m, "Model")
        .def_readonly("path", &PyModel::path)
        .def_readonly("description", &PyModel::description)
        .def_property_readonly("config", [](const PyModel& p) { return configDict(p.model->info()); })
        .def_property_readonly("info", [](const PyModel& p) { return infoDict(p.model->info()); })
        .def_property_readonly("labels", [](const PyModel& p) { return p.model->info().labels; })
        .def_property_readonly("device", [](const PyModel& p) { return p.model->info().device; })
        .def("prepare_path",
             [](const PyModel& p, const std::string& path) {
                 Result<Image> image = Error {};
                 {
                     py::gil_scoped_release release;
                     image = decodeImage(path);
                 }
                 return prepared(p, take(std::move(image), path));
             })
        .def("prepare_pixels", [](const PyModel& p, const py::array& pixels) { return prepared(p, imageFrom(pixels)); })
        .def("describe_preparation",
             [](const PyModel& p, int width, int height, int channels) { return p.model->describePreparation(width, height, channels); })
        .def("with_input_size",
             [](const PyModel& p, int height, int width) {
                 return PyModel { take(p.model->withInputSize(height, width)), p.path, p.description };
             })
        .def(
            "run",
            [](const PyModel& p, const std::vector<py::array>& inputs, bool attention, bool attnBranch, bool residual, bool blocks,
               const std::vector<int>& layers, std::optional<double> neutreno, std::optional<double> boost, const std::string& precision,
               const std::vector<std::pair<int, int>>& ablated, const std::string& ablation) {
                RunOptions run;
                run.record.attention = attention;
                run.record.attnBranch = attnBranch;
                run.record.residual = residual;
                run.record.blocks = blocks;
                run.record.layers = layers;
                run.neutrenoLambda = neutreno;
                run.boostT = boost;
                run.precision = take(parsePrecision(precision));
                run.ablation = take(parseAblationMode(ablation));
                for (const auto& [layer, head] : ablated)
                    run.ablatedHeads.push_back({ layer, head });
                std::vector<Tensor> tensors;
                for (const auto& a : inputs)
                    tensors.push_back(tensorFrom(a));
                Result<std::vector<Trace>> traces = Error {};
                {
                    py::gil_scoped_release release;
                    if (tensors.size() == 1) {
                        auto one = p.model->run(tensors.front(), run);
                        traces = one ? Result<std::vector<Trace>>(std::vector<Trace> { std::move(*one) }) : Result<std::vector<Trace>>(one.error());
                    } else {
                        traces = p.model->runBatch(tensors, run);
                    }
                }
                std::vector<std::shared_ptr<Trace>> out;
                for (auto& t : take(std::move(traces)))
                    out.push_back(std::make_shared<Trace>(std::move(t)));
                return out;
            },
            py::arg("inputs"), py::arg("attention"), py::arg("attn_branch"), py::arg("residual"), py::arg("blocks"), py::arg("layers"),
            py::arg("neutreno"), py::arg("boost"), py::arg("precision"), py::arg("ablated"), py::arg("ablation"))
        .def(
            "perturb",
            [](const PyModel& p, const Model::Prepared& image, const std::string& spec, uint64_t seed) {
                auto perturbation = take(Perturbation::parse(spec));
                Result<Tensor> input = Error {};
                {
                    py::gil_scoped_release release;
                    input = perturbInput(*p.model, image, perturbation, seed);
                }
                return view(take(std::move(input)));
            },
            py::arg("prepared"), py::arg("spec"), py::arg("seed") = 0)
        .def("top_classes", [](const PyModel&, const py::array& logits, int k) {
            std::vector<py::tuple> out;
            for (const auto& c : topClasses(tensorFrom(logits), k))
                out.push_back(py::make_tuple(c.index, c.probability));
            return out;
        });
}

} // namespace

void bindModel(py::module_& m)
{
    bindModuleFunctions(m);
    bindTraceClasses(m);
    bindModelClass(m);
}

} // namespace attnscope::python
