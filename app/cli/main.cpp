// attnscope-cli: the headless face of the engine (DESIGN.md, Command line).
#include "Commands.h"

#include <attnscope/Model.h>

#include <CLI/CLI.hpp>

#include <iostream>

int fail(const std::string& message)
{
    std::cerr << "attnscope-cli: " << message << '\n';
    return 1;
}

int main(int argc, char** argv)
{
    CLI::App app { "attnscope-cli: attention in vision transformers, headless" };
    app.set_version_flag("--version", std::string("attnscope ") + attnscope::version());
    app.require_subcommand(1);

    InfoCommand info;
    AnalyzeCommand analyze;
    MergeCommand merge;
    info.addTo(*app.add_subcommand("info", "describe a model: family, naming, layers, heads, preprocessing"));
    analyze.addTo(*app.add_subcommand("analyze", "run a model over images and write the results"));
    merge.addTo(*app.add_subcommand("merge", "merge the output folders of sharded analyze runs"));

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
    return analyze.run();
}
