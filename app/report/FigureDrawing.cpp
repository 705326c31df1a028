// FigureDrawing.h in the Qt build: the GUI's plot builders draw offscreen.
#include "FigureDrawing.h"

#include <AttentionGridFigure.h>
#include <FigureCatalog.h>
#include <FigureExport.h>
#include <RelevanceFigure.h>
#include <TokenNormsFigure.h>
#include <QApplication>
#include <RuntimeDir.h>
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

std::string drawFigures(const std::string& dir, const FigureData& data, const ImageFigures& images, const std::vector<std::string>& formats)
{
    if (formats.empty())
        return {};
    ensureApplication();
    // The grids are images painted with QPainter on a QImage, which Qt allows on any thread: they are drawn and
    // written beside the plots, which QCustomPlot draws on this one (about 0.1 s of a one-image run's 0.4 s of figures).
    auto gridsDrawn = std::async(std::launch::async, [&]() -> std::string {
        const auto write = [&](const QImage& image, const std::string& name) -> std::string {
            for (const auto& f : formats) {
                QString message;
                const QString path = QString::fromStdString((fs::path(dir) / (name + "." + f)).string());
                if (!exportImage(image, path, &message))
                    return path.toStdString() + ": " + message.toStdString();
            }
            return {};
        };
        for (const auto& g : images.grids)
            if (std::string error = write(renderAttentionGrid(g.grid), g.name); !error.empty())
                return error;
        for (const auto& r : images.relevances)
            if (std::string error = write(renderRelevanceFigure(r.figure), r.name); !error.empty())
                return error;
        for (const auto& n : images.norms)
            if (std::string error = write(renderTokenNormsFigure(n.figure), n.name); !error.empty())
                return error;
        return {};
    });
    for (Figure figure : allFigures()) {
        if (!figureHasData(figure, data))
            continue;
        const QSize size = figureSize(figure, data);
        auto plot = std::make_unique<QCustomPlot>();
        plot->resize(size);
        buildFigure(plot.get(), figure, data);
        for (const auto& f : formats) {
            QString message;
            const QString path = QString::fromStdString((fs::path(dir) / (figureFileName(figure) + "." + f)).string());
            if (!exportPlot(plot.get(), path, size.width(), size.height(), &message)) {
                gridsDrawn.wait();
                return path.toStdString() + ": " + message.toStdString();
            }
        }
    }
    return gridsDrawn.get();
}
