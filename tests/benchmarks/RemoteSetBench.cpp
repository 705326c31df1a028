// An image-set run over the remote link against the CLI on the host (issue 45's target: images/s within 5%) and the
// window's own engine, all in one process run on this machine. The host: this build's attnscope-cli, reached through tests/remote/slow-link.py
// (50 ms round trip, 100 Mbit/s each way), the model a folder of its home. The window's path is the worker's (EngineWorker::analyseSet on a
// RemoteBackend, summaries every N/20 images as the set dock asks them), its images files on the laptop: a first run
// sends them (once, by sha256), the second is timed; the window on its own engine runs the same set once. The CLI: `attnscope-cli analyze` of the same files with the same
// analyses, its images/s from its manifest (the run's seconds, the model's load left out as it is on the window's side).
// Prints one JSON object.
//   remote_set_bench [--shape vit_small] [--images 240]
#include "BenchModels.h"
#include "gui/RemoteBackend.h"

#include <attnscope/Image.h>

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QProcess>
#include <QTimer>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace attnscope;
using namespace attnscope::bench;
namespace fs = std::filesystem;

namespace {

// Runs the event loop until `done` or `seconds` pass; idle meanwhile (a loop that polls would take a core from the
// engine it measures).
bool waitFor(const std::function<bool()>& done, int seconds)
{
    QEventLoop loop;
    QTimer check;
    QElapsedTimer timer;
    timer.start();
    QObject::connect(&check, &QTimer::timeout, [&] {
        if (done() || timer.elapsed() > seconds * 1000)
            loop.quit();
    });
    check.start(20);
    if (!done())
        loop.exec();
    return done();
}

int fail(const std::string& why)
{
    std::fprintf(stderr, "remote_set_bench: %s\n", why.c_str());
    return 1;
}

} // namespace

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    std::string shapeName = "vit_small";
    int images = 240;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string key = argv[i], value = argv[i + 1];
        if (key == "--shape")
            shapeName = value;
        else if (key == "--images")
            images = std::stoi(value);

        else
            return fail("unknown option " + key);
    }
    const Shape* shape = findShape(shapeName);
    if (!shape)
        return fail("unknown shape " + shapeName);
    char scratch[] = "/tmp/attnscope-remote-set-bench-XXXXXX";
    if (!::mkdtemp(scratch))
        return fail("no temporary folder");
    const fs::path dir = scratch;
    ::setenv("XDG_CACHE_HOME", (dir / "cache").c_str(), 1); // the host's cache of the files sent: this run's own
    ::setenv("ATTNSCOPE_SSH", ATTNSCOPE_SLOW_LINK, 1);
    QStringList paths;
    fs::create_directories(dir / "images");
    for (int i = 0; i < images; ++i) {
        const fs::path p = dir / "images" / ("image-" + std::to_string(10000 + i) + ".png");
        if (auto w = writeImage(p.string(), streamImage(i)); !w)
            return fail(w.message());
        paths << QString::fromStdString(p.string());
    }
    const std::string model = modelFolder(*shape);
    // The model is the host's: a path relative to its home (the link runs the server there), which this side has not.
    fs::create_directories(dir / "host-home" / "models");
    fs::create_directory_symlink(model, dir / "host-home" / "models" / shapeName);
    ::setenv("ATTNSCOPE_LINK_HOME", (dir / "host-home").c_str(), 1);

    // The CLI on the host, alone.
    QProcess cli;
    cli.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    cli.start(ATTNSCOPE_CLI, { "analyze", "--model", QString::fromStdString(model), "--images", QString::fromStdString((dir / "images").string()),
                               "--out", QString::fromStdString((dir / "cli").string()), "--formats", "", "--analyses",
                               "similarity,attention,centres,snr" });
    if (!cli.waitForFinished(-1) || cli.exitCode() != 0)
        return fail("attnscope-cli analyze failed");
    std::ifstream manifestFile(dir / "cli" / "manifest.json");
    const nlohmann::json manifest = nlohmann::json::parse(manifestFile);
    const auto& t = manifest["timings"];
    const double cliSeconds = t["total_seconds"].get<double>() - t["load_seconds"].get<double>() - t["figures_seconds"].get<double>();

    AnalysisOptions options; // the CLI's analyses, above: its default noise
    options.similarity = options.attention = options.centres = options.snr = true;
    options.perturbations.push_back(*Perturbation::parse("gaussian:sigma=8"));
    // The window's worker on its own engine, then on the host over the link: each run's seconds, the first and the second.
    const auto windowRuns = [&](std::unique_ptr<EngineBackend> backend, const QString& modelPath, int runs) -> Result<std::vector<double>> {
        EngineWorker worker(nullptr, std::move(backend));
        std::shared_ptr<const EngineModel> loaded;
        QString failure;
        QObject::connect(&worker, &EngineWorker::modelLoaded, [&](quint64, std::shared_ptr<const EngineModel> m) { loaded = m; });
        QObject::connect(&worker, &EngineWorker::failed, [&](quint64, QString message) { failure = message; });
        worker.loadModel(modelPath);
        if (!waitFor([&] { return loaded || !failure.isEmpty(); }, 300) || !loaded)
            return Error { "the model: " + failure.toStdString() };
        std::vector<double> seconds;
        for (int r = 0; r < runs; ++r) {
            bool complete = false;
            int64_t analysed = 0;
            auto finished = QObject::connect(&worker, &EngineWorker::setAnalysed, [&](quint64, std::shared_ptr<const AnalysisSummary> s, bool last) {
                complete = last;
                analysed = s->images;
            });
            QElapsedTimer timer;
            timer.start();
            worker.analyseSet(loaded, paths, options, std::max(1, images / 20)); // every N/20 images: the set dock's
            if (!waitFor([&] { return complete || !failure.isEmpty(); }, 3600) || !complete)
                return Error { "the image set: " + failure.toStdString() };
            if (analysed != images)
                return Error { "analysed " + std::to_string(analysed) + " of " + std::to_string(images) + " images" };
            seconds.push_back(timer.elapsed() / 1000.0);
            QObject::disconnect(finished);
        }
        return seconds;
    };
    auto local = windowRuns(nullptr, QString::fromStdString(model), 1);
    if (!local)
        return fail("the window's own engine: " + local.message());
    auto far = windowRuns(std::make_unique<RemoteBackend>(remote::Endpoint { "bench-host", ATTNSCOPE_CLI }),
                          QString::fromStdString("models/" + shapeName), 2);
    if (!far)
        return fail("the host: " + far.message());
    const std::vector<double> seconds = *far;
    nlohmann::json out = { { "shape", shapeName },
                           { "images", images },
                           { "rtt_ms", 50 },
                           { "cli_images_per_s", images / cliSeconds },
                           { "remote_first_images_per_s", images / seconds[0] },
                           { "remote_images_per_s", images / seconds[1] },
                           { "window_images_per_s", images / local->front() } };
    out["ratio"] = out["remote_images_per_s"].get<double>() / out["cli_images_per_s"].get<double>();
    out["link_ratio"] = out["remote_images_per_s"].get<double>() / out["window_images_per_s"].get<double>();
    std::printf("%s\n", out.dump().c_str());
    fs::remove_all(dir);
    return 0;
}
