// FigureDrawing.h in the headless build (ATTNSCOPE_GUI=OFF): no Qt, so no figure is drawn; the CLI says so once
// and writes the data, the figures' CSVs included.
#include "FigureDrawing.h"

#include <filesystem>

std::string figureDrawingUnavailable()
{
    return "figures need the Qt build of attnscope (this one was built with ATTNSCOPE_GUI=OFF)";
}

std::string defaultFigureFormats() { return ""; }

attnscope::Status drawFigures(const std::string& dir, const attnscope::FigureData&, const ImageFigures&, const std::vector<std::string>& formats)
{
    if (formats.empty())
        return attnscope::Done {};
    const std::string first = attnscope::figureFileName(attnscope::allFigures().front()) + "." + formats.front();
    return attnscope::Error { (std::filesystem::path(dir) / first).string() + ": " + figureDrawingUnavailable() };
}
