#include "io/DialogFolder.h"

#include <QAction>
#include <QClipboard>
#include <QDir>
#include <QFileInfo>
#include <QGuiApplication>
#include <QImage>
#include <QSettings>
#include <QStandardPaths>
#include <QToolTip>
#include <QWidget>

namespace attnscope {

namespace {
constexpr const char* kKey = "dialogs/lastFolder";
}

QString dialogStart(const QString& name)
{
    QString folder = QSettings().value(kKey).toString();
    if (folder.isEmpty() || !QFileInfo(folder).isDir()) {
        folder = QStandardPaths::writableLocation(QStandardPaths::PicturesLocation);
        if (folder.isEmpty() || !QFileInfo(folder).isDir())
            folder = QDir::homePath();
    }
    return name.isEmpty() ? folder : QDir(folder).filePath(name);
}

void rememberDialogChoice(const QString& chosen)
{
    if (chosen.isEmpty())
        return;
    const QFileInfo info(chosen);
    QSettings().setValue(kKey, info.isDir() ? info.absoluteFilePath() : info.absolutePath());
}

QString copyFeedback() { return QObject::tr("Copied to the clipboard"); }

QAction* addCopyAction(QWidget* widget, std::function<QImage()> image, QWidget* menuWidget)
{
    auto* copy = new QAction(QObject::tr("Copy"), widget);
    copy->setShortcut(QKeySequence::Copy);
    copy->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    QObject::connect(copy, &QAction::triggered, widget, [widget, image = std::move(image)] {
        const QImage picture = image();
        const bool copied = !picture.isNull();
        if (copied)
            QGuiApplication::clipboard()->setImage(picture);
        // Said where the user looks, since Ctrl+C shows nothing else.
        const QPoint centre = widget->mapToGlobal(widget->rect().center());
        QToolTip::showText(centre, copied ? copyFeedback() : QObject::tr("Nothing to copy yet"), widget, {}, 1500);
    });
    for (QWidget* w : { widget, menuWidget ? menuWidget : widget }) {
        w->addAction(copy);
        w->setContextMenuPolicy(Qt::ActionsContextMenu);
    }
    return copy;
}

} // namespace attnscope
