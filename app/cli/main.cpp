// attnscope-cli: the headless face of the engine (docs/design.md section 6, "Command line").
#include "cli/Commands.h"
#include "FigureDrawing.h"

#include <attnscope/CpuKernels.h>
#include <attnscope/Model.h>

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <unistd.h>

int fail(const std::string& message)
{
    std::cerr << "attnscope-cli: " << message << '\n';
    return 1;
}

attnscope::Status checkDeviceUsage(const std::string& device)
{
    const bool indexed = device.rfind("cuda:", 0) == 0 && device.size() > 5
        && device.find_first_not_of("0123456789", 5) == std::string::npos;
    if (device == "auto" || device == "cpu" || device == "cuda" || indexed)
        return attnscope::Done {};
    return attnscope::Error { "--device " + device + ": expected auto, cpu, cuda or cuda:<i>" };
}

int usage(const std::string& message)
{
    std::cerr << "attnscope-cli: " << message << '\n';
    return 2;
}

attnscope::Result<std::pair<int, int>> parseInputSize(const std::string& text)
{
    constexpr long kMaxSide = 16384;
    const std::string why = "--input-size " + text + ": expected H,W or N (N,N), pixel counts from 1 to "
        + std::to_string(kMaxSide) + " that are multiples of the model's patch size";
    // Digits only: no sign, no space, no fraction (strtol alone would take " 4", "+4" and "4.5" as 4).
    const auto side = [&](const std::string& s, int& out) {
        if (s.empty() || s.size() > 5 || s.find_first_not_of("0123456789") != std::string::npos)
            return false;
        const long v = std::strtol(s.c_str(), nullptr, 10);
        out = int(v);
        return v >= 1 && v <= kMaxSide;
    };
    int height = 0, width = 0;
    const size_t comma = text.find(',');
    const bool ok = comma == std::string::npos ? side(text, height) && side(text, width)
                                               : side(text.substr(0, comma), height) && side(text.substr(comma + 1), width);
    if (!ok)
        return attnscope::Error { why };
    return std::make_pair(height, width);
}

int atInputSize(std::shared_ptr<const attnscope::Model>& model, const std::string& name, const std::string& text,
                int height, int width)
{
    if (text.empty())
        return 0;
    const int patch = model->config().patchSize;
    for (const int side : { height, width })
        if (side % patch != 0)
            return usage("--input-size " + text + ": " + std::to_string(side) + " is not a multiple of the patch size "
                         + std::to_string(patch) + " of " + name);
    auto resized = model->withInputSize(height, width);
    if (!resized)
        return fail(name + ": " + resized.message());
    model = *resized;
    return 0;
}

std::vector<std::string> formatsToDraw(const std::vector<std::string>& asked)
{
    return figureDrawingUnavailable().empty() ? asked : std::vector<std::string> {};
}

void noteUndrawnFigures(const std::vector<std::string>& asked)
{
    const std::string why = figureDrawingUnavailable();
    if (asked.empty() || why.empty())
        return;
    std::string list;
    for (const auto& f : asked)
        list += (list.empty() ? "" : ",") + f;
    std::cerr << "attnscope-cli: --formats " << list << ": " << why << "; wrote the data and the figures' CSVs only\n";
}

namespace {

// libgomp reads its wait policy once, when it is loaded: with more than one thread its default spin-waiting makes a
// forward ten times slower on a shared machine (docs/performance.md, Thread policy). Asked for --threads > 1 with
// no policy in the environment, the CLI sets a passive one and starts itself again, before anything has run.
void passiveWaitingForThreads(char** argv)
{
    if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT"))
        return;
    int threads = 0;
    for (char** a = argv + 1; *a; ++a) {
        if (std::strcmp(*a, "--threads") == 0 && a[1])
            threads = std::atoi(a[1]);
        else if (std::strncmp(*a, "--threads=", 10) == 0)
            threads = std::atoi(*a + 10);
    }
    if (threads <= 1)
        return;
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    execv("/proc/self/exe", argv); // returns only on failure: then go on with the default policy
}

} // namespace

int main(int argc, char** argv)
{
    passiveWaitingForThreads(argv);
    CLI::App app { "attnscope-cli: attention in vision transformers, headless" };
    app.set_version_flag("--version", std::string("attnscope ") + attnscope::version() + " (LibTorch " + attnscope::libtorchVersion() + ")");
    app.require_subcommand(1);

    InfoCommand info;
    AnalyzeCommand analyze;
    MergeCommand merge;
    ServeCommand serve;
    info.addTo(*app.add_subcommand("info", "describe a model: family, naming, layers, heads, preprocessing"));
    analyze.addTo(*app.add_subcommand("analyze", "run a model over images and write the results"));
    merge.addTo(*app.add_subcommand("merge", "merge the output folders of sharded analyze runs"));
    serve.addTo(*app.add_subcommand("serve", "the remote engine: answer a window or notebook over stdin and stdout (attnscope --remote starts it through ssh)"));

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        app.exit(e); // prints the usage error
        return 2;
    }
    if (app.got_subcommand("info"))
        return info.run();
    if (app.got_subcommand("merge"))
        return merge.run();
    if (app.got_subcommand("serve"))
        return serve.run();
    return analyze.run();
}
