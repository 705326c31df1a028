#include "gui/WindowState.h"

#include <QObject>

int headNumber(HeadChoice choice)
{
    switch (choice.view) {
    case HeadView::Head: return choice.head;
    case HeadView::Mean: return -1;
    case HeadView::Rollout: return -2;
    case HeadView::Gae: return -3;
    case HeadView::GradCam: return -4;
    case HeadView::TokenNorms: return -5;
    }
    return -1;
}

std::optional<HeadChoice> headFromNumber(int number)
{
    if (number >= 0)
        return HeadChoice::single(number);
    for (HeadView v : kNamedHeadViews)
        if (headNumber(v) == number)
            return HeadChoice(v);
    return std::nullopt;
}

QString headChoiceKey(HeadChoice choice)
{
    switch (choice.view) {
    case HeadView::Head: return QString::number(choice.head);
    case HeadView::Mean: return QStringLiteral("mean");
    case HeadView::Rollout: return QStringLiteral("rollout");
    case HeadView::Gae: return QStringLiteral("gae");
    case HeadView::GradCam: return QStringLiteral("gradcam");
    case HeadView::TokenNorms: return QStringLiteral("norms");
    }
    return {};
}

std::optional<HeadChoice> parseHeadChoice(const QString& text)
{
    const QString t = text.trimmed().toLower();
    for (HeadView v : kNamedHeadViews)
        if (t == headChoiceKey(v))
            return HeadChoice(v);
    bool ok = false;
    const int number = t.toInt(&ok);
    return ok ? headFromNumber(number) : std::nullopt;
}

QString headChoiceText(HeadChoice choice)
{
    switch (choice.view) {
    case HeadView::Head: return QObject::tr("head %1").arg(choice.head);
    case HeadView::Mean: return QObject::tr("mean of heads");
    case HeadView::Rollout: return QObject::tr("rollout");
    case HeadView::Gae: return QObject::tr("relevance (GAE)");
    case HeadView::GradCam: return QObject::tr("Grad-CAM");
    case HeadView::TokenNorms: return QObject::tr("token norms");
    }
    return {};
}
