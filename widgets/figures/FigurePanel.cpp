#include "FigurePanel.h"

#include "DialogFolder.h"
#include "FigureExport.h"
#include "PlotHover.h"

#include <attnscope/Files.h>

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QToolButton>
#include <QVBoxLayout>
#include <qcustomplot.h>

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
    m_status = new QLabel(m_header);
    m_export = new QToolButton(m_header);
    m_export->setText(tr("Export"));
    m_export->setPopupMode(QToolButton::InstantPopup);
    auto* menu = new QMenu(m_export);
    menu->addAction(tr("Figure (PNG, SVG, PDF)…"), this, [this] { askExport(false); });
    menu->addAction(tr("Data (CSV)…"), this, [this] { askExport(true); });
    m_export->setMenu(menu);
    row->addWidget(m_chooser);
    row->addWidget(m_status, 1);
    row->addWidget(m_export);
    m_plot = new QCustomPlot(this);
    m_plot->setMinimumHeight(240);
    m_plot->setFocusPolicy(Qt::ClickFocus);
    enableHoverValues(m_plot);
    addCopyAction(this, [this] { return m_plot->toPixmap().toImage(); }); // the plot as it is drawn
    layout->addWidget(m_header);
    layout->addWidget(m_plot, 1);
    rebuild();
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
    m_status->setText(text);
    m_status->setToolTip(text); // a long error is cut at the dock's width
}

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
    m_plot->replot();
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
