#include "figures/FigurePanel.h"

#include "figures/FigureExport.h"
#include "io/DialogFolder.h"
#include "plots/PlotHover.h"
#include "io/ElidedLabel.h"

#include <attnscope/Files.h>

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QScreen>
#include <QScrollArea>
#include <QToolButton>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include <algorithm>

namespace attnscope {

FigurePanel::FigurePanel(std::vector<Figure> figures, QWidget* parent)
    : QWidget(parent)
    , m_figures(std::move(figures))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    m_header = new QWidget(this);
    auto* row = new QHBoxLayout(m_header);
    row->setContentsMargins(0, 0, 0, 0);
    m_chooser = new QComboBox(m_header);
    m_chooser->setAccessibleName(tr("Figure"));
    for (Figure f : m_figures)
        m_chooser->addItem(figureTitle(f), int(f));
    connect(m_chooser, &QComboBox::currentIndexChanged, this, [this] {
        rebuild();
        emit figureChanged(figure());
    });
    m_status = new ElidedLabel(m_header);
    m_export = new QToolButton(m_header);
    m_export->setText(tr("Export"));
    m_export->setPopupMode(QToolButton::InstantPopup);
    auto* menu = new QMenu(m_export);
    menu->addAction(tr("Figure (PNG, SVG, PDF)…"), this, [this] { askExport(false); });
    menu->addAction(tr("Data (CSV)…"), this, [this] { askExport(true); });
    m_export->setMenu(menu);
    auto* enlarge = new QToolButton(m_header);
    enlarge->setText(tr("Enlarge"));
    enlarge->setToolTip(tr("The figure in a window of its own, at the size it is exported at (it follows the dock)"));
    connect(enlarge, &QToolButton::clicked, this, &FigurePanel::showLarger);
    row->addWidget(m_chooser);
    row->addWidget(m_status, 1);
    row->addWidget(enlarge);
    row->addWidget(m_export);
    m_plot = new QCustomPlot;
    m_plot->setFocusPolicy(Qt::ClickFocus);
    enableHoverValues(m_plot);
    addCopyAction(this, [this] { return m_plot->toPixmap().toImage(); }, m_plot); // the plot as it is drawn
    // Below the height at which its legends and panel keys still fit, the figure scrolls rather than squeezing them.
    m_scroll = new QScrollArea(this);
    m_scroll->setWidget(m_plot);
    m_scroll->setWidgetResizable(true);
    m_scroll->setFrameShape(QFrame::NoFrame);
    m_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    layout->addWidget(m_header);
    layout->addWidget(m_scroll, 1);
    rebuild();
}

QWidget* FigurePanel::largerView() const { return m_larger; }

void FigurePanel::showLarger()
{
    if (!m_larger) {
        m_larger = new QWidget(this, Qt::Window);
        m_larger->setAttribute(Qt::WA_DeleteOnClose);
        auto* layout = new QVBoxLayout(m_larger);
        layout->setContentsMargins(0, 0, 0, 0);
        m_largerPlot = new QCustomPlot(m_larger);
        enableHoverValues(m_largerPlot);
        addCopyAction(m_larger, [this] { return m_largerPlot->toPixmap().toImage(); }, m_largerPlot);
        layout->addWidget(m_largerPlot);
        QSize size = figureSize(figure(), m_data);
        if (const QScreen* screen = this->screen())
            size = size.boundedTo(screen->availableGeometry().size() * 0.9);
        m_larger->resize(size);
    }
    rebuild();
    m_larger->show();
    m_larger->raise();
}

void FigurePanel::setData(std::vector<AnalysisSummary> series, std::shared_ptr<const LogitDecomposition> decomposition,
                          LogitDecompositionInfo info)
{
    m_decomposition = std::move(decomposition);
    m_data.series = std::move(series);
    m_data.decomposition = m_decomposition.get();
    m_data.decompositionInfo = std::move(info);
    rebuild();
}

void FigurePanel::setDecompositionHead(int head)
{
    if (m_data.decompositionHead == head)
        return;
    m_data.decompositionHead = head;
    if (figure() == Figure::LogitDecomposition)
        rebuild();
}

void FigurePanel::setStatus(const QString& text)
{
    m_status->setFullText(text); // a long error is elided at the dock's width, never widening it
}

QString FigurePanel::status() const { return m_status->fullText(); }

void FigurePanel::setFigure(Figure f)
{
    const int index = m_chooser->findData(int(f));
    if (index >= 0)
        m_chooser->setCurrentIndex(index);
}

Figure FigurePanel::figure() const { return Figure(m_chooser->currentData().toInt()); }

void FigurePanel::rebuild()
{
    buildFigure(m_plot, figure(), m_data);
    // The least height at which the figure's rows (titles, panel titles, panels, their keys, the legend) keep their own
    // size; below it the dock scrolls rather than squeezing them. Rows of panels need three quarters of the height they
    // are exported at; grids of panels (a panel per layer, or per layer and head) three fifths.
    const int exported = figureSize(figure(), m_data).height();
    int least = 240;
    switch (figure()) {
    case Figure::SnrDiagnostics:
    case Figure::TokenNorms:
    case Figure::LogitDecomposition:
    case Figure::HeadAblation:
        least = exported * 3 / 4;
        break;
    case Figure::HeadKernels:
    case Figure::HeadCentres:
        least = exported * 3 / 5;
        break;
    default:
        break;
    }
    m_plot->setMinimumHeight(std::max(240, least));
    m_plot->replot();
    // Nor may a y-axis title be longer than its axis is high: it ran over the legend below ("Mean pairwise cosine
    // similarity" at 1280 x 800). The rows around an axis keep their height, so the plot needs that much more.
    int fitsTitles = 0;
    for (QCPAxisRect* rect : m_plot->axisRects()) {
        const QCPAxis* y = rect->axis(QCPAxis::atLeft);
        if (!y || !y->visible() || y->label().isEmpty())
            continue;
        const int title = QFontMetrics(y->labelFont()).horizontalAdvance(y->label()) + 8;
        fitsTitles = std::max(fitsTitles, m_plot->height() - rect->rect().height() + title);
    }
    if (fitsTitles > m_plot->minimumHeight()) {
        m_plot->setMinimumHeight(fitsTitles);
        m_plot->replot();
    }
    if (m_largerPlot) {
        buildFigure(m_largerPlot, figure(), m_data);
        m_larger->setWindowTitle(tr("%1 · attnscope").arg(figureTitle(figure())));
        m_largerPlot->replot();
    }
}

Status FigurePanel::exportFigure(const QString& path)
{
    Status written = Error { tr("nothing to export yet").toStdString() };
    if (figureHasData(figure(), m_data)) {
        // Drawn afresh at the export size, so the file does not depend on the dock's size.
        QCustomPlot offscreen;
        const QSize size = figureSize(figure(), m_data);
        offscreen.resize(size);
        buildFigure(&offscreen, figure(), m_data);
        written = exportPlot(&offscreen, path, size.width(), size.height());
    }
    if (written) {
        emit exported(path);
        return written;
    }
    const QString message = path + QStringLiteral(": ") + QString::fromStdString(written.message());
    emit exportFailed(message);
    return Error { message.toStdString() };
}

Status FigurePanel::exportData(const QString& path)
{
    Status written = Error { (path + QStringLiteral(": ") + tr("nothing to export yet")).toStdString() };
    if (figureHasData(figure(), m_data))
        written = writeTextFile(path.toStdString(), figureCsv(figure(), m_data));
    if (written)
        emit exported(path);
    else
        emit exportFailed(QString::fromStdString(written.message()));
    return written;
}

void FigurePanel::askExport(bool data)
{
    const QString name = QString::fromStdString(figureFileName(figure()));
    const QString path = data
        ? QFileDialog::getSaveFileName(this, tr("Export data"), dialogStart(name + ".csv"), tr("CSV (*.csv)"))
        : QFileDialog::getSaveFileName(this, tr("Export figure"), dialogStart(name + ".png"), tr("PNG (*.png);;SVG (*.svg);;PDF (*.pdf)"));
    if (path.isEmpty())
        return;
    rememberDialogChoice(path);
    data ? exportData(path) : exportFigure(path);
}

} // namespace attnscope
