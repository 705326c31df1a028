// FigureDrawing.h in the Qt build: the GUI's plot builders draw offscreen.
#include "FigureDrawing.h"

#include <figures/FigureCatalog.h>
#include <figures/FigureExport.h>
#include <figures/QueryKeyFigure.h>
#include <QApplication>
#include <worker/RuntimeDir.h>
#include <filesystem>
#include <future>
#include <memory>
#include <qcustomplot.h>

namespace fs = std::filesystem;
using namespace attnscope;

namespace {

// QCustomPlot needs a QApplication; the CLI draws offscreen whatever the environment says.
void ensureApplication()
{
    if (QCoreApplication::instance())
        return;
    qputenv("QT_QPA_PLATFORM", "offscreen");
    attnscope::ensureRuntimeDir();
    static int argc = 1;
    static char name[] = "attnscope-cli";
    static char* argv[] = { name, nullptr };
    static QApplication app(argc, argv);
}

} // namespace

std::string figureDrawingUnavailable() { return {}; }

std::string defaultFigureFormats() { return "png"; }

Status drawFigures(const std::string& dir, const FigureData& data, const ImageFigures& images, const std::vector<std::string>& formats)
{
    if (formats.empty())
        return Done {};
    ensureApplication();
    // The grids are images painted with QPainter on a QImage, which Qt allows on any thread: they are drawn and
    // written beside the plots, which QCustomPlot draws on this one (about 0.1 s of a one-image run's 0.4 s of figures).
    auto gridsDrawn = std::async(std::launch::async, [&]() -> Status {
        const auto write = [&](const QImage& image, const std::string& name) -> Status {
            for (const auto& f : formats)
                if (auto w = exportImage(image, QString::fromStdString((fs::path(dir) / (name + "." + f)).string())); !w)
                    return w;
            return Done {};
        };
        for (const auto& g : images.grids)
            if (auto w = write(renderFigure(g.grid), g.name); !w)
                return w;
        for (const auto& r : images.relevances)
            if (auto w = write(renderFigure(r.figure), r.name); !w)
                return w;
        for (const auto& n : images.norms)
            if (auto w = write(renderFigure(n.figure), n.name); !w)
                return w;
        if (images.queryKey) {
            if (auto w = write(renderQueryKeyFigure(*images.queryKey), "qkmap"); !w)
                return w;
            if (images.queryKey->maps.size() > 1)
                if (auto w = write(renderQueryKeyGrid(*images.queryKey), "qkmap_grid"); !w)
                    return w;
        }
        return Done {};
    });
    for (Figure figure : allFigures()) {
        if (!figureHasData(figure, data))
            continue;
        const QSize size = figureSize(figure, data);
        auto plot = std::make_unique<QCustomPlot>();
        plot->resize(size);
        buildFigure(plot.get(), figure, data);
        for (const auto& f : formats) {
            const QString path = QString::fromStdString((fs::path(dir) / (figureFileName(figure) + "." + f)).string());
            if (auto w = exportPlot(plot.get(), path, size.width(), size.height()); !w) {
                gridsDrawn.wait();
                return w;
            }
        }
    }
    return gridsDrawn.get();
}
