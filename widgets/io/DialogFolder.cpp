#include "io/DialogFolder.h"

#include <QAction>
#include <QClipboard>
#include <QDir>
#include <QFileInfo>
#include <QGuiApplication>
#include <QImage>
#include <QSettings>
#include <QStandardPaths>
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

QAction* addCopyAction(QWidget* widget, std::function<QImage()> image)
{
    auto* copy = new QAction(QObject::tr("Copy"), widget);
    copy->setShortcut(QKeySequence::Copy);
    copy->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    QObject::connect(copy, &QAction::triggered, widget, [image = std::move(image)] {
        const QImage picture = image();
        if (!picture.isNull())
            QGuiApplication::clipboard()->setImage(picture);
    });
    widget->addAction(copy);
    widget->setContextMenuPolicy(Qt::ActionsContextMenu);
    return copy;
}

} // namespace attnscope
