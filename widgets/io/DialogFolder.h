#pragma once

#include <QString>

#include <functional>

class QAction;
class QImage;
class QWidget;

namespace attnscope {

// Where the window's file dialogs start: the folder of the last file or folder chosen in any of them (QSettings), the
// first time the user's Pictures folder (or home), never the working folder the program was started in. With `name`,
// that file in it (a save dialog's suggestion).
QString dialogStart(const QString& name = {});
// Remembers the folder of what the user chose: a file's folder, or a chosen folder itself. Empty: nothing chosen.
void rememberDialogChoice(const QString& chosen);

// A "Copy" action on `widget` (its right-click menu, and Ctrl+C while it or a child has the focus) that puts
// `image()` on the clipboard and says so in a tooltip (copyFeedback()). `menuWidget`: a child that fills `widget` and
// would take the right click itself (a plot in a scroll area), given the same menu.
QAction* addCopyAction(QWidget* widget, std::function<QImage()> image, QWidget* menuWidget = nullptr);
QString copyFeedback();

} // namespace attnscope
