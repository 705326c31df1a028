#include "io/ElidedLabel.h"

#include <QFontMetrics>

namespace attnscope {

ElidedLabel::ElidedLabel(QWidget* parent)
    : QLabel(parent)
{
    setTextFormat(Qt::PlainText);
    setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
}

void ElidedLabel::setFullText(const QString& text)
{
    m_full = text;
    setToolTip(text);
    elide();
    updateGeometry();
}

QSize ElidedLabel::minimumSizeHint() const { return { 0, QLabel::minimumSizeHint().height() }; }

QSize ElidedLabel::sizeHint() const
{
    return { fontMetrics().horizontalAdvance(m_full) + 2 * margin() + 4, QLabel::sizeHint().height() };
}

void ElidedLabel::resizeEvent(QResizeEvent* event)
{
    QLabel::resizeEvent(event);
    elide();
}

void ElidedLabel::mousePressEvent(QMouseEvent* event)
{
    QLabel::mousePressEvent(event);
    emit clicked();
}

void ElidedLabel::elide()
{
    const QString shown = fontMetrics().elidedText(m_full, Qt::ElideRight, std::max(0, contentsRect().width() - 2 * margin()));
    if (shown != text())
        QLabel::setText(shown);
}

} // namespace attnscope
