#include "view/ViewFooter.h"

#include <QLabel>
#include <QTextDocument>
#include <QVBoxLayout>

namespace attnscope {

QString className(const QStringList& labels, int index)
{
    return index >= 0 && index < labels.size() && !labels[index].isEmpty() ? labels[index] : QObject::tr("class %1").arg(index);
}

QString className(const std::vector<std::string>& labels, int index)
{
    return index >= 0 && size_t(index) < labels.size() && !labels[size_t(index)].empty() ? QString::fromStdString(labels[size_t(index)])
                                                                                         : QObject::tr("class %1").arg(index);
}

namespace {

std::vector<ViewFooter::Entry> entriesOf(const std::vector<ClassProbability>& top, const QStringList& labels)
{
    std::vector<ViewFooter::Entry> out;
    for (const auto& c : top) {
        out.push_back({ c.index, className(labels, c.index), c.probability });
    }
    return out;
}

QString percent(double p)
{
    return p < 0.0005 ? QStringLiteral("<0.1%") : QStringLiteral("%1%").arg(100.0 * p, 0, 'f', 1);
}

// "<b>cat</b> 62.1% · dog 20.3% · …": the first, most probable, in bold.
QString line(const std::vector<ViewFooter::Entry>& entries)
{
    QStringList parts;
    for (size_t i = 0; i < entries.size(); ++i) {
        const QString name = entries[i].name.toHtmlEscaped();
        parts << (i == 0 ? QStringLiteral("<b>%1</b>").arg(name) : name) + QStringLiteral(" ") + percent(entries[i].probability).toHtmlEscaped();
    }
    return parts.join(QStringLiteral(" · "));
}

QString details(const std::vector<ViewFooter::Entry>& entries)
{
    QStringList rows;
    for (const auto& e : entries)
        rows << QObject::tr("%1 (class %2): %3").arg(e.name).arg(e.index).arg(e.probability, 0, 'g', 6);
    return rows.join(QLatin1Char('\n'));
}

} // namespace

ViewFooter::ViewFooter(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 2, 6, 2);
    layout->setSpacing(1);
    m_preparation = new QLabel(this);
    m_preparation->setObjectName("preparation");
    m_preparation->setToolTip(tr("What was done to the image to make the model's input"));
    m_preparation->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_prediction = new QLabel(this);
    m_prediction->setObjectName("prediction");
    m_prediction->setTextFormat(Qt::RichText);
    m_prediction->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_prediction->setWordWrap(true);
    m_ablation = new QLabel(this);
    m_ablation->setObjectName("ablation");
    m_ablation->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_ablation->setWordWrap(true);
    m_ablation->setToolTip(tr("The prediction with one head's output ablated (docs/analyses.md section 8); right-click a head's tile"));
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.9); // two short lines: the view keeps the height
    for (QLabel* label : { m_preparation, m_prediction, m_ablation }) {
        label->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred); // never widens the view's column
        label->setFont(small);
    }
    layout->addWidget(m_preparation);
    layout->addWidget(m_prediction);
    layout->addWidget(m_ablation);
    clear();
}

void ViewFooter::setPreparation(const QString& line, const QString& input)
{
    m_preparation->setText(line.isEmpty() ? tr("Input: %1, as the model sees it").arg(input) : tr("Input: %1").arg(line));
}

void ViewFooter::setPrediction(const std::vector<ClassProbability>& top, const QStringList& labels, const QString& variantTitle,
                               const std::vector<ClassProbability>& variantTop)
{
    m_entries = entriesOf(top, labels);
    m_variantEntries = entriesOf(variantTop, labels);
    QString text = tr("Prediction: %1").arg(line(m_entries));
    QString tip = details(m_entries);
    if (!m_variantEntries.empty()) {
        text += QStringLiteral("<br>") + tr("%1: %2").arg(variantTitle.toHtmlEscaped(), line(m_variantEntries));
        tip += QStringLiteral("\n\n") + variantTitle + QStringLiteral(":\n") + details(m_variantEntries);
    }
    m_prediction->setText(text);
    m_prediction->setToolTip(tip);
}

void ViewFooter::setNoPrediction(const QString& reason)
{
    m_entries.clear();
    m_variantEntries.clear();
    m_prediction->setText(reason.toHtmlEscaped());
    m_prediction->setToolTip({});
}

void ViewFooter::clear()
{
    m_preparation->setText(tr("Input: no image"));
    setNoPrediction(tr("Prediction: no image"));
    setAblation({});
}

void ViewFooter::setAblation(const QString& text)
{
    m_ablation->setText(text);
    m_ablation->setVisible(!text.isEmpty());
}

QString ViewFooter::ablationText() const { return m_ablation->text(); }

QString ViewFooter::preparationText() const { return m_preparation->text(); }

QString ViewFooter::predictionText() const
{
    QTextDocument document;
    document.setHtml(m_prediction->text());
    return document.toPlainText();
}

} // namespace attnscope
