#include "ImageSetFigures.h"

#include <AttentionDistancePlot.h>
#include <FigureExport.h>
#include <FigureSizes.h>
#include <HeadCentresPlot.h>
#include <PlotStyle.h>
#include <SnrPlot.h>
#include <TokenSimilarityPlot.h>

#include <attnscope/AnalysisRun.h>

#include <QDir>
#include <qcustomplot.h>

using namespace attnscope;

void buildSetFigure(QCustomPlot* plot, const AnalysisSummary& s, int index)
{
    const PlotStyle style;
    switch (index) {
    case 1: buildSnrPlot(plot, { s }, style); break;
    case 2: buildSnrDiagnosticsPlot(plot, { s }, style); break;
    case 3: buildHeadCentresPlot(plot, s, style); break;
    case 4: buildAttentionDistancePlot(plot, { s }, style); break;
    default: buildTokenSimilarityPlot(plot, { s }, Tap::Block, style); break;
    }
}

bool exportImageSetFigures(const QString& dir, const AnalysisSummary& summary, int layers, QString* error)
{
    auto csvs = writeSummaryCsvs(dir.toStdString(), summary);
    if (!csvs) {
        *error = QString::fromStdString(csvs.message());
        return false;
    }
    const char* names[] = { "token_similarity", "snr", "snr_diagnostics", "head_centres", "attention_distance" };
    const QSize sizes[] = { lineFigureSize(), lineFigureSize(), snrDiagnosticsFigureSize(), headCentresFigureSize(layers),
                            lineFigureSize() };
    for (int i = 0; i < 5; ++i) {
        QCustomPlot plot;
        plot.resize(sizes[i]);
        buildSetFigure(&plot, summary, i);
        for (const char* ext : { ".png", ".svg", ".pdf" }) {
            QString message;
            const QString path = QDir(dir).filePath(QString(names[i]) + ext);
            if (!exportPlot(&plot, path, sizes[i].width(), sizes[i].height(), &message)) {
                *error = path + ": " + message;
                return false;
            }
        }
    }
    return true;
}
