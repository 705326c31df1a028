#pragma once

// What the window opens from its command line, `attnscope [MODEL] [IMAGES...]`: the first argument is the model,
// unless it is an image or a folder of images, so that `attnscope photo.jpg` (or a folder, or several images)
// opens the default model with them.

#include <QMargins>
#include <QRect>
#include <QString>
#include <QStringList>

struct LaunchArguments {
    QString model; // builtin:NAME, a model file, folder or description .json
    QStringList images; // image files and folders, in the order given
    QString description; // a model description .json given right after a checkpoint: the two are one model
};

LaunchArguments splitLaunchArguments(
    const QStringList& positional, const QString& defaultModel = QStringLiteral("builtin:fmnist-vit"));

// An image by its suffix: the engine's rule (attnscope::hasImageSuffix), the one the CLI lists folders by.
bool hasImageSuffix(const QString& path);
// A model's file or folder: builtin:NAME; a file named .safetensors, .pt, .pth, .bin or .json (a model
// description); a folder holding model.safetensors, *.safetensors, *.pt, *.pth, pytorch_model.bin, config.json or
// attnscope.json.
bool isModelPath(const QString& path);
// An image file: by its suffix (existing or not, so that a missing photo is reported as a missing image), or, for a
// file whose suffix names neither an image nor a model, by the signature of its first bytes.
bool isImagePath(const QString& path);
// A folder with an image in it (at any depth) that is not a model's folder.
bool isImageFolder(const QString& path);
// A model description (docs/model-description.md): a .json file holding an object with "attnscope_description", a
// "rename" list or an "architecture" object; not a Hugging Face or timm config.json.
bool isModelDescription(const QString& path);

// Where the window opens on a screen whose free area is `available`: at `wanted` size (or the room there is), with its
// frame (`frame`: the title bar and borders a window manager adds) inside that area too, so that the status bar is
// never below the screen's edge. The window's own geometry, without the frame.
QRect placeWithin(const QRect& available, const QMargins& frame, const QSize& wanted, const QPoint& at);

// File -> Connect to remote engine... (docs/remote.md): the hosts connected to, most recent first (at most 8, kept in
// the settings), and the command line of a window on `host` with `model` and `images` open:
// `--remote HOST MODEL IMAGES...` (no model: the host's default one).
QStringList recentRemoteHosts();
void rememberRemoteHost(const QString& host);
QStringList remoteWindowArguments(const QString& host, const QString& model, const QStringList& images);
