// attnscope: the desktop window. `attnscope [MODEL] [IMAGE|FOLDER...]`
#include "MainWindow.h"

#include <attnscope/Model.h>

#include <QApplication>
#include <QCommandLineParser>

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QApplication::setApplicationName("attnscope");
    QApplication::setOrganizationName("attnscope");
    QApplication::setApplicationVersion(attnscope::version());
    QCommandLineParser parser;
    parser.setApplicationDescription("A microscope for attention in vision transformers");
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument("model", "model file, folder or builtin:NAME (default builtin:fmnist-vit)");
    parser.addPositionalArgument("images", "images or folders to open");
    parser.process(app);
    const QStringList args = parser.positionalArguments();
    MainWindow window;
    window.resize(1280, 860);
    window.show();
    window.openModel(args.value(0, "builtin:fmnist-vit"));
    window.addImages(args.mid(1));
    return app.exec();
}
